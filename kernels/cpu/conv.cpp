// 2-d convolution on the CPU: im2col + GEMM (kernels/cpu/gemm.h), an image (or a few) at a time,
// or, for float32 stride-1 filters on AVX-512, an implicit GEMM with no im2col matrix at all (the
// section "Implicit GEMM" below; read the im2col path first, the implicit one builds on it).
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
//   (computed as its transpose, dw^T += col @ dy[n]^T: see backward_weight_typed)
// A 1x1 kernel with stride 1 and no padding reads every pixel exactly once in order: col is
// x[n] itself ([C, H*W]) and dx[n] is dcol, so both copies are skipped.
//
// How each product meets the GEMM
// -------------------------------
// For float32 on an AVX-512 CPU the products run in ember's own kernel
// (kernels/cpu/gemm_avx512.cpp), which reads op(A) in place however it is stored but must
// transpose op(B) into a buffer unless B is stored [K, N]. So:
//   forward  y[n] = w @ col: w is transposed once per call (wT [CRS, K], transposed_weights) so
//            that the filters the kernel needs at each step lie side by side; col is read in
//            place.
//   dx       dcol = w^T @ dy[n]: both read in place.
//   dw       computed transposed, dw^T += col @ dy[n]^T: the operand the kernel transposes is
//            dy[n] (K rows), not col (CRS rows).
// Small output planes make thin products (the cats-vs-dogs CNN's third layer: 25 columns), so
// float32 puts several images side by side in one col matrix [CRS, G*PQ] (images_per_gemm).
// bench/RESULTS.md ("CPU GEMM kernel and convolution layout") has what each step gained.
// Where the implicit GEMM applies (use_implicit) none of this runs: see its section.
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
// group order. The same numbers come out for 1 or 64 threads. (The implicit GEMM deals output
// rows to groups instead, the same way.)
#include "kernels/cpu/conv.h"

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_avx512.h"
#include "kernels/base/parallel.h"

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

// Below about this many multiply-adds (some 40-80 microseconds here) a task is not worth
// handing to another thread.
constexpr int64_t kTaskMacs = int64_t(1) << 22;
// The grain for a loop whose tasks each move `elements` elements.
int64_t grain_for(int64_t elements) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(elements, 1));
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

// This thread's scratch buffer number Slot (0: col or dcol; 1: a batch's output or dy; 2: the
// transposed filters; 3, 4, 5: the implicit GEMM's x', dy' and y' or dx'; 6: the weight
// gradient's partial sums) of at
// least n elements, kept between calls: a conv layer runs the same sizes every step, and a fresh
// buffer of megabytes per task would go back to the OS each time and page-fault in again. Grows
// only; one buffer per thread, slot and element type.
template <int Slot, typename T>
T* thread_buffer(int64_t n) {
  thread_local std::unique_ptr<T[]> buf;
  thread_local int64_t capacity = 0;
  if (n > capacity) {
    buf.reset();
    buf = scratch<T>(n);
    capacity = n;
  }
  return buf.get();
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
// (4.5% of a one-thread step, next to 3.4% for im2col itself). A plain add loop is vectorized
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

// w [K, CRS] -> wT [CRS, K], once per forward call, into the calling thread's buffer slot 2
// (kept between calls like the col buffers). The forward GEMM then reads the filter bank as
// op(A) = wT^T: the 12 filters a register tile of the CPU GEMM kernel needs at each step of the
// sum lie side by side, which it reads a little faster than 12 rows of w.
template <typename T>
const T* transposed_weights(const ConvGeometry& g, const T* w) {
  const int64_t CRS = g.C * g.R * g.S;
  T* wT = thread_buffer<2, T>(g.K * CRS);
  // Row i of wT gathers column i of w; neighbouring i read the same cache lines of w.
  parallel_for(0, CRS, grain_for(g.K),
               [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t k = 0; k < g.K; ++k) wT[i * g.K + k] = w[k * CRS + i];
    }
  });
  return wT;
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

