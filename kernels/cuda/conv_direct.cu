// ember/kernels/cuda/conv_direct.cu — 2-d convolution on CUDA by ConvAlgo::Direct: every output
// (and every gradient element) is one short sum computed where it is written, no GEMM and no
// scratch. Auto picks it for depthwise convolutions (groups == C, MobileNet's 3x3 layers): there
// each output reads R*S inputs of one channel, a GEMM would be only R*S deep, and im2col would
// copy every pixel R*S times to feed it. The kernels handle any geometry, groups included, so
// ConvAlgo::Direct runs any convolution (the tests compare it with the GEMM paths).
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, Cg, R, S], b [K], y [N, K, P, Q]
// with Cg = C / groups input and Kg = K / groups output channels per group; output channel k is
// in group k / Kg and reads input channels (k / Kg) * Cg + c, c < Cg.
//
//   direct_forward_kernel        one thread per OUTPUT element (n, k, p, q): its window's
//                                Cg*R*S taps times the filter, plus the bias.
//   direct_input_grad_kernel     one thread per INPUT element (n, ci, h, w): for every filter
//                                of its group and every tap (r, s), the output pixel whose
//                                window put (h, w) under that tap (output_tap, at most one),
//                                dy there times the tap's weight. A gather: each dx written
//                                once, no atomics.
//   direct_weight_grad_kernel    one BLOCK per weight element (k, c, r, s): its 256 threads
//                                share the N*P*Q products dy[n, k, p, q] * x[n, ci, h, w], and
//                                a fixed tree in shared memory adds their partial sums.
// The bias gradient is the one of every native algorithm (bias_grad, conv_bias.cu).
//
// Memory: in the forward and the input gradient consecutive threads take consecutive q (w), so
// a warp writes one contiguous run and reads, per tap, neighbouring inputs of one row (stride
// sw apart); the filter values are the same for the whole warp (one broadcast). In the weight
// gradient the threads of a block walk (n, p, q) with q fastest: coalesced reads of dy and x.
//
// Determinism: no atomics; every sum runs in an order fixed by the geometry (the taps in order,
// the block's tree), so results repeat bit for bit. Sums of the weight gradient, long ones, run
// in double.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/cuda/conv_index.h"
#include "kernels/cuda/conv_internal.cuh"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda::conv_detail {

