// ember/kernels/cpu/conv_direct.cpp — 2-d convolution on the CPU by direct loops: every output
// is its own short sum, no GEMM. The dispatcher (kernels/cpu/conv.cpp) sends here the depthwise
// convolutions (groups == C: each output channel reads one input channel), where a GEMM would
// have depth R*S only (9 for a 3x3 filter) and im2col would copy every pixel R*S times to feed
// it. The loops handle any geometry, groups included.
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, Cg, R, S], y [N, K, P, Q] with
// Cg = C / groups input channels and Kg = K / groups output channels per group; output channel k
// belongs to group k / Kg and reads input channels (k / Kg) * Cg + c for c < Cg.
//
//   forward          y[n, k, p, q] = b[k] + sum over c < Cg, r, s of
//                                    w[k, c, r, s] * x[n, group(k)*Cg + c, p*sh - ph + r*dh,
//                                                                            q*sw - pw + s*dw]
//   input gradient   dx[n, ci, h, w] = the sum of dy[n, k, p, q] * w[k, c, r, s] over the terms
//                    above that read x[n, ci, h, w]: one plane of dx is written by one task,
//                    which scatters the Kg output planes of its group into it
//   weight gradient  dw[k, c, r, s] = sum over n, p, q of dy[n, k, p, q] * x[...], in double;
//                    db[k] = sum over n, p, q of dy[n, k, p, q]
//
// Threads: the forward splits the N*K output planes, the input gradient the N*C input planes,
// the weight gradient the K filters. Each result is written by one task, in an order fixed by
// the sizes, so the bits do not depend on the thread count.
#include <algorithm>

#include "kernels/base/parallel.h"
#include "kernels/cpu/conv_internal.h"

