// 2-d convolution on the CPU: im2col + GEMM (kernels/cpu/gemm.h), one image at a time.
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
// A 1x1 kernel with stride 1 and no padding reads every pixel exactly once in order: col is
// x[n] itself ([C, H*W]) and dx[n] is dcol, so both copies are skipped.
// One GEMM per image is enough even for small output planes: putting several images' col
// matrices side by side (one [CRS, B*PQ] product) was measured on the cats-vs-dogs layers and
// gained nothing; Eigen runs [128, 1600] @ [1600, 25] as fast per flop as with 250 columns.
//
// Threads and determinism
// -----------------------
// Images are independent, so the image loop is split across ember's threads, and every GEMM
// runs on the thread that calls it (a parallel loop inside a parallel region runs on its calling
// thread, kernels/cpu/parallel.h). That is faster here than nesting and keeps the results
// independent of the thread count: each GEMM's result depends only on its sizes
// (kernels/cpu/gemm.cpp), and each image's output is written by the one task that owns it. With
// a single image there is no image loop to split, and its GEMMs use the threads instead.
//
// The weight gradient sums over images. Images are dealt to a fixed number of groups that does
// not depend on the thread count (kMaxWeightGroups, fewer for huge filters or small batches);
// each group sums its images in order into its own buffer, and the buffers are then added in
// group order. The same numbers come out for 1 or 64 threads.
#include "kernels/cpu/conv.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"