// Images per GEMM. A small output plane makes a thin product: the cats-vs-dogs CNN's third
// layer has a 5x5 plane, so y[n] = w @ col is [128, 1600] @ [1600, 25], 25 columns for the GEMM
// kernel's 32-column tiles (78% of their lanes busy), and its weight-gradient sum is 25 long
// (C tiles read and written every 25 steps). Several images side by side in one col matrix,
// [CRS, G*PQ], make the products G*PQ wide. Enough images for kBatchColumns columns; a function
// of the sizes only, never of the thread count.
// Only for float32 products that ember's own GEMM kernel runs: each element of its result
// depends only on the length of its sum (gemm_avx512.h), so an image's output and input gradient
// are the same bits in a batch of any size (conv(x[0]) == conv(x)[0]); Eigen's blocking, used
// for float64, changes with the product's width. Output planes of fewer than 4 pixels stay one
// image per product: the GEMM gives products that narrow to Eigen (kernels/cpu/gemm.cpp), so an
// image alone would not run in the same kernel as in a batch. (Pointwise convolutions read x in
// place and keep one image per product too.)
constexpr int64_t kBatchColumns = 256;

template <typename T>
int64_t images_per_gemm(const ConvGeometry& g) {
  const int64_t PQ = g.P * g.Q;
  if (!std::is_same_v<T, float> || !sgemm_avx512_available()) return 1;
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

// dw[k, i] = the groups' partial[i, k] ([CRS, K] each, groups of them one after another) added
// in group order. Each element is independent, so the loop over i may be split freely; a row of
// partials is summed into `row`, then scattered.
template <typename T>
void reduce_transposed_partials(const T* partial, int64_t groups, int64_t CRS, int64_t K, T* dw) {
  parallel_for(0, CRS, grain_for(K * groups),
               [&](int64_t i0, int64_t i1) {
    std::vector<T> row(static_cast<size_t>(K));
    for (int64_t i = i0; i < i1; ++i) {
      const T* first = partial + i * K;
      std::copy(first, first + K, row.begin());
      for (int64_t grp = 1; grp < groups; ++grp) {
        const T* part = partial + grp * CRS * K + i * K;
        for (int64_t k = 0; k < K; ++k) row[k] += part[k];
      }
      for (int64_t k = 0; k < K; ++k) dw[k * CRS + i] = row[k];
    }
  });
}

// Implicit GEMM: the convolution without an im2col matrix (float32, stride 1)
// ------------------------------------------------------------------------------
// im2col writes every input value R*S times before the GEMM reads it: on the cats-vs-dogs CNN's
// second layer a 1.15-MB col matrix per image from a 68-KB image, and its 5x5 third layer copies
// rows of 5 floats. Those copies and col2im's adds were 13.5% of a training step. They are
// needed only because in NCHW a row of col is not a row of memory: tap (c, r, s) reads x[c, p + r,
// q + s] for all (p, q), a [P, Q] window with gaps between its rows.
//
// Put the batch innermost, x' [C, H, W, N] (the layout cuda-convnet used), and for one output
// row p the tap's values for all (q, n) are x'[c, p + r, s + q, n] for q in [0, Q): Q*N floats
// side by side in memory. So for each output row p
//
//   y'[:, p, :, :]  [K, Q*N]  =  w [K, CRS] @ B_p [CRS, Q*N],   row (c, r, s) of B_p starting at
//                                                                x' + ((c*H + p + r)*W + s)*N
//
// and B_p is read in place, row by row, through the GEMM kernel's row table
// (sgemm_avx512_rows): no copy at all. The price is two layout changes per call (x -> x' and
// y' -> y, 16 x 16 register transposes: 4.5% of a cats-vs-dogs training step, where im2col and
// col2im took 13.5%). Padding is
// a zero border in x'; dilation only changes the row offsets; a stride across would put gaps
// between q, so stride 1 only.
//
// The gradients the same way, without col2im:
//   dx'[:, h, w, n] [C, W*N] = sum over s, then over taps (r, k) with p = h - r in [0, P), of
//                              w[k, :, r, s]^T  dy'[k, h - r, w - s, n]
//     for each input row h and each s one GEMM: A is a copy of the filters laid out [S, R, K, C]
//     (so the taps of a range of r are contiguous and each is a row of C values), B's rows are
//     rows of dy' [K, P, Q, N], shifted by s columns; the products for s = 0, 1, ... are added
//     in that order into dx' (cleared first), each over the columns w its tap reaches;
//   dw^T [CRS, K] = sum over p of  B_p [CRS, Q*N] @ dy'[:, p, :, :]^T
//     with B_p the forward's rows, now as A through the kernel's row table, and dy' packed by
//     the kernel; the output rows p are dealt to groups (kImplicitWeightGroups) summed apart
//     and then added in group order, as the im2col path does with images.
// Every element's sum runs in an order fixed by the geometry — never by the thread count or
// the batch size — so the results do not depend on the thread count, and an image gives the
// same bits alone as in a batch. The tasks are (row, column panel) pairs.
//
// Used where the own GEMM kernel runs (float32 on AVX-512) for stride 1, except pointwise
// convolutions (already copy-free) and filters of fewer than kImplicitMinTaps taps (C*R*S): a
// one-channel first layer (25 taps on the cats-vs-dogs CNN) has a large output and short
// products, and moving its activations through two transposes costs more than its small
// im2col. The choice depends only on the filter, never on the batch, which keeps the bits of an
// image independent of its batch. What it gained: bench/RESULTS.md, "Implicit-GEMM convolution".
constexpr int64_t kImplicitMinTaps = 64;
constexpr int64_t kImplicitPanel = 256;  // columns of C per task (a multiple of the 32-wide tile)

bool use_implicit(const ConvGeometry& g) {
  static const bool available = sgemm_avx512_available();
  return available && g.stride_h == 1 && g.stride_w == 1 && !is_pointwise(g) &&
         g.C * g.R * g.S >= kImplicitMinTaps && g.N > 0 && g.P > 0 && g.Q > 0;
}

// x [N, C, H, W] -> x' [C, Hp, Wp, N] (Hp = H + 2*pad_h, Wp = W + 2*pad_w, zero border), in the
// calling thread's buffer slot 3.
const float* batch_inner_input(const ConvGeometry& g, const float* x) {
  const int64_t N = g.N, HW = g.H * g.W, CHW = g.C * HW;
  const int64_t Hp = g.H + 2 * g.pad_h, Wp = g.W + 2 * g.pad_w;
  const bool padded = g.pad_h > 0 || g.pad_w > 0;
  float* xp = thread_buffer<3, float>(g.C * Hp * Wp * N);
  parallel_for(0, g.C, grain_for(Hp * Wp * N), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* xc = xp + c * Hp * Wp * N;
      if (!padded) {  // [N, HW] (rows CHW apart) -> [HW, N]
        transpose_avx512(x + c * HW, CHW, N, HW, nullptr, xc, N);
        continue;
      }
      std::fill(xc, xc + Hp * Wp * N, 0.0f);
      for (int64_t h = 0; h < g.H; ++h) {
        transpose_avx512(x + c * HW + h * g.W, CHW, N, g.W, nullptr,
                         xc + ((h + g.pad_h) * Wp + g.pad_w) * N, N);
      }
    }
  });
  return xp;
}

