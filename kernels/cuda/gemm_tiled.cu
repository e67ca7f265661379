// ember/kernels/cuda/gemm_tiled.cu — ember's own matrix multiply: rung 7 of the SGEMM ladder
// (bench/gemm/07_warp_tiles.cuh) made complete — float32 and float64, either operand transposed,
// any leading dimensions, alpha and beta, and batches with their own strides.
//
//   C[b][M, N] = alpha * op(A[b])[M, K] @ op(B[b])[K, N] + beta * C[b]     (b < batch)
//
// with the row-major contract of kernels/cuda/gemm.h: a stores A as [M, K] (or [K, M] when
// trans_a), b stores B as [K, N] (or [N, K]), rows lda / ldb / ldc elements apart, matrix i of
// a batch stride_x elements after matrix i - 1 (0: the same matrix every time). No column-major
// reinterpretation is needed: this kernel reads ember's layout directly.
//
// It is the GEMM of the emulation build (there is no cuBLAS on the CPU) and, on a GPU, the
// alternative to cuBLAS that set_gemm_backend(GemmBackend::Ember) selects; the tests hold it to
// the CPU product on every shape of tests/kernels/gemm_plan.cpp's sweep.
//
// The hierarchy (float32; float64 halves every tile side):
//   block   256 threads compute a BM x BN = 128 x 128 tile of C, stepping along K by BK = 8;
//   warp    8 warps as 2 rows x 4 columns, each owning a WM x WN = 64 x 32 part of the tile;
//   thread  32 lanes as 8 rows x 4 columns; lane (r, c) computes 2 x 2 squares of SM x SN = 4 x 4
//           outputs lying WM/2 rows and WN/2 columns apart, i.e. 8 x 8 outputs in registers.
// Per step k a thread reads 2 x SM values of A and 2 x SN values of B from shared memory (four
// 16-byte loads) and does 64 fused multiply-adds with them: an outer product in registers.
//
// Staging the tiles. Each thread fetches BM*BK/256 elements of A and BK*BN/256 of B per tile,
// in the order that makes consecutive threads read consecutive addresses: along k when A is
// stored [M, K], along m when it is stored [K, M] (and likewise for B). Both land transposed or
// not in shared memory so that the compute loop always reads As[k][m] and Bs[k][n], contiguous in
// m and n. Elements outside the matrices are staged as zeros (they add nothing), so any M, N, K
// works; only the final stores check the bounds. Rows get 4 elements of padding, which spreads
// the column-wise stores of the staging over all banks.
//
// Double buffering (as rung 7): the next tile's elements are loaded into registers before the
// current tile's FMAs, and stored to the other shared copy after them — one __syncthreads per
// tile, and the global loads' latency hides behind the arithmetic.
//
// Rounding: every product is accumulated with fma() (one rounding per step, what nvcc would
// contract a * b + c into anyway), so the emulator computes the GPU's bits exactly.
// Grids: x walks N's tiles; y and z walk M's tiles and the batch, and loop when there are more
// than 65535 of them.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

template <typename T>
struct Tiles;
template <>
struct Tiles<float> {
  static constexpr int BM = 128, BN = 128, BK = 8;
};
template <>
struct Tiles<double> {
  static constexpr int BM = 64, BN = 64, BK = 8;
};

constexpr int kThreads = 256;  // 8 warps
constexpr int kPad = 4;        // elements of padding per shared row