namespace {

// The kernels index with 64-bit integers (the sizes are not limited to 2^31 here): the loop
// variables are 64-bit, and the divisions below are plain ones.

// The output position o along one axis whose tap `tap` reads input position i, if there is
// one: o * stride - pad + tap * dil == i with 0 <= o < out.
__device__ inline bool output_of(int64_t i, int64_t tap, int64_t stride, int64_t pad, int64_t dil,
                                 int64_t out, int64_t* o) {
  const int64_t v = i + pad - tap * dil;
  if (v < 0 || v % stride != 0) return false;
  *o = v / stride;
  return *o < out;
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    direct_forward_kernel(ConvGeometry g, const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ b, T* __restrict__ y) {
  const int64_t Cg = g.C / g.groups, Kg = g.K / g.groups, PQ = g.P * g.Q, HW = g.H * g.W;
  for (const int64_t t : grid_stride(g.N * g.K * PQ)) {
    const int64_t n = t / (g.K * PQ), k = t / PQ % g.K, p = t % PQ / g.Q, q = t % g.Q;
    const T* xg = x + (n * g.C + k / Kg * Cg) * HW;  // the group's first input plane
    const T* wk = w + k * Cg * g.R * g.S;
    const int64_t h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
    T acc = b != nullptr ? b[k] : T(0);
    for (int64_t c = 0; c < Cg; ++c) {
      for (int64_t r = 0; r < g.R; ++r) {
        const int64_t h = h0 + r * g.dil_h;
        if (h < 0 || h >= g.H) continue;
        for (int64_t s = 0; s < g.S; ++s) {
          const int64_t iw = w0 + s * g.dil_w;
          if (iw < 0 || iw >= g.W) continue;
          acc += wk[(c * g.R + r) * g.S + s] * xg[c * HW + h * g.W + iw];
        }
      }
    }
    y[t] = acc;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    direct_input_grad_kernel(ConvGeometry g, const T* __restrict__ dy, const T* __restrict__ w,
                             T* __restrict__ dx) {
  const int64_t Cg = g.C / g.groups, Kg = g.K / g.groups, PQ = g.P * g.Q, HW = g.H * g.W;
  for (const int64_t t : grid_stride(g.N * g.C * HW)) {
    const int64_t n = t / (g.C * HW), ci = t / HW % g.C, h = t % HW / g.W, iw = t % g.W;
    const int64_t group = ci / Cg, c = ci % Cg;
    T acc = T(0);
    for (int64_t k = group * Kg; k < (group + 1) * Kg; ++k) {
      const T* dyk = dy + (n * g.K + k) * PQ;
      const T* wk = w + (k * Cg + c) * g.R * g.S;
      for (int64_t r = 0; r < g.R; ++r) {
        int64_t p = 0;
        if (!output_of(h, r, g.stride_h, g.pad_h, g.dil_h, g.P, &p)) continue;
        for (int64_t s = 0; s < g.S; ++s) {
          int64_t q = 0;
          if (!output_of(iw, s, g.stride_w, g.pad_w, g.dil_w, g.Q, &q)) continue;
          acc += dyk[p * g.Q + q] * wk[r * g.S + s];
        }
      }
    }
    dx[t] = acc;
  }
}

// Blocks stride over the K*Cg*R*S weight elements; within a block thread i takes the products
// j = i, i + 256, ... of the N*P*Q, in double, then the 256 partial sums meet in shared memory
// by halving (a fixed order). The barrier at the end of a pass guards `partial` before the
// block's next weight element reuses it.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    direct_weight_grad_kernel(ConvGeometry g, const T* __restrict__ x, const T* __restrict__ dy,
                              T* __restrict__ dw) {
  __shared__ double partial[kBlock];
  const int64_t Cg = g.C / g.groups, Kg = g.K / g.groups, PQ = g.P * g.Q, HW = g.H * g.W;
  const int64_t weights = g.K * Cg * g.R * g.S;
  for (const int64_t e : grid_stride(blockIdx.x, weights, gridDim.x)) {
    const int64_t k = e / (Cg * g.R * g.S), c = e / (g.R * g.S) % Cg;
    const int64_t r = e / g.S % g.R, s = e % g.S;
    const int64_t ci = k / Kg * Cg + c;  // the input channel this weight reads
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < g.N * PQ; j += blockDim.x) {
      const int64_t n = j / PQ, p = j % PQ / g.Q, q = j % g.Q;
      const int64_t h = p * g.stride_h - g.pad_h + r * g.dil_h;
      const int64_t iw = q * g.stride_w - g.pad_w + s * g.dil_w;
      if (h < 0 || h >= g.H || iw < 0 || iw >= g.W) continue;
      sum += static_cast<double>(dy[(n * g.K + k) * PQ + p * g.Q + q]) *
             static_cast<double>(x[(n * g.C + ci) * HW + h * g.W + iw]);
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kBlock / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) dw[e] = static_cast<T>(partial[0]);
    __syncthreads();  // partial[0] is read before the next pass overwrites it
  }
}

}  // namespace

template <typename T>
void direct_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  const int64_t total = g.N * g.K * g.P * g.Q;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), direct_forward_kernel<T>)(g, x, w, b, y);
  EMBER_LAUNCH_CHECK("direct_forward_kernel");
}

template <typename T>
void direct_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const int64_t total = g.N * g.C * g.H * g.W;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), direct_input_grad_kernel<T>)(g, dy, w, dx);
  EMBER_LAUNCH_CHECK("direct_input_grad_kernel");
}

template <typename T>
void direct_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db) {
  if (db != nullptr) bias_grad(g, dy, db);
  const int64_t weights = g.K * (g.C / g.groups) * g.R * g.S;
  if (weights == 0) return;
  // One block per weight element, at most 2^16 blocks (each takes several elements beyond).
  EMBER_LAUNCH(strided_blocks(weights, 1 << 16), kBlock, 0, stream(), direct_weight_grad_kernel<T>)
  (g, x, dy, dw);
  EMBER_LAUNCH_CHECK("direct_weight_grad_kernel");
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

}  // namespace ember::kernels::cuda::conv_detail
