// ember/kernels/cpu/conv_im2col.cpp — 2-d convolution on the CPU by im2col + GEMM
// (kernels/cpu/gemm.h), an image (or a few) at a time: float32 and float64, any geometry. The
// dispatcher (kernels/cpu/conv.cpp) sends here every convolution the implicit GEMM
// (kernels/cpu/conv_implicit.cpp, which builds on this file: read this one first) does not take.
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q]; below
// CRS = C*R*S (the length of one filter) and PQ = P*Q (the pixels of one output plane).
//
// im2col lays one image out so that the convolution becomes one matrix product:
//   col [CRS, PQ],  col[(c*R + r)*S + s, p*Q + q] = x[c, p*stride_h - pad_h + r*dil_h,
//                                                        q*stride_w - pad_w + s*dil_w]
// (zero where that tap falls in the padding). Row (c, r, s) of col holds, for every output
// pixel, the input value that filter tap (c, r, s) multiplies, so
//   y[n] [K, PQ] = w [K, CRS] @ col [CRS, PQ]                  (w is already [K, CRS] in memory)
// and the two gradients are matrix products too:
//   dcol = w^T @ dy[n]  [CRS, PQ], then col2im adds each entry back into the pixel it came
//                                  from (a pixel read by several windows collects them all);
//   dw  += dy[n] [K, PQ] @ col^T   [K, CRS];   db += the row sums of dy[n].
//   (computed as its transpose, dw^T += col @ dy[n]^T: see im2col_backward_weight)
// A 1x1 kernel with stride 1 and no padding reads every pixel exactly once in order: col is
// x[n] itself ([C, H*W]) and dx[n] is dcol, so both copies are skipped.
//
// How each product meets the GEMM
// -------------------------------
// For float32 on an AVX-512 or AVX2 CPU the products run in ember's own kernel
// (kernels/cpu/gemm_simd.h), which reads op(A) in place however it is stored but must
// transpose op(B) into a buffer unless B is stored [K, N]. So:
//   forward  y[n] = w @ col: w is transposed once per call (wT [CRS, K], transposed_weights in
//            conv_internal.h) so that the filters the kernel needs at each step lie side by
//            side; col is read in place.
//   dx       dcol = w^T @ dy[n]: both read in place.
//   dw       computed transposed, dw^T += col @ dy[n]^T: the operand the kernel transposes is
//            dy[n] (K rows), not col (CRS rows).
// Small output planes make thin products (the cats-vs-dogs CNN's third layer: 25 columns), so
// float32 puts several images side by side in one col matrix [CRS, G*PQ] (images_per_gemm).
// bench/RESULTS.md ("CPU GEMM kernel and convolution layout") has what each step gained.
//
// Threads and determinism
// -----------------------
// Images are independent, so the image loop is split across ember's threads, and every GEMM
// runs on the thread that calls it (a parallel loop inside a parallel region runs on its calling
// thread, kernels/base/parallel.h). That is faster here than nesting and keeps the results
// independent of the thread count: each GEMM's result depends only on its sizes
// (kernels/cpu/gemm.cpp), and each image's output is written by the one task that owns it. With
// a single image there is no image loop to split, and its GEMMs use the threads instead.
//
// The weight gradient sums over images. Images are dealt to a fixed number of groups that does
// not depend on the thread count (kMaxWeightGroups, fewer for huge filters or small batches);
// each group sums its images in order into its own buffer, and the buffers are then added in
// group order. The same numbers come out for 1 or 64 threads.
//
// Scratch: the calling thread's Scratch::kFilters (wT) and Scratch::kWeightPartials, each
// worker's Scratch::kColumns and Scratch::kBatchPlanes (conv_internal.h says what each holds).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/base/dtype.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_simd.h"

