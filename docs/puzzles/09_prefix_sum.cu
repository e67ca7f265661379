// Puzzle 09, prefix_sum: a block scan, two barriers a step.
//
// THE IDEA. out[i] = a[0] + ... + a[i] looks sequential, but it takes log2(n) parallel steps:
// at step k (offset 1, 2, 4, ...) every thread t >= offset adds the value `offset` places to its
// left. After the step with offset 32, each slot holds the sum of the 64 values up to it. The
// catch: thread t reads slot t - offset while thread t - offset may be overwriting it. So every
// step is read, barrier, write, barrier: all reads of a step happen before any write of it.
//
// SPEC. out[i] = a[0] + a[1] + ... + a[i] (an inclusive prefix sum) for every i in [0, n).
// LAUNCH (fixed). n = 64; one block of 64 threads.
// WATCH OUT. With one barrier per step, racecheck reports the read and the write of one slot
// by two threads with nothing ordering them.
// HINT. `__shared__ float s[64];`, your running value in a register; at each step read
//   `s[t - offset]` into a register if t >= offset, barrier, add and store, barrier.
// BUDGET per thread: 1 global read, 1 global write, 6 shared reads, 7 shared writes.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kThreads = 64;

__global__ void prefix_sum_kernel(const float* a, float* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/09_prefix_sum.inc"
#else
  // FILL IN (about 12 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = kThreads;

void run(puzzles::Run& r) {
  std::vector<float> a(kN), expected(kN);
  float running = 0;  // the CPU reference
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i % 4 + 1);
    running += a[i];
    expected[i] = running;
  }
  const float* da = r.to_device(a);
  float* out = r.zeros(kN);
  EMBER_LAUNCH(1, kThreads, 0, stream(), prefix_sum_kernel)(da, out, kN);
  EMBER_LAUNCH_CHECK("prefix_sum_kernel");
  r.expect("out", out, expected);
}

const int registered = puzzles::add(9, "prefix_sum", "a scan: read, barrier, write, barrier",
                                    "1 block of 64 threads, n = 64", {1, 1, 6, 7}, run);

}  // namespace
