// Puzzle 13, histogram: atomics.
//
// THE IDEA. Counting how many values fall in each bin makes many threads add 1 to the same
// counter. `count[bin] += 1` is a read, an add and a write: two threads that read the same old
// count both write old + 1, and one increment is lost. `atomicAdd(&count[bin], 1)` does the
// three as one indivisible step. Atomics on global memory are slow when many threads hit one
// address, so the block first counts in shared memory (a private histogram), and then each bin
// is written to global memory once.
//
// SPEC. out[b] = how many of a[0..n) equal b, for the kBins = 16 bins b (0 <= a[i] < 16, ints).
// LAUNCH (fixed). n = 256; one block of 256 threads, thread t looks at a[t].
// WATCH OUT. `s[bin] += 1` in shared memory is a racecheck report (two threads, one slot, no
// barrier between them); atomics on it are not. The private histogram must be zeroed (and the
// zeros be visible: barrier) before anyone counts, and complete (barrier) before it is copied.
// Counting straight into global memory with atomicAdd gives the right answer but costs each
// thread one more global read (an atomic reads and writes): over budget.
// HINT. `__shared__ int s[kBins];` threads t < 16 zero s[t]; barrier; atomicAdd(&s[a[t]], 1);
//   barrier; threads t < 16 write out[t] = s[t].
// BUDGET per thread: 1 global read, 1 global write, 2 shared reads, 2 shared writes.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kBins = 16, kThreads = 256;

__global__ void histogram_kernel(const int* a, int* out, int n) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/13_histogram.inc"
#else
  // FILL IN (about 8 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kN = kThreads;

void run(puzzles::Run& r) {
  std::vector<int> a(kN), expected(kBins, 0);
  for (int i = 0; i < kN; ++i) a[i] = (i * i + 3 * i) % 13 + (i % 11 == 0 ? 3 : 0);
  for (int i = 0; i < kN; ++i) ++expected[a[i]];  // the CPU reference
  const int* da = r.to_device(a);
  int* out = r.zeros_int(kBins);
  EMBER_LAUNCH(1, kThreads, 0, stream(), histogram_kernel)(da, out, kN);
  EMBER_LAUNCH_CHECK("histogram_kernel");
  r.expect("out", out, expected);
}

const int registered = puzzles::add(13, "histogram", "atomics: many threads, one counter",
                                    "1 block of 256 threads, n = 256, 16 bins", {1, 1, 2, 2}, run);

}  // namespace