namespace ember::kernels::cpu::conv_detail {

namespace {

// At most this many partial weight gradients (see the top of the file): enough groups to keep
// 16 threads busy (kWeightGroupBudgetBytes caps their memory for very large filters).
constexpr int64_t kMaxWeightGroups = 16;

// Calls f(begin, end) over disjoint ranges covering [0, tasks), from ember's threads.
template <typename F>
void for_each_task(int64_t tasks, const F& f) {
  parallel_for(0, tasks, 1, f);
}

// The outputs o in [0, out) whose tap at offset `off` (= s*dil_w - pad_w across, r*dil_h - pad_h
// down) lands inside the image: o*stride + off in [0, size)  <=>  o in [lo, hi).
struct OutputRange {
  int64_t lo = 0, hi = 0;
};
OutputRange valid_outputs(int64_t size, int64_t stride, int64_t out, int64_t off) {
  OutputRange o;
  o.lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  o.hi = size - off <= 0 ? 0 : (size - off + stride - 1) / stride;
  o.hi = std::min(o.hi, out);
  o.lo = std::min(o.lo, o.hi);
  return o;
}

// op(out[i], in[i]) for i in [0, n): im2col copies rows with it, col2im adds them back.
//
// The rows are short (46, 19 and 5 elements on the cats-vs-dogs layers) and there are millions
// of them per training step, so the fixed cost per row matters more than the copy. A plain
// copy loop (or std::copy) becomes one memmove call per row, which cost more than the copying
// did (bench/RESULTS.md, "Figures that were comments in kernels/"). A plain add loop is vectorized
// only behind a run-time check that the pointers do not overlap, with its last few elements
// one at a time, and with the stride a run-time value (as col2im had it) not at all. So a row
// goes in blocks of fixed size: 16 elements at a time, then at most one block each of 8, 4, 2
// and 1. Each block loads all its inputs before it stores anything, which tells the compiler
// that `out` overlapping `in` cannot change the result, and with a constant trip count it
// becomes a few vector instructions, with no library call and no check.
// Every element gets exactly op(out[i], in[i]), so the results are the plain loop's, bit for
// bit. (One thing IEEE 754 leaves open may differ: where an addition meets two NaNs, which of
// the two comes out, sign and payload. Which elements are NaN does not change.)
template <int64_t K, typename T, typename Op>
inline void row_block(T* out, const T* in, const Op& op) {
  T o[K], v[K];
  for (int64_t j = 0; j < K; ++j) v[j] = in[j];
  for (int64_t j = 0; j < K; ++j) o[j] = out[j];  // dropped by the compiler for a copy
  for (int64_t j = 0; j < K; ++j) op(o[j], v[j]);
  for (int64_t j = 0; j < K; ++j) out[j] = o[j];
}
template <typename T, typename Op>
inline void row_apply(T* out, const T* in, int64_t n, const Op& op) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) row_block<16>(out + i, in + i, op);
  if (n - i >= 8) {
    row_block<8>(out + i, in + i, op);
    i += 8;
  }
  if (n - i >= 4) {
    row_block<4>(out + i, in + i, op);
    i += 4;
  }
  if (n - i >= 2) {
    row_block<2>(out + i, in + i, op);
    i += 2;
  }
  if (n - i >= 1) row_block<1>(out + i, in + i, op);
}
template <typename T>
inline void copy_row(T* out, const T* in, int64_t n) {
  row_apply(out, in, n, [](T& o, T v) { o = v; });
}
template <typename T>
inline void add_row(T* out, const T* in, int64_t n) {
  row_apply(out, in, n, [](T& o, T v) { o += v; });
}

// x [C, H, W] (one image) -> its PQ columns of col [CRS, ld] (ld = PQ for one image, more when
// several images sit side by side); every entry of those columns written.
template <typename T>
void im2col(const ConvGeometry& g, const T* x, T* col, int64_t ld) {
  const int64_t PQ = g.P * g.Q;
  for (int64_t c = 0; c < g.C; ++c) {
    const T* xc = x + c * g.H * g.W;
    for (int64_t r = 0; r < g.R; ++r) {
      // Output row p reads input row p*stride_h + off_h: inside the image for p in [pr.lo, pr.hi).
      const int64_t off_h = r * g.dil_h - g.pad_h;
      const OutputRange pr = valid_outputs(g.H, g.stride_h, g.P, off_h);
      for (int64_t s = 0; s < g.S; ++s) {
        T* plane = col + ((c * g.R + r) * g.S + s) * ld;  // row (c, r, s) of col, [P, Q]
        const int64_t off_w = s * g.dil_w - g.pad_w;
        const OutputRange qr = valid_outputs(g.W, g.stride_w, g.Q, off_w);
        // The output rows whose tap is in the top or bottom padding: zeros, each band at once.
        std::fill(plane, plane + pr.lo * g.Q, T(0));
        std::fill(plane + pr.hi * g.Q, plane + PQ, T(0));
        for (int64_t p = pr.lo; p < pr.hi; ++p) {
          T* out = plane + p * g.Q;
          // in[off_w + q * stride_w] is the tap of output column q (inside for q in [lo, hi)).
          const T* in = xc + (p * g.stride_h + off_h) * g.W;
          if (qr.lo > 0) std::fill(out, out + qr.lo, T(0));
          if (g.stride_w == 1) {
            copy_row(out + qr.lo, in + off_w + qr.lo, qr.hi - qr.lo);
          } else {
            for (int64_t q = qr.lo; q < qr.hi; ++q) out[q] = in[off_w + q * g.stride_w];
          }
          if (qr.hi < g.Q) std::fill(out + qr.hi, out + g.Q, T(0));
        }
      }
    }
  }
}

