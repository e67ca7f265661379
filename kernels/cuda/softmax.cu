// ember/kernels/cuda/softmax.cu — softmax and log_softmax over the middle axis of a contiguous
// [outer, D, inner] block, forward and fused backward.
//
// Element (o, j, k) sits at (o * D + j) * inner + k. The math is written out in
// kernels/softmax.h; this file computes the same expressions with the same types: the max
// in the element type, exp in the element type (expf / exp, the precise functions), sums in
// double, and the final expression in double before the conversion back. The sums run in a
// different (but fixed) order than on the CPU, so results agree to rounding, and repeat
// bit for bit from run to run (no atomics).
//
// Kernels:
//   softmax_rows_kernel / softmax_backward_rows_kernel        inner == 1: each softmax is one
//       contiguous row of D elements; a warp per row for D <= kWarpRowMax, else a block per row.
//       Each thread reads and writes V consecutive elements at a time: 16 bytes (V = 4 floats,
//       2 doubles) when every row starts on 16 bytes, else one (kernels/cuda/row_vec.cuh).
//   softmax_columns_kernel / softmax_backward_columns_kernel  inner > 1: one thread per (o, k).
#include "kernels/softmax.h"

#include <cstdint>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/row_vec.cuh"

namespace ember::kernels::cuda {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kRowWarps = 8;           // warps per block of the row kernels (256 threads)
constexpr int64_t kWarpRowMax = 1024;  // rows up to this length: one warp each (<= 32 per lane)

// exp_t, log_t: CUDA's precise expf / exp and logf / log in the element type
// (kernels/cuda/device_math.cuh).
using namespace cuda_math;

// a * b rounded on its own: never contracted into a fused multiply-add with a following
// addition, so `c - mul_rn(a, b)` rounds twice, as written (and as the CPU computes it).
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// The larger of a and b, keeping a on ties and when b is NaN: exactly std::max(a, b), the CPU's
// row max. A NaN never becomes the max (it reaches the output through exp(NaN - m) instead);
// as NaN never enters, the running maxima being combined are numbers, and combining them in any
// order gives the same value (+0 vs -0 aside, which exp(x - m) cannot tell apart).
template <typename T>
struct MaxKeep {
  __device__ T operator()(T a, T b) const { return (a < b) ? b : a; }
};
struct Plus {
  __device__ double operator()(double a, double b) const { return a + b; }
};

// Butterfly reduction over the 32 lanes of a warp: after 5 exchanges every lane holds the
// result, and the same one (each pair adds a + b and b + a, equal in floating point).
template <typename V, typename Op>
__device__ inline V warp_allreduce(V v, Op op) {
  for (int delta = kWarp / 2; delta > 0; delta /= 2)
    v = op(v, __shfl_xor_sync(kFullMask, v, delta));
  return v;
}

// The reduction of a row over its group of threads, the result in every thread of the group.
// Warp per row: the warp's butterfly. Block per row: each warp's butterfly, lane 0 of warp w
// parks its value in smem[w], and every thread combines the kRowWarps values in the order
// w = 0, 1, ... (the same order in every thread, so all get the same bits). The trailing
// barrier lets the next call reuse smem. Every thread of the group must call it.
template <typename V, typename Op>
__device__ inline V row_allreduce(V v, Op op, bool block_per_row, V* smem) {
  v = warp_allreduce(v, op);
  if (!block_per_row) return v;
  if (threadIdx.x == 0) smem[threadIdx.y] = v;
  __syncthreads();
  V all = smem[0];
  for (int w = 1; w < kRowWarps; ++w) all = op(all, smem[w]);
  __syncthreads();
  return all;
}

// How the threads of a row kernel walk a row: the first row, the row stride, and this thread's
// first j and j step within the row, counted in vectors of V elements. Block shape (32, kRowWarps).
struct RowWalk {
  int64_t first_row, row_stride;
  int j_first, j_step;
};
__device__ inline RowWalk row_walk(bool block_per_row) {
  if (block_per_row)  // the whole block on one row; thread t takes j = t, t + 256, ...
    return {static_cast<int64_t>(blockIdx.x), static_cast<int64_t>(gridDim.x),
            static_cast<int>(threadIdx.y * kWarp + threadIdx.x), kWarp * kRowWarps};
  // one warp per row; lane l takes j = l, l + 32, ...
  return {static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.y,
          static_cast<int64_t>(gridDim.x) * kRowWarps, static_cast<int>(threadIdx.x), kWarp};
}

// ---- forward -----------------------------------------------------------------------------------

// inner == 1. Block shape (32, kRowWarps). Warp mode (D <= kWarpRowMax): one warp computes one
// row, the block's 8 warps 8 rows, warps striding over the rows. Block mode: the whole block
// computes one row, blocks striding over the rows.
// Three passes over the row: (1) m = max, (2) s = sum of exp(x - m) in double, (3) write
// y = exp(x - m) / s, or (x - m) - log(s) for log_softmax. Passes 2 and 3 recompute exp rather
// than storing it in y and reading it back (the same float value, one less write + read).
// Memory: in every pass the threads of a warp read (and in pass 3 write) 32 consecutive vectors
// of V elements per step — coalesced, 512 bytes per warp and access when V * sizeof(T) is 16;
// passes 2 and 3 mostly hit L1/L2. Shared memory (block mode only) holds one partial max / sum
// per warp, see row_allreduce.
template <typename T, int V>
__global__ void __launch_bounds__(kWarp * kRowWarps)
    softmax_rows_kernel(bool log, bool block_per_row, int64_t outer, int64_t D, const T* x, T* y) {
  __shared__ T smem_max[kRowWarps];
  __shared__ double smem_sum[kRowWarps];
  const RowWalk w = row_walk(block_per_row);
  const int64_t Q = D / V;                                                   // vectors per row
  for (const int64_t row : grid_stride(w.first_row, outer, w.row_stride)) {  // uniform in the group
    const T* xr = x + row * D;
    T* yr = y + row * D;
    T m = -INFINITY;
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = w.j_first; q < Q; q += w.j_step) {
      const RowVec<T, V> a = load_row_vec<T, V>(xr, q);
#pragma unroll
      for (int i = 0; i < V; ++i) m = MaxKeep<T>()(m, a.v[i]);
    }
    m = row_allreduce(m, MaxKeep<T>(), block_per_row, smem_max);
    double s = 0.0;
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = w.j_first; q < Q; q += w.j_step) {
      const RowVec<T, V> a = load_row_vec<T, V>(xr, q);
#pragma unroll
      for (int i = 0; i < V; ++i) s += exp_t(a.v[i] - m);
    }
    s = row_allreduce(s, Plus(), block_per_row, smem_sum);
    const double inv = log ? 0.0 : 1.0 / s, ls = log ? log_t(s) : 0.0;
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = w.j_first; q < Q; q += w.j_step) {
      const RowVec<T, V> a = load_row_vec<T, V>(xr, q);
      RowVec<T, V> out;
#pragma unroll
      for (int i = 0; i < V; ++i)
        out.v[i] =
            log ? static_cast<T>((a.v[i] - m) - ls) : static_cast<T>(exp_t(a.v[i] - m) * inv);
      store_row_vec<T, V>(yr, q, out);
    }
  }
}

