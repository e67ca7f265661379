// bench/gemm/02_coalesced.cuh — rung 2: the same arithmetic, with memory accesses coalesced.
//
// C[M, N] = A[M, K] @ B[K, N], float32, row-major, alpha = 1, beta = 0.
//
// What changes from 01_naive: only which thread computes which element. threadIdx.x (the index
// that is consecutive within a warp) now selects the COLUMN of C instead of the row.
//
// What one thread computes: still one element C[row, col], a K-long dot product in a register.
// A block is 32 x 32 threads covering a 32 x 32 square of C; out-of-range threads return.
//
// Memory access: in step k the 32 threads of a warp have the same row and consecutive columns, so
//   A[row, k]          — one float, the same for all 32 threads: a single broadcast load;
//   B[k, col + 0..31]  — 32 consecutive floats: one 128-byte request, every byte used;
//   C[row, col + 0..31] at the end — one 128-byte write.
// The memory system moves whole 32-byte sectors; 01 used 4 bytes of each sector it fetched for A
// and for C, this rung uses all of them. Why it is faster: the same number of load instructions
// now move ~8x fewer sectors, so the kernel is limited by L1/L2 bandwidth instead of by the number
// of transactions. Still no data reuse in registers or shared memory: each element of A and B is
// loaded from the cache hierarchy once per thread that uses it (2 loads per FMA). Measured on
// an H200 at 4096: 11.5% of cuBLAS (bench/RESULTS.md).
//
// The next rung (03_shared_tiles.cuh) makes a block share what its threads load.
#pragma once

#include <cuda_runtime.h>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

namespace rung02 {
constexpr int kBlock = 32;  // the block is kBlock x kBlock threads and covers that square of C
}

__global__ void sgemm_coalesced_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int M, int N, int K) {
  // Consecutive threads of a warp take consecutive COLUMNS: loads of B and stores of C coalesce.
  const int col = blockIdx.x * rung02::kBlock + threadIdx.x;
  const int row = blockIdx.y * rung02::kBlock + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<size_t>(row) * K;  // row `row` of A
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k] * B[static_cast<size_t>(k) * N + col];
  C[static_cast<size_t>(row) * N + col] = acc;
}

// ---- launcher: grid arithmetic and checks
inline void launch_02(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  using rung02::kBlock;
  const dim3 block(kBlock, kBlock);
  const dim3 grid((N + kBlock - 1) / kBlock, (M + kBlock - 1) / kBlock);  // x: columns, y: rows
  EMBER_CHECK(grid.y <= 65535, "launch_02: M = ", M, " needs more than 65535 blocks in y");
  EMBER_LAUNCH(grid, block, 0, stream, sgemm_coalesced_kernel)(A, B, C, M, N, K);
  EMBER_LAUNCH_CHECK("sgemm_coalesced_kernel");
}

}  // namespace ember::bench::gemm
