// ember/kernels/cuda/pool.cu — 2-d max and average pooling on the GPU, forward and backward,
// contiguous NCHW (the contract is kernels/pool.h; the CPU twin is kernels/cpu/pool.cpp).
//
// Dimension letters: N batch, C channels, H x W input plane, P x Q output plane,
// kh x kw kernel, sh / sw stride, ph / pw padding, dh / dw dilation (max only). The N*C planes
// are independent; output (p, q) of a plane reads the window whose top-left tap is
// (p * sh - ph, q * sw - pw), taps dh / dw apart, clipped to the plane (the op card keeps every
// clipped window non-empty: core/ops/pool2d.cpp). Average pooling divides each window by
// avg_pool_divisor (conv_geometry.h): the full window, the window clipped to the padded input
// in ceil mode, or only its taps inside the plane (count_include_pad = false).
//
// Kernels (all grid-stride loops over 64-bit flat positions, so any size runs with any grid):
//   max_pool2d_forward_kernel   one thread per OUTPUT element: scans its window.
//   avg_pool2d_forward_kernel   one thread per OUTPUT element: sums its window.
//   max_pool2d_backward_kernel  one thread per INPUT element: gathers the dy of the outputs
//                               whose windows contain it and that picked it.
//   avg_pool2d_backward_kernel  one thread per INPUT element: gathers the dy of every window
//                               that contains it.
//
// Why the backward gathers instead of scattering. The natural backward is "each output adds
// its dy into its input(s)", but with overlapping windows (stride < kernel) several outputs add
// into one input, which on a GPU needs atomicAdd: float atomics land in whatever order the
// threads arrive, so the sums change in the last bits from run to run. Turning it around — each
// input element is owned by one thread that visits the few outputs covering it, in row-major
// order — writes each dx exactly once, without atomics, with the same additions in the same
// order as the CPU kernels: the same bits on every run and on both devices. The outputs that
// can cover input row h are p in [ceil((h + ph - kh + 1) / sh), floor((h + ph) / sh)]: at most
// ceil(kh / sh) of them (columns likewise), so a thread does little work. (With dilation the
// span (kh - 1) * dh + 1 replaces kh; the max kernel's index test skips the outputs whose taps
// step over the input.)
#include "kernels/pool.h"

#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

// The taps of window number o inside [0, size): begin, begin + step, ... while < end.
struct Span {
  int64_t begin, end, step;
};
__device__ inline Span window(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t dil,
                              int64_t size) {
  const int64_t start = o * stride - pad;
  const int64_t last = start + (kernel - 1) * dil + 1;
  // The first tap at or after 0: skip ceil(-start / dil) taps of a window that starts in the
  // padding.
  return {start >= 0 ? start : start + (-start + dil - 1) / dil * dil, last < size ? last : size,
          dil};
}

// The outputs [begin, end) whose windows span input row (or column) i, within [0, out);
// span = (kernel - 1) * dilation + 1.
__device__ inline Span covering(int64_t i, int64_t stride, int64_t pad, int64_t span, int64_t out) {
  const int64_t lo_num = i + pad - span + 1;  // o >= ceil(lo_num / stride)
  const int64_t lo = lo_num <= 0 ? 0 : (lo_num + stride - 1) / stride;
  int64_t hi = (i + pad) / stride + 1;  // o <= floor((i + pad) / stride); i + pad >= 0
  if (hi > out) hi = out;
  return {lo, hi > lo ? hi : lo, 1};
}

// The max rule of the CPU kernel and of PyTorch 1.13: a tap replaces the best when it is larger
// (ties keep the first tap) or when it is a NaN. So a NaN beats every number, and of several
// NaNs the last one in row-major order wins (x > NaN is false: after a NaN only a NaN
// replaces it). x != x is the NaN test (ember never builds with fast-math, which could fold it
// away).
template <typename T>
__device__ inline bool beats(T x, T best) {
  return x > best || x != x;
}

// ---- forward -------------------------------------------------------------------------------