// inner > 1. One thread computes one softmax (o, k) over j, the threads of the grid striding
// over the outer * inner of them; the same three passes as above, each a loop over j.
// Memory: thread t = o * inner + k reads x[(o * D + j) * inner + k] at step j, so consecutive
// threads (consecutive k) read consecutive elements — coalesced — and the `inner`-apart
// elements of one softmax are never read by one warp in a single access. No shared memory.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    softmax_columns_kernel(bool log, int64_t outer, int64_t D, int64_t inner, const T* x, T* y) {
  const int64_t total = outer * inner;
  for (const int64_t t : grid_stride(total)) {
    const int64_t o = t / inner, k = t % inner;
    const T* xc = x + o * D * inner + k;
    T* yc = y + o * D * inner + k;
    T m = -INFINITY;
    for (int64_t j = 0; j < D; ++j) m = MaxKeep<T>()(m, xc[j * inner]);
    double s = 0.0;
    for (int64_t j = 0; j < D; ++j) s += exp_t(xc[j * inner] - m);
    if (!log) {
      const double inv = 1.0 / s;
      for (int64_t j = 0; j < D; ++j)
        yc[j * inner] = static_cast<T>(exp_t(xc[j * inner] - m) * inv);
    } else {
      const double ls = log_t(s);
      for (int64_t j = 0; j < D; ++j) yc[j * inner] = static_cast<T>((xc[j * inner] - m) - ls);
    }
  }
}

