// bench/gemm/06_vectorized.cuh — rung 6: the data of rung 5 moved with 128-bit instructions:
// float4 loads from global memory, a transposed A tile so that shared-memory reads are float4
// too, and float4 stores of C.
//
// C[M, N] = A[M, K] @ B[K, N], float32, row-major, alpha = 1, beta = 0.
//
// What changes from 05_2d_register_tiles: the same 128 x 128 block tile, BK = 8, 256 threads and
// 8 x 8 outputs per thread, but
//   - global loads: each thread loads 4 consecutive floats of A (along K) and 4 of B (along N)
//     with ONE 128-bit instruction (LDG.128), so the A tile (128 x 8) and the B tile (8 x 128)
//     take one instruction each per thread instead of four;
//   - As is stored TRANSPOSED, As[k][m]: the 8 values of A a thread needs in step k (column k,
//     rows threadRow*8 + 0..7) are now adjacent, and so are the 8 values of B (Bs[k][...]), so a
//     thread fetches its regM and regN with four 128-bit shared loads (LDS.128) instead of 16
//     scalar ones;
//   - the 64 results are written as 16 float4 stores.
// Fewer, wider instructions: the load/store pipeline issues 4x fewer instructions for the same
// bytes, leaving more issue slots for FMAs.
//
// What one thread computes: C[blockRow + threadRow*8 + 0..7, blockCol + threadCol*8 + 0..7],
// threadRow = tid / 16, threadCol = tid % 16 (as in 05).
//
// Memory access: a warp loads its part of the A tile as 16 rows x 8 floats (two float4 per row:
// full 32-byte sectors) and one row of B as 32 float4 = 512 consecutive bytes. The transposing
// store into As costs a 2-way bank conflict (threads 2i and 2i+1 write the same bank); it happens
// once per tile, the reads it speeds up happen 8 times.
//
// When float4 is allowed: a 128-bit access must be 16-byte aligned. The launcher takes the float4
// path only when A, B and C are 16-byte aligned and K and N are multiples of 4: then every row
// of A, B and C starts 16-byte aligned and a group of 4 columns is either entirely inside the
// matrix or entirely outside, so one bounds check per float4 is exact. Otherwise (e.g. the
// MNIST shape [64,64] x [64,10], N = 10) the same kernel is instantiated with scalar loads and
// per-element checks (kVec = false): correct for every size, somewhat slower.
// Measured on an H200 at 4096: 67.4% of cuBLAS.
//
// The next rung (07_warp_tiles.cuh) arranges the threads of each warp so that shared-memory reads
// are conflict-free and overlaps the next tile's global loads with the current tile's FMAs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

// ---- helpers shared by rungs 06, 07 and 08 ----------------------------------------------------

// X[row, col + 0..3] of a row-major [rows, cols] matrix (leading dimension cols); elements
// outside the matrix read as 0. kVec: one 128-bit load, valid when X is 16-byte aligned, cols is
// a multiple of 4 and col is a multiple of 4 (then col < cols implies col + 3 < cols).
template <bool kVec>
__device__ __forceinline__ float4 load4_or_zero(const float* __restrict__ X, int rows, int cols,
                                                int row, int col) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  const float* p = X + static_cast<size_t>(row) * cols + col;
  if constexpr (kVec) {
    if (col < cols) v = *reinterpret_cast<const float4*>(p);
  } else {
    if (col + 0 < cols) v.x = p[0];
    if (col + 1 < cols) v.y = p[1];
    if (col + 2 < cols) v.z = p[2];
    if (col + 3 < cols) v.w = p[3];
  }
  return v;
}

// Writes v to X[row, col + 0..3], skipping what lies outside the [rows, cols] matrix; kVec as
// above.
template <bool kVec>
__device__ __forceinline__ void store4_guarded(float* __restrict__ X, int rows, int cols, int row,
                                               int col, float4 v) {
  if (row >= rows) return;
  float* p = X + static_cast<size_t>(row) * cols + col;
  if constexpr (kVec) {
    if (col < cols) *reinterpret_cast<float4*>(p) = v;
  } else {
    if (col + 0 < cols) p[0] = v.x;
    if (col + 1 < cols) p[1] = v.y;
    if (col + 2 < cols) p[2] = v.z;
    if (col + 3 < cols) p[3] = v.w;
  }
}

