// ember/kernels/cuda/conv_index.h — the index arithmetic of the CUDA convolution kernels
// (kernels/cuda/conv_im2col.cu, conv_implicit.cu), as plain host/device code: the CPU test suite
// (tests/kernels/conv_cuda.cpp) runs exactly the functions the GPU runs, on every machine.
//
// Letters as in kernels/conv_geometry.h: N batch, C/H/W input, K filters, R x S kernel,
// P x Q output; j = (c, r, s) is a "tap" of a filter (a row of the im2col matrix).
//
// What is here:
//   FastDivmod        n / d and n % d with one multiply-high, one add and one shift. A GPU has no
//                     integer divider: `n / d` by a run-time d is a ~20-instruction routine, and
//                     the kernels split every flat index into (n, c, h, w)-style coordinates.
//   ConvIndex         the geometry in 32-bit ints, with the divisors the kernels use.
//   input_tap         which input row (or column) an output position reads through a tap;
//   output_tap        the inverse, for the backward passes.
//   im2col_source     where one element of the im2col matrix comes from;
//   im2col_element, col2im_element, transpose_dy_source   the per-thread bodies of the im2col
//                     path's kernels.
//   ForwardGemm       the forward convolution as a GEMM whose A rows are input windows;
//   BackwardDataGemm  the input gradient as a GEMM whose A rows are gradient windows (both
//                     computed by the implicit-GEMM kernel without any scratch buffer).
//   images_per_chunk  how many images the im2col path handles per pass.
//   choose_*_algo     what ConvAlgo::Auto runs, and the reasoning behind it.
//
// 32-bit indexing. Everything a kernel divides is kept below 2^31 (conv_index_fits() checks
// the per-image sizes; the launchers cut the batch so that each launch's flat indices fit too);
// offsets into tensors that can be larger (image n's base, n * C*H*W) are 64-bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/conv_geometry.h"
#include "kernels/cuda/conv.h"
#include "kernels/base/host_device.h"

namespace ember::kernels::cuda {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// ---- division by a constant divisor -----------------------------------------------------------
//
// For a divisor d >= 1 let l = ceil(log2 d) and m = floor(2^32 * (2^l - d) / d) + 1 (which fits
// in 32 bits). Then for every 0 <= n < 2^31
//     n / d == (umulhi(n, m) + n) >> l,        umulhi(a, b) = the high 32 bits of a * b.
// Why: the right side is floor(n * (2^32 + m) / 2^(32+l)), and 2^32 + m = floor(2^(32+l) / d) + 1,
// so (2^32 + m) / 2^(32+l) exceeds 1/d by at most 1 / 2^(32+l). n times it exceeds n / d by less
// than 2^31 / 2^(32+l) = 1 / 2^(l+1) <= 1 / (2d): less than the distance (at least 1/d) from n / d
// up to the next integer, so the floor is unchanged. The sum umulhi + n stays below 2^32 because
// umulhi(n, m) <= n < 2^31. (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994.)
struct FastDivmod {
  int32_t divisor = 1;
  uint32_t multiplier = 1;
  uint32_t shift = 0;

  FastDivmod() = default;
  // d < 1 is treated as 1: such a divisor belongs to an empty dimension that no kernel indexes.
  EMBER_HOST_DEVICE explicit FastDivmod(int64_t d) {
    divisor = d < 1 ? 1 : static_cast<int32_t>(d);
    shift = 0;
    while ((uint64_t{1} << shift) < static_cast<uint64_t>(divisor)) ++shift;
    const uint64_t two_l = uint64_t{1} << shift;
    multiplier = static_cast<uint32_t>(((uint64_t{1} << 32) * (two_l - divisor)) / divisor + 1);
  }