// dx [C, H, W] += col2im(dcol [CRS, PQ]): each entry goes back to the pixel im2col read it from
// (entries that came from the padding are dropped). A pixel collects its entries in (r, s)
// order, whatever the order of the rows p (for one tap (r, s), each pixel gets at most one).
// dcol's columns for this image are PQ columns of a matrix with row stride ld.
template <typename T>
void col2im_add(const ConvGeometry& g, const T* dcol, int64_t ld, T* dx) {
  for (int64_t c = 0; c < g.C; ++c) {
    T* dxc = dx + c * g.H * g.W;
    for (int64_t r = 0; r < g.R; ++r) {
      const int64_t off_h = r * g.dil_h - g.pad_h;
      const OutputRange pr = valid_outputs(g.H, g.stride_h, g.P, off_h);
      for (int64_t s = 0; s < g.S; ++s) {
        const T* plane = dcol + ((c * g.R + r) * g.S + s) * ld;
        const int64_t off_w = s * g.dil_w - g.pad_w;
        const OutputRange qr = valid_outputs(g.W, g.stride_w, g.Q, off_w);
        for (int64_t p = pr.lo; p < pr.hi; ++p) {
          const T* in = plane + p * g.Q;
          T* out = dxc + (p * g.stride_h + off_h) * g.W;
          if (g.stride_w == 1) {
            add_row(out + off_w + qr.lo, in + qr.lo, qr.hi - qr.lo);
          } else {
            for (int64_t q = qr.lo; q < qr.hi; ++q) out[off_w + q * g.stride_w] += in[q];
          }
        }
      }
    }
  }
}

// Images per GEMM. A small output plane makes a thin product: the cats-vs-dogs CNN's third
// layer has a 5x5 plane, so y[n] = w @ col is [128, 1600] @ [1600, 25], 25 columns for the GEMM
// kernel's 32-column tiles (78% of their lanes busy), and its weight-gradient sum is 25 long
// (C tiles read and written every 25 steps). Several images side by side in one col matrix,
// [CRS, G*PQ], make the products G*PQ wide. Enough images for kBatchColumns columns; a function
// of the sizes only, never of the thread count.
// Only for float32 products that ember's own GEMM kernel runs: each element of its result
// depends only on the length of its sum (gemm_simd.h), so an image's output and input gradient
// are the same bits in a batch of any size (conv(x[0]) == conv(x)[0]); Eigen's blocking, used
// for float64, changes with the product's width. Output planes of fewer than 4 pixels stay one
// image per product: the GEMM gives products that narrow to Eigen (kernels/cpu/gemm.cpp), so an
// image alone would not run in the same kernel as in a batch. (Pointwise convolutions read x in
// place and keep one image per product too.)
constexpr int64_t kBatchColumns = 256;

template <typename T>
int64_t images_per_gemm(const ConvGeometry& g) {
  const int64_t PQ = g.P * g.Q;
  if (!std::is_same_v<T, float> || !sgemm_simd_available()) return 1;
  if (is_pointwise(g) || PQ < 4 || g.N <= 1) return 1;
  const int64_t wanted = std::clamp<int64_t>((kBatchColumns + PQ - 1) / PQ, 1, g.N);
  // The same number of batches, as even as they go (100 images: 10 batches of 10, not 9 of 11
  // and one of 1), so that threads taking whole batches finish together.
  const int64_t batches = (g.N + wanted - 1) / wanted;
  return (g.N + batches - 1) / batches;
}