// dy [N, K, P, Q] -> dy' [K, P, Q, N], in the calling thread's buffer slot 4.
const float* batch_inner_grad(const ConvGeometry& g, const float* dy) {
  const int64_t N = g.N, PQ = g.P * g.Q;
  float* dyp = thread_buffer<4, float>(g.K * PQ * N);
  parallel_for(0, g.K, grain_for(PQ * N), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      transpose_avx512(dy + k * PQ, g.K * PQ, N, PQ, nullptr, dyp + k * PQ * N, N);
    }
  });
  return dyp;
}

// Where row (c, r, s) of B_p starts in x' for output row p = 0 (add p*Wp*N for row p).
std::vector<int64_t> input_tap_rows(const ConvGeometry& g) {
  const int64_t Hp = g.H + 2 * g.pad_h, Wp = g.W + 2 * g.pad_w;
  std::vector<int64_t> rows(static_cast<size_t>(g.C * g.R * g.S));
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s)
        rows[(c * g.R + r) * g.S + s] = ((c * Hp + r * g.dil_h) * Wp + s * g.dil_w) * g.N;
  return rows;
}

// Calls f(row, j0, cols) for every row in [0, rows) and column panel [j0, j0 + cols) of a
// width-`width` row, on ember's threads. `macs`: the multiply-adds of one task, so that small
// convolutions stay on one thread.
template <typename F>
void for_each_row_panel(int64_t rows, int64_t width, int64_t panel, int64_t macs, const F& f) {
  const int64_t panels = (width + panel - 1) / panel;
  const int64_t grain = std::max<int64_t>(1, kTaskMacs / std::max<int64_t>(macs, 1));
  parallel_for(0, rows * panels, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t row = t / panels, j0 = (t % panels) * panel;
      f(row, j0, std::min(panel, width - j0));
    }
  });
}

