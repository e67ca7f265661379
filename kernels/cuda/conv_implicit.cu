// ember/kernels/cuda/conv_implicit.cu — 2-d convolution on CUDA by ConvAlgo::ImplicitGemm: one
// hand-written kernel, no scratch memory. The dispatcher (kernels/cuda/conv.cu) says when Auto
// picks it.
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, C, R, S] (= [K, CRS] in memory),
// b [K], y [N, K, P, Q]; CRS = C*R*S is the length of one filter, PQ = P*Q one output plane,
// j = (c, r, s) a filter tap.
//
// implicit_gemm_kernel below computes the forward pass as the GEMM
// out[m = (n, p, q), k] = sum_j A[m, j] * w[k, j] whose A rows are the input windows, read
// straight from x while the tiles are loaded; the input gradient is the same kernel on the
// "transposed" convolution (rows are input pixels, A rows the windows of dy that touch them).
// Both index maps live in kernels/cuda/conv_index.h, where the CPU tests check them. The weight
// gradient has no implicit version: asked for it, the ImplicitGemm algorithm runs the im2col
// path for that pass (conv_im2col.cu).
//
// Determinism: no atomics; every output is one thread's sum over the taps in order.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/cuda/conv_index.h"
#include "kernels/cuda/conv_internal.cuh"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda::conv_detail {

namespace {

// ---- the implicit-GEMM kernel -------------------------------------------------------------------
//
// Computes out[m, col] = sum over j < depth of A[m, j] * B[j, col] (+ bias[col]) for one of the
// index maps of conv_index.h (ForwardGemm: m = output pixel, col = filter, j = tap; or
// BackwardDataGemm: m = input pixel, col = input channel, j = (filter, tap)). A and B exist only
// as index maps into x (or dy) and w; nothing is materialised.
//
// What a block computes: one BM x BN tile of out (BM = 128 rows, BN = 16/32/64 columns), 256
// threads. It walks the depth BK taps at a time (BK = 16 for float, 8 for double, so that both
// double-buffered tiles fit the 48 KB of static shared memory); each step multiplies the A tile
// [BM x BK] by the B tile [BK x BN], both staged in shared memory.
//
// What a thread computes: TM x TN = 8 x (BN/16) outputs in registers, the 16 x 16 threads laid
// over the tile as (tx, ty) = (t % 16, t / 16). Thread (tx, ty) owns rows tx, tx + 16, ...,
// tx + 112 (strided, not contiguous: the 16 threads of a half-warp then read 16 consecutive
// words of the A tile — no bank conflicts — and later store 16 consecutive rows of out) and the
// TN contiguous columns ty*TN .. ty*TN + TN-1. Per tap it loads TM values of A and TN of B from
// shared memory and does TM*TN multiply-adds: each value loaded feeds TN (or TM) of them.
//
// How the windows are gathered: thread t always loads row m = t % 128 of the A tile, at depth
// t / 128, t / 128 + 2, ... So it decodes its m into (image, window origin) once (Gemm::row)
// and, per tap j, only works out the tap's offset (Gemm::a_index: a few multiply-shift divisions,
// a bounds test, and a zero for the padding). The 32 threads of a warp load 32 consecutive m —
// for the forward pass 32 neighbouring output pixels, whose window taps are neighbouring input
// pixels of one row (exactly consecutive for stride 1): the reads from x coalesce, like reading
// a row of an ordinary matrix. The B tile is loaded with the tap index fastest, i.e. along a
// filter's contiguous row of w (also coalesced).
//
// Overlap: the tiles are double-buffered. While the threads multiply the tiles of step i out of
// buffer i%2, the global loads of step i+1 are already in flight into registers; they are
// written to the other buffer afterwards, and one barrier per step separates the two. (Buffer
// (i+1)%2 was last read during step i-1, which every thread finished before the previous
// barrier.)
//
// Everything is guarded: rows past `rows`, columns past `cols` and taps past `depth` load zeros
// and store nothing, so any size works (a 5x5x1 filter has depth 25: one full step and one
// partly-zero step).
constexpr int kImplicitThreads = 256;

template <typename T, typename Gemm, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__(kImplicitThreads)
    implicit_gemm_kernel(const Gemm gemm, const T* __restrict__ a, const T* __restrict__ b,
                         const T* __restrict__ bias, T* __restrict__ out) {
  constexpr int TX = BM / TM;  // threads across the tile's rows
  constexpr int TY = BN / TN;  // threads across its columns
  static_assert(TX * TY == kImplicitThreads, "the thread grid must cover the tile");
  static_assert(kImplicitThreads % BM == 0, "each thread loads A rows of one fixed m");
  constexpr int kADepthStep = kImplicitThreads / BM;  // depth rows one pass of the block loads
  static_assert(BK % kADepthStep == 0, "the A tile must split evenly over the threads");
  constexpr int kALoads = BK / kADepthStep;
  constexpr int kBLoads = (BK * BN + kImplicitThreads - 1) / kImplicitThreads;

  __shared__ T As[2][BK][BM];
  __shared__ T Bs[2][BK][BN + 1];  // +1: the stash below writes down a column (see there)

  const int t = threadIdx.x;
  const int tx = t % TX, ty = t / TX;
  const int64_t m_block = static_cast<int64_t>(blockIdx.x) * BM;
  const int32_t col_block = static_cast<int32_t>(blockIdx.y) * BN;

  // This thread's A loads: row a_m of the tile, depth a_k, a_k + kADepthStep, ...
  const int a_m = t % BM;
  const int a_k = t / BM;
  const bool a_row_live = m_block + a_m < gemm.rows;
  const typename Gemm::Row row = gemm.row(a_row_live ? static_cast<int32_t>(m_block + a_m) : 0);

  T a_next[kALoads];
  T b_next[kBLoads];
  // Global -> registers: the tiles of the step starting at tap k0.
  auto fetch = [&](int64_t k0) {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) {
      const int64_t j = k0 + a_k + l * kADepthStep;
      const int64_t idx =
          (a_row_live && j < gemm.depth) ? gemm.a_index(row, static_cast<int32_t>(j)) : -1;
      a_next[l] = idx >= 0 ? a[idx] : T(0);
    }
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) {
      const int e = t + l * kImplicitThreads;
      const int64_t j = k0 + e % BK;
      const int32_t col = col_block + e / BK;
      const bool live = e < BK * BN && j < gemm.depth && col < gemm.cols;
      b_next[l] = live ? b[gemm.b_index(static_cast<int32_t>(j), col)] : T(0);
    }
  };
  // Registers -> shared memory buffer `buf`.
  auto stash = [&](int buf) {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) As[buf][a_k + l * kADepthStep][a_m] = a_next[l];
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) {
      const int e = t + l * kImplicitThreads;
      // Consecutive threads write consecutive taps, i.e. down a column of Bs: the padded row
      // length BN + 1 puts them in different banks (with BN they would all hit one bank).
      if (e < BK * BN) Bs[buf][e % BK][e / BK] = b_next[l];
    }
  };

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) acc[i][jj] = T(0);
  }

  fetch(0);
  stash(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < gemm.depth; k0 += BK) {
    const bool more = k0 + BK < gemm.depth;
    if (more) fetch(k0 + BK);  // in flight while we multiply
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      T av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = As[buf][kk][tx + i * TX];
#pragma unroll
      for (int jj = 0; jj < TN; ++jj) bv[jj] = Bs[buf][kk][ty * TN + jj];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) acc[i][jj] += av[i] * bv[jj];
      }
    }
    if (more) stash(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }

  // Write the tile: for fixed (i, jj) the 16 threads of a half-warp store 16 consecutive rows.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t m = m_block + tx + i * TX;
    if (m >= gemm.rows) continue;
    const int64_t base = gemm.out_base(static_cast<int32_t>(m));
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) {
      const int32_t col = col_block + ty * TN + jj;
      if (col >= gemm.cols) continue;
      T v = acc[i][jj];
      if (bias != nullptr) v += bias[col];
      out[base + col * gemm.out_col_stride] = v;
    }
  }
}