  // n / divisor, for 0 <= n < 2^31.
  EMBER_HOST_DEVICE int32_t div(int32_t n) const {
    const uint32_t un = static_cast<uint32_t>(n);
#ifdef __CUDA_ARCH__
    const uint32_t hi = __umulhi(un, multiplier);
#else
    const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(un) * multiplier) >> 32);
#endif
    return static_cast<int32_t>((hi + un) >> shift);
  }
  // quotient and remainder, for 0 <= n < 2^31.
  EMBER_HOST_DEVICE void divmod(int32_t n, int32_t* quotient, int32_t* remainder) const {
    const int32_t q = div(n);
    *quotient = q;
    *remainder = n - q * divisor;
  }
};

// ---- the geometry as the kernels see it ---------------------------------------------------------

// (No N: the kernels work on chunks of images and are told the chunk's size.)
struct ConvIndex {
  int32_t C = 0, H = 0, W = 0, K = 0, R = 0, S = 0, P = 0, Q = 0;
  int32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int32_t HW = 0, PQ = 0, RS = 0, CRS = 0;
  int64_t CHW = 0, KPQ = 0;  // per-image sizes of x and y (below 2^31, kept 64-bit for offsets)
  FastDivmod by_W, by_HW, by_Q, by_PQ, by_S, by_RS, by_C, by_K, by_CRS;
  FastDivmod by_stride_h, by_stride_w;
};

// Do the per-image sizes fit the kernels' 32-bit indexing? (N itself may be anything.) Every
// product a kernel forms — positions p * stride + r * dil, per-image sizes C*H*W, K*P*Q,
// C*R*S*P*Q (one image's columns) and K*R*S (the backward GEMM's depth) — must stay below 2^31.
inline bool conv_index_fits(const ConvGeometry& g) {
  const int64_t sizes[] = {g.C, g.H, g.W, g.K, g.R, g.S, g.P, g.Q, g.stride_h, g.stride_w,
                           g.pad_h, g.pad_w, g.dil_h, g.dil_w};
  for (int64_t v : sizes) {
    if (v < 0 || v > kInt32Max) return false;
  }
  // Each factor is below 2^31, so each product below is below 2^62 and computed exactly.
  auto ok = [](int64_t v) { return v <= kInt32Max; };
  return ok(g.H + 2 * g.pad_h) && ok(g.W + 2 * g.pad_w) && ok(g.dil_h * g.R) &&
         ok(g.dil_w * g.S) && ok(g.stride_h * g.P) && ok(g.stride_w * g.Q) &&
         ok(g.H * g.W) && ok(g.P * g.Q) && ok(g.R * g.S) && ok(g.C * g.H * g.W) &&
         ok(g.K * g.P * g.Q) && ok(g.C * g.R * g.S) && ok(g.K * g.R * g.S) &&
         ok(g.C * g.R * g.S * g.P * g.Q);
}

// Requires conv_index_fits(g).
inline ConvIndex make_conv_index(const ConvGeometry& g) {
  ConvIndex ix;
  ix.C = static_cast<int32_t>(g.C);
  ix.H = static_cast<int32_t>(g.H);
  ix.W = static_cast<int32_t>(g.W);
  ix.K = static_cast<int32_t>(g.K);
  ix.R = static_cast<int32_t>(g.R);
  ix.S = static_cast<int32_t>(g.S);
  ix.P = static_cast<int32_t>(g.P);
  ix.Q = static_cast<int32_t>(g.Q);
  ix.stride_h = static_cast<int32_t>(g.stride_h);
  ix.stride_w = static_cast<int32_t>(g.stride_w);
  ix.pad_h = static_cast<int32_t>(g.pad_h);
  ix.pad_w = static_cast<int32_t>(g.pad_w);
  ix.dil_h = static_cast<int32_t>(g.dil_h);
  ix.dil_w = static_cast<int32_t>(g.dil_w);
  ix.HW = static_cast<int32_t>(g.H * g.W);
  ix.PQ = static_cast<int32_t>(g.P * g.Q);
  ix.RS = static_cast<int32_t>(g.R * g.S);
  ix.CRS = static_cast<int32_t>(g.C * g.R * g.S);
  ix.CHW = g.C * g.H * g.W;
  ix.KPQ = g.K * g.P * g.Q;
  ix.by_W = FastDivmod(g.W);
  ix.by_HW = FastDivmod(ix.HW);
  ix.by_Q = FastDivmod(g.Q);
  ix.by_PQ = FastDivmod(ix.PQ);
  ix.by_S = FastDivmod(g.S);
  ix.by_RS = FastDivmod(ix.RS);
  ix.by_C = FastDivmod(g.C);
  ix.by_K = FastDivmod(g.K);
  ix.by_CRS = FastDivmod(ix.CRS);
  ix.by_stride_h = FastDivmod(g.stride_h);
  ix.by_stride_w = FastDivmod(g.stride_w);
  return ix;
}

