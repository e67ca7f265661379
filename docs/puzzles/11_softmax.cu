// Puzzle 11, softmax: a warp per row, three passes, numerically safe.
//
// THE IDEA. softmax(x)_c = exp(x_c) / sum_k exp(x_k) over one row. exp(100) is already 2.7e43
// and exp(89) overflows float to infinity, so the safe form subtracts the row's maximum first:
// exp(x_c - m) / sum_k exp(x_k - m), the same value with every exponent <= 0. That makes three
// passes over the row: its max, the sum of exp(x - max), and the division. Here one warp owns a
// row: lane l takes columns l, l + 32, l + 64, and after each of the first two passes the 32
// lanes combine their partial results with shuffles. With `__shfl_xor_sync` (lane l reads lane
// l ^ d) every lane ends with the result, not just lane 0.
//
// SPEC. out[r][c] = exp(a[r][c] - m_r) / sum_k exp(a[r][k] - m_r), m_r = max_k a[r][k].
// LAUNCH (fixed). rows = 6, cols = kCols = 80; one block of 32 threads (one warp) per row:
//   grid of 6 blocks, row = blockIdx.x, lane = threadIdx.x.
// WATCH OUT. Row 2 holds values near 1000 and row 3 near -1000: the unsafe form gives inf / inf
// (NaN) or 0 / 0 there. Lanes with fewer columns (80 is not a multiple of 32) must still take
// part in every shuffle: give them a neutral value (-INFINITY for a max, 0 for a sum).
// HINT. Read each element once: keep a lane's 3 values in a small local array
//   `float v[kPerLane];` (registers), from the max pass to the final store. Use expf, fmaxf.
// BUDGET per thread: 3 global reads, 3 global writes, no shared memory.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kCols = 80, kPerLane = (kCols + 31) / 32;  // 3 columns per lane at most
constexpr unsigned kFullMask = 0xffffffffu;

__global__ void softmax_kernel(const float* a, float* out, int rows) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/11_softmax.inc"
#else
  // FILL IN (about 20 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kRows = 6;

void run(puzzles::Run& r) {
  std::vector<float> a(kRows * kCols), expected(kRows * kCols);
  const float offsets[kRows] = {0.0f, 3.0f, 1000.0f, -1000.0f, 0.5f, -7.0f};
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kCols; ++j)
      a[i * kCols + j] = offsets[i] + static_cast<float>((i * 7 + j * 13) % 17) * 0.25f;
  for (int i = 0; i < kRows; ++i) {  // the CPU reference, in double
    double m = -INFINITY, sum = 0;
    for (int j = 0; j < kCols; ++j) m = std::max(m, static_cast<double>(a[i * kCols + j]));
    for (int j = 0; j < kCols; ++j) sum += std::exp(a[i * kCols + j] - m);
    for (int j = 0; j < kCols; ++j)
      expected[i * kCols + j] = static_cast<float>(std::exp(a[i * kCols + j] - m) / sum);
  }
  const float* da = r.to_device(a);
  float* out = r.zeros(kRows * kCols);
  EMBER_LAUNCH(kRows, 32, 0, stream(), softmax_kernel)(da, out, kRows);
  EMBER_LAUNCH_CHECK("softmax_kernel");
  r.expect("out", out, expected, 1e-5f, kCols);
}

const int registered =
    puzzles::add(11, "softmax", "max, sum of exp, normalize: a warp per row",
                 "6 blocks of 32 threads (a warp per row), 6 x 80", {3, 3, 0, 0}, run);

}  // namespace
