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
// Staging the tiles. Each thread fetches one 16-byte vector of A and one of B per tile (BM*BK/256
// = 4 floats or 2 doubles each), along the stored operand's contiguous dimension, consecutive
// threads on consecutive vectors: along k when A is stored [M, K], along m when it is stored
// [K, M] (and likewise for B). Both land transposed or not in shared memory so that the compute
// loop always reads As[k][m] and Bs[k][n], contiguous in m and n. A vector is one 16-byte load
// when it lies inside the matrix and the operand's rows start on 16 bytes (the pointer, the
// leading dimension and the batch stride allow it: checked once per launch); otherwise, at a
// ragged edge or with odd leading dimensions, it is loaded element by element, with zeros
// outside the matrix (they add nothing), so any M, N, K and any layout works. The results go out
// the same way: a 16-byte store per run of 4 floats (2 doubles) inside C, element-wise stores
// with bounds checks elsewhere. Rows get 4 elements of padding, which spreads the column-wise
// stores of the staging over all banks.
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

// V = 16 / sizeof(T) consecutive elements of a row-major operand stored as [R, S], starting at
// (r, s): one 16-byte load where the whole vector lies inside and `aligned` says that every
// row starts on 16 bytes, element-wise loads with zeros outside it otherwise (a ragged edge, or
// leading dimensions that are not multiples of V).
template <typename T, int V>
__device__ inline void load_vector(const T* p, int64_t ld, int64_t r, int64_t s, int64_t R,
                                   int64_t S, bool aligned, T (&out)[V]) {
  if (aligned && r < R && s + V <= S) {
    const Pack<T, V> v = *reinterpret_cast<const Pack<T, V>*>(p + r * ld + s);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = v.v[i];
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = r < R && s + i < S ? p[r * ld + s + i] : T(0);
  }
}

