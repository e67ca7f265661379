// ember/kernels/cuda/conv_im2col.cu — 2-d convolution on CUDA by ConvAlgo::Im2colGemm: the
// CPU's method (kernels/cpu/conv_im2col.cpp) with cuBLAS for the products. The dispatcher
// (kernels/cuda/conv.cu) sends here every pass that Auto or Im2colGemm gives this algorithm,
// and every weight gradient (ImplicitGemm has none of its own).
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, C, R, S] (= [K, CRS] in memory),
// b [K], y [N, K, P, Q]; CRS = C*R*S is the length of one filter, PQ = P*Q one output plane,
// j = (c, r, s) a filter tap.
//
//   forward          col_n [CRS, PQ] = im2col(x[n]);  y[n] = w [K, CRS] @ col_n   (+ b)
//   input gradient   dcol_n = w^T @ dy[n];            dx[n] = col2im(dcol_n)
//   weight gradient  dw = sum_n dy[n] [K, PQ] @ col_n^T   (db: conv_bias.cu)
// The column matrices of a whole chunk of images are built by one launch, and the chunk's
// products run as ONE strided-batched GEMM (the weight is the same matrix for every image:
// batch stride 0). A chunk is as many images as fit kDefaultColumnBudgetBytes of scratch (all of
// a typical batch: the seed CNNs need at most ~115 MB); larger batches loop over chunks.
// For the weight gradient the sum over images is folded into the GEMM's depth instead: the
// chunk's columns are laid side by side as col [CRS, nb*PQ] and dy is transposed to
// dyT [K, nb*PQ], so dw = dyT @ col^T is one product whose depth runs over (image, pixel);
// later chunks add to it (beta = 1). A 1x1, stride-1, unpadded kernel needs no im2col at all:
// x[n] viewed as [C, H*W] already is col_n (and the GEMM writes dx[n] straight away).
//
// Determinism: no atomics; col2im loops over the taps in order, so results repeat bit for bit
// (cuBLAS's default GEMMs are deterministic for a given GPU and size). Scratch (the columns and
// dyT) comes from scratch() in conv_internal.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "kernels/base/error.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_index.h"
#include "kernels/cuda/conv_internal.cuh"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace conv_detail {

namespace {

// Scratch the im2col path may hold at once (see the top of the file); set_conv_column_budget
// lowers it for the chunking tests.
constexpr int64_t kDefaultColumnBudgetBytes = int64_t{256} << 20;
std::atomic<int64_t> g_column_budget{kDefaultColumnBudgetBytes};
int64_t column_budget() { return g_column_budget.load(std::memory_order_relaxed); }

// ---- elementwise kernels of the im2col path -----------------------------------------------------
// All use grid-stride loops over a flat index that the launchers keep below 2^31 (so the
// FastDivmod splits apply); the loop variable is 64-bit so that i += stride cannot overflow.

// im2col for `images` images: one thread per column element. Element (n, j, pq) is written to
// col[n * n_stride + j * j_stride + pq]; two layouts use it:
//   per image      n_stride = CRS*PQ, j_stride = PQ        (col_n [CRS, PQ] one after another)
//   side by side   n_stride = PQ,     j_stride = images*PQ (one [CRS, images*PQ] matrix)
// Consecutive threads take consecutive pq, so in both layouts a warp writes 32 consecutive
// elements (coalesced) and, for stride 1, reads 32 consecutive pixels of one input row.
template <typename T>
__global__ void im2col_kernel(ConvIndex g, const T* __restrict__ x, T* __restrict__ col,
                              int64_t total, int64_t n_stride, int64_t j_stride) {
  for (const int64_t i : grid_stride(total))
    im2col_element(g, x, col, static_cast<int32_t>(i), n_stride, j_stride);
}

// col2im for `images` images: one thread per INPUT pixel (n, c, h, w), which gathers every
// column element that was copied from it — for each tap (r, s), the output pixel (p, q) whose
// window put this pixel under that tap (output_tap; at most one) — and writes the sum once
// (col2im_element in conv_index.h). No two threads write the same pixel, so there are no atomics
// and the order of the additions (r, then s) is fixed. dcol is laid out per image:
// [images, CRS, PQ]. Consecutive threads take consecutive w: coalesced writes, and for stride 1
// coalesced reads of dcol rows.
template <typename T>
__global__ void col2im_kernel(ConvIndex g, const T* __restrict__ dcol, T* __restrict__ dx,
                              int64_t total) {
  for (const int64_t i : grid_stride(total))
    dx[i] = col2im_element(g, dcol, static_cast<int32_t>(i));
}

// dyT [K, images*PQ] from a chunk dy [images, K, PQ]: dyT[k, n*PQ + pq] = dy[n, k, pq]. One
// thread per element; consecutive threads take consecutive pq, so reads and writes are both
// runs of consecutive addresses.
template <typename T>
__global__ void transpose_dy_kernel(FastDivmod by_PQ, FastDivmod by_images, int32_t K,
                                    const T* __restrict__ dy, T* __restrict__ dyT, int64_t total) {
  for (const int64_t i : grid_stride(total))
    dyT[i] = dy[transpose_dy_source(by_PQ, by_images, K, static_cast<int32_t>(i))];
}

// ---- launchers of the im2col path ---------------------------------------------------------------

template <typename T>
void launch_im2col(const ConvIndex& ix, const T* x, T* col, int64_t images, int64_t n_stride,
                   int64_t j_stride) {
  const int64_t total = images * ix.CRS * ix.PQ;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), im2col_kernel<T>)
  (ix, x, col, total, n_stride, j_stride);
  EMBER_LAUNCH_CHECK("im2col_kernel");
}