// dy for images [n0, n0 + count) side by side, [K, count*PQ]: dy itself for one image, else
// gathered into `buf`.
template <typename T>
const T* batch_dy(const ConvGeometry& g, const T* dy, int64_t n0, int64_t count, T* buf) {
  const int64_t PQ = g.P * g.Q;
  if (count == 1) return dy + n0 * g.K * PQ;
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t k = 0; k < g.K; ++k) {
      const T* src = dy + ((n0 + i) * g.K + k) * PQ;
      std::copy(src, src + PQ, buf + k * count * PQ + i * PQ);
    }
  }
  return buf;
}

}  // namespace

template <typename T>
void im2col_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, CHW = g.C * g.H * g.W;
  const bool pointwise = is_pointwise(g);
  const int64_t G = images_per_gemm<T>(g), batches = (g.N + G - 1) / G;
  const DType dt = dtype_of<T>::value;
  const T* wT = transposed_weights(g, w);
  for_each_task(batches, [&](int64_t b0, int64_t b1) {
    T* col_buf = pointwise ? nullptr : scratch_buffer<Scratch::kColumns, T>(CRS * G * PQ);
    T* out_buf = G > 1 ? scratch_buffer<Scratch::kBatchPlanes, T>(g.K * G * PQ) : nullptr;
    for (int64_t batch = b0; batch < b1; ++batch) {
      const int64_t n0 = batch * G, count = std::min(G, g.N - n0), cols = count * PQ;
      // col [CRS, count*PQ]: image i's im2col in columns [i*PQ, (i+1)*PQ).
      const T* col = x + n0 * CHW;  // pointwise (count == 1): x[n] is col
      if (!pointwise) {
        for (int64_t i = 0; i < count; ++i) im2col(g, x + (n0 + i) * CHW, col_buf + i * PQ, cols);
        col = col_buf;
      }
      // out [K, count*PQ] = w [K, CRS] @ col, w read as wT^T (trans_a, lda = K). One image: out
      // is y[n] itself, started at the bias (beta = 1); several: a buffer, copied out below.
      T* yn = y + n0 * g.K * PQ;
      T* out = count == 1 ? yn : out_buf;
      if (count == 1 && b) {
        for (int64_t k = 0; k < g.K; ++k) std::fill(yn + k * PQ, yn + (k + 1) * PQ, b[k]);
      }
      gemm(dt, true, false, g.K, cols, CRS, 1.0, wT, g.K, col, cols, (count == 1 && b) ? 1.0 : 0.0,
           out, cols);
      if (count > 1) {  // y[n0 + i][k] = out[k][i*PQ ...] (+ b[k])
        for (int64_t i = 0; i < count; ++i) {
          for (int64_t k = 0; k < g.K; ++k) {
            const T* src = out + k * cols + i * PQ;
            T* dst = yn + (i * g.K + k) * PQ;
            if (b) {
              for (int64_t j = 0; j < PQ; ++j) dst[j] = src[j] + b[k];
            } else {
              std::copy(src, src + PQ, dst);
            }
          }
        }
      }
    }
  });
}

template <typename T>
void im2col_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, HW = g.H * g.W;
  const bool pointwise = is_pointwise(g);
  const int64_t G = images_per_gemm<T>(g), batches = (g.N + G - 1) / G;
  const DType dt = dtype_of<T>::value;
  for_each_task(batches, [&](int64_t b0, int64_t b1) {
    T* dcol_buf = pointwise ? nullptr : scratch_buffer<Scratch::kColumns, T>(CRS * G * PQ);
    T* dy_buf = G > 1 ? scratch_buffer<Scratch::kBatchPlanes, T>(g.K * G * PQ) : nullptr;
    for (int64_t batch = b0; batch < b1; ++batch) {
      const int64_t n0 = batch * G, count = std::min(G, g.N - n0), cols = count * PQ;
      const T* dyb = batch_dy(g, dy, n0, count, dy_buf);
      // dcol [CRS, count*PQ] = w^T @ dy: w is stored [K, CRS], so it is A with trans_a
      // (lda = CRS). Pointwise (one image): dcol is dx[n] itself.
      T* dcol = pointwise ? dx + n0 * g.C * HW : dcol_buf;
      gemm(dt, true, false, CRS, cols, g.K, 1.0, w, CRS, dyb, cols, 0.0, dcol, cols);
      if (!pointwise) {
        for (int64_t i = 0; i < count; ++i) {
          T* dxn = dx + (n0 + i) * g.C * HW;
          std::fill(dxn, dxn + g.C * HW, T(0));
          col2im_add(g, dcol + i * PQ, cols, dxn);
        }
      }
    }
  });
}