__device__ inline float fma_t(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double fma_t(double a, double b, double c) { return fma(a, b, c); }

// N consecutive elements read from shared memory as one 16-byte load.
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Element (r, s) of a row-major operand stored as [R, S] (or, transposed, as [S, R]), or zero
// outside it.
template <typename T, bool kTrans>
__device__ inline T load_or_zero(const T* p, int64_t ld, int64_t r, int64_t s, int64_t R, int64_t S) {
  if (r >= R || s >= S) return T(0);
  return kTrans ? p[s * ld + r] : p[r * ld + s];
}

template <typename T, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads)
    gemm_tiled_kernel(int64_t M, int64_t N, int64_t K, T alpha, const T* __restrict__ a,
                      int64_t lda, int64_t stride_a, const T* __restrict__ b, int64_t ldb,
                      int64_t stride_b, T beta, T* __restrict__ c, int64_t ldc, int64_t stride_c,
                      int64_t batch) {
  constexpr int BM = Tiles<T>::BM, BN = Tiles<T>::BN, BK = Tiles<T>::BK;
  constexpr int WM = BM / 2, WN = BN / 4;         // a warp's tile: 2 x 4 warps
  constexpr int SM = WM / 2 / 8, SN = WN / 2 / 4;  // a lane's square: lanes are 8 x 4
  constexpr int kPerA = BM * BK / kThreads, kPerB = BK * BN / kThreads;
  static_assert(SM * sizeof(T) == 16 && SN * sizeof(T) == 16, "16-byte shared loads");
  static_assert(kPerA >= 1 && kPerB >= 1, "every thread stages part of each tile");

  __shared__ __align__(16) T As[2][BK][BM + kPad];  // As[s][k][m] = op(A)[tile_m + m, k0 + k]
  __shared__ __align__(16) T Bs[2][BK][BN + kPad];  // Bs[s][k][n] = op(B)[k0 + k, tile_n + n]

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int m_base = (warp / 4) * WM + (lane / 4) * SM;  // + sq * WM/2 + i
  const int n_base = (warp % 4) * WN + (lane % 4) * SN;  // + sq * WN/2 + j
  const int64_t tiles_m = (M + BM - 1) / BM;
  const int64_t tile_n = static_cast<int64_t>(blockIdx.x) * BN;
  const int tiles_k = static_cast<int>((K + BK - 1) / BK);

  // Where staged element q of this thread goes in the tile: (k, m) for A, (k, n) for B, with
  // consecutive threads on consecutive addresses of the stored operand.
  const auto a_coord = [&](int q, int* k, int* m) {
    const int e = tid + q * kThreads;
    if (kTransA) *k = e / BM, *m = e % BM;   // stored [K, M]: m is contiguous
    else *m = e / BK, *k = e % BK;           // stored [M, K]: k is contiguous
  };
  const auto b_coord = [&](int q, int* k, int* n) {
    const int e = tid + q * kThreads;
    if (kTransB) *n = e / BK, *k = e % BK;   // stored [N, K]: k is contiguous
    else *k = e / BN, *n = e % BN;           // stored [K, N]: n is contiguous
  };

  for (const int64_t z : grid_stride(blockIdx.z, batch, gridDim.z)) {
    const T* A = a + z * stride_a;
    const T* B = b + z * stride_b;
    T* C = c + z * stride_c;
    for (const int64_t tm : grid_stride(blockIdx.y, tiles_m, gridDim.y)) {
      const int64_t tile_m = tm * BM;
      T ra[kPerA], rb[kPerB];
      const auto fetch = [&](int64_t k0) {
#pragma unroll
        for (int q = 0; q < kPerA; ++q) {
          int k, m;
          a_coord(q, &k, &m);
          ra[q] = load_or_zero<T, kTransA>(A, lda, tile_m + m, k0 + k, M, K);
        }
#pragma unroll
        for (int q = 0; q < kPerB; ++q) {
          int k, n;
          b_coord(q, &k, &n);
          rb[q] = load_or_zero<T, kTransB>(B, ldb, k0 + k, tile_n + n, K, N);
        }
      };
      const auto stage = [&](int s) {
#pragma unroll
        for (int q = 0; q < kPerA; ++q) {
          int k, m;
          a_coord(q, &k, &m);
          As[s][k][m] = ra[q];
        }
#pragma unroll
        for (int q = 0; q < kPerB; ++q) {
          int k, n;
          b_coord(q, &k, &n);
          Bs[s][k][n] = rb[q];
        }
      };

      T acc[2 * SM][2 * SN];
#pragma unroll
      for (int i = 0; i < 2 * SM; ++i)
#pragma unroll
        for (int j = 0; j < 2 * SN; ++j) acc[i][j] = T(0);

      if (tiles_k > 0) {
        fetch(0);
        stage(0);
      }
      __syncthreads();
      for (int t = 0; t < tiles_k; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < tiles_k;
        if (more) fetch(static_cast<int64_t>(t + 1) * BK);  // in flight during the FMAs
#pragma unroll
        for (int k = 0; k < BK; ++k) {
          T rm[2 * SM], rn[2 * SN];
#pragma unroll
          for (int sq = 0; sq < 2; ++sq) {
            const Pack<T, SM> pa = *reinterpret_cast<const Pack<T, SM>*>(&As[cur][k][m_base + sq * (WM / 2)]);
            const Pack<T, SN> pb = *reinterpret_cast<const Pack<T, SN>*>(&Bs[cur][k][n_base + sq * (WN / 2)]);
#pragma unroll
            for (int i = 0; i < SM; ++i) rm[sq * SM + i] = pa.v[i];
#pragma unroll
            for (int j = 0; j < SN; ++j) rn[sq * SN + j] = pb.v[j];
          }
#pragma unroll
          for (int i = 0; i < 2 * SM; ++i)
#pragma unroll
            for (int j = 0; j < 2 * SN; ++j) acc[i][j] = fma_t(rm[i], rn[j], acc[i][j]);
        }
        // The other copy was last read in step t - 1, before the barrier that ended it.
        if (more) stage(cur ^ 1);
        __syncthreads();
      }

      // C = alpha * acc + beta * C; beta == 0 never reads C (it may hold NaN garbage).
#pragma unroll
      for (int i = 0; i < 2 * SM; ++i) {
        const int64_t row = tile_m + m_base + (i / SM) * (WM / 2) + (i % SM);
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < 2 * SN; ++j) {
          const int64_t col = tile_n + n_base + (j / SN) * (WN / 2) + (j % SN);
          if (col >= N) continue;
          T* out = C + row * ldc + col;
          const T v = alpha == T(1) ? acc[i][j] : alpha * acc[i][j];
          *out = beta == T(0) ? v : fma_t(beta, *out, v);
        }
      }
    }
  }
}