namespace ember::kernels::cpu {

namespace {

// At most this many partial weight gradients (see the top of the file): enough groups to keep
// 16 threads busy, and the budget caps their memory for very large filters.
constexpr int64_t kMaxWeightGroups = 16;
constexpr int64_t kWeightGroupBudgetBytes = int64_t(64) << 20;

// 1x1 kernel, stride 1, no padding: col would be a copy of the image.
bool is_pointwise(const ConvGeometry& g) {
  return g.R == 1 && g.S == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
         g.pad_w == 0;
}

// Calls f(begin, end) over disjoint ranges covering [0, tasks), from ember's threads.
template <typename F>
void for_each_task(int64_t tasks, const F& f) {
  parallel_for(0, tasks, 1, f);
}

// Scratch that is not cleared on allocation (every user writes it fully first).
template <typename T>
std::unique_ptr<T[]> scratch(int64_t n) {
  return std::unique_ptr<T[]>(new T[static_cast<size_t>(std::max<int64_t>(n, 1))]);
}

// This thread's col (or dcol) buffer of at least n elements, kept between calls: a conv layer
// runs the same sizes every step, and a fresh buffer of megabytes per task would go back to the
// OS each time and page-fault in again. Grows only; one buffer per thread and element type.
template <typename T>
T* thread_col_buffer(int64_t n) {
  thread_local std::unique_ptr<T[]> buf;
  thread_local int64_t capacity = 0;
  if (n > capacity) {
    buf.reset();
    buf = scratch<T>(n);
    capacity = n;
  }
  return buf.get();
}

// The output columns q whose tap at horizontal offset `off` (= s*dil_w - pad_w) lands inside
// the image: q*stride_w + off in [0, W)  <=>  q in [q_lo, q_hi).
struct ColumnRange {
  int64_t lo = 0, hi = 0;
};
ColumnRange valid_columns(const ConvGeometry& g, int64_t off) {
  const int64_t sw = g.stride_w;
  ColumnRange c;
  c.lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  c.hi = g.W - off <= 0 ? 0 : (g.W - off + sw - 1) / sw;
  c.hi = std::min(c.hi, g.Q);
  c.lo = std::min(c.lo, c.hi);
  return c;
}

// x [C, H, W] (one image) -> col [CRS, PQ]; every entry written.
template <typename T>
void im2col(const ConvGeometry& g, const T* x, T* col) {
  const int64_t PQ = g.P * g.Q;
  for (int64_t c = 0; c < g.C; ++c) {
    const T* xc = x + c * g.H * g.W;
    for (int64_t r = 0; r < g.R; ++r) {
      for (int64_t s = 0; s < g.S; ++s) {
        T* row = col + ((c * g.R + r) * g.S + s) * PQ;
        const int64_t off_w = s * g.dil_w - g.pad_w;
        const ColumnRange qr = valid_columns(g, off_w);
        for (int64_t p = 0; p < g.P; ++p) {
          T* out = row + p * g.Q;
          const int64_t ih = p * g.stride_h - g.pad_h + r * g.dil_h;
          if (ih < 0 || ih >= g.H) {
            std::fill(out, out + g.Q, T(0));
            continue;
          }
          // in[off_w + q * stride_w] is the tap of output column q (inside for q in [lo, hi)).
          const T* in = xc + ih * g.W;
          std::fill(out, out + qr.lo, T(0));
          if (g.stride_w == 1) {
            std::copy(in + off_w + qr.lo, in + off_w + qr.hi, out + qr.lo);
          } else {
            for (int64_t q = qr.lo; q < qr.hi; ++q) out[q] = in[off_w + q * g.stride_w];
          }
          std::fill(out + qr.hi, out + g.Q, T(0));
        }
      }
    }
  }
}

// dx [C, H, W] += col2im(dcol [CRS, PQ]): each entry goes back to the pixel im2col read it from
// (entries that came from the padding are dropped).
template <typename T>
void col2im_add(const ConvGeometry& g, const T* dcol, T* dx) {
  const int64_t PQ = g.P * g.Q;
  for (int64_t c = 0; c < g.C; ++c) {
    T* dxc = dx + c * g.H * g.W;
    for (int64_t r = 0; r < g.R; ++r) {
      for (int64_t s = 0; s < g.S; ++s) {
        const T* row = dcol + ((c * g.R + r) * g.S + s) * PQ;
        const int64_t off_w = s * g.dil_w - g.pad_w;
        const ColumnRange qr = valid_columns(g, off_w);
        for (int64_t p = 0; p < g.P; ++p) {
          const int64_t ih = p * g.stride_h - g.pad_h + r * g.dil_h;
          if (ih < 0 || ih >= g.H) continue;
          const T* in = row + p * g.Q;
          T* out = dxc + ih * g.W;
          for (int64_t q = qr.lo; q < qr.hi; ++q) out[off_w + q * g.stride_w] += in[q];
        }
      }
    }
  }
}

// sum of v[0..n) in double, in a fixed order: kLanes running sums (independent additions the
// compiler can put in one vector register, where a single sum would wait on each add), then
// those sums in order.
template <typename T>
double row_sum(const T* v, int64_t n) {
  constexpr int64_t kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lane[l] += v[i + l];
  }
  for (; i < n; ++i) lane[i % kLanes] += v[i];
  double s = 0.0;
  for (int64_t l = 0; l < kLanes; ++l) s += lane[l];
  return s;
}

template <typename T>
void forward_typed(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q;
  const bool pointwise = is_pointwise(g);
  const DType dt = dtype_of<T>::value;
  for_each_task(g.N, [&](int64_t n0, int64_t n1) {
    T* col_buf = pointwise ? nullptr : thread_col_buffer<T>(CRS * PQ);
    for (int64_t n = n0; n < n1; ++n) {
      const T* xn = x + n * g.C * g.H * g.W;
      T* yn = y + n * g.K * PQ;
      const T* col = xn;
      if (!pointwise) {
        im2col(g, xn, col_buf);
        col = col_buf;
      }
      // With a bias, start every output row at b[k] and let the GEMM add into it (beta = 1).
      if (b) {
        for (int64_t k = 0; k < g.K; ++k) std::fill(yn + k * PQ, yn + (k + 1) * PQ, b[k]);
      }
      // y[n] [K, PQ] = w [K, CRS] @ col [CRS, PQ] (+ y[n] when it holds the bias).
      gemm(dt, false, false, g.K, PQ, CRS, 1.0, w, CRS, col, PQ, b ? 1.0 : 0.0, yn, PQ);
    }
  });
}

template <typename T>
void backward_input_typed(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, HW = g.H * g.W;
  const bool pointwise = is_pointwise(g);
  const DType dt = dtype_of<T>::value;
  for_each_task(g.N, [&](int64_t n0, int64_t n1) {
    T* dcol_buf = pointwise ? nullptr : thread_col_buffer<T>(CRS * PQ);
    for (int64_t n = n0; n < n1; ++n) {
      T* dxn = dx + n * g.C * HW;
      // dcol [CRS, PQ] = w^T @ dy[n]: w is stored [K, CRS], so it is A with trans_a (lda = CRS).
      T* dcol = pointwise ? dxn : dcol_buf;
      gemm(dt, true, false, CRS, PQ, g.K, 1.0, w, CRS, dy + n * g.K * PQ, PQ, 0.0, dcol, PQ);
      if (!pointwise) {
        std::fill(dxn, dxn + g.C * HW, T(0));
        col2im_add(g, dcol, dxn);
      }
    }
  });
}

template <typename T>
void backward_weight_typed(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, KCRS = g.K * CRS;
  const DType dt = dtype_of<T>::value;
  if (g.N == 0 || PQ == 0) {  // an empty sum
    std::fill(dw, dw + KCRS, T(0));
    if (db) std::fill(db, db + g.K, T(0));
    return;
  }
  const bool pointwise = is_pointwise(g);
  // Groups: a function of the sizes only, never of the thread count.
  const int64_t by_memory =
      1 + kWeightGroupBudgetBytes / std::max<int64_t>(KCRS * int64_t(sizeof(T)), 1);
  const int64_t groups = std::max<int64_t>(1, std::min({g.N, kMaxWeightGroups, by_memory}));
  // Group 0 sums straight into dw; groups 1.. into `partial`. Bias sums are kept in double.
  std::unique_ptr<T[]> partial = scratch<T>((groups - 1) * KCRS);  // each written before read
  std::vector<double> db_partial(db ? static_cast<size_t>(groups * g.K) : 0, 0.0);

  for_each_task(groups, [&](int64_t g0, int64_t g1) {
    T* col_buf = pointwise ? nullptr : thread_col_buffer<T>(CRS * PQ);
    for (int64_t grp = g0; grp < g1; ++grp) {
      T* acc = grp == 0 ? dw : partial.get() + (grp - 1) * KCRS;
      const int64_t n_begin = grp * g.N / groups, n_end = (grp + 1) * g.N / groups;
      for (int64_t n = n_begin; n < n_end; ++n) {
        const T* xn = x + n * g.C * g.H * g.W;
        const T* dyn = dy + n * g.K * PQ;
        const T* col = xn;
        if (!pointwise) {
          im2col(g, xn, col_buf);
          col = col_buf;
        }
        // acc [K, CRS] (+)= dy[n] [K, PQ] @ col^T: col is stored [CRS, PQ] -> trans_b, ldb = PQ.
        gemm(dt, false, true, g.K, CRS, PQ, 1.0, dyn, PQ, col, PQ, n == n_begin ? 0.0 : 1.0,
             acc, CRS);
        if (db) {
          double* dbg = db_partial.data() + grp * g.K;
          for (int64_t k = 0; k < g.K; ++k) dbg[k] += row_sum(dyn + k * PQ, PQ);
        }
      }
    }
  });

  // Add the groups in order; each element is independent, so this loop may be split freely.
  if (groups > 1) {
    parallel_for(0, KCRS, kGrainSize, [&](int64_t i0, int64_t i1) {
      for (int64_t grp = 1; grp < groups; ++grp) {
        const T* part = partial.get() + (grp - 1) * KCRS;
        for (int64_t i = i0; i < i1; ++i) dw[i] += part[i];
      }
    });
  }
  if (db) {
    for (int64_t k = 0; k < g.K; ++k) {
      double s = 0.0;
      for (int64_t grp = 0; grp < groups; ++grp) s += db_partial[grp * g.K + k];
      db[k] = static_cast<T>(s);
    }
  }
}

}  // namespace

void conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                    const void* b, void* y) {
  EMBER_DISPATCH_FLOAT(dtype, "conv2d", [&] {
    forward_typed<scalar_t>(g, static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(w),
                            static_cast<const scalar_t*>(b), static_cast<scalar_t*>(y));
  });
}

void conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                           void* dx) {
  EMBER_DISPATCH_FLOAT(dtype, "conv2d backward", [&] {
    backward_input_typed<scalar_t>(g, static_cast<const scalar_t*>(dy),
                                   static_cast<const scalar_t*>(w), static_cast<scalar_t*>(dx));
  });
}

void conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                            void* dw, void* db) {
  EMBER_DISPATCH_FLOAT(dtype, "conv2d backward", [&] {
    backward_weight_typed<scalar_t>(g, static_cast<const scalar_t*>(x),
                                    static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dw),
                                    static_cast<scalar_t*>(db));
  });
}

}  // namespace ember::kernels::cpu