template <typename T>
void im2col_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, KCRS = g.K * CRS, CHW = g.C * g.H * g.W;
  const DType dt = dtype_of<T>::value;
  if (g.N == 0 || PQ == 0) {  // an empty sum
    std::fill(dw, dw + KCRS, T(0));
    if (db) std::fill(db, db + g.K, T(0));
    return;
  }
  const bool pointwise = is_pointwise(g);
  const int64_t G = images_per_gemm<T>(g);
  // Groups: a function of the sizes only, never of the thread count; each at least G images
  // (a whole batch) where there are enough.
  const int64_t by_memory =
      1 + kWeightGroupBudgetBytes / std::max<int64_t>(KCRS * int64_t(sizeof(T)), 1);
  const int64_t groups =
      std::max<int64_t>(1, std::min({(g.N + G - 1) / G, kMaxWeightGroups, by_memory}));
  // Each group sums into its own part of `partial`, transposed: [CRS, K] (below), each written
  // before it is read. Bias sums are kept in double.
  T* partial = scratch_buffer<Scratch::kWeightPartials, T>(groups * KCRS);
  std::vector<double> db_partial(db ? static_cast<size_t>(groups * g.K) : 0, 0.0);

  for_each_task(groups, [&](int64_t g0, int64_t g1) {
    T* col_buf = pointwise ? nullptr : scratch_buffer<Scratch::kColumns, T>(CRS * G * PQ);
    T* dy_buf = G > 1 ? scratch_buffer<Scratch::kBatchPlanes, T>(g.K * G * PQ) : nullptr;
    for (int64_t grp = g0; grp < g1; ++grp) {
      T* acc = partial + grp * KCRS;
      const int64_t n_begin = grp * g.N / groups, n_end = (grp + 1) * g.N / groups;
      // The group's images in batches of up to G, from its first image on.
      for (int64_t n0 = n_begin; n0 < n_end; n0 += G) {
        const int64_t count = std::min(G, n_end - n0), cols = count * PQ;
        const T* col = x + n0 * CHW;  // pointwise (count == 1): x[n] is col
        if (!pointwise) {
          for (int64_t i = 0; i < count; ++i) im2col(g, x + (n0 + i) * CHW, col_buf + i * PQ, cols);
          col = col_buf;
        }
        const T* dyb = batch_dy(g, dy, n0, count, dy_buf);
        // The gradient is computed transposed, dw^T = sum over batches of col @ dy^T:
        //   acc [CRS, K] (+)= col [CRS, count*PQ] @ dy^T  (dy is [K, count*PQ] -> trans_b).
        // Of the two operands whose rows run along the sum, the GEMM kernel must transpose the
        // one it takes second (kernels/cpu/gemm_simd_impl.h); this way that is dy (K rows), not
        // col (CRS rows, 12x more on the cats-vs-dogs CNN's second layer).
        gemm(dt, false, true, CRS, g.K, cols, 1.0, col, cols, dyb, cols, n0 == n_begin ? 0.0 : 1.0,
             acc, g.K);
        if (db) {
          double* dbg = db_partial.data() + grp * g.K;
          for (int64_t i = 0; i < count; ++i) {
            const T* dyn = dy + (n0 + i) * g.K * PQ;
            for (int64_t k = 0; k < g.K; ++k) dbg[k] += row_sum(dyn + k * PQ, PQ);
          }
        }
      }
    }
  });

  reduce_transposed_partials(partial, groups, CRS, g.K, dw);
  if (db) {
    for (int64_t k = 0; k < g.K; ++k) {
      double s = 0.0;
      for (int64_t grp = 0; grp < groups; ++grp) s += db_partial[grp * g.K + k];
      db[k] = static_cast<T>(s);
    }
  }
}

template void im2col_forward<float>(const ConvGeometry&, const float*, const float*, const float*,
                                    float*);
template void im2col_forward<double>(const ConvGeometry&, const double*, const double*,
                                     const double*, double*);
template void im2col_backward_input<float>(const ConvGeometry&, const float*, const float*, float*);
template void im2col_backward_input<double>(const ConvGeometry&, const double*, const double*,
                                            double*);
template void im2col_backward_weight<float>(const ConvGeometry&, const float*, const float*, float*,
                                            float*);
template void im2col_backward_weight<double>(const ConvGeometry&, const double*, const double*,
                                             double*, double*);

}  // namespace ember::kernels::cpu::conv_detail
