// bench/gemm/05_2d_register_tiles.cuh — rung 5: each thread computes an 8 x 8 square of C as a
// sum of outer products held in registers.
//
// C[M, N] = A[M, K] @ B[K, N], float32, row-major, alpha = 1, beta = 0.
//
// What changes from 04_1d_register_tiles: a thread now owns TM x TN = 8 x 8 outputs instead of
// 8 x 1. In each step k it loads a column slice of A (8 values, regM) and a row slice of B
// (8 values, regN) from shared memory into registers and adds their OUTER product to its 64
// accumulators: 16 shared loads for 64 FMAs (4 FMAs per load, against ~0.9 in 04 and 0.5 in 03).
// The block grows to a 128 x 128 tile of C with 256 threads, stepping along K by BK = 8; staging
// a 128 x 8 tile of A and an 8 x 128 tile of B takes each thread 4 loads of each.
//
// What one thread computes: C[blockRow + threadRow*8 + 0..7, blockCol + threadCol*8 + 0..7] with
// threadRow = tid / 16 and threadCol = tid % 16.
//
// Memory access:
//   global: the A tile is loaded as rows of 8 consecutive floats (4 rows per warp: full 32-byte
//     sectors), the B tile as 128 consecutive floats per row (coalesced); 4 passes each.
//   shared: As[threadRow*8 + i][k] — a warp holds two threadRow values, so 2 addresses (each a
//     broadcast to 16 threads), 64 floats apart: the same bank, a 2-way conflict;
//     Bs[k][threadCol*8 + j] — 16 addresses 8 floats apart, which fall into 4 banks: a 4-way
//     conflict. Scalar loads, one 4-byte value per instruction: the next rung transposes As and
//     reads both tiles with 128-bit loads.
//   Tiles past M, N or K are zero-filled; only the final stores are guarded.
// Why faster: arithmetic intensity per thread (FMAs per shared load) goes up 4x and per block
// (a 128 x 128 tile for 256 values per k) 2x: the kernel starts to be bound by the FMA units
// rather than by loads. Measured on an H200 at 4096: 60.6% of cuBLAS.
//
// The next rung (06_vectorized.cuh) moves the same data with 128-bit (float4) instructions.
#pragma once

#include <cuda_runtime.h>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

namespace rung05 {
constexpr int BM = 128, BN = 128;  // the block's tile of C
constexpr int BK = 8;              // the step along K
constexpr int TM = 8, TN = 8;      // each thread's tile of C
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
constexpr int kARowsPerPass = kThreads / BK;     // 32 rows of the A tile staged per pass
constexpr int kBRowsPerPass = kThreads / BN;     // 2 rows of the B tile staged per pass
static_assert(kThreads % BK == 0 && BM % kARowsPerPass == 0, "A tile staged in whole passes");
static_assert(kThreads % BN == 0 && BK % kBRowsPerPass == 0, "B tile staged in whole passes");
}  // namespace rung05

__global__ void __launch_bounds__(rung05::kThreads)
    sgemm_2d_register_tiles_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                   float* __restrict__ C, int M, int N, int K) {
  using namespace rung05;
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const int threadRow = tid / (BN / TN);  // 0..15
  const int threadCol = tid % (BN / TN);  // 0..15
  const int aRow = tid / BK, aCol = tid % BK;  // first element this thread stages of the A tile
  const int bRow = tid / BN, bCol = tid % BN;  // ... and of the B tile

  float acc[TM][TN] = {};
  float regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int r = 0; r < BM; r += kARowsPerPass) {
      const int row = blockRow + aRow + r, k = k0 + aCol;
      As[aRow + r][aCol] = (row < M && k < K) ? A[static_cast<size_t>(row) * K + k] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < BK; r += kBRowsPerPass) {
      const int k = k0 + bRow + r, col = blockCol + bCol;
      Bs[bRow + r][bCol] = (k < K && col < N) ? B[static_cast<size_t>(k) * N + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) regM[i] = As[threadRow * TM + i][k];
#pragma unroll
      for (int j = 0; j < TN; ++j) regN[j] = Bs[k][threadCol * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = blockCol + threadCol * TN + j;
      if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc[i][j];
    }
  }
}

// ---- launcher: grid arithmetic and checks
inline void launch_05(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  using namespace rung05;
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  EMBER_CHECK(grid.y <= 65535, "launch_05: M = ", M, " needs more than 65535 blocks in y");
  EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_2d_register_tiles_kernel)(A, B, C, M, N, K);
  EMBER_LAUNCH_CHECK("sgemm_2d_register_tiles_kernel");
}

}  // namespace ember::bench::gemm