void implicit_forward(const ConvGeometry& g, const float* x, const float* w, const float* b,
                      float* y) {
  const int64_t N = g.N, CRS = g.C * g.R * g.S, PQ = g.P * g.Q, QN = g.Q * N, PQN = PQ * N;
  const int64_t Wp = g.W + 2 * g.pad_w;
  const float* xp = batch_inner_input(g, x);
  const float* wT = transposed_weights(g, w);  // [CRS, K]: w read as wT^T, as in the im2col path
  const std::vector<int64_t> rows = input_tap_rows(g);
  float* yt = thread_buffer<5, float>(g.K * PQN);  // y' [K, P, Q, N]
  const int64_t macs = g.K * std::min(QN, kImplicitPanel) * CRS;
  for_each_row_panel(g.P, QN, kImplicitPanel, macs, [&](int64_t p, int64_t j0, int64_t cols) {
    sgemm_avx512_rows(true, false, g.K, cols, CRS, 1.0f, wT, g.K, nullptr, xp + p * Wp * N + j0,
                      0, rows.data(), 0.0f, yt + p * QN + j0, PQN);
  });
  // y[n, k] = y'[k]^T (+ b[k]): [PQ, N] -> [N, PQ] with rows K*PQ apart.
  parallel_for(0, g.K, grain_for(PQN), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      transpose_avx512(yt + k * PQN, N, PQ, N, b ? b + k : nullptr, y + k * PQ, g.K * PQ);
    }
  });
}

// dyp: dy' from batch_inner_grad.
void implicit_backward_input(const ConvGeometry& g, const float* dyp, const float* w, float* dx) {
  const int64_t N = g.N, HW = g.H * g.W, WN = g.W * N, HWN = HW * N, RK = g.R * g.K;
  const int64_t QN = g.Q * N;
  // wd [S, R, K, C]: for one s, the taps (r, k) of a range of r side by side, each a row of C.
  float* wd = thread_buffer<2, float>(g.S * RK * g.C);
  parallel_for(0, g.S * g.R, grain_for(g.K * g.C), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {  // t = s*R + r
      const int64_t s_ = t / g.R, r = t % g.R;
      for (int64_t k = 0; k < g.K; ++k) {
        for (int64_t c = 0; c < g.C; ++c) {
          wd[(t * g.K + k) * g.C + c] = w[((k * g.C + c) * g.R + r) * g.S + s_];
        }
      }
    }
  });
  // Row (s, r, k) of B for input row h_padded = 0 (add h_padded*Q*N): dy'[k, -r*dil_h, 0, 0].
  std::vector<int64_t> rows(static_cast<size_t>(g.S * RK));
  for (int64_t s_ = 0; s_ < g.S; ++s_)
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t k = 0; k < g.K; ++k)
        rows[(s_ * g.R + r) * g.K + k] = (k * g.P - r * g.dil_h) * QN;
  float* dxt = thread_buffer<5, float>(g.C * HWN);  // dx' [C, H, W, N]
  const int64_t macs = g.C * std::min(WN, kImplicitPanel) * g.S * RK;  // at most
  for_each_row_panel(g.H, WN, kImplicitPanel, macs, [&](int64_t h, int64_t j0, int64_t cols) {
    // Input row h (hp with the border) is read by output rows p = hp - r*dil_h: the taps
    // r in [r0, r1] have p in [0, P).
    const int64_t hp = h + g.pad_h, far = hp - (g.P - 1);
    const int64_t r0 = far <= 0 ? 0 : (far + g.dil_h - 1) / g.dil_h;
    const int64_t r1 = std::min(g.R - 1, hp / g.dil_h);
    float* c = dxt + h * WN;
    for (int64_t ch = 0; ch < g.C; ++ch) {
      std::fill(c + ch * HWN + j0, c + ch * HWN + j0 + cols, 0.0f);
    }
    if (r0 > r1) return;  // no tap reaches this row (a dilation gap)
    for (int64_t s_ = 0; s_ < g.S; ++s_) {
      // Tap s of output column q reads input column w = q + shift: of this panel's columns
      // (w*N + n), it reaches [lo, hi), whose q start at lo - shift*N in dy''s rows.
      const int64_t shift = s_ * g.dil_w - g.pad_w;
      const int64_t lo = std::max(j0, std::max<int64_t>(shift, 0) * N);
      const int64_t hi = std::min(j0 + cols, std::min(g.W, g.Q + shift) * N);
      if (lo >= hi) continue;
      const int64_t t0 = (s_ * g.R + r0) * g.K;
      sgemm_avx512_rows(true, false, g.C, hi - lo, (r1 - r0 + 1) * g.K, 1.0f, wd + t0 * g.C, g.C,
                        nullptr, dyp + hp * QN + (lo - shift * N), 0, rows.data() + t0, 1.0f,
                        c + lo, HWN);
    }
  });
  // dx[n, c] = dx'[c]^T: [HW, N] -> [N, HW] with rows C*HW apart.
  parallel_for(0, g.C, grain_for(HWN), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      transpose_avx512(dxt + c * HWN, N, HW, N, nullptr, dx + c * HW, g.C * HW);
    }
  });
}

