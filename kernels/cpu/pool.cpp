// 2-d max and average pooling on the CPU, contiguous NCHW (the contract is in pool.h).
//
// Every kernel here works plane by plane: the N*C planes of H x W inputs (and P x Q outputs)
// are independent, so they are split across threads, and one plane is always computed whole by
// one thread. Nothing is summed across threads, so the results are the same bits for any thread
// count.
//
// The window of output (p, q) starts at (h0, w0) = (p * sh - ph, q * sw - pw) and has its taps
// dil apart; clipping it to the plane gives the taps h0 + i * dil in [0, H) (a Span: first tap,
// end, step), columns likewise. The op card keeps every clipped window non-empty: pad <=
// kernel / 2, ceil mode's last window starts inside the input or the left padding, and it
// refuses a dilation that would skip over the whole plane (see core/ops/pool2d.cpp).
#include "kernels/pool.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/isa_variant.h"  // last: what follows is compiled per variant

EMBER_CPU_VARIANT_BEGIN
namespace ember::kernels::cpu::EMBER_CPU_VARIANT {

namespace {

// The taps of window number `o` inside [0, size): begin, begin + step, ... while < end.
struct Span {
  int64_t begin, end, step;
};
inline Span window(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t dil,
                   int64_t size) {
  const int64_t start = o * stride - pad;
  // The first tap at or after 0: skip ceil(-start / dil) taps when the window starts in the
  // padding.
  const int64_t first = start >= 0 ? start : start + (-start + dil - 1) / dil * dil;
  return {first, std::min(start + (kernel - 1) * dil + 1, size), dil};
}

// The outputs whose windows span input row (or column) i: o with
// o * stride - pad <= i <= o * stride - pad + span - 1, within [0, out). (With dilation a
// window spans taps it does not read; the max backward's index test skips those.)
inline Span covering(int64_t i, int64_t stride, int64_t pad, int64_t span, int64_t out) {
  const int64_t lo_num = i + pad - span + 1;  // o >= ceil(lo_num / stride)
  const int64_t lo = lo_num <= 0 ? 0 : (lo_num + stride - 1) / stride;
  const int64_t hi = std::min((i + pad) / stride + 1, out);  // o <= floor((i + pad) / stride)
  return {lo, std::max(lo, hi), 1};
}

// Planes per task: enough work in one task to be worth a thread.
int64_t plane_grain(int64_t work_per_plane) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work_per_plane, 1));
}

// One window's scan. The rule (PyTorch 1.13's, and the CUDA kernel's): a tap replaces the
// running best when it is strictly larger or when it is a NaN, so ties keep the first tap in
// row-major order, a NaN beats every number, and of several NaNs the LAST one in row-major
// order wins (after a NaN only another NaN can replace it, as v > NaN is false).
//
// Written without data-dependent branches: on real data "is this tap larger?" is a coin flip,
// and a mispredicted branch per tap costs more than this whole loop (measured on the
// cats-vs-dogs shapes: bench/RESULTS.md, "Figures that were comments in kernels/").
// `m = v > m ? v : m` compiles to a max instruction, the position moves
// by an integer multiply with the 0/1 comparison, and NaNs are only noted (v > m is false for a
// NaN v, so they never enter m). A window that holds a NaN — rare, so its branch is
// predictable — is scanned again for the last NaN.
template <typename T>
inline int64_t argmax_window(const T* xp, int64_t W, Span rows, Span cols) {
  const int64_t first = rows.begin * W + cols.begin;
  int64_t at = first;
  T m = xp[first];
  bool nan = false;
  for (int64_t h = rows.begin; h < rows.end; h += rows.step) {
    const T* row = xp + h * W;
    for (int64_t w = cols.begin; w < cols.end; w += cols.step) {
      const T v = row[w];
      at += (h * W + w - at) * static_cast<int64_t>(v > m);
      m = v > m ? v : m;
      nan |= std::isnan(v);
    }
  }
  if (!nan) return at;
  for (int64_t h = rows.begin; h < rows.end; h += rows.step)
    for (int64_t w = cols.begin; w < cols.end; w += cols.step)
      if (std::isnan(xp[h * W + w])) at = h * W + w;
  return at;
}

// The common case: 2x2 windows, stride 2, no padding (every pooling layer of the example CNNs).
// Each window is four taps inside the plane, a b over c d, and no two windows share one.
bool is_2x2_stride_2(const PoolGeometry& g) {
  return g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 &&
         g.pad_w == 0 && g.dil_h == 1 && g.dil_w == 1 && 2 * g.P <= g.H && 2 * g.Q <= g.W;
}

