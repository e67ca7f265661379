// bench/gemm/01_naive.cuh — rung 1 of the SGEMM ladder: one thread per output element.
//
// C[M, N] = A[M, K] @ B[K, N], all float32, row-major (C[i, j] = c[i * N + j]), alpha = 1, beta = 0.
//
// What one thread computes: the single element C[row, col], as the dot product of row `row` of A
// with column `col` of B, K multiply-adds in a register. A block is 32 x 32 threads and covers a
// 32 x 32 square of C; the grid covers C, and threads that fall outside it (M or N not a multiple
// of 32) return before touching memory.
//
// Memory access, and why this is slow: the 32 threads of a warp are consecutive threadIdx.x,
// and this kernel maps threadIdx.x to the ROW of C. In one step k, the warp therefore reads
//   A[row + 0..31, k]  — 32 floats K * 4 bytes apart: 32 separate 32-byte memory transactions
//                        to use 4 bytes of each (1/8 of the bandwidth it pays for);
//   B[k, col]          — the same float for all 32 threads (one broadcast, fine);
// and at the end it writes C[row + 0..31, col], again 32 scattered transactions. Every operand is
// fetched from L2/DRAM again by every thread that needs it: 2K loads per 2K flops, no reuse
// beyond what the caches happen to catch. Measured on an H200 at 4096: 1.0% of cuBLAS
// (bench/RESULTS.md). This rung is the baseline every later one is measured against, not a
// kernel anyone should run.
//
// The next rung (02_coalesced.cuh) changes only the mapping of threads to (row, col).
#pragma once

#include <cuda_runtime.h>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

namespace rung01 {
constexpr int kBlock = 32;  // the block is kBlock x kBlock threads and covers that square of C
}

__global__ void sgemm_naive_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                   float* __restrict__ C, int M, int N, int K) {
  // Consecutive threads of a warp take consecutive ROWS: the uncoalesced choice (see above).
  const int row = blockIdx.x * rung01::kBlock + threadIdx.x;
  const int col = blockIdx.y * rung01::kBlock + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += A[static_cast<size_t>(row) * K + k] * B[static_cast<size_t>(k) * N + col];
  }
  C[static_cast<size_t>(row) * N + col] = acc;
}

// ---- launcher: grid arithmetic and checks
inline void launch_01(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;  // nothing to write (a grid of 0 blocks is a launch error)
  using rung01::kBlock;
  const dim3 block(kBlock, kBlock);
  const dim3 grid((M + kBlock - 1) / kBlock, (N + kBlock - 1) / kBlock);  // x: rows, y: columns
  EMBER_CHECK(grid.y <= 65535, "launch_01: N = ", N, " needs more than 65535 blocks in y");
  // EMBER_LAUNCH(grid, block, shared_bytes, stream, kernel)(args) is nvcc's
  // kernel<<<grid, block, shared_bytes, stream>>>(args); the macro (kernels/cuda/launch.cuh)
  // lets the emulation build, which has no <<<>>>, run the same kernel on the CPU.
  EMBER_LAUNCH(grid, block, 0, stream, sgemm_naive_kernel)(A, B, C, M, N, K);
  EMBER_LAUNCH_CHECK("sgemm_naive_kernel");
}

}  // namespace ember::bench::gemm
