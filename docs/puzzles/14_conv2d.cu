// Puzzle 14, conv2d: a 2-D tile with a halo, loaded by fewer threads than it has slots.
//
// THE IDEA. A 3 x 3 convolution needs, for an 8 x 8 block of outputs, a 10 x 10 patch of the
// input: the block's own 8 x 8 plus a one-element border, the 2-D halo of puzzle 07. That is 100
// values for 64 threads, so the loading is a loop over the tile's slots, 64 at a time (thread t
// loads slots t and t + 64, when there is one). Inside a block, threads take turns over work
// larger than the block the way grid-stride loops take turns over work larger than the grid.
//
// SPEC. out[r][c] = sum over dr, dc in {0, 1, 2} of a[r + dr - 1][c + dc - 1] * w[dr][dc], where
//   a is rows x cols (row-major), w is 3 x 3, and a is 0 outside its edges (zero padding).
// LAUNCH (fixed). rows = 15, cols = 20; 3 x 2 blocks of 8 x 8 threads, as in puzzle 04:
//   c = blockIdx.x * 8 + threadIdx.x, r = blockIdx.y * 8 + threadIdx.y.
// WATCH OUT. Every thread helps load the tile, even one whose own output is outside the image,
// and all of them reach the barrier. Slots outside the image get 0, not a read.
// HINT. `__shared__ float tile[kTile + 2][kTile + 2], ws[9];` with t = threadIdx.y * 8 +
//   threadIdx.x, slot k holds a[blockIdx.y * 8 + k / 10 - 1][blockIdx.x * 8 + k % 10 - 1];
//   threads t < 9 load w[t] into ws. Output (x, y) of the block then reads tile[y + dr][x + dc].
// BUDGET per thread: 3 global reads, 1 global write, 18 shared reads, 3 shared writes.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kTile = 8, kK = 3;

__global__ void conv2d_kernel(const float* a, const float* w, float* out, int rows, int cols) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/14_conv2d.inc"
#else
  // FILL IN (about 20 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kRows = 15, kCols = 20;

void run(puzzles::Run& r) {
  std::vector<float> a(kRows * kCols), w(kK * kK), expected(kRows * kCols, 0);
  for (int i = 0; i < kRows * kCols; ++i) a[i] = static_cast<float>((i * 7) % 11 - 5);
  for (int i = 0; i < kK * kK; ++i) w[i] = static_cast<float>(i % 4 - 1);
  for (int y = 0; y < kRows; ++y)  // the CPU reference (small integers: exact in float)
    for (int x = 0; x < kCols; ++x)
      for (int dr = 0; dr < kK; ++dr)
        for (int dc = 0; dc < kK; ++dc) {
          const int yy = y + dr - 1, xx = x + dc - 1;
          if (yy >= 0 && yy < kRows && xx >= 0 && xx < kCols)
            expected[y * kCols + x] += a[yy * kCols + xx] * w[dr * kK + dc];
        }
  const float* da = r.to_device(a);
  const float* dw = r.to_device(w);
  float* out = r.zeros(kRows * kCols);
  const dim3 block(kTile, kTile);
  const dim3 grid((kCols + kTile - 1) / kTile, (kRows + kTile - 1) / kTile);
  EMBER_LAUNCH(grid, block, 0, stream(), conv2d_kernel)(da, dw, out, kRows, kCols);
  EMBER_LAUNCH_CHECK("conv2d_kernel");
  r.expect("out", out, expected, 0, kCols);
}

const int registered =
    puzzles::add(14, "conv2d", "a 2-D halo, loaded in a loop over the tile",
                 "3 x 2 blocks of 8 x 8 threads, 15 x 20 image, 3 x 3 filter", {3, 1, 18, 3}, run);

}  // namespace