// One output row of the 2x2 case: the windows over input rows r0 and r1 (= r0 + W), whose
// first tap has flat index `first` in the plane. argmax_window's rule, unrolled for the four
// taps in row-major order: the loop over q is then straight-line code that the compiler
// vectorizes across outputs, where argmax_window pays for two loops of two taps per output
// (the two timed on one thread: bench/RESULTS.md, "Figures that were comments in kernels/"). The
// index moves as in argmax_window, by a multiply with the 0/1 comparison: written as
// `at = v > m ? k : at`, GCC 12 does not vectorize the loop. NaNs never enter m (v > m is false
// for a NaN v) and are only counted, in an integer (a bool `|=` also keeps the loop scalar); the
// caller redoes a row that has one with argmax_window, so NaNs follow its rule exactly.
template <typename T>
int64_t max_row_2x2(const T* __restrict__ r0, const T* __restrict__ r1, int64_t W, int64_t Q,
                    int64_t first, T* __restrict__ y, int64_t* __restrict__ idx) {
  int64_t nans = 0;
  for (int64_t q = 0; q < Q; ++q) {
    const T a = r0[2 * q], b = r0[2 * q + 1], c = r1[2 * q], d = r1[2 * q + 1];
    T m = a;
    int64_t at = 0;  // offset of the best tap from a: 0, 1, W or W + 1
    bool larger = b > m;
    at += (1 - at) * larger;
    m = larger ? b : m;
    larger = c > m;
    at += (W - at) * larger;
    m = larger ? c : m;
    larger = d > m;
    at += (W + 1 - at) * larger;
    m = larger ? d : m;
    nans += (a != a) + (b != b) + (c != c) + (d != d);  // x != x: x is a NaN
    y[q] = m;  // the value at `at`, as argmax_window's caller stores
    idx[q] = first + 2 * q + at;
  }
  return nans;
}

template <typename T>
void max_forward_typed(const PoolGeometry& g, const T* x, T* y, int64_t* idx) {
  const int64_t planes = g.N * g.C, in_plane = g.H * g.W, out_plane = g.P * g.Q;
  const bool k2s2 = is_2x2_stride_2(g);
  parallel_for(0, planes, plane_grain(out_plane * g.kernel_h * g.kernel_w),
               [&](int64_t b, int64_t e) {
                 for (int64_t plane = b; plane < e; ++plane) {
                   const T* xp = x + plane * in_plane;
                   T* yp = y + plane * out_plane;
                   int64_t* ip = idx + plane * out_plane;
                   for (int64_t p = 0; p < g.P; ++p) {
                     const Span rows = window(p, g.stride_h, g.pad_h, g.kernel_h, g.dil_h, g.H);
                     if (k2s2) {
                       const T* r0 = xp + 2 * p * g.W;
                       const int64_t nans = max_row_2x2(r0, r0 + g.W, g.W, g.Q, 2 * p * g.W,
                                                        yp + p * g.Q, ip + p * g.Q);
                       if (nans == 0) continue;  // else the general loop below redoes the row
                     }
                     for (int64_t q = 0; q < g.Q; ++q) {
                       // The scan covers only the taps inside the plane: padding (-inf) never wins,
                       // even over an input of -inf, whose index is then the first real tap.
                       const Span cols = window(q, g.stride_w, g.pad_w, g.kernel_w, g.dil_w, g.W);
                       const int64_t at = argmax_window(xp, g.W, rows, cols);
                       yp[p * g.Q + q] = xp[at];
                       ip[p * g.Q + q] = at;
                     }
                   }
                 }
               });
}

// Each plane: clear dx, then walk the outputs in row-major order adding dy into the picked
// input. Serial within the plane, so where windows overlap the additions always happen in the
// same order (output row-major), which is also the order the CUDA kernel gathers them in.
// (For the 2x2 stride-2 case a single pass that writes each input once, 0 + dy or 0 by four
// selects per output, was tried: it was slower on every cats-vs-dogs shape than this memset and
// one add per output; bench/RESULTS.md, "Figures that were comments in kernels/".)
template <typename T>
void max_backward_typed(const PoolGeometry& g, const T* dy, const int64_t* idx, T* dx) {
  const int64_t planes = g.N * g.C, in_plane = g.H * g.W, out_plane = g.P * g.Q;
  parallel_for(0, planes, plane_grain(in_plane + out_plane), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      const T* gp = dy + plane * out_plane;
      const int64_t* ip = idx + plane * out_plane;
      T* dp = dx + plane * in_plane;
      std::fill(dp, dp + in_plane, T(0));
      for (int64_t k = 0; k < out_plane; ++k) dp[ip[k]] += gp[k];
    }
  });
}

