// bench/gemm/08_tf32_mma.cuh — rung 8: the multiply-adds move from the FP32 units to the tensor
// cores, in TF32, through WMMA (nvcuda::wmma, the C++ face of the mma.sync instructions).
// Needs sm_80 (Ampere) or newer; launch_08 refuses older GPUs with a DeviceError. The emulation
// build runs it too: kernels/emulator/mma.h emulates the WMMA fragments, TF32 rounding included.
//
// C[M, N] = A[M, K] @ B[K, N], float32 in and out, row-major, alpha = 1, beta = 0, but the
// PRODUCTS are computed in TF32: each input is rounded to a 10-bit mantissa (8-bit exponent,
// like float32; cvt.rna, round to nearest) and the sums are accumulated in float32. The result
// differs from the FP32 rungs by ~1e-3 relative, which is why this rung is validated against
// cuBLAS's own TF32 GEMM (CUBLAS_COMPUTE_32F_FAST_TF32) with a looser tolerance. ember never
// does this unless asked (cuda::set_allow_tf32, PyTorch's allow_tf32).
//
// What changes from 07_warp_tiles: the structure is the same — a 256-thread block computes a
// 128 x 128 tile of C, 8 warps of 64 x 32 each, global loads of the next K tile in flight while
// the current one is multiplied — but a warp no longer splits its tile among its lanes by hand.
// It is cut into 4 x 2 WMMA tiles of 16 x 16, and in each k step of 8 the whole warp executes
// one tensor-core instruction per tile: mma_sync(acc, a, b, acc) multiplies a 16 x 8 piece of A
// by an 8 x 16 piece of B (2048 multiply-adds) in the time the FP32 path needs for a few dozen.
// Which lane holds which element of the fragments a, b and acc is the hardware's business
// (load_matrix_sync / store_matrix_sync do the shuffling). Because the tensor cores eat data
// so much faster, BK grows to 32 (four k steps per staged tile) to amortize each barrier.
//
// What one warp computes: C[blockRow + warpRow*64 + fm*16 + 0..15, blockCol + warpCol*32 +
// fn*16 + 0..15] for fm in 0..3, fn in 0..1 (warp = tid / 32, warpRow = warp / 4, warpCol =
// warp % 4).
//
// Memory access: each thread stages 4 float4 of A (a warp: 4 rows x 128 bytes) and 4 float4 of
// B (a warp: 512 consecutive bytes) per tile, rounding them to TF32 on the way into shared
// memory (once per element instead of once per fragment load). The shared tiles are row-major
// with 4 floats of padding per row (ld 36 and 132), which keeps every fragment pointer 32-byte
// aligned as WMMA requires and spreads the rows of a fragment over different banks. The
// results go through shared memory (each warp's 16 x 16 tile, then guarded scalar stores), so
// every M, N is handled without a partial-tile special case. Tiles past M, N or K are
// zero-filled; the float4 path needs 16-byte aligned pointers and K, N multiples of 4, otherwise
// the scalar instantiation runs (see 06_vectorized.cuh).
//
// Measured on an H200 at 4096: 131.5% of cuBLAS SGEMM (FP32) but only 16.8% of cuBLAS TF32.
// Dense TF32 tensor-core peak is ~7x the FP32 peak; on Hopper cuBLAS uses the warpgroup
// instructions (wgmma) fed by the TMA engine with multi-stage asynchronous copies, which
// mma.sync/WMMA cannot reach.
// Closing that gap (cp.async pipelines, ldmatrix-friendly layouts, then wgmma for sm_90a) is
// the next step beyond this ladder.
#pragma once

#include <cuda_runtime.h>
#include <mma.h>

#include <string>

#include "bench/gemm/06_vectorized.cuh"
#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

namespace rung08 {
constexpr int BM = 128, BN = 128, BK = 32;  // the block's tile of C and the step along K
constexpr int WM = 64, WN = 32;             // one warp's tile of C
constexpr int kWarpsN = BN / WN;            // 4 warps across, BM / WM = 2 down
constexpr int kThreads = 32 * (BM / WM) * kWarpsN;  // 256
constexpr int FM = 16, FN = 16, FK = 8;     // one WMMA TF32 operation: [16 x 8] @ [8 x 16]
constexpr int kFragsM = WM / FM, kFragsN = WN / FN;  // 4 x 2 accumulator tiles per warp
constexpr int kLdA = BK + 4, kLdB = BN + 4;  // padded shared rows (multiples of 4 floats)
constexpr int kAFloat4 = BM * BK / 4 / kThreads;  // float4 of A each thread stages per tile: 4
constexpr int kBFloat4 = BK * BN / 4 / kThreads;  // ... of B: 4
static_assert(kAFloat4 * 4 * kThreads == BM * BK && kBFloat4 * 4 * kThreads == BK * BN,
              "tiles staged in whole float4 per thread");
static_assert((kThreads / 32) * FM * FN <= BM * kLdA, "the epilogue's scratch fits in As");
static_assert(kLdA % 4 == 0 && kLdB % 4 == 0 && (FM * kLdA) % 8 == 0 && (FK * kLdB) % 8 == 0,
              "WMMA needs ld a multiple of 4 floats and 32-byte aligned fragment pointers");
}  // namespace rung08