template <typename T>
void launch_col2im(const ConvIndex& ix, const T* dcol, T* dx, int64_t images) {
  const int64_t total = images * ix.CHW;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), col2im_kernel<T>)(ix, dcol, dx, total);
  EMBER_LAUNCH_CHECK("col2im_kernel");
}

// 1x1 kernel, stride 1, no padding: im2col would copy x[n] ([C, H*W]) unchanged.
bool is_pointwise(const ConvGeometry& g) {
  return g.R == 1 && g.S == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

}  // namespace

// ---- the im2col path ----------------------------------------------------------------------------
//
// The GEMMs are row-major requests to kernels/cuda/gemm.h (gemm_plan.h explains, once, how they
// become column-major cuBLAS calls). Per chunk of `count` images starting at image n0:
//   forward   y[n] [K, PQ] = w [K, CRS] @ col_n [CRS, PQ]: gemm_batched, a = w with batch
//             stride 0 (the same filters for every image), b = the columns (stride CRS*PQ),
//             c = y[n0..] (stride K*PQ);
//   input     dcol_n [CRS, PQ] = w^T @ dy[n] [K, PQ]: trans_a, as w is stored [K, CRS];
//   weight    dw [K, CRS] (+)= dyT [K, count*PQ] @ col^T with col [CRS, count*PQ]: trans_b.

template <typename T>
void im2col_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  check_index_fits(g, "conv2d");
  const ConvIndex ix = make_conv_index(g);
  const DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  constexpr int64_t kElem = sizeof(T);
  const int64_t col_elems = static_cast<int64_t>(ix.CRS) * ix.PQ;
  const bool pointwise = is_pointwise(g);
  const int64_t nb =
      chunk_or_throw(images_per_chunk(g.N, pointwise ? 0 : col_elems, std::max(col_elems, ix.KPQ),
                                      kElem, column_budget()),
                     "conv2d");
  Workspace col_buffer = pointwise ? Workspace() : scratch(nb * col_elems * kElem);
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t count = std::min(nb, g.N - n0);
    const T* col = x + n0 * ix.CHW;  // pointwise: the image is its own column matrix
    if (!pointwise) {
      T* c = static_cast<T*>(col_buffer.data());
      launch_im2col(ix, x + n0 * ix.CHW, c, count, col_elems, ix.PQ);
      col = c;
    }
    T* y_chunk = y + n0 * ix.KPQ;
    gemm_batched(dtype, false, false, g.K, ix.PQ, ix.CRS, 1.0, w, ix.CRS, 0, col, ix.PQ, col_elems,
                 0.0, y_chunk, ix.PQ, ix.KPQ, count);
    if (b != nullptr) launch_add_bias(ix, b, y_chunk, count);
  }
}

