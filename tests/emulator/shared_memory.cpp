// The emulator's memcheck of __shared__ and local arrays (emulation build only): an overrun of
// one __shared__ array into the next, caught in the redzone between them and named; a local
// array overrun, caught by the compiler's bounds check (indexed) or stack protector (through a
// pointer). The kernels are in tests/emulator/kernels_shared.cu; docs/emulator.md says what each
// check reaches.
#ifdef EMBER_CUDA_EMULATED

#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "kernels/emulator/emulator.h"
#include "tests/emulator/kernels_shared.h"
#include "tests/emulator/test_util.h"

using ember_test::ArrayBug;

namespace {

using ember_test::Checks;
using ember_test::contains;

// 32 floats of device memory, zeroed.
struct Out {
  float* p = nullptr;
  Out() {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), 32 * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMemset(p, 0, 32 * sizeof(float)) == cudaSuccess);
  }
  ~Out() { cudaFree(p); }
  std::vector<float> get() const {
    std::vector<float> v(32);
    REQUIRE(cudaMemcpy(v.data(), p, 32 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

// Runs the kernel with `bug` and returns the report, after checking what every memcheck report of
// it names: the checker, the kernel and its launch site, the block and the thread.
std::string planted(ArrayBug bug, const std::string& thread) {
  Out out;
  CHECK(ember_test::launch_two_tiles(out.p, bug) == cudaErrorIllegalAddress);
  const std::string r = ember::emu::last_report();
  INFO(r);
  CHECK(contains(r, "ember emulator: memcheck: "));
  CHECK(contains(r, "in kernel two_tiles_kernel (launched at tests/emulator/kernels_shared.cu:"));
  CHECK(contains(r, "block (0,0,0) of grid (1,1,1), thread " + thread));
  return r;
}

// After a planted bug the device works on: the correct kernel runs clean.
void correct_kernel_runs() {
  Out out;
  REQUIRE(ember_test::launch_two_tiles(out.p, ArrayBug::None) == cudaSuccess);
  const std::vector<float> v = out.get();
  for (int t = 0; t < 32; ++t) CHECK(v[t] == static_cast<float>(2 * t + 200));
}

}  // namespace

TEST_CASE("emulator memcheck: the correct two-tile kernel passes every checker",
          "[emulator][planted]") {
  Checks on(ember::emu::kMemcheck | ember::emu::kRacecheck | ember::emu::kSynccheck |
            ember::emu::kInitcheck);
  correct_kernel_runs();
}

TEST_CASE("emulator memcheck: a write past a __shared__ array lands in its redzone",
          "[emulator][planted]") {
  REQUIRE(ember::emu::instrumented());  // the redzones need the access hooks
  Checks on(ember::emu::kMemcheck | ember::emu::kRacecheck | ember::emu::kSynccheck);
  const std::string r = planted(ArrayBug::SharedWritePastEnd, "(32,0,0)");
  INFO(r);
  CHECK(contains(r, "invalid write of 4 bytes at 0x"));
  CHECK(contains(r, "0 bytes past the end of __shared__ array `first` (128 bytes) of "));
  CHECK(contains(r, "two_tiles_kernel"));
  CHECK(contains(r, "in the redzone the emulator keeps after each __shared__ variable"));
#ifdef EMBER_TESTS_HAVE_DEBUG_INFO
  CHECK(contains(r, "the access: tests/emulator/kernels_shared.cu:"));
#endif
  correct_kernel_runs();
}

TEST_CASE("emulator memcheck: a read past a __shared__ array and an atomic past one",
          "[emulator][planted]") {
  REQUIRE(ember::emu::instrumented());  // the redzones need the access hooks
  std::string r = planted(ArrayBug::SharedReadPastEnd, "(31,0,0)");
  CHECK(contains(r, "invalid read of 4 bytes at 0x"));
  CHECK(contains(r, "0 bytes past the end of __shared__ array `second` (128 bytes) of "));

  r = planted(ArrayBug::SharedAtomicPastEnd, "(32,0,0)");
  CHECK(contains(r, "memcheck: atomic on 4 bytes at 0x"));
  CHECK(contains(r, "0 bytes past the end of __shared__ array `first`"));
  correct_kernel_runs();
}

TEST_CASE("emulator memcheck: the redzones follow the memcheck switch", "[emulator][planted]") {
  REQUIRE(ember::emu::instrumented());  // the redzones need the access hooks
  // With memcheck off the overrun is made, into the redzone, and nothing is reported: the
  // redzone is the emulator's own, so nothing else is damaged.
  Checks off(ember::emu::kSynccheck);
  Out out;
  CHECK(ember_test::launch_two_tiles(out.p, ArrayBug::SharedWritePastEnd) == cudaSuccess);
  const std::vector<float> v = out.get();
  for (int t = 0; t < 32; ++t) CHECK(v[t] == static_cast<float>(2 * t + 200));
}

TEST_CASE("emulator memcheck: a __shared__ or local array indexed past its end",
          "[emulator][planted]") {
  REQUIRE(ember::emu::instrumented());  // built with the bounds checks (EMBER_EMULATOR_INSTRUMENT)
  // Indexing the array itself: the compiler's bounds check knows its type and stops the access.
  std::string r = planted(ArrayBug::SharedIndexPastEnd, "(32,0,0)");
  CHECK(contains(r, "index 32 is out of bounds of an array of type 'float [32]'"));
  CHECK(contains(r, "at tests/emulator/kernels_shared.cu:"));

  r = planted(ArrayBug::LocalIndexPastEnd, "(0,0,0)");
  CHECK(contains(r, "index 8 is out of bounds of an array of type 'int [8]'"));
  CHECK(contains(r, "-fsanitize=bounds"));
#ifdef EMBER_TESTS_HAVE_DEBUG_INFO
  CHECK(contains(r, "the access: tests/emulator/kernels_shared.cu:"));
#endif
  correct_kernel_runs();
}

TEST_CASE("emulator memcheck: a local array overrun through a pointer", "[emulator][planted]") {
  // The write itself is not seen; the guard word behind the array is, when the kernel returns.
  const std::string r = planted(ArrayBug::LocalPointerPastEnd, "(0,0,0)");
  CHECK(contains(r, "a write ran past the end of a local array"));
  CHECK(contains(r, "-fstack-protector-strong"));
  correct_kernel_runs();
}

#endif  // EMBER_CUDA_EMULATED
