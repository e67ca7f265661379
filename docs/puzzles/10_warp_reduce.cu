// Puzzle 10, warp_reduce: a reduction with warp shuffles.
//
// THE IDEA. The 32 threads of a *warp* run in lockstep, and a shuffle lets a thread read another
// lane's register directly: `__shfl_down_sync(0xffffffff, v, d)` returns lane (l + d)'s v to lane
// l. Five shuffles (d = 16, 8, 4, 2, 1) sum a warp's 32 values into lane 0 with no shared memory
// and no barrier. Shared memory is then needed only to pass each warp's total to one warp,
// which sums them with shuffles again. This is the tree of ember's reductions
// (kernels/cuda/reduce.cu, `warp_reduce`; the picture is in docs/kernels.md).
//
// SPEC. out[0] = a[0] + a[1] + ... + a[n-1].
// LAUNCH (fixed). n = 256; one block of 256 threads = 8 warps. lane = t % 32, warp = t / 32.
// WATCH OUT. Every lane that the mask 0xffffffff names must reach the shuffle: calling it inside
// `if (lane < 8)` is a synccheck report. Let all 32 lanes of warp 0 shuffle, the lanes >= 8
// with a 0. Puzzle 08's tree in shared memory would give the right sum, and fail the budget:
// it allows each thread one shared write and one shared read, no more.
// HINT. `__shared__ float partial[8];`: lane 0 of warp w stores its warp's sum in partial[w];
//   barrier; warp 0 loads partial[lane] (or 0) and shuffles again; thread 0 writes out[0].
// BUDGET per thread: 1 global read, 1 global write, 1 shared read, 1 shared write.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

__global__ void warp_reduce_kernel(const float* a, float* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/10_warp_reduce.inc"
#else
  // FILL IN (about 12 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = kThreads;

void run(puzzles::Run& r) {
  std::vector<float> a(kN);
  float sum = 0;  // the CPU reference
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i % 9 - 3);
    sum += a[i];
  }
  const float* da = r.to_device(a);
  float* out = r.zeros(1);
  EMBER_LAUNCH(1, kThreads, 0, stream(), warp_reduce_kernel)(da, out, kN);
  EMBER_LAUNCH_CHECK("warp_reduce_kernel");
  r.expect("out", out, {sum});
}

const int registered =
    puzzles::add(10, "warp_reduce", "shuffles: lanes read each other's registers",
                 "1 block of 256 threads (8 warps), n = 256", {1, 1, 1, 1}, run);

}  // namespace
