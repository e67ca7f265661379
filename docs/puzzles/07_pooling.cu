// Puzzle 07, pooling: a sliding window, with a halo.
//
// THE IDEA. A window sum reads each input several times: out[i] needs a[i-2], a[i-1] and a[i].
// Read straight from global memory, that is 3 reads per thread where 1 would do, since the
// neighbours' threads load those values anyway. So the block stages its chunk in shared memory
// (puzzle 06) — plus the two elements just before it, which belong to the previous block's
// chunk: the *halo*. Two threads load one extra element each.
//
// SPEC. out[i] = a[i-2] + a[i-1] + a[i] for every i in [0, n); a[-1] and a[-2] count as 0.
// LAUNCH (fixed). n = 100; 4 blocks of 32 threads; i = blockIdx.x * blockDim.x + threadIdx.x.
// WATCH OUT. Threads with i >= n have no element, but they must still reach `__syncthreads()`:
// a barrier that some threads of the block never reach is a synccheck report (on a GPU, a hang
// or worse). So guard the loads and the store, not the barrier. The halo of block 0 lies before
// the array: store zeros there instead of reading a[-2].
// HINT. `__shared__ float s[32 + 2];`: s[t + 2] = a[i]; threads 0 and 1 also fill s[t] with
//   a[blockIdx.x * 32 + t - 2] (or 0). Then out[i] = s[t] + s[t + 1] + s[t + 2].
// BUDGET per thread: 2 global reads, 1 global write, 3 shared reads, 2 shared writes.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kThreads = 32, kWindow = 3;

__global__ void pooling_kernel(const float* a, float* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/07_pooling.inc"
#else
  // FILL IN (about 10 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = 100;

void run(puzzles::Run& r) {
  std::vector<float> a(kN), expected(kN, 0);
  for (int i = 0; i < kN; ++i) a[i] = static_cast<float>(i % 7 + 1);
  for (int i = 0; i < kN; ++i)  // the CPU reference
    for (int k = i - kWindow + 1; k <= i; ++k) expected[i] += k >= 0 ? a[k] : 0;
  const float* da = r.to_device(a);
  float* out = r.zeros(kN);
  const int blocks = (kN + kThreads - 1) / kThreads;
  EMBER_LAUNCH(blocks, kThreads, 0, stream(), pooling_kernel)(da, out, kN);
  EMBER_LAUNCH_CHECK("pooling_kernel");
  r.expect("out", out, expected);
}

const int registered = puzzles::add(7, "pooling", "a sliding window: shared memory with a halo",
                                    "4 blocks of 32 threads, n = 100, window 3", {2, 1, 3, 2}, run);

}  // namespace
