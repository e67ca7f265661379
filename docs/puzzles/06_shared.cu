// Puzzle 06, shared: a block's scratchpad, and the barrier that guards it.
//
// THE IDEA. When every thread of a block needs every value of the block's chunk, reading them all
// from global memory costs each thread 32 reads of the slow memory. Shared memory is a small,
// fast scratchpad that the threads of one block share: each thread loads ONE value from global
// memory into it, and then all of them read the whole chunk from there. Between the writes and
// the reads stands `__syncthreads()`, a barrier: no thread passes it until every thread of the
// block has reached it, so no thread reads s[j] before thread j has written it.
//
// SPEC. Each block owns a chunk of 32 consecutive elements (block b: elements 32b .. 32b + 31).
//   out[i] = how many elements of i's chunk are smaller than a[i] (its rank in the chunk; the
//   values are all different). out is an int array.
// LAUNCH (fixed). n = 128; 4 blocks of 32 threads; i = blockIdx.x * blockDim.x + threadIdx.x.
// WATCH OUT. Without the barrier, racecheck reports the read of a value another thread writes;
// reading a slot that no thread wrote is an initcheck report.
// HINT. Declare the scratchpad inside the kernel: `__shared__ float s[32];` (one copy per block).
//   Thread t stores its value at s[t]; after the barrier it compares its value with s[0..31].
//   Keep your own value in a register: the budget counts the 32 reads of s, not a 33rd.
// BUDGET per thread: 1 global read, 1 global write, 32 shared reads, 1 shared write.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kThreads = 32;

__global__ void shared_kernel(const float* a, int* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/06_shared.inc"
#else
  // FILL IN (about 8 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = 128;

void run(puzzles::Run& r) {
  std::vector<float> a(kN);
  for (int i = 0; i < kN; ++i) a[i] = static_cast<float>((i * 37 + 11) % kN);  // a permutation
  std::vector<int> expected(kN, 0);
  for (int i = 0; i < kN; ++i) {  // the CPU reference
    const int start = i / kThreads * kThreads;
    for (int j = start; j < start + kThreads; ++j) expected[i] += a[j] < a[i] ? 1 : 0;
  }
  const float* da = r.to_device(a);
  int* out = r.zeros_int(kN);
  EMBER_LAUNCH(kN / kThreads, kThreads, 0, stream(), shared_kernel)(da, out, kN);
  EMBER_LAUNCH_CHECK("shared_kernel");
  r.expect("out", out, expected);
}

const int registered = puzzles::add(6, "shared", "stage a block's chunk in shared memory",
                                    "4 blocks of 32 threads, n = 128", {1, 1, 32, 1}, run);

}  // namespace
