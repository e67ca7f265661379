// bench/gemm/07_warp_tiles.cuh — rung 7: warp tiling (each warp owns a 64 x 32 region of the
// block tile, and its 32 lanes are laid out so every shared-memory read is conflict-free), plus
// double buffering (the next K tile is fetched from global memory while the current one is
// multiplied). The best FP32 kernel of the ladder.
//
// C[M, N] = A[M, K] @ B[K, N], float32, row-major, alpha = 1, beta = 0.
//
// The hierarchy, outermost first:
//   block  (256 threads)  computes a BM x BN = 128 x 128 tile of C, stepping along K by BK = 8;
//   warp   (8 per block, 2 rows x 4 columns of warps) computes a WM x WN = 64 x 32 sub-tile;
//   thread (32 per warp, 8 rows x 4 columns of lanes) computes 8 x 8 outputs, as 2 x 2 squares
//          of 4 x 4 that lie WM/2 = 32 rows and WN/2 = 16 columns apart inside the warp tile.
// What one thread computes: for sm, sn in {0, 1} and i, j in 0..3,
//   C[blockRow + warpRow*64 + sm*32 + laneRow*4 + i, blockCol + warpCol*32 + sn*16 + laneCol*4 + j]
// with warp = tid / 32 (warpRow = warp / 4, warpCol = warp % 4), lane = tid % 32
// (laneRow = lane / 4, laneCol = lane % 4).
//
// What changes from 06_vectorized:
//   1. Who reads what from shared memory. In 06 a thread's 8 x 8 outputs were one contiguous
//      square and the 16 threads along a row of the block read float4s 32 bytes apart (bank
//      conflicts, and 2x the bytes of what was distinct). Here, in each step k, the warp reads
//        As[k][warpRow*64 + sm*32 + laneRow*4 ...]: 8 distinct float4 = 128 consecutive bytes,
//          each broadcast to the 4 lanes of a laneRow;
//        Bs[k][warpCol*32 + sn*16 + laneCol*4 ...]: 4 distinct float4 = 64 consecutive bytes,
//          each broadcast to the 8 lanes of a laneCol;
//      consecutive addresses in distinct banks: no conflicts, and the warp's tile is the unit that
//      decides reuse (64 + 32 values feed 64 x 32 outputs per k). A warp is also what the
//      hardware schedules, so this is the level where cuBLAS/CUTLASS tile too (and where tensor
//      cores work, rung 08).
//   2. Double buffering. There are two copies of the shared tiles. While the block multiplies
//      tile t out of one copy, each thread already has the loads of tile t + 1 in flight into
//      registers; after the FMAs it writes them into the other copy. The DRAM latency is hidden
//      behind 64 FMAs x 8 steps, and one __syncthreads per tile suffices instead of two.
//   3. The transposed A tile gets 4 floats of padding per row (As[k][BM + 4]): the transposing
//      store of 06 had a 2-way bank conflict; with a row stride of 132 floats the 32 scalar stores
//      of a warp land in 32 different banks.
//
// Memory access: a warp loads A as 16 rows x 32 bytes and B as 512 consecutive bytes (one float4
// per thread each, as in 06); the results are written as float4, 64 contiguous bytes per row.
// Sizes: tiles past M, N or K are zero-filled and the stores guarded; the float4 path needs
// 16-byte aligned pointers and K, N multiples of 4, otherwise the scalar instantiation runs (see
// 06_vectorized.cuh). Measured on an H200 at 4096: 77.4% of cuBLAS (cuBLAS also tiles per
// warp, double-buffers with cp.async and picks tile shapes per size; the knobs here are BK, the
// warp tile and the lane layout).
#pragma once

#include <cuda_runtime.h>

#include "bench/gemm/06_vectorized.cuh"
#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

namespace rung07 {
constexpr int BM = 128, BN = 128, BK = 8;  // the block's tile of C and the step along K
constexpr int WM = 64, WN = 32;            // one warp's tile of C
constexpr int kWarpsN = BN / WN;           // 4 warps across, BM / WM = 2 down
constexpr int kThreads = 32 * (BM / WM) * kWarpsN;  // 256
constexpr int kLanesN = 4;                 // lanes across a warp tile (8 down)
constexpr int kPad = 4;                    // extra floats per row of the transposed A tile
static_assert(BM * BK == 4 * kThreads && BK * BN == 4 * kThreads,
              "each thread stages exactly one float4 of A and one of B per tile");
static_assert(WM == 2 * (32 / kLanesN) * 4 && WN == 2 * kLanesN * 4,
              "a lane covers 2 x 2 squares of 4 x 4 in its warp tile");
}  // namespace rung07

