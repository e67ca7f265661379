// tests/emulator/kernels_shared.h — planted overruns of __shared__ and local arrays, for
// tests/emulator/shared_memory.cpp (kernels in kernels_shared.cu; emulation build only). Each
// launcher returns the launch's cudaError_t as an int, as those of kernels.h do.
#pragma once

namespace ember_test {

enum class ArrayBug {
  None,
  SharedWritePastEnd,   // thread 32 writes first[32], through a pointer
  SharedReadPastEnd,    // thread 31 reads second[32], through a pointer
  SharedIndexPastEnd,   // thread 32 writes first[32], indexing the array itself
  SharedAtomicPastEnd,  // thread 32 does atomicAdd(&first[32], ...), through a pointer
  LocalIndexPastEnd,    // thread 0 fills local[0..8] of an int local[8], indexing it
  LocalPointerPastEnd,  // thread 0 fills local[0..11] of an int local[8], through a pointer
};

// One block of 32 threads (33 for the bugs that need thread 32) and two __shared__ arrays of 32
// floats, `first` and `second`. Without a bug out[t] = 2 * t + 200 for t < 32.
int launch_two_tiles(float* out, ArrayBug bug);

}  // namespace ember_test