// The weight gradient's output rows p are dealt to groups (each sums its rows into its own
// partial; the partials are added in group order): one per row up to kImplicitWeightGroups and
// the memory budget, a function of the sizes only. A group's product is cut into row panels
// only where there are too few groups to share out (each panel packs dy' again).
constexpr int64_t kImplicitWeightGroups = 32;
constexpr int64_t kImplicitWeightTasks = 32;

// dyp: dy' from batch_inner_grad.
void implicit_backward_weight(const ConvGeometry& g, const float* x, const float* dyp, float* dw,
                              float* db) {
  const int64_t N = g.N, CRS = g.C * g.R * g.S, PQ = g.P * g.Q, QN = g.Q * N, KCRS = g.K * CRS;
  const int64_t Wp = g.W + 2 * g.pad_w;
  const float* xp = batch_inner_input(g, x);
  const std::vector<int64_t> rows = input_tap_rows(g);
  // Group j sums output rows [j*P/groups, (j+1)*P/groups) into partial j [CRS, K]:
  //   dw^T (+)= B_p [CRS, Q*N] @ dy'[:, p]^T,
  // B_p's rows read in place through the row table (A), dy'[:, p] ([K, Q*N], rows P*Q*N apart)
  // packed transposed by the kernel. Tasks: (group, panel of panel_rows taps).
  const int64_t by_memory =
      1 + kWeightGroupBudgetBytes / std::max<int64_t>(KCRS * int64_t(sizeof(float)), 1);
  const int64_t groups = std::max<int64_t>(1, std::min({g.P, kImplicitWeightGroups, by_memory}));
  const int64_t panels = std::clamp<int64_t>((kImplicitWeightTasks + groups - 1) / groups, 1,
                                             std::max<int64_t>(1, CRS / 96));
  const int64_t panel_rows = ((CRS + panels - 1) / panels + 11) / 12 * 12;  // whole tiles
  float* partial = thread_buffer<6, float>(groups * KCRS);
  const int64_t macs = std::min(CRS, panel_rows) * g.K * QN * ((g.P + groups - 1) / groups);
  for_each_row_panel(groups, CRS, panel_rows, macs, [&](int64_t grp, int64_t i0, int64_t n) {
    const int64_t p_begin = grp * g.P / groups, p_end = (grp + 1) * g.P / groups;
    for (int64_t p = p_begin; p < p_end; ++p) {
      sgemm_avx512_rows(false, true, n, g.K, QN, 1.0f, xp + p * Wp * N, 0, rows.data() + i0,
                        dyp + p * QN, g.P * QN, nullptr, p == p_begin ? 0.0f : 1.0f,
                        partial + grp * KCRS + i0 * g.K, g.K);
    }
  });
  reduce_transposed_partials(partial, groups, CRS, g.K, dw);
  if (db) {  // db[k] = row_sum of dy'[k], one contiguous run of P*Q*N, in double
    parallel_for(0, g.K, grain_for(PQ * N), [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        db[k] = static_cast<float>(row_sum(dyp + k * PQ * N, PQ * N));
      }
    });
  }
}