// ---- backward ----------------------------------------------------------------------------------
// From the saved output y and the incoming gradient g:
//   softmax:      dx_j = y_j * (g_j - dot),         dot = sum_i g_i y_i
//   log_softmax:  dx_j = g_j - exp(y_j) * dot,      dot = sum_i g_i
// Two passes: (1) dot in double, (2) dx.

// inner == 1. The thread layout, memory access and shared memory of softmax_rows_kernel: a warp
// (D <= kWarpRowMax) or a block per row; warps read 32 consecutive g, y per step (coalesced);
// smem holds one partial dot per warp in block mode.
template <typename T, int V>
__global__ void __launch_bounds__(kWarp * kRowWarps)
    softmax_backward_rows_kernel(bool log, bool block_per_row, int64_t outer, int64_t D, const T* g,
                                 const T* y, T* dx) {
  __shared__ double smem_sum[kRowWarps];
  const RowWalk w = row_walk(block_per_row);
  const int64_t Q = D / V;                                                   // vectors per row
  for (const int64_t row : grid_stride(w.first_row, outer, w.row_stride)) {  // uniform in the group
    const T* gr = g + row * D;
    const T* yr = y + row * D;
    T* out = dx + row * D;
    double dot = 0.0;
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = w.j_first; q < Q; q += w.j_step) {
      const RowVec<T, V> gv = load_row_vec<T, V>(gr, q);
      if (log) {
#pragma unroll
        for (int i = 0; i < V; ++i) dot += static_cast<double>(gv.v[i]);
      } else {
        const RowVec<T, V> yv = load_row_vec<T, V>(yr, q);
#pragma unroll
        for (int i = 0; i < V; ++i) dot += mul_rn(static_cast<double>(gv.v[i]), yv.v[i]);
      }
    }
    dot = row_allreduce(dot, Plus(), block_per_row, smem_sum);
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = w.j_first; q < Q; q += w.j_step) {
      const RowVec<T, V> gv = load_row_vec<T, V>(gr, q), yv = load_row_vec<T, V>(yr, q);
      RowVec<T, V> d;
#pragma unroll
      for (int i = 0; i < V; ++i)
        d.v[i] = log ? static_cast<T>(gv.v[i] - mul_rn(exp_t(yv.v[i]), dot))
                     : static_cast<T>(yv.v[i] * (gv.v[i] - dot));
      store_row_vec<T, V>(out, q, d);
    }
  }
}

// inner > 1. One thread per (o, k), looping over j; consecutive threads read consecutive k
// (coalesced), as in softmax_columns_kernel. No shared memory.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_columns_kernel(bool log, int64_t outer, int64_t D, int64_t inner, const T* g,
                                    const T* y, T* dx) {
  const int64_t total = outer * inner;
  for (const int64_t t : grid_stride(total)) {
    const int64_t o = t / inner, k = t % inner;
    const int64_t base = o * D * inner + k;
    double dot = 0.0;
    for (int64_t j = 0; j < D; ++j) {
      const int64_t e = base + j * inner;
      dot += log ? static_cast<double>(g[e]) : mul_rn(static_cast<double>(g[e]), y[e]);
    }
    for (int64_t j = 0; j < D; ++j) {
      const int64_t e = base + j * inner;
      dx[e] = log ? static_cast<T>(g[e] - mul_rn(exp_t(y[e]), dot))
                  : static_cast<T>(y[e] * (g[e] - dot));
    }
  }
}