template <typename T, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads)
    gemm_tiled_kernel(int64_t M, int64_t N, int64_t K, T alpha, const T* __restrict__ a,
                      int64_t lda, int64_t stride_a, const T* __restrict__ b, int64_t ldb,
                      int64_t stride_b, T beta, T* __restrict__ c, int64_t ldc, int64_t stride_c,
                      int64_t batch, bool vec_a, bool vec_b, bool vec_c) {
  constexpr int BM = Tiles<T>::BM, BN = Tiles<T>::BN, BK = Tiles<T>::BK;
  constexpr int WM = BM / 2, WN = BN / 4;          // a warp's tile: 2 x 4 warps
  constexpr int SM = WM / 2 / 8, SN = WN / 2 / 4;  // a lane's square: lanes are 8 x 4
  constexpr int V = 16 / sizeof(T);                // elements in 16 bytes
  static_assert(SM == V && SN == V, "16-byte shared loads");
  static_assert(BM * BK == V * kThreads && BK * BN == V * kThreads,
                "every thread stages one 16-byte vector of each tile");

  __shared__ __align__(16) T As[2][BK][BM + kPad];  // As[s][k][m] = op(A)[tile_m + m, k0 + k]
  __shared__ __align__(16) T Bs[2][BK][BN + kPad];  // Bs[s][k][n] = op(B)[k0 + k, tile_n + n]

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int m_base = (warp / 4) * WM + (lane / 4) * SM;  // + sq * WM/2 + i
  const int n_base = (warp % 4) * WN + (lane % 4) * SN;  // + sq * WN/2 + j
  const int64_t tiles_m = (M + BM - 1) / BM;
  const int64_t tile_n = static_cast<int64_t>(blockIdx.x) * BN;
  const int tiles_k = static_cast<int>((K + BK - 1) / BK);

  // The vector of each tile this thread stages: V elements along the stored operand's contiguous
  // dimension (k for A stored [M, K], m for A stored [K, M]; n or k for B), which consecutive
  // threads take in order, so that a warp reads whole 32-byte sectors.
  const int a_k = kTransA ? tid / (BM / V) : (tid % (BK / V)) * V;
  const int a_m = kTransA ? (tid % (BM / V)) * V : tid / (BK / V);
  const int b_k = kTransB ? (tid % (BK / V)) * V : tid / (BN / V);
  const int b_n = kTransB ? tid / (BK / V) : (tid % (BN / V)) * V;

  for (const int64_t z : grid_stride(blockIdx.z, batch, gridDim.z)) {
    const T* A = a + z * stride_a;
    const T* B = b + z * stride_b;
    T* C = c + z * stride_c;
    for (const int64_t tm : grid_stride(blockIdx.y, tiles_m, gridDim.y)) {
      const int64_t tile_m = tm * BM;
      T ra[V], rb[V];
      // This thread's vectors of the A and B tiles at depth k0, in the stored operands' (row,
      // column) coordinates.
      const auto fetch = [&](int64_t k0) {
        if (kTransA) load_vector(A, lda, k0 + a_k, tile_m + a_m, K, M, vec_a, ra);
        else load_vector(A, lda, tile_m + a_m, k0 + a_k, M, K, vec_a, ra);
        if (kTransB) load_vector(B, ldb, tile_n + b_n, k0 + b_k, N, K, vec_b, rb);
        else load_vector(B, ldb, k0 + b_k, tile_n + b_n, K, N, vec_b, rb);
      };
      // A vector along m or n is one 16-byte store into its shared row; one along k goes down a
      // column, V stores that the padding spreads over distinct banks.
      const auto stage = [&](int s) {
        if (kTransA) {
          Pack<T, V> v;
#pragma unroll
          for (int i = 0; i < V; ++i) v.v[i] = ra[i];
          *reinterpret_cast<Pack<T, V>*>(&As[s][a_k][a_m]) = v;
        } else {
#pragma unroll
          for (int i = 0; i < V; ++i) As[s][a_k + i][a_m] = ra[i];
        }
        if (kTransB) {
#pragma unroll
          for (int i = 0; i < V; ++i) Bs[s][b_k + i][b_n] = rb[i];
        } else {
          Pack<T, V> v;
#pragma unroll
          for (int i = 0; i < V; ++i) v.v[i] = rb[i];
          *reinterpret_cast<Pack<T, V>*>(&Bs[s][b_k][b_n]) = v;
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
            const Pack<T, SM> pa =
                *reinterpret_cast<const Pack<T, SM>*>(&As[cur][k][m_base + sq * (WM / 2)]);
            const Pack<T, SN> pb =
                *reinterpret_cast<const Pack<T, SN>*>(&Bs[cur][k][n_base + sq * (WN / 2)]);
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

      // C = alpha * acc + beta * C; beta == 0 never reads C (it may hold NaN garbage). Each of
      // the thread's rows holds two runs of SN = V consecutive outputs: one 16-byte store each
      // (and a 16-byte load of C when beta != 0) where the run lies inside C and C's rows start
      // on 16 bytes, element by element otherwise.
      const auto result = [&](T acc_v, const T* out) {
        const T v = alpha == T(1) ? acc_v : alpha * acc_v;
        return beta == T(0) ? v : fma_t(beta, *out, v);
      };
#pragma unroll
      for (int i = 0; i < 2 * SM; ++i) {
        const int64_t row = tile_m + m_base + (i / SM) * (WM / 2) + (i % SM);
        if (row >= M) continue;
#pragma unroll
        for (int sq = 0; sq < 2; ++sq) {
          const int64_t col = tile_n + n_base + sq * (WN / 2);
          T* out = C + row * ldc + col;
          if (vec_c && col + SN <= N) {
            Pack<T, SN> v;
            if (beta != T(0)) v = *reinterpret_cast<const Pack<T, SN>*>(out);
#pragma unroll
            for (int j = 0; j < SN; ++j) v.v[j] = result(acc[i][sq * SN + j], &v.v[j]);
            *reinterpret_cast<Pack<T, SN>*>(out) = v;
          } else {
#pragma unroll
            for (int j = 0; j < SN; ++j)
              if (col + j < N) out[j] = result(acc[i][sq * SN + j], out + j);
          }
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
  // 16-byte accesses need every row of every matrix of the batch to start on 16 bytes.
  constexpr int64_t V = 16 / sizeof(T);
  const auto rows_aligned = [batch](const void* p, int64_t ld, int64_t stride) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && ld % V == 0 &&
           (batch == 1 || stride % V == 0);
  };
  EMBER_LAUNCH(grid, kThreads, 0, stream(), gemm_tiled_kernel<T, kTransA, kTransB>)
  (M, N, K, static_cast<T>(alpha), static_cast<const T*>(a), lda, stride_a,
   static_cast<const T*>(b), ldb, stride_b, static_cast<T>(beta), static_cast<T*>(c), ldc, stride_c,
   batch, rows_aligned(a, lda, stride_a), rows_aligned(b, ldb, stride_b),
   rows_aligned(c, ldc, stride_c));
  EMBER_LAUNCH_CHECK("gemm_tiled_kernel");
}

template <typename T>
void dispatch(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
              const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
              int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
              int64_t batch) {
  if (trans_a && trans_b)
    launch_tiled<T, true, true>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                                stride_c, batch);
  else if (trans_a)
    launch_tiled<T, true, false>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                                 stride_c, batch);
  else if (trans_b)
    launch_tiled<T, false, true>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                                 stride_c, batch);
  else
    launch_tiled<T, false, false>(M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
                                  stride_c, batch);
}

}  // namespace

void gemm_tiled(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
                int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (dtype == DType::Float64)
    dispatch<double>(trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                     ldc, stride_c, batch);
  else
    dispatch<float>(trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
                    ldc, stride_c, batch);
}

}  // namespace ember::kernels::cuda