template <bool kVec>
__global__ void __launch_bounds__(rung07::kThreads, 2)
    sgemm_warp_tiles_kernel(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int M, int N, int K) {
  using namespace rung07;
  __shared__ __align__(16) float As[2][BK][BM + kPad];  // two copies; As[s][k][m] = A[m, k]
  __shared__ __align__(16) float Bs[2][BK][BN];         // Bs[s][k][n] = B[k, n]
  const int tid = threadIdx.x;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const int warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / kWarpsN, warpCol = warp % kWarpsN;
  const int laneRow = lane / kLanesN, laneCol = lane % kLanesN;
  // Offsets inside the block tile of this thread's first 4 rows and first 4 columns.
  const int mBase = warpRow * WM + laneRow * 4;  // + sm * WM/2 + i
  const int nBase = warpCol * WN + laneCol * 4;  // + sn * WN/2 + j
  // The float4 of each tile this thread stages.
  const int aRow = tid / (BK / 4), aK = (tid % (BK / 4)) * 4;
  const int bRow = tid / (BN / 4), bCol = (tid % (BN / 4)) * 4;

  const auto stage = [&](int s, float4 a, float4 b) {
    As[s][aK + 0][aRow] = a.x;
    As[s][aK + 1][aRow] = a.y;
    As[s][aK + 2][aRow] = a.z;
    As[s][aK + 3][aRow] = a.w;
    *reinterpret_cast<float4*>(&Bs[s][bRow][bCol]) = b;
  };

  float acc[8][8] = {};  // acc[sm*4 + i][sn*4 + j]
  const int tiles = (K + BK - 1) / BK;
  // Prologue: tile 0 into copy 0.
  stage(0, load4_or_zero<kVec>(A, M, K, blockRow + aRow, aK),
        load4_or_zero<kVec>(B, K, N, bRow, blockCol + bCol));
  __syncthreads();
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    // Issue the global loads of tile t + 1 now; they complete while the FMAs below run.
    const bool more = t + 1 < tiles;
    float4 aNext = make_float4(0.0f, 0.0f, 0.0f, 0.0f), bNext = aNext;
    if (more) {
      const int k0 = (t + 1) * BK;
      aNext = load4_or_zero<kVec>(A, M, K, blockRow + aRow, k0 + aK);
      bNext = load4_or_zero<kVec>(B, K, N, k0 + bRow, blockCol + bCol);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float regM[8], regN[8];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const float4 a = *reinterpret_cast<const float4*>(&As[cur][k][mBase + s * (WM / 2)]);
        const float4 b = *reinterpret_cast<const float4*>(&Bs[cur][k][nBase + s * (WN / 2)]);
        regM[s * 4 + 0] = a.x, regM[s * 4 + 1] = a.y, regM[s * 4 + 2] = a.z, regM[s * 4 + 3] = a.w;
        regN[s * 4 + 0] = b.x, regN[s * 4 + 1] = b.y, regN[s * 4 + 2] = b.z, regN[s * 4 + 3] = b.w;
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += regM[i] * regN[j];
      }
    }
    // Copy cur ^ 1 was last read in iteration t - 1, and every thread has passed the barrier
    // since: it may be overwritten. The barrier below publishes it for iteration t + 1.
    if (more) stage(cur ^ 1, aNext, bNext);
    __syncthreads();
  }

#pragma unroll
  for (int sm = 0; sm < 2; ++sm) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = blockRow + mBase + sm * (WM / 2) + i;
#pragma unroll
      for (int sn = 0; sn < 2; ++sn) {
        const float* r = &acc[sm * 4 + i][sn * 4];
        store4_guarded<kVec>(C, M, N, row, blockCol + nBase + sn * (WN / 2),
                             make_float4(r[0], r[1], r[2], r[3]));
      }
    }
  }
}

// ---- launcher: grid arithmetic and checks
inline void launch_07(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  using namespace rung07;
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  EMBER_CHECK(grid.y <= 65535, "launch_07: M = ", M, " needs more than 65535 blocks in y");
  if (float4_path_ok(A, B, C, N, K)) {
    EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_warp_tiles_kernel<true>)(A, B, C, M, N, K);
  } else {
    EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_warp_tiles_kernel<false>)(A, B, C, M, N, K);
  }
  EMBER_LAUNCH_CHECK("sgemm_warp_tiles_kernel");
}

}  // namespace ember::bench::gemm