// ---- one axis of a window ---------------------------------------------------------------------

// The input position that output position `out` reads through kernel tap `tap`:
//   in = out * stride - pad + tap * dil.
// Stored in *in; true when it lies inside [0, size) (false: the tap reads the zero padding).
EMBER_HOST_DEVICE inline bool input_tap(int32_t out, int32_t tap, int32_t stride, int32_t pad,
                                        int32_t dil, int32_t size, int32_t* in) {
  const int32_t v = out * stride - pad + tap * dil;
  *in = v;
  return v >= 0 && v < size;
}

// The inverse: the output position whose window reads input position `in` through tap `tap`,
// if there is one — out = (in + pad - tap * dil) / stride when that division is exact and
// 0 <= out < size. At most one output position per (in, tap) exists, so the backward passes can
// GATHER every contribution to an input pixel (loop over taps) instead of scattering with atomics.
EMBER_HOST_DEVICE inline bool output_tap(int32_t in, int32_t tap, const FastDivmod& stride,
                                         int32_t pad, int32_t dil, int32_t size, int32_t* out) {
  const int32_t v = in + pad - tap * dil;
  if (v < 0) return false;
  int32_t q = 0, rem = 0;
  stride.divmod(v, &q, &rem);
  *out = q;
  return rem == 0 && q < size;
}

// Element (j = (c, r, s), pq = (p, q)) of one image's im2col matrix [C*R*S, P*Q] is a copy of
// x[c, h, w] with h = input_tap(p, r), w = input_tap(q, s). Returns that element's offset
// c*H*W + h*W + w within the image, or -1 where the tap reads the zero padding.
EMBER_HOST_DEVICE inline int64_t im2col_source(const ConvIndex& g, int32_t j, int32_t pq) {
  int32_t c = 0, rs = 0, r = 0, s = 0, p = 0, q = 0, h = 0, w = 0;
  g.by_RS.divmod(j, &c, &rs);
  g.by_S.divmod(rs, &r, &s);
  g.by_Q.divmod(pq, &p, &q);
  if (!input_tap(p, r, g.stride_h, g.pad_h, g.dil_h, g.H, &h)) return -1;
  if (!input_tap(q, s, g.stride_w, g.pad_w, g.dil_w, g.W, &w)) return -1;
  return (static_cast<int64_t>(c) * g.H + h) * g.W + w;
}

// ---- the bodies of the im2col path's kernels -----------------------------------------------------
// One call = one thread's work for flat index i (< 2^31) of a chunk of images; the kernels in
// kernels/cuda/conv_im2col.cu are grid-stride loops around them, and the CPU tests loop over
// them.

// im2col: column element i = (n, j, pq) of the chunk, with pq fastest, is written to
// col[n * n_stride + j * j_stride + pq] (the layouts are described at im2col_kernel). x points at
// the chunk's first image.
template <typename T>
EMBER_HOST_DEVICE inline void im2col_element(const ConvIndex& g, const T* x, T* col, int32_t i,
                                             int64_t n_stride, int64_t j_stride) {
  int32_t row = 0, pq = 0, n = 0, j = 0;
  g.by_PQ.divmod(i, &row, &pq);
  g.by_CRS.divmod(row, &n, &j);
  const int64_t src = im2col_source(g, j, pq);
  col[n * n_stride + j * j_stride + pq] = src >= 0 ? x[n * g.CHW + src] : T(0);
}

