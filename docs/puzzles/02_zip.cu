// Puzzle 02, zip: two inputs, one index.
//
// THE IDEA. Elementwise ops with several inputs (a + b, a * b, where(c, a, b)) are maps too:
// every input is read at the same index as the output is written.
//
// SPEC. out[i] = a[i] * b[i] for every i in [0, n).
// LAUNCH (fixed). n = 32; one block of 32 threads.
// WATCH OUT. Read each input once: the budget allows one read of a and one of b.
// HINT. Puzzle 01 with one more pointer.
// BUDGET per thread: 2 global reads, 1 global write, no shared memory.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

__global__ void zip_kernel(const float* a, const float* b, float* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/02_zip.inc"
#else
  // FILL IN (1 or 2 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = 32;

void run(puzzles::Run& r) {
  std::vector<float> a(kN), b(kN), expected(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i + 1);
    b[i] = static_cast<float>(3 - i % 5);
    expected[i] = a[i] * b[i];  // the CPU reference
  }
  const float* da = r.to_device(a);
  const float* db = r.to_device(b);
  float* out = r.zeros(kN);
  EMBER_LAUNCH(1, kN, 0, stream(), zip_kernel)(da, db, out, kN);
  EMBER_LAUNCH_CHECK("zip_kernel");
  r.expect("out", out, expected);
}

const int registered = puzzles::add(2, "zip", "several inputs at one index",
                                    "1 block of 32 threads, n = 32", {2, 1, 0, 0}, run);

}  // namespace