template <typename T>
void im2col_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  check_index_fits(g, "conv2d backward");
  const ConvIndex ix = make_conv_index(g);
  const DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  constexpr int64_t kElem = sizeof(T);
  const int64_t col_elems = static_cast<int64_t>(ix.CRS) * ix.PQ;
  const bool pointwise = is_pointwise(g);
  const int64_t nb =
      chunk_or_throw(images_per_chunk(g.N, pointwise ? 0 : col_elems, std::max(col_elems, ix.CHW),
                                      kElem, column_budget()),
                     "conv2d backward");
  Workspace col_buffer = pointwise ? Workspace() : scratch(nb * col_elems * kElem);
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t count = std::min(nb, g.N - n0);
    // pointwise: dcol_n is dx[n] itself, so the GEMM writes the gradient directly.
    T* dcol = pointwise ? dx + n0 * ix.CHW : static_cast<T*>(col_buffer.data());
    gemm_batched(dtype, true, false, ix.CRS, ix.PQ, g.K, 1.0, w, ix.CRS, 0, dy + n0 * ix.KPQ, ix.PQ,
                 ix.KPQ, 0.0, dcol, ix.PQ, col_elems, count);
    if (!pointwise) launch_col2im(ix, dcol, dx + n0 * ix.CHW, count);
  }
}

template <typename T>
void im2col_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  check_index_fits(g, "conv2d backward");
  const ConvIndex ix = make_conv_index(g);
  const DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  constexpr int64_t kElem = sizeof(T);
  const int64_t col_elems = static_cast<int64_t>(ix.CRS) * ix.PQ;
  // Per image: its columns and its slice of dyT. Both kernels (and the GEMM's depth count*PQ)
  // index at most count * max(CRS*PQ, K*PQ) elements.
  const int64_t nb =
      chunk_or_throw(images_per_chunk(g.N, col_elems + ix.KPQ, std::max(col_elems, ix.KPQ), kElem,
                                      column_budget()),
                     "conv2d backward");
  Workspace col_buffer = scratch(nb * col_elems * kElem);
  Workspace dyT_buffer = scratch(nb * ix.KPQ * kElem);
  T* col = static_cast<T*>(col_buffer.data());
  T* dyT = static_cast<T*>(dyT_buffer.data());
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t count = std::min(nb, g.N - n0);
    const int64_t depth = count * ix.PQ;  // the GEMM sums over (image, output pixel)
    launch_im2col(ix, x + n0 * ix.CHW, col, count, ix.PQ, depth);
    const int64_t total = count * ix.KPQ;
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), transpose_dy_kernel<T>)
    (ix.by_PQ, FastDivmod(count), ix.K, dy + n0 * ix.KPQ, dyT, total);
    EMBER_LAUNCH_CHECK("transpose_dy_kernel");
    gemm(dtype, false, true, g.K, ix.CRS, depth, 1.0, dyT, depth, col, depth, n0 == 0 ? 0.0 : 1.0,
         dw, ix.CRS);
  }
}

template void im2col_forward<float>(const ConvGeometry&, const float*, const float*, const float*,
                                    float*);
template void im2col_forward<double>(const ConvGeometry&, const double*, const double*,
                                     const double*, double*);
template void im2col_backward_input<float>(const ConvGeometry&, const float*, const float*, float*);
template void im2col_backward_input<double>(const ConvGeometry&, const double*, const double*,
                                            double*);
template void im2col_backward_weight<float>(const ConvGeometry&, const float*, const float*,
                                            float*);
template void im2col_backward_weight<double>(const ConvGeometry&, const double*, const double*,
                                             double*);

}  // namespace conv_detail

// ---- the entry point of kernels/cuda/conv.h that belongs to this path ---------------------------

void set_conv_column_budget(int64_t bytes) {
  conv_detail::g_column_budget.store(bytes > 0 ? bytes : conv_detail::kDefaultColumnBudgetBytes,
                                     std::memory_order_relaxed);
}

}  // namespace ember::kernels::cuda