// May the float4 path be used for C[M, N] = A[M, K] @ B[K, N]? (see "When float4 is allowed")
inline bool float4_path_ok(const float* A, const float* B, const float* C, int N, int K) {
  const auto aligned16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return K % 4 == 0 && N % 4 == 0 && aligned16(A) && aligned16(B) && aligned16(C);
}

// ---- the kernel -------------------------------------------------------------------------------

namespace rung06 {
constexpr int BM = 128, BN = 128;  // the block's tile of C
constexpr int BK = 8;              // the step along K
constexpr int TM = 8, TN = 8;      // each thread's tile of C (two float4 wide/high)
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
constexpr int kARowsPerPass = kThreads / (BK / 4);  // 128: each thread stages one float4 of A
constexpr int kBRowsPerPass = kThreads / (BN / 4);  // 8: each thread stages one float4 of B
static_assert(TM == 8 && TN == 8, "the compute loop reads two float4 of A and two of B");
static_assert(BM % kARowsPerPass == 0 && BK % kBRowsPerPass == 0, "tiles staged in whole passes");
}  // namespace rung06

template <bool kVec>
__global__ void __launch_bounds__(rung06::kThreads)
    sgemm_vectorized_kernel(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int M, int N, int K) {
  using namespace rung06;
  __shared__ __align__(16) float As[BK][BM];  // TRANSPOSED: As[k][m] = A[blockRow + m, k0 + k]
  __shared__ __align__(16) float Bs[BK][BN];  // Bs[k][n] = B[k0 + k, blockCol + n]
  const int tid = threadIdx.x;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const int threadRow = tid / (BN / TN);  // 0..15
  const int threadCol = tid % (BN / TN);  // 0..15
  const int aRow = tid / (BK / 4), aK = (tid % (BK / 4)) * 4;  // the float4 of A this thread stages
  const int bRow = tid / (BN / 4), bCol = (tid % (BN / 4)) * 4;  // ... and of B

  float acc[TM][TN] = {};
  float regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int r = 0; r < BM; r += kARowsPerPass) {
      const float4 a = load4_or_zero<kVec>(A, M, K, blockRow + aRow + r, k0 + aK);
      As[aK + 0][aRow + r] = a.x;
      As[aK + 1][aRow + r] = a.y;
      As[aK + 2][aRow + r] = a.z;
      As[aK + 3][aRow + r] = a.w;
    }
#pragma unroll
    for (int r = 0; r < BK; r += kBRowsPerPass) {
      *reinterpret_cast<float4*>(&Bs[bRow + r][bCol]) =
          load4_or_zero<kVec>(B, K, N, k0 + bRow + r, blockCol + bCol);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k][threadRow * TM]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k][threadRow * TM + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][threadCol * TN]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][threadCol * TN + 4]);
      regM[0] = a0.x, regM[1] = a0.y, regM[2] = a0.z, regM[3] = a0.w;
      regM[4] = a1.x, regM[5] = a1.y, regM[6] = a1.z, regM[7] = a1.w;
      regN[0] = b0.x, regN[1] = b0.y, regN[2] = b0.z, regN[3] = b0.w;
      regN[4] = b1.x, regN[5] = b1.y, regN[6] = b1.z, regN[7] = b1.w;
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
    for (int j = 0; j < TN; j += 4) {
      store4_guarded<kVec>(C, M, N, row, blockCol + threadCol * TN + j,
                           make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
    }
  }
}

// ---- launcher: grid arithmetic and checks
inline void launch_06(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  using namespace rung06;
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  EMBER_CHECK(grid.y <= 65535, "launch_06: M = ", M, " needs more than 65535 blocks in y");
  if (float4_path_ok(A, B, C, N, K)) {
    EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_vectorized_kernel<true>)(A, B, C, M, N, K);
  } else {
    EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_vectorized_kernel<false>)(A, B, C, M, N, K);
  }
  EMBER_LAUNCH_CHECK("sgemm_vectorized_kernel");
}

}  // namespace ember::bench::gemm