// One thread computes one output element t = (plane, p, q) (flat, row-major), scanning the
// window's taps row by row and keeping the best value and its flat index h * W + w.
// Memory: consecutive threads are consecutive q of one output row, so the warp writes y and
// idx in one contiguous run (coalesced); at each tap it reads inputs sw elements apart along
// one input row — a few contiguous cache lines, and the neighbouring taps hit the same lines
// in L1. No shared memory: each input is read by about (kh / sh) * (kw / sw) threads, which for
// the common 2x2 / stride 2 is once.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    max_pool2d_forward_kernel(PoolGeometry g, const T* __restrict__ x, T* __restrict__ y,
                              int64_t* __restrict__ idx) {
  const int64_t out_plane = g.P * g.Q;
  const int64_t total = g.N * g.C * out_plane;
  for (const int64_t t : grid_stride(total)) {
    const int64_t plane = t / out_plane, r = t % out_plane;
    const int64_t p = r / g.Q, q = r % g.Q;
    const T* xp = x + plane * g.H * g.W;
    const Span rows = window(p, g.stride_h, g.pad_h, g.kernel_h, g.dil_h, g.H);
    const Span cols = window(q, g.stride_w, g.pad_w, g.kernel_w, g.dil_w, g.W);
    // The first tap inside the plane starts the scan: padding (-inf) never wins.
    int64_t best_at = rows.begin * g.W + cols.begin;
    T best = xp[best_at];
    for (int64_t h = rows.begin; h < rows.end; h += rows.step) {
      for (int64_t w = cols.begin; w < cols.end; w += cols.step) {
        const T v = xp[h * g.W + w];
        if (beats(v, best)) {
          best = v;
          best_at = h * g.W + w;
        }
      }
    }
    y[t] = best;
    idx[t] = best_at;
  }
}

// One thread computes one output element: the sum of the window's taps inside the plane, in
// double and in row-major order (the CPU's order), divided by avg_pool_divisor (with
// count_include_pad the padding counts as zeros). Memory as in max_pool2d_forward_kernel.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    avg_pool2d_forward_kernel(PoolGeometry g, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t out_plane = g.P * g.Q;
  const int64_t total = g.N * g.C * out_plane;
  for (const int64_t t : grid_stride(total)) {
    const int64_t plane = t / out_plane, r = t % out_plane;
    const int64_t p = r / g.Q, q = r % g.Q;
    const T* xp = x + plane * g.H * g.W;
    const Span rows = window(p, g.stride_h, g.pad_h, g.kernel_h, 1, g.H);
    const Span cols = window(q, g.stride_w, g.pad_w, g.kernel_w, 1, g.W);
    double s = 0.0;
    for (int64_t h = rows.begin; h < rows.end; ++h)
      for (int64_t w = cols.begin; w < cols.end; ++w) s += static_cast<double>(xp[h * g.W + w]);
    y[t] = static_cast<T>(s / static_cast<double>(avg_pool_divisor(g, p, q)));
  }
}

// ---- backward ------------------------------------------------------------------------------

// One thread owns one input element t = (plane, h, w) and writes dx[t] once: the sum, in the
// element type and in row-major output order (as the CPU adds them), of dy[p, q] over the
// outputs (p, q) whose window contains (h, w) and whose saved index is h * W + w. An input no
// output picked gets 0.
// Memory: consecutive threads are consecutive w, which map to the same or adjacent q, so a
// warp's reads of idx and dy fall in a few contiguous runs (many threads read the same element:
// one broadcast transaction), and its write of dx is one contiguous run.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    max_pool2d_backward_kernel(PoolGeometry g, const T* __restrict__ dy,
                               const int64_t* __restrict__ idx, T* __restrict__ dx) {
  const int64_t in_plane = g.H * g.W, out_plane = g.P * g.Q;
  const int64_t total = g.N * g.C * in_plane;
  for (const int64_t t : grid_stride(total)) {
    const int64_t plane = t / in_plane, here = t % in_plane;
    const int64_t h = here / g.W, w = here % g.W;
    const Span ps = covering(h, g.stride_h, g.pad_h, (g.kernel_h - 1) * g.dil_h + 1, g.P);
    const Span qs = covering(w, g.stride_w, g.pad_w, (g.kernel_w - 1) * g.dil_w + 1, g.Q);
    const T* gp = dy + plane * out_plane;
    const int64_t* ip = idx + plane * out_plane;
    T acc = T(0);
    for (int64_t p = ps.begin; p < ps.end; ++p)
      for (int64_t q = qs.begin; q < qs.end; ++q)
        if (ip[p * g.Q + q] == here) acc += gp[p * g.Q + q];
    dx[t] = acc;
  }
}