template <bool kVec>
__global__ void __launch_bounds__(rung08::kThreads)
    sgemm_tf32_wmma_kernel(const float* __restrict__ A, const float* __restrict__ B,
                           float* __restrict__ C, int M, int N, int K) {
#if defined(EMBER_CUDA_EMULATED) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800)
  using namespace rung08;
  namespace wmma = nvcuda::wmma;
  __shared__ __align__(128) float As[BM][kLdA];  // As[m][k] = tf32(A[blockRow + m, k0 + k])
  __shared__ __align__(128) float Bs[BK][kLdB];  // Bs[k][n] = tf32(B[k0 + k, blockCol + n])
  const int tid = threadIdx.x;
  const int blockRow = blockIdx.y * BM, blockCol = blockIdx.x * BN;
  const int warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / kWarpsN, warpCol = warp % kWarpsN;

  wmma::fragment<wmma::accumulator, FM, FN, FK, float> acc[kFragsM][kFragsN];
#pragma unroll
  for (int fm = 0; fm < kFragsM; ++fm) {
#pragma unroll
    for (int fn = 0; fn < kFragsN; ++fn) wmma::fill_fragment(acc[fm][fn], 0.0f);
  }

  // The next tile's elements, held in registers between its global load and its shared store.
  float4 aReg[kAFloat4], bReg[kBFloat4];
  const auto load_tile = [&](int k0) {
#pragma unroll
    for (int i = 0; i < kAFloat4; ++i) {
      const int idx = tid + i * kThreads;
      aReg[i] = load4_or_zero<kVec>(A, M, K, blockRow + idx / (BK / 4), k0 + (idx % (BK / 4)) * 4);
    }
#pragma unroll
    for (int i = 0; i < kBFloat4; ++i) {
      const int idx = tid + i * kThreads;
      bReg[i] = load4_or_zero<kVec>(B, K, N, k0 + idx / (BN / 4), blockCol + (idx % (BN / 4)) * 4);
    }
  };
  const auto tf32 = [](float4 v) {
    return make_float4(wmma::__float_to_tf32(v.x), wmma::__float_to_tf32(v.y),
                       wmma::__float_to_tf32(v.z), wmma::__float_to_tf32(v.w));
  };
  const auto store_tile = [&]() {
#pragma unroll
    for (int i = 0; i < kAFloat4; ++i) {
      const int idx = tid + i * kThreads;
      *reinterpret_cast<float4*>(&As[idx / (BK / 4)][(idx % (BK / 4)) * 4]) = tf32(aReg[i]);
    }
#pragma unroll
    for (int i = 0; i < kBFloat4; ++i) {
      const int idx = tid + i * kThreads;
      *reinterpret_cast<float4*>(&Bs[idx / (BN / 4)][(idx % (BN / 4)) * 4]) = tf32(bReg[i]);
    }
  };

  const int tiles = (K + BK - 1) / BK;
  if (tiles > 0) load_tile(0);
  for (int t = 0; t < tiles; ++t) {
    store_tile();
    __syncthreads();                                // the tile is complete in shared memory
    if (t + 1 < tiles) load_tile((t + 1) * BK);     // in flight during the MMAs below
#pragma unroll
    for (int kk = 0; kk < BK; kk += FK) {
      wmma::fragment<wmma::matrix_a, FM, FN, FK, wmma::precision::tf32, wmma::row_major> a[kFragsM];
      wmma::fragment<wmma::matrix_b, FM, FN, FK, wmma::precision::tf32, wmma::row_major> b[kFragsN];
#pragma unroll
      for (int fm = 0; fm < kFragsM; ++fm) {
        wmma::load_matrix_sync(a[fm], &As[warpRow * WM + fm * FM][kk], kLdA);
      }
#pragma unroll
      for (int fn = 0; fn < kFragsN; ++fn) {
        wmma::load_matrix_sync(b[fn], &Bs[kk][warpCol * WN + fn * FN], kLdB);
      }
#pragma unroll
      for (int fm = 0; fm < kFragsM; ++fm) {
#pragma unroll
        for (int fn = 0; fn < kFragsN; ++fn) wmma::mma_sync(acc[fm][fn], a[fm], b[fn], acc[fm][fn]);
      }
    }
    __syncthreads();  // everyone is done with the tile before the next store_tile
  }

  // Epilogue: each warp writes a 16 x 16 accumulator to its own 256 floats of As (free now),
  // then its lanes copy the part inside C with guarded, row-contiguous stores.
  float* scratch = &As[0][0] + warp * FM * FN;
#pragma unroll
  for (int fm = 0; fm < kFragsM; ++fm) {
#pragma unroll
    for (int fn = 0; fn < kFragsN; ++fn) {
      wmma::store_matrix_sync(scratch, acc[fm][fn], FN, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < FM * FN; e += 32) {
        const int row = blockRow + warpRow * WM + fm * FM + e / FN;
        const int col = blockCol + warpCol * WN + fn * FN + e % FN;
        if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = scratch[e];
      }
      __syncwarp();  // the lanes are done reading before the next fragment is stored
    }
  }
#endif  // sm_80 or the emulator; older GPUs never launch it (launch_08 checks)
}

// ---- launcher: grid arithmetic and checks

// Does `device` have TF32 tensor cores (compute capability 8.0 or newer)?
inline bool tf32_mma_supported(int device) {
  int major = 0;
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 8;
}

inline void launch_08(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  if (!tf32_mma_supported(device)) {
    int minor = 0, major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    throw DeviceError("launch_08: the TF32 tensor-core kernel needs sm_80 or newer; this GPU is sm_" +
                      std::to_string(major * 10 + minor));
  }
  using namespace rung08;
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  EMBER_CHECK(grid.y <= 65535, "launch_08: M = ", M, " needs more than 65535 blocks in y");
  if (float4_path_ok(A, B, C, N, K)) {
    EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_tf32_wmma_kernel<true>)(A, B, C, M, N, K);
  } else {
    EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_tf32_wmma_kernel<false>)(A, B, C, M, N, K);
  }
  EMBER_LAUNCH_CHECK("sgemm_tf32_wmma_kernel");
}

}  // namespace ember::bench::gemm
