// The main of ember_distributed_tests: Catch2's, then the process group is shut down (MPI_Finalize)
// before the process exits, so that mpirun sees every rank end cleanly. Catch2 leaves the signals
// alone: ember::distributed's SIGTERM handler (what a rank prints when mpirun stops it because another
// rank died) is installed only where nobody else handles SIGTERM, and the tests check it.
#define CATCH_CONFIG_RUNNER
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#include <catch2/catch.hpp>

#include "distributed/process_group.h"

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  ember::distributed::destroy_process_group();
  return failed;
}
