// Puzzle 03, guards: more threads than elements.
//
// THE IDEA. A launch is made of whole blocks, so for n = 100 elements and blocks of 32 threads
// the grid has 4 blocks = 128 threads. Threads 100..127 have no element: each thread must check
// its index against n (a *guard*) before it touches memory. Every kernel of ember has one.
//
// SPEC. out[i] = a[i] + 10 for every i in [0, n); threads with i >= n do nothing.
// LAUNCH (fixed). n = 100; 4 blocks of 32 threads. A thread's element is its index in the grid:
//   i = blockIdx.x * blockDim.x + threadIdx.x
// WATCH OUT. `a` holds exactly 100 floats. Reading a[100] is outside the allocation: on a GPU it
// may read garbage or crash; here memcheck stops the kernel and names the thread and the line.
// HINT. `if (i < n) ...`, or return early: nothing later in this kernel needs every thread.
// BUDGET per thread: 1 global read, 1 global write, no shared memory.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

__global__ void guards_kernel(const float* a, float* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/03_guards.inc"
#else
  // FILL IN (about 3 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = 100, kThreads = 32;

void run(puzzles::Run& r) {
  std::vector<float> a(kN), expected(kN);
  for (int i = 0; i < kN; ++i) a[i] = static_cast<float>(2 * i);
  for (int i = 0; i < kN; ++i) expected[i] = a[i] + 10;  // the CPU reference
  const float* da = r.to_device(a);
  float* out = r.zeros(kN);
  const int blocks = (kN + kThreads - 1) / kThreads;  // 4: rounded up to whole blocks
  EMBER_LAUNCH(blocks, kThreads, 0, stream(), guards_kernel)(da, out, kN);
  EMBER_LAUNCH_CHECK("guards_kernel");
  r.expect("out", out, expected);
}

const int registered = puzzles::add(3, "guards", "more threads than elements: check i < n",
                                    "4 blocks of 32 threads, n = 100", {1, 1, 0, 0}, run);

}  // namespace
