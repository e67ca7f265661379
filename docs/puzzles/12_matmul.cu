// Puzzle 12, matmul: shared-memory tiles.
//
// THE IDEA. C = A B with one thread per C[r][c] reads a row of A and a column of B: 2K global
// reads per thread, and each value of A is read again by every thread of its row. Tiling cuts
// that by the tile's width: the 8 x 8 threads of a block load an 8 x 8 tile of A and one of B
// into shared memory (one value each), barrier, and each thread does 8 steps of its dot product
// from there; barrier again before the next pair of tiles overwrites them. K = 36 takes 5 tiles,
// so a thread makes 10 global reads instead of 72. ember's own GEMM kernel
// (kernels/cuda/gemm_tiled.cu) is this idea, grown up.
//
// SPEC. C[r][c] = sum_k A[r][k] * B[k][c]; A is M x K, B is K x N, C is M x N, all row-major.
// LAUNCH (fixed). M = 24, N = 20, K = 36; blocks of kTile x kTile = 8 x 8 threads, a grid of
//   3 x 3 blocks: c = blockIdx.x * 8 + threadIdx.x, r = blockIdx.y * 8 + threadIdx.y.
// WATCH OUT. N = 20 and K = 36 are not multiples of 8: a tile that overhangs A or B gets zeros
// there (they add nothing), and threads with c >= N still load their part of the tiles and reach
// both barriers. The second barrier matters: without it, racecheck sees the next tile's write
// race with a slower thread's read of this one.
// HINT. `__shared__ float As[kTile][kTile], Bs[kTile][kTile];` thread (x, y) loads
//   As[y][x] = A[r][k0 + x] and Bs[y][x] = B[k0 + y][c]; then acc += As[y][k] * Bs[k][x].
// BUDGET per thread: 10 global reads, 1 global write, 80 shared reads, 10 shared writes.
#include <cuda_runtime.h>

#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/cuda/launch.cuh"

namespace {

using ember::kernels::cuda::stream;

constexpr int kTile = 8;

__global__ void matmul_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
#ifdef EMBER_PUZZLE_SOLUTIONS
#include "solutions/12_matmul.inc"
#else
  // FILL IN (about 15 lines)
#endif
}

// ---- the checker's side: inputs, launch, CPU reference ----------------------------------------
constexpr int kM = 24, kN = 20, kK = 36;

void run(puzzles::Run& r) {
  std::vector<float> A(kM * kK), B(kK * kN), expected(kM * kN, 0);
  for (int i = 0; i < kM * kK; ++i) A[i] = static_cast<float>(i % 7 - 3);
  for (int i = 0; i < kK * kN; ++i) B[i] = static_cast<float>(i % 5 - 2);
  for (int i = 0; i < kM; ++i)  // the CPU reference (small integers: exact in float)
    for (int j = 0; j < kN; ++j)
      for (int k = 0; k < kK; ++k) expected[i * kN + j] += A[i * kK + k] * B[k * kN + j];
  const float* dA = r.to_device(A);
  const float* dB = r.to_device(B);
  float* C = r.zeros(kM * kN);
  const dim3 block(kTile, kTile);
  const dim3 grid((kN + kTile - 1) / kTile, (kM + kTile - 1) / kTile);
  EMBER_LAUNCH(grid, block, 0, stream(), matmul_kernel)(dA, dB, C, kM, kN, kK);
  EMBER_LAUNCH_CHECK("matmul_kernel");
  r.expect("C", C, expected, 0, kN);
}

const int registered =
    puzzles::add(12, "matmul", "tiles of A and B staged in shared memory",
                 "3 x 3 blocks of 8 x 8 threads, 24 x 36 times 36 x 20", {10, 1, 80, 10}, run);

}  // namespace