// col2im: the value of input pixel i = (n, c, h, w) of the chunk — the sum of every element of
// dcol ([images, CRS, PQ]) that im2col copied from that pixel. For each tap (r, s) at most one
// output pixel (p, q) read it (output_tap); the taps are visited in order r, then s.
template <typename T>
EMBER_HOST_DEVICE inline T col2im_element(const ConvIndex& g, const T* dcol, int32_t i) {
  int32_t plane = 0, hw = 0, h = 0, w = 0, n = 0, c = 0;
  g.by_HW.divmod(i, &plane, &hw);
  g.by_W.divmod(hw, &h, &w);
  g.by_C.divmod(plane, &n, &c);
  const T* col_n = dcol + static_cast<int64_t>(n) * g.CRS * g.PQ;
  T sum = T(0);
  for (int32_t r = 0; r < g.R; ++r) {
    int32_t p = 0;
    if (!output_tap(h, r, g.by_stride_h, g.pad_h, g.dil_h, g.P, &p)) continue;
    for (int32_t s = 0; s < g.S; ++s) {
      int32_t q = 0;
      if (!output_tap(w, s, g.by_stride_w, g.pad_w, g.dil_w, g.Q, &q)) continue;
      const int32_t j = (c * g.R + r) * g.S + s;
      sum += col_n[static_cast<int64_t>(j) * g.PQ + p * g.Q + q];
    }
  }
  return sum;
}

// The transpose of a chunk dy [images, K, PQ] into dyT [K, images * PQ]: element i = (k, n, pq)
// of dyT (pq fastest) is dy's element at the returned offset, (n * K + k) * PQ + pq.
EMBER_HOST_DEVICE inline int64_t transpose_dy_source(const FastDivmod& by_PQ,
                                                     const FastDivmod& by_images, int32_t K,
                                                     int32_t i) {
  int32_t row = 0, pq = 0, k = 0, n = 0;
  by_PQ.divmod(i, &row, &pq);
  by_images.divmod(row, &k, &n);
  return (static_cast<int64_t>(n) * K + k) * by_PQ.divisor + pq;
}

// ---- the two convolutions the implicit-GEMM kernel computes -------------------------------------
//
// Each is   out[m, col] = sum over j < depth of A[m, j] * B[j, col]   (+ bias[col])
// where A and B are never stored: a_index / b_index say where their elements live in the real
// tensors (-1: a zero), and out_base(m) + col * out_col_stride where out[m, col] goes. A row's
// coordinates are decoded once (row()) and reused for every j, since the kernel walks j in the
// inner loop.

// Forward: rows m = (n, p, q) are output pixels (N*P*Q), columns are filters k (K), the depth is
// the taps j = (c, r, s) (C*R*S).
//   A[m, j] = x[n, c, p*sh - ph + r*dh, q*sw - pw + s*dw]   (0 outside the image)
//   B[j, k] = w[k, c, r, s] = w[k * CRS + j]
//   out[m, k] = y[n, k, p, q] = y[n * K*P*Q + k * P*Q + (p*Q + q)]
struct ForwardGemm {
  ConvIndex g;
  int32_t rows = 0, cols = 0, depth = 0;
  int64_t out_col_stride = 0;

  struct Row {
    int64_t base;    // offset of image n in x
    int32_t h0, w0;  // the window's top-left tap (may be negative: padding)
  };