// One thread owns one input element and writes dx[t] = the sum of dy / divisor over every
// window that contains it, in double and in row-major output order (the CPU's).
// Memory as in max_pool2d_backward_kernel (without the index reads).
template <typename T>
__global__ void __launch_bounds__(kBlock)
    avg_pool2d_backward_kernel(PoolGeometry g, const T* __restrict__ dy, T* __restrict__ dx) {
  const int64_t in_plane = g.H * g.W, out_plane = g.P * g.Q;
  const int64_t total = g.N * g.C * in_plane;
  for (const int64_t t : grid_stride(total)) {
    const int64_t plane = t / in_plane, here = t % in_plane;
    const int64_t h = here / g.W, w = here % g.W;
    const Span ps = covering(h, g.stride_h, g.pad_h, g.kernel_h, g.P);
    const Span qs = covering(w, g.stride_w, g.pad_w, g.kernel_w, g.Q);
    const T* gp = dy + plane * out_plane;
    double s = 0.0;
    for (int64_t p = ps.begin; p < ps.end; ++p)
      for (int64_t q = qs.begin; q < qs.end; ++q)
        s += static_cast<double>(gp[p * g.Q + q]) / static_cast<double>(avg_pool_divisor(g, p, q));
    dx[t] = static_cast<T>(s);
  }
}

}  // namespace

// The launchers: nothing to launch for an empty tensor (a 0-block grid is an error); the
// geometry travels by value in the kernel's parameter space.

void max_pool2d_forward(DType dtype, const PoolGeometry& g, const void* x, void* y,
                        int64_t* indices) {
  EMBER_DISPATCH_FLOAT(dtype, "max_pool2d", [&] {
    const int64_t total = g.N * g.C * g.P * g.Q;
    if (total <= 0) return;
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), max_pool2d_forward_kernel<scalar_t>)(
        g, static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y), indices);
    EMBER_LAUNCH_CHECK("max_pool2d_forward_kernel");
  });
}

void max_pool2d_backward(DType dtype, const PoolGeometry& g, const void* dy,
                         const int64_t* indices, void* dx) {
  EMBER_DISPATCH_FLOAT(dtype, "max_pool2d backward", [&] {
    const int64_t total = g.N * g.C * g.H * g.W;
    if (total <= 0) return;
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), max_pool2d_backward_kernel<scalar_t>)(
        g, static_cast<const scalar_t*>(dy), indices, static_cast<scalar_t*>(dx));
    EMBER_LAUNCH_CHECK("max_pool2d_backward_kernel");
  });
}

void avg_pool2d_forward(DType dtype, const PoolGeometry& g, const void* x, void* y) {
  EMBER_DISPATCH_FLOAT(dtype, "avg_pool2d", [&] {
    const int64_t total = g.N * g.C * g.P * g.Q;
    if (total <= 0) return;
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), avg_pool2d_forward_kernel<scalar_t>)(
        g, static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y));
    EMBER_LAUNCH_CHECK("avg_pool2d_forward_kernel");
  });
}

void avg_pool2d_backward(DType dtype, const PoolGeometry& g, const void* dy, void* dx) {
  EMBER_DISPATCH_FLOAT(dtype, "avg_pool2d backward", [&] {
    const int64_t total = g.N * g.C * g.H * g.W;
    if (total <= 0) return;
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), avg_pool2d_backward_kernel<scalar_t>)(
        g, static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dx));
    EMBER_LAUNCH_CHECK("avg_pool2d_backward_kernel");
  });
}

const PoolKernels pool_kernels = {&max_pool2d_forward, &max_pool2d_backward, &avg_pool2d_forward,
                                  &avg_pool2d_backward};

}  // namespace ember::kernels::cuda
