// Puzzle 01, map: one thread per element.
//
// THE IDEA. A kernel is the body of a loop with the loop taken away: the launch runs one copy of
// it per CUDA thread, all at once, and each copy asks `threadIdx.x` which element is its own.
//
// SPEC. out[i] = a[i] + 10 for every i in [0, n).
// LAUNCH (fixed). n = 32; one block of 32 threads, so thread i of the block handles element i.
// WATCH OUT. There is no loop to write: 32 threads run this body, each once.
// HINT. `threadIdx.x` is unsigned; `const int i = threadIdx.x;` is all the indexing needed.
// BUDGET per thread: 1 global read, 1 global write, no shared memory.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

__global__ void map_kernel(const float* a, float* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/01_map.inc"
#else
  // FILL IN (1 or 2 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = 32;

void run(puzzles::Run& r) {
  std::vector<float> a(kN), expected(kN);
  for (int i = 0; i < kN; ++i) a[i] = static_cast<float>(i);
  for (int i = 0; i < kN; ++i) expected[i] = a[i] + 10;  // the CPU reference
  const float* da = r.to_device(a);
  float* out = r.zeros(kN);
  EMBER_LAUNCH(1, kN, 0, stream(), map_kernel)(da, out, kN);
  EMBER_LAUNCH_CHECK("map_kernel");
  r.expect("out", out, expected);
}

const int registered = puzzles::add(1, "map", "one thread per element",
                                    "1 block of 32 threads, n = 32", {1, 1, 0, 0}, run);

}  // namespace