  EMBER_HOST_DEVICE Row row(int32_t m) const {
    int32_t n = 0, pq = 0, p = 0, q = 0;
    g.by_PQ.divmod(m, &n, &pq);
    g.by_Q.divmod(pq, &p, &q);
    return Row{n * g.CHW, p * g.stride_h - g.pad_h, q * g.stride_w - g.pad_w};
  }
  EMBER_HOST_DEVICE int64_t a_index(const Row& row, int32_t j) const {
    int32_t c = 0, rs = 0, r = 0, s = 0;
    g.by_RS.divmod(j, &c, &rs);
    g.by_S.divmod(rs, &r, &s);
    const int32_t h = row.h0 + r * g.dil_h;  // input_tap, with the row's part precomputed
    const int32_t w = row.w0 + s * g.dil_w;
    if (h < 0 || h >= g.H || w < 0 || w >= g.W) return -1;
    return row.base + (static_cast<int64_t>(c) * g.H + h) * g.W + w;
  }
  EMBER_HOST_DEVICE int64_t b_index(int32_t j, int32_t k) const {
    return static_cast<int64_t>(k) * g.CRS + j;
  }
  EMBER_HOST_DEVICE int64_t out_base(int32_t m) const {
    int32_t n = 0, pq = 0;
    g.by_PQ.divmod(m, &n, &pq);
    return n * g.KPQ + pq;
  }
};

// Requires conv_index_fits(g) and g.N * P * Q < 2^31.
inline ForwardGemm make_forward_gemm(const ConvGeometry& g) {
  ForwardGemm f;
  f.g = make_conv_index(g);
  f.rows = static_cast<int32_t>(g.N * g.P * g.Q);
  f.cols = static_cast<int32_t>(g.K);
  f.depth = static_cast<int32_t>(g.C * g.R * g.S);
  f.out_col_stride = g.P * g.Q;
  return f;
}

// Input gradient: dx[n, c, h, w] = sum over (k, r, s) of dy[n, k, p, q] * w[k, c, r, s], where
// (p, q) = (output_tap(h, r), output_tap(w, s)) — the output pixel whose window put x[n, c, h, w]
// under tap (r, s) — and the term is absent when there is none. Rows m = (n, h, w) are input
// pixels (N*H*W), columns are input channels c (C), the depth is j = (k, r, s) (K*R*S).
//   A[m, j] = dy[n, k, p, q]   (0 where no output pixel reads (h, w) through (r, s))
//   B[j, c] = w[k, c, r, s] = w[(k * C + c) * R*S + (r*S + s)]
//   out[m, c] = dx[n, c, h, w] = dx[n * C*H*W + c * H*W + (h*W + w)]
// With stride 1 every tap of an interior pixel is live; with stride s only 1 in s of them is
// (per axis), and the rest of the depth multiplies zeros — see choose_backward_input_algo().
struct BackwardDataGemm {
  ConvIndex g;
  int32_t rows = 0, cols = 0, depth = 0;
  int64_t out_col_stride = 0;

  struct Row {
    int64_t base;  // offset of image n in dy
    int32_t h, w;  // the input pixel
  };

  EMBER_HOST_DEVICE Row row(int32_t m) const {
    int32_t n = 0, hw = 0, h = 0, w = 0;
    g.by_HW.divmod(m, &n, &hw);
    g.by_W.divmod(hw, &h, &w);
    return Row{n * g.KPQ, h, w};
  }
  EMBER_HOST_DEVICE int64_t a_index(const Row& row, int32_t j) const {
    int32_t k = 0, rs = 0, r = 0, s = 0, p = 0, q = 0;
    g.by_RS.divmod(j, &k, &rs);
    g.by_S.divmod(rs, &r, &s);
    if (!output_tap(row.h, r, g.by_stride_h, g.pad_h, g.dil_h, g.P, &p)) return -1;
    if (!output_tap(row.w, s, g.by_stride_w, g.pad_w, g.dil_w, g.Q, &q)) return -1;
    return row.base + (static_cast<int64_t>(k) * g.P + p) * g.Q + q;
  }
  EMBER_HOST_DEVICE int64_t b_index(int32_t j, int32_t c) const {
    int32_t k = 0, rs = 0;
    g.by_RS.divmod(j, &k, &rs);
    return (static_cast<int64_t>(k) * g.C + c) * g.RS + rs;
  }
  EMBER_HOST_DEVICE int64_t out_base(int32_t m) const {
    int32_t n = 0, hw = 0;
    g.by_HW.divmod(m, &n, &hw);
    return n * g.CHW + hw;
  }
};