template <typename T>
void forward_typed(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_implicit(g)) return implicit_forward(g, x, w, b, y);
  }
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, CHW = g.C * g.H * g.W;
  const bool pointwise = is_pointwise(g);
  const int64_t G = images_per_gemm<T>(g), batches = (g.N + G - 1) / G;
  const DType dt = dtype_of<T>::value;
  const T* wT = transposed_weights(g, w);
  for_each_task(batches, [&](int64_t b0, int64_t b1) {
    T* col_buf = pointwise ? nullptr : thread_buffer<0, T>(CRS * G * PQ);
    T* out_buf = G > 1 ? thread_buffer<1, T>(g.K * G * PQ) : nullptr;
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
      gemm(dt, true, false, g.K, cols, CRS, 1.0, wT, g.K, col, cols,
           (count == 1 && b) ? 1.0 : 0.0, out, cols);
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
void backward_input_typed(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_implicit(g)) return implicit_backward_input(g, batch_inner_grad(g, dy), w, dx);
  }
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, HW = g.H * g.W;
  const bool pointwise = is_pointwise(g);
  const int64_t G = images_per_gemm<T>(g), batches = (g.N + G - 1) / G;
  const DType dt = dtype_of<T>::value;
  for_each_task(batches, [&](int64_t b0, int64_t b1) {
    T* dcol_buf = pointwise ? nullptr : thread_buffer<0, T>(CRS * G * PQ);
    T* dy_buf = G > 1 ? thread_buffer<1, T>(g.K * G * PQ) : nullptr;
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
void backward_weight_typed(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db) {
  if constexpr (std::is_same_v<T, float>) {
    if (use_implicit(g)) return implicit_backward_weight(g, x, batch_inner_grad(g, dy), dw, db);
  }
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
  // Each group sums into its own part of `partial`, transposed: [CRS, K] (below). Bias sums are
  // kept in double.
  T* partial = thread_buffer<6, T>(groups * KCRS);  // each written before read
  std::vector<double> db_partial(db ? static_cast<size_t>(groups * g.K) : 0, 0.0);

  for_each_task(groups, [&](int64_t g0, int64_t g1) {
    T* col_buf = pointwise ? nullptr : thread_buffer<0, T>(CRS * G * PQ);
    T* dy_buf = G > 1 ? thread_buffer<1, T>(g.K * G * PQ) : nullptr;
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
        // one it takes second (kernels/cpu/gemm_avx512.cpp); this way that is dy (K rows), not
        // col (CRS rows, 12x more on the cats-vs-dogs CNN's second layer).
        gemm(dt, false, true, CRS, g.K, cols, 1.0, col, cols, dyb, cols,
             n0 == n_begin ? 0.0 : 1.0, acc, g.K);
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

void conv2d_backward(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                     const void* w, void* dx, void* dw, void* db) {
  if (dtype == kFloat32 && use_implicit(g) && dx && dw) {  // dy' made once for both
    const float* dyp = batch_inner_grad(g, static_cast<const float*>(dy));
    implicit_backward_input(g, dyp, static_cast<const float*>(w), static_cast<float*>(dx));
    implicit_backward_weight(g, static_cast<const float*>(x), dyp, static_cast<float*>(dw),
                             static_cast<float*>(db));
    return;
  }
  if (dx) conv2d_backward_input(dtype, g, dy, w, dx);
  if (dw) conv2d_backward_weight(dtype, g, x, dy, dw, db);
}

}  // namespace ember::kernels::cpu
