// Puzzle 05, broadcast: inputs smaller than the output.
//
// THE IDEA. `a + b` with a of shape [rows, 1] and b of shape [1, cols] gives a [rows, cols]
// matrix (NumPy's broadcasting, which ember's elementwise kernels implement). Each input is
// indexed with the output's coordinates minus the dimensions it does not have: a by the row
// alone, b by the column alone. Many threads read the same a[r]: that is fine, reads never race.
//
// SPEC. out[r][c] = a[r] + b[c] for every r < rows, c < cols; a has rows elements, b has cols.
// LAUNCH (fixed). rows = 13, cols = 20; 3 x 2 blocks of 8 x 8 threads, as in puzzle 04.
// WATCH OUT. a is only 13 floats and b 20: index each by its own length, guard both.
// HINT. Puzzle 04's indexing; only the two reads change.
// BUDGET per thread: 2 global reads, 1 global write, no shared memory.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

__global__ void broadcast_kernel(const float* a, const float* b, float* out, int rows, int cols) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/05_broadcast.inc"
#else
  // FILL IN (about 4 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kRows = 13, kCols = 20, kTile = 8;

void run(puzzles::Run& r) {
  std::vector<float> a(kRows), b(kCols), expected(kRows * kCols);
  for (int i = 0; i < kRows; ++i) a[i] = static_cast<float>(100 * (i + 1));
  for (int j = 0; j < kCols; ++j) b[j] = static_cast<float>(j);
  for (int i = 0; i < kRows; ++i)  // the CPU reference
    for (int j = 0; j < kCols; ++j) expected[i * kCols + j] = a[i] + b[j];
  const float* da = r.to_device(a);
  const float* db = r.to_device(b);
  float* out = r.zeros(kRows * kCols);
  const dim3 block(kTile, kTile);
  const dim3 grid((kCols + kTile - 1) / kTile, (kRows + kTile - 1) / kTile);
  EMBER_LAUNCH(grid, block, 0, stream(), broadcast_kernel)(da, db, out, kRows, kCols);
  EMBER_LAUNCH_CHECK("broadcast_kernel");
  r.expect("out", out, expected, 0, kCols);
}

const int registered =
    puzzles::add(5, "broadcast", "a column plus a row makes a matrix",
                 "3 x 2 blocks of 8 x 8 threads, a 13 x 20 output", {2, 1, 0, 0}, run);

}  // namespace