// Requires conv_index_fits(g) and g.N * H * W < 2^31.
inline BackwardDataGemm make_backward_data_gemm(const ConvGeometry& g) {
  BackwardDataGemm b;
  b.g = make_conv_index(g);
  b.rows = static_cast<int32_t>(g.N * g.H * g.W);
  b.cols = static_cast<int32_t>(g.C);
  b.depth = static_cast<int32_t>(g.K * g.R * g.S);
  b.out_col_stride = g.H * g.W;
  return b;
}

// ---- the implicit-GEMM kernel's tiles (kernels/cuda/conv_implicit.cu) ---------------------------
// A block computes a kImplicitTileRows x implicit_tile_cols(cols) tile of `out`; the column
// width follows the GEMM's column count so that a layer with 6 filters does not pay for 64.
constexpr int kImplicitTileRows = 128;
constexpr int64_t kMaxGridY = 65535;  // CUDA's limit on gridDim.y (the column tiles)

inline int implicit_tile_cols(int64_t cols) { return cols <= 16 ? 16 : cols <= 32 ? 32 : 64; }

inline int64_t implicit_tiles(int64_t rows, int64_t cols) {
  const int64_t bn = implicit_tile_cols(cols);
  return ((rows + kImplicitTileRows - 1) / kImplicitTileRows) * ((cols + bn - 1) / bn);
}

// Can the implicit kernel run this GEMM (rows, columns and depth in 32 bits, columns in grid y)?
inline bool implicit_gemm_fits(const ConvGeometry& g, int64_t rows, int64_t cols, int64_t depth) {
  return conv_index_fits(g) && rows <= kInt32Max && depth <= kInt32Max &&
         (cols + implicit_tile_cols(cols) - 1) / implicit_tile_cols(cols) <= kMaxGridY;
}
inline bool implicit_forward_fits(const ConvGeometry& g) {
  // The per-image sizes and N below 2^31 first: then N*P*Q cannot overflow 64 bits.
  if (!conv_index_fits(g) || g.N < 0 || g.N > kInt32Max) return false;
  return implicit_gemm_fits(g, g.N * g.P * g.Q, g.K, g.C * g.R * g.S);
}
inline bool implicit_backward_input_fits(const ConvGeometry& g) {
  if (!conv_index_fits(g) || g.N < 0 || g.N > kInt32Max) return false;
  return implicit_gemm_fits(g, g.N * g.H * g.W, g.C, g.K * g.R * g.S);
}

// ---- the im2col path's batching ----------------------------------------------------------------
//
// The im2col path handles `nb` images per pass: their scratch (scratch_per_image elements each,
// elem_size bytes per element) must fit budget_bytes, and every kernel of the pass indexes at
// most nb * index_per_image elements with 32-bit ints. At least 1 image, at most N. Returns 0
// when a single image already breaks the 32-bit limit (the caller reports it).
inline int64_t images_per_chunk(int64_t N, int64_t scratch_per_image, int64_t index_per_image,
                                int64_t elem_size, int64_t budget_bytes) {
  if (index_per_image > kInt32Max) return 0;
  int64_t nb = N;
  if (scratch_per_image > 0) nb = std::min(nb, budget_bytes / (scratch_per_image * elem_size));
  if (index_per_image > 0) nb = std::min(nb, kInt32Max / index_per_image);
  return std::max<int64_t>(std::min<int64_t>(nb, N), 1);
}