// Grid for a row kernel: rows / 8 blocks in warp mode, one block per row in block mode.
unsigned rows_grid(int64_t outer, bool block_per_row) {
  return block_per_row ? grid_for(outer, 1) : grid_for(outer, kRowWarps);
}

}  // namespace

void softmax_forward(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner, const void* x,
                     void* y) {
  EMBER_DISPATCH_FLOAT(dtype, log ? "log_softmax" : "softmax", [&] {
    if (outer * D * inner <= 0) return;  // no element to write (the dtype is checked first)
    const auto* xs = static_cast<const scalar_t*>(x);
    auto* ys = static_cast<scalar_t*>(y);
    if (inner == 1) {
      const bool block_per_row = D > kWarpRowMax;
      const unsigned grid = rows_grid(outer, block_per_row);
      if (rows_aligned<scalar_t>(D, {xs, ys})) {
        EMBER_LAUNCH(grid, dim3(kWarp, kRowWarps), 0, stream(),
                     softmax_rows_kernel<scalar_t, kRowVec<scalar_t>>)
        (log, block_per_row, outer, D, xs, ys);
      } else {
        EMBER_LAUNCH(grid, dim3(kWarp, kRowWarps), 0, stream(), softmax_rows_kernel<scalar_t, 1>)
        (log, block_per_row, outer, D, xs, ys);
      }
      EMBER_LAUNCH_CHECK("softmax_rows_kernel");
    } else {
      EMBER_LAUNCH(grid_for(outer * inner), kBlock, 0, stream(), softmax_columns_kernel<scalar_t>)
      (log, outer, D, inner, xs, ys);
      EMBER_LAUNCH_CHECK("softmax_columns_kernel");
    }
  });
}

void softmax_backward(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner, const void* g,
                      const void* y, void* dx) {
  EMBER_DISPATCH_FLOAT(dtype, log ? "log_softmax" : "softmax", [&] {
    if (outer * D * inner <= 0) return;  // no element to write (the dtype is checked first)
    const auto* gs = static_cast<const scalar_t*>(g);
    const auto* ys = static_cast<const scalar_t*>(y);
    auto* dxs = static_cast<scalar_t*>(dx);
    if (inner == 1) {
      const bool block_per_row = D > kWarpRowMax;
      const unsigned grid = rows_grid(outer, block_per_row);
      if (rows_aligned<scalar_t>(D, {gs, ys, dxs})) {
        EMBER_LAUNCH(grid, dim3(kWarp, kRowWarps), 0, stream(),
                     softmax_backward_rows_kernel<scalar_t, kRowVec<scalar_t>>)
        (log, block_per_row, outer, D, gs, ys, dxs);
      } else {
        EMBER_LAUNCH(grid, dim3(kWarp, kRowWarps), 0, stream(),
                     softmax_backward_rows_kernel<scalar_t, 1>)
        (log, block_per_row, outer, D, gs, ys, dxs);
      }
      EMBER_LAUNCH_CHECK("softmax_backward_rows_kernel");
    } else {
      EMBER_LAUNCH(grid_for(outer * inner), kBlock, 0, stream(),
                   softmax_backward_columns_kernel<scalar_t>)
      (log, outer, D, inner, gs, ys, dxs);
      EMBER_LAUNCH_CHECK("softmax_backward_columns_kernel");
    }
  });
}

const SoftmaxKernels softmax_kernels = {&softmax_forward, &softmax_backward};

}  // namespace ember::kernels::cuda