namespace ember::kernels::cpu::conv_detail {

namespace {

// The output positions o in [0, out) whose tap at offset off = tap*dil - pad lands in [0, size):
// o*stride + off in [0, size).
struct Range {
  int64_t lo, hi;
};
Range live_outputs(int64_t size, int64_t stride, int64_t out, int64_t off) {
  const int64_t lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  const int64_t hi = size - off <= 0 ? 0 : std::min(out, (size - off + stride - 1) / stride);
  return {std::min(lo, hi), hi};
}

}  // namespace

template <typename T>
void direct_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  const int64_t Cg = g.C / g.groups, Kg = g.K / g.groups, PQ = g.P * g.Q, HW = g.H * g.W;
  const int64_t RS = g.R * g.S;
  parallel_for(0, g.N * g.K, grain_for(PQ * Cg * RS), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {  // t = n*K + k: one output plane
      const int64_t n = t / g.K, k = t % g.K;
      T* yp = y + t * PQ;
      std::fill(yp, yp + PQ, b ? b[k] : T(0));
      const T* xg = x + (n * g.C + (k / Kg) * Cg) * HW;  // the group's first input plane
      // Tap by tap: for a fixed (c, r, s) the outputs it reaches form a rectangle of (p, q), so
      // the inner loop runs along an output row without a bounds test.
      for (int64_t c = 0; c < Cg; ++c) {
        const T* xc = xg + c * HW;
        for (int64_t r = 0; r < g.R; ++r) {
          const int64_t off_h = r * g.dil_h - g.pad_h;
          const Range pr = live_outputs(g.H, g.stride_h, g.P, off_h);
          for (int64_t s = 0; s < g.S; ++s) {
            const T wv = w[(k * Cg + c) * RS + r * g.S + s];
            const int64_t off_w = s * g.dil_w - g.pad_w;
            const Range qr = live_outputs(g.W, g.stride_w, g.Q, off_w);
            for (int64_t p = pr.lo; p < pr.hi; ++p) {
              const T* row = xc + (p * g.stride_h + off_h) * g.W;
              T* out = yp + p * g.Q;
              for (int64_t q = qr.lo; q < qr.hi; ++q) out[q] += wv * row[q * g.stride_w + off_w];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void direct_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const int64_t Cg = g.C / g.groups, Kg = g.K / g.groups, PQ = g.P * g.Q, HW = g.H * g.W;
  const int64_t RS = g.R * g.S;
  parallel_for(0, g.N * g.C, grain_for(PQ * Kg * RS), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {  // t = n*C + ci: one input plane
      const int64_t n = t / g.C, ci = t % g.C, grp = ci / Cg, c = ci % Cg;
      T* dxp = dx + t * HW;
      std::fill(dxp, dxp + HW, T(0));
      // The forward's loops turned around: every (k, r, s) of the group adds its output plane's
      // dy, times the tap's weight, into the pixels that tap read.
      for (int64_t k = grp * Kg; k < (grp + 1) * Kg; ++k) {
        const T* dyp = dy + (n * g.K + k) * PQ;
        for (int64_t r = 0; r < g.R; ++r) {
          const int64_t off_h = r * g.dil_h - g.pad_h;
          const Range pr = live_outputs(g.H, g.stride_h, g.P, off_h);
          for (int64_t s = 0; s < g.S; ++s) {
            const T wv = w[(k * Cg + c) * RS + r * g.S + s];
            const int64_t off_w = s * g.dil_w - g.pad_w;
            const Range qr = live_outputs(g.W, g.stride_w, g.Q, off_w);
            for (int64_t p = pr.lo; p < pr.hi; ++p) {
              T* row = dxp + (p * g.stride_h + off_h) * g.W;
              const T* grad = dyp + p * g.Q;
              for (int64_t q = qr.lo; q < qr.hi; ++q) row[q * g.stride_w + off_w] += wv * grad[q];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void direct_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db) {
  const int64_t Cg = g.C / g.groups, Kg = g.K / g.groups, PQ = g.P * g.Q, HW = g.H * g.W;
  const int64_t RS = g.R * g.S;
  parallel_for(0, g.K, grain_for(g.N * PQ * Cg * RS), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {  // one filter: its Cg*R*S weights and its bias
      const int64_t grp = k / Kg;
      for (int64_t c = 0; c < Cg; ++c) {
        for (int64_t r = 0; r < g.R; ++r) {
          const int64_t off_h = r * g.dil_h - g.pad_h;
          const Range pr = live_outputs(g.H, g.stride_h, g.P, off_h);
          for (int64_t s = 0; s < g.S; ++s) {
            const int64_t off_w = s * g.dil_w - g.pad_w;
            const Range qr = live_outputs(g.W, g.stride_w, g.Q, off_w);
            double sum = 0.0;
            for (int64_t n = 0; n < g.N; ++n) {
              const T* xc = x + (n * g.C + grp * Cg + c) * HW;
              const T* dyp = dy + (n * g.K + k) * PQ;
              for (int64_t p = pr.lo; p < pr.hi; ++p) {
                const T* row = xc + (p * g.stride_h + off_h) * g.W;
                const T* grad = dyp + p * g.Q;
                for (int64_t q = qr.lo; q < qr.hi; ++q) {
                  sum += static_cast<double>(grad[q]) *
                         static_cast<double>(row[q * g.stride_w + off_w]);
                }
              }
            }
            dw[(k * Cg + c) * RS + r * g.S + s] = static_cast<T>(sum);
          }
        }
      }
      if (db) {
        double sum = 0.0;
        for (int64_t n = 0; n < g.N; ++n) sum += row_sum(dy + (n * g.K + k) * PQ, PQ);
        db[k] = static_cast<T>(sum);
      }
    }
  });
}

template void direct_forward<float>(const ConvGeometry&, const float*, const float*, const float*,
                                    float*);
template void direct_forward<double>(const ConvGeometry&, const double*, const double*,
                                     const double*, double*);
template void direct_backward_input<float>(const ConvGeometry&, const float*, const float*, float*);
template void direct_backward_input<double>(const ConvGeometry&, const double*, const double*,
                                            double*);
template void direct_backward_weight<float>(const ConvGeometry&, const float*, const float*, float*,
                                            float*);
template void direct_backward_weight<double>(const ConvGeometry&, const double*, const double*,
                                             double*, double*);

}  // namespace ember::kernels::cpu::conv_detail