// Sums run in double (for float32 too) in row-major window order, then one division by the
// window's divisor (avg_pool_divisor in conv_geometry.h): the CUDA kernel does exactly the same.
template <typename T>
void avg_forward_typed(const PoolGeometry& g, const T* x, T* y) {
  const int64_t planes = g.N * g.C, in_plane = g.H * g.W, out_plane = g.P * g.Q;
  parallel_for(
      0, planes, plane_grain(out_plane * g.kernel_h * g.kernel_w), [&](int64_t b, int64_t e) {
        for (int64_t plane = b; plane < e; ++plane) {
          const T* xp = x + plane * in_plane;
          T* yp = y + plane * out_plane;
          for (int64_t p = 0; p < g.P; ++p) {
            const Span rows = window(p, g.stride_h, g.pad_h, g.kernel_h, 1, g.H);
            for (int64_t q = 0; q < g.Q; ++q) {
              const Span cols = window(q, g.stride_w, g.pad_w, g.kernel_w, 1, g.W);
              double s = 0.0;
              for (int64_t h = rows.begin; h < rows.end; ++h)
                for (int64_t w = cols.begin; w < cols.end; ++w) s += xp[h * g.W + w];
              yp[p * g.Q + q] = static_cast<T>(s / static_cast<double>(avg_pool_divisor(g, p, q)));
            }
          }
        }
      });
}

// Gathers, for each input (h, w), dy / divisor of every window that contains it (outputs in
// row-major order), summed in double. A gather writes each dx exactly once, and it is the CUDA
// kernel's loop, so both devices add the same numbers in the same order. Which outputs cover
// row h (column w) does not depend on the plane, nor do the divisors: worked out once per call.
template <typename T>
void avg_backward_typed(const PoolGeometry& g, const T* dy, T* dx) {
  const int64_t planes = g.N * g.C, in_plane = g.H * g.W, out_plane = g.P * g.Q;
  std::vector<double> divisor(static_cast<size_t>(out_plane));
  for (int64_t p = 0; p < g.P; ++p)
    for (int64_t q = 0; q < g.Q; ++q)
      divisor[static_cast<size_t>(p * g.Q + q)] = static_cast<double>(avg_pool_divisor(g, p, q));
  std::vector<Span> row_cover(static_cast<size_t>(g.H)), col_cover(static_cast<size_t>(g.W));
  for (int64_t h = 0; h < g.H; ++h)
    row_cover[static_cast<size_t>(h)] = covering(h, g.stride_h, g.pad_h, g.kernel_h, g.P);
  for (int64_t w = 0; w < g.W; ++w)
    col_cover[static_cast<size_t>(w)] = covering(w, g.stride_w, g.pad_w, g.kernel_w, g.Q);
  const int64_t per_input =
      ((g.kernel_h + g.stride_h - 1) / g.stride_h) * ((g.kernel_w + g.stride_w - 1) / g.stride_w);
  parallel_for(0, planes, plane_grain(in_plane * per_input), [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      const T* gp = dy + plane * out_plane;
      T* dp = dx + plane * in_plane;
      for (int64_t h = 0; h < g.H; ++h) {
        const Span ps = row_cover[static_cast<size_t>(h)];
        for (int64_t w = 0; w < g.W; ++w) {
          const Span qs = col_cover[static_cast<size_t>(w)];
          double s = 0.0;
          for (int64_t p = ps.begin; p < ps.end; ++p)
            for (int64_t q = qs.begin; q < qs.end; ++q)
              s += gp[p * g.Q + q] / divisor[static_cast<size_t>(p * g.Q + q)];
          dp[h * g.W + w] = static_cast<T>(s);
        }
      }
    }
  });
}

}  // namespace

void max_pool2d_forward(DType dtype, const PoolGeometry& g, const void* x, void* y,
                        int64_t* indices) {
  EMBER_DISPATCH_FLOAT(dtype, "max_pool2d", [&] {
    max_forward_typed<scalar_t>(g, static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y),
                                indices);
  });
}

void max_pool2d_backward(DType dtype, const PoolGeometry& g, const void* dy, const int64_t* indices,
                         void* dx) {
  EMBER_DISPATCH_FLOAT(dtype, "max_pool2d backward", [&] {
    max_backward_typed<scalar_t>(g, static_cast<const scalar_t*>(dy), indices,
                                 static_cast<scalar_t*>(dx));
  });
}

void avg_pool2d_forward(DType dtype, const PoolGeometry& g, const void* x, void* y) {
  EMBER_DISPATCH_FLOAT(dtype, "avg_pool2d", [&] {
    avg_forward_typed<scalar_t>(g, static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y));
  });
}

void avg_pool2d_backward(DType dtype, const PoolGeometry& g, const void* dy, void* dx) {
  EMBER_DISPATCH_FLOAT(dtype, "avg_pool2d backward", [&] {
    avg_backward_typed<scalar_t>(g, static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dx));
  });
}

const PoolKernels pool_kernels = {&max_pool2d_forward, &max_pool2d_backward, &avg_pool2d_forward,
                                  &avg_pool2d_backward};

}  // namespace ember::kernels::cpu::EMBER_CPU_VARIANT
EMBER_CPU_VARIANT_END