template <typename T, typename Gemm, int BN>
void launch_implicit_tile(const Gemm& gemm, const T* a, const T* b, const T* bias, T* out) {
  constexpr int BM = kImplicitTileRows;
  constexpr int BK = sizeof(T) == 4 ? 16 : 8;
  constexpr int TM = 8;
  constexpr int TN = BN / 16;
  const dim3 grid(static_cast<unsigned>((static_cast<int64_t>(gemm.rows) + BM - 1) / BM),
                  static_cast<unsigned>((static_cast<int64_t>(gemm.cols) + BN - 1) / BN));
  EMBER_LAUNCH(grid, kImplicitThreads, 0, stream(),
               implicit_gemm_kernel<T, Gemm, BM, BN, BK, TM, TN>)
  (gemm, a, b, bias, out);
  EMBER_LAUNCH_CHECK("implicit_gemm_kernel");
}

// The tile width follows the column count (implicit_tile_cols): 16, 32 or 64.
template <typename T, typename Gemm>
void launch_implicit(const Gemm& gemm, const T* a, const T* b, const T* bias, T* out) {
  if (gemm.rows == 0 || gemm.cols == 0) return;
  switch (implicit_tile_cols(gemm.cols)) {
    case 16: launch_implicit_tile<T, Gemm, 16>(gemm, a, b, bias, out); break;
    case 32: launch_implicit_tile<T, Gemm, 32>(gemm, a, b, bias, out); break;
    default: launch_implicit_tile<T, Gemm, 64>(gemm, a, b, bias, out); break;
  }
}

}  // namespace

// ---- the implicit path --------------------------------------------------------------------------

template <typename T>
void implicit_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  EMBER_CHECK(implicit_forward_fits(g),
              "conv2d on CUDA (implicit GEMM): the layer is too large "
              "for the implicit-GEMM kernel's 32-bit indexing (N*P*Q = ",
              g.N * g.P * g.Q, ", K = ", g.K, ", C*R*S = ", g.C * g.R * g.S,
              "); use ConvAlgo::Auto or "
              "ConvAlgo::Im2colGemm");
  launch_implicit<T>(make_forward_gemm(g), x, w, b, y);
}

template <typename T>
void implicit_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  EMBER_CHECK(implicit_backward_input_fits(g),
              "conv2d backward on CUDA (implicit GEMM): the "
              "layer is too large for the implicit-GEMM kernel's 32-bit indexing (N*H*W = ",
              g.N * g.H * g.W, ", C = ", g.C, ", K*R*S = ", g.K * g.R * g.S,
              "); use "
              "ConvAlgo::Auto or ConvAlgo::Im2colGemm");
  launch_implicit<T>(make_backward_data_gemm(g), dy, w, static_cast<const T*>(nullptr), dx);
}

template void implicit_forward<float>(const ConvGeometry&, const float*, const float*, const float*,
                                      float*);
template void implicit_forward<double>(const ConvGeometry&, const double*, const double*,
                                       const double*, double*);
template void implicit_backward_input<float>(const ConvGeometry&, const float*, const float*,
                                             float*);
template void implicit_backward_input<double>(const ConvGeometry&, const double*, const double*,
                                              double*);

}  // namespace ember::kernels::cuda::conv_detail
