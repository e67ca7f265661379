// fuzz/driver.cpp — the libFuzzer entry point of fuzz_<name> (EMBER_FUZZ_TARGET is the name): runs
// the target of fuzz/targets/ on each input. A failed property, or any exception that escapes the
// target, ends in abort(), which libFuzzer reports as a crash and saves the input for.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/threading.h"
#include "fuzz/targets/common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ember::set_num_threads(1);  // one fuzzing process per core; the result must not depend on it
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ember::fuzz::Target* const target = ember::fuzz::find_target(EMBER_FUZZ_TARGET);
  if (target == nullptr) {
    std::fprintf(stderr, "fuzz: no target named '%s'\n", EMBER_FUZZ_TARGET);
    std::abort();
  }
  try {
    target->run(data, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nfuzz_%s: %s\n", EMBER_FUZZ_TARGET, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "\nfuzz_%s: an exception that is not a std::exception\n", EMBER_FUZZ_TARGET);
    std::abort();
  }
  return 0;
}