// ---- what ConvAlgo::Auto runs --------------------------------------------------------------------
//
// The forward rule follows from what each path costs; the input-gradient rule was changed by the
// first measurement on a GPU (below). bench_conv measures both paths on the seed models' layers.
//
// The im2col path writes the column matrix (R*S copies of the input: N*C*R*S*P*Q elements) and
// reads it back in the GEMM: 2 * elem_size bytes per column element, and each column element
// meets K filters, so 2 * elem_size / K bytes of extra memory traffic per multiply-add. A current
// GPU does roughly 5-15 float multiply-adds in the time it moves one byte from DRAM (H100:
// ~33 T FMA/s against ~3.3 TB/s; T4: ~4 T against 0.32 TB/s), so for K = 32 float filters
// (0.25 B per multiply-add) moving the columns costs one to four times the arithmetic itself,
// and for K = 128 a fraction of it. cuBLAS's GEMM, on the other hand, runs closer to the GPU's
// peak than ember's implicit kernel (a plain register-tiled FP32 kernel — expect perhaps half of
// cuBLAS; bench/ measures it), and it splits a long depth (C*R*S) over several blocks when the
// output is small, which ember's kernel does not. The im2col path also costs three launches
// (im2col, GEMM, bias) where the implicit one costs one.
//
// Forward: the implicit kernel when
//   (1) the indexing fits (implicit_forward_fits), and
//   (2) K <= 64: few filters — the column traffic would dominate, and a 64-wide tile covers K;
//   (3) and either its tiles fill the GPU (at least one per SM), or the whole product is small
//       (2*M*K*CRS <= kSmallGemmFlops) so that launches, not arithmetic, set the time.
// Otherwise im2col + cuBLAS: many filters amortise the columns, and cuBLAS's better GEMM (and
// its split of long depths over idle SMs) wins.
//
// Input gradient: always im2col + cuBLAS (col2im). By the reasoning above the implicit kernel
// should win on the transposed problem (columns C, depth K*R*S) when C is small, but the first
// measurements on a GPU (an H200, bench/RESULTS.md "CUDA backend on a GPU") put it well behind
// col2im + cuBLAS on every layer of the seed models: its columns are the input channels, often 1
// to 6 of a 64-wide tile, and each of its A elements costs an output_tap lookup. With stride s it
// would also multiply zeros for all but 1/(s_h*s_w) of the depth. ConvAlgo::ImplicitGemm still
// runs it when asked.
//
// Weight gradient: always im2col + cuBLAS (the only path): dW [K, CRS] is small and its depth is
// the whole batch (N*P*Q), exactly the shape where cuBLAS's split of the depth is needed.
constexpr int64_t kSmallGemmFlops = int64_t{1} << 26;  // ~67 MFLOP: a few microseconds on any GPU
constexpr int64_t kImplicitMaxCols = 64;

inline bool implicit_pays(int64_t rows, int64_t cols, int64_t depth, int sm_count) {
  if (cols > kImplicitMaxCols) return false;
  if (implicit_tiles(rows, cols) >= sm_count) return true;
  // rows, cols, depth < 2^31 each: compare in double to avoid overflowing the product.
  return 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(depth) <=
         static_cast<double>(kSmallGemmFlops);
}

inline ConvAlgo choose_forward_algo(const ConvGeometry& g, int sm_count) {
  if (!implicit_forward_fits(g)) return ConvAlgo::Im2colGemm;
  return implicit_pays(g.N * g.P * g.Q, g.K, g.C * g.R * g.S, sm_count) ? ConvAlgo::ImplicitGemm
                                                                        : ConvAlgo::Im2colGemm;
}

// Grouped convolutions (groups > 1), before the rules above: depthwise layers (one input
// channel per group) run the direct kernels for every pass — each output is a sum of only R*S
// products, a GEMM that shallow wastes its tiles, and im2col would copy every pixel R*S times.
// Other groups stay with Auto: the group loop (conv_grouped.cu) applies the rules above to each
// group's own geometry.
inline ConvAlgo choose_grouped_algo(const ConvGeometry& g) {
  return g.groups > 1 && g.C == g.groups ? ConvAlgo::Direct : ConvAlgo::Auto;
}

inline ConvAlgo choose_backward_input_algo(const ConvGeometry& /*g*/, int /*sm_count*/) {
  return ConvAlgo::Im2colGemm;
}

inline ConvAlgo choose_backward_weight_algo(const ConvGeometry& /*g*/) {
  return ConvAlgo::Im2colGemm;
}

}  // namespace ember::kernels::cuda
