// Puzzle 04, map2d: 2-D blocks over a matrix.
//
// THE IDEA. Blocks and grids can be 2-D (or 3-D): `threadIdx` and `blockIdx` then have a `.y` as
// well as an `.x`. For a matrix, let x walk the columns and y the rows. A matrix of `rows` x
// `cols` floats is stored row-major: element (r, c) sits at r * cols + c. Neighbouring threads
// in x then touch neighbouring addresses, which is what a GPU's memory wants (docs/glossary.md,
// coalescing).
//
// SPEC. out[r][c] = a[r][c] + 10 for every r < rows, c < cols.
// LAUNCH (fixed). rows = 13, cols = 20; blocks of 8 x 8 threads (dim3(8, 8)), a grid of 3 x 2
//   blocks: 24 columns by 16 rows of threads.
//   c = blockIdx.x * blockDim.x + threadIdx.x,  r = blockIdx.y * blockDim.y + threadIdx.y
// WATCH OUT. The grid overhangs in both directions: guard r and c.
// HINT. Compute the flat index only after the guard.
// BUDGET per thread: 1 global read, 1 global write, no shared memory.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

__global__ void map2d_kernel(const float* a, float* out, int rows, int cols) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/04_map2d.inc"
#else
  // FILL IN (about 4 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kRows = 13, kCols = 20, kTile = 8;

void run(puzzles::Run& r) {
  std::vector<float> a(kRows * kCols), expected(kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i) a[i] = static_cast<float>(i);
  for (int i = 0; i < kRows * kCols; ++i) expected[i] = a[i] + 10;  // the CPU reference
  const float* da = r.to_device(a);
  float* out = r.zeros(kRows * kCols);
  const dim3 block(kTile, kTile);
  const dim3 grid((kCols + kTile - 1) / kTile, (kRows + kTile - 1) / kTile);  // (3, 2)
  EMBER_LAUNCH(grid, block, 0, stream(), map2d_kernel)(da, out, kRows, kCols);
  EMBER_LAUNCH_CHECK("map2d_kernel");
  r.expect("out", out, expected, 0, kCols);
}

const int registered =
    puzzles::add(4, "map2d", "2-D blocks: x for columns, y for rows",
                 "3 x 2 blocks of 8 x 8 threads, a 13 x 20 matrix", {1, 1, 0, 0}, run);

}  // namespace
