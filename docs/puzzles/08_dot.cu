// Puzzle 08, dot: a block reduction in shared memory.
//
// THE IDEA. A sum has one output but 128 threads: the threads must combine their values. In a
// tree: 64 threads each add the value 64 places to their right, then 32 threads add the value
// 32 places away, ... 7 halvings leave the total with thread 0. Each level reads what the
// level before wrote, so a barrier ends every level.
//
// SPEC. out[0] = a[0] * b[0] + a[1] * b[1] + ... + a[n-1] * b[n-1].
// LAUNCH (fixed). n = 128; one block of 128 threads: thread t starts with a[t] * b[t].
// WATCH OUT. `__syncthreads()` goes after the `if (t < stride)`, not inside it: a barrier only
// some threads reach is a synccheck report. Leave a barrier out and racecheck names the two
// threads that touched one slot. The values are small integers, so the sum is exact.
// HINT. `__shared__ float s[128];`. Keep your running sum in a register and store it after each
//   addition: then each level costs one shared read and one shared write, which is the budget.
// BUDGET per thread: 2 global reads, 1 global write, 7 shared reads, 8 shared writes.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kThreads = 128;

__global__ void dot_kernel(const float* a, const float* b, float* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/08_dot.inc"
#else
  // FILL IN (about 10 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = kThreads;

void run(puzzles::Run& r) {
  std::vector<float> a(kN), b(kN);
  float dot = 0;  // the CPU reference
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i % 5 + 1);
    b[i] = static_cast<float>(i % 3 - 1);
    dot += a[i] * b[i];
  }
  const float* da = r.to_device(a);
  const float* db = r.to_device(b);
  float* out = r.zeros(1);
  EMBER_LAUNCH(1, kThreads, 0, stream(), dot_kernel)(da, db, out, kN);
  EMBER_LAUNCH_CHECK("dot_kernel");
  r.expect("out", out, {dot});
}

const int registered = puzzles::add(8, "dot", "a tree reduction in shared memory",
                                    "1 block of 128 threads, n = 128", {2, 1, 7, 8}, run);

}  // namespace