template <typename T, bool kTransA, bool kTransB>
void launch_tiled(int64_t M, int64_t N, int64_t K, double alpha, const void* a, int64_t lda,
                  int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, double beta,
                  void* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  constexpr int BM = Tiles<T>::BM, BN = Tiles<T>::BN;
  const int64_t tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
  EMBER_CHECK(tiles_n <= 2147483647, "gemm on CUDA: N = ", N, " needs more than 2^31 - 1 blocks");
  // x is exact (one block per column tile); the blocks stride over row tiles (y) and batch (z).
  const dim3 grid(static_cast<unsigned>(tiles_n), strided_blocks(tiles_m, 65535),
                  strided_blocks(batch, 65535));
  EMBER_LAUNCH(grid, kThreads, 0, stream(), gemm_tiled_kernel<T, kTransA, kTransB>)(
      M, N, K, static_cast<T>(alpha), static_cast<const T*>(a), lda, stride_a,
      static_cast<const T*>(b), ldb, stride_b, static_cast<T>(beta), static_cast<T*>(c), ldc,
      stride_c, batch);
  EMBER_LAUNCH_CHECK("gemm_tiled_kernel");
}

template <typename T>
void dispatch(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
              const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
              int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (trans_a && trans_b)
    launch_tiled<T, true, true>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
  else if (trans_a)
    launch_tiled<T, true, false>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
  else if (trans_b)
    launch_tiled<T, false, true>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
  else
    launch_tiled<T, false, false>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}

}  // namespace

void gemm_tiled(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
                int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (dtype == DType::Float64)
    dispatch<double>(trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
  else
    dispatch<float>(trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batch);
}

}  // namespace ember::kernels::cuda
