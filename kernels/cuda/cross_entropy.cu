// ember/kernels/cuda/cross_entropy.cu — fused softmax + negative log-likelihood on the GPU.
//
// Dimension letters: N samples, C classes, S positions per sample; R = N * S rows. logits is a
// contiguous [N, C, S] (row r = n * S + s holds logits[n, :, s]), target [R] int64, weight [C]
// optional (nullptr = all ones). The math and its derivation are in kernels/cross_entropy.h;
// this file computes the same numbers with the same roundings where it can (the sums run in
// double, in a different but fixed order, and CUDA's exp/log may differ from the host libm in
// the last ulp).
//
// Five kernels (label smoothing adds one more pass over the row to the forwards):
//   ce_forward_rows_kernel     S == 1: one warp per row: row max, sum of exponentials, stats, loss
//   ce_forward_spatial_kernel  S > 1: one thread per row (the rows' scores interleave in memory)
//   ce_reduce_kernel           one block: sum of loss and of the weights -> out[0], weight_sum[0]
//   ce_backward_rows_kernel    S == 1: one warp per row of dlogits
//   ce_backward_kernel         S > 1: one thread per element of dlogits
// The row kernels read (and write) 16 bytes at a time when every row starts on 16 bytes
// (kernels/cuda/row_vec.cuh).
// The reduction stays on the device (no copy to the host, so the host never waits) and is
// deterministic: a single block with a fixed assignment of rows to threads and a fixed tree
// order, no floating-point atomics, so the same input always gives the same bits.
#include "kernels/cross_entropy.h"

#include <cmath>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/row_vec.cuh"

namespace ember::kernels::cuda {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// exp_t, log_t: CUDA's precise expf / exp and logf / log in the element type, the functions
// std::exp(float) / std::exp(double) pick on the CPU (kernels/cuda/device_math.cuh).
using namespace cuda_math;

// a * b rounded on its own. A plain `a * b - c` may be contracted by nvcc into one fused
// multiply-add (a single rounding); the CPU kernel stores the product first and subtracts
// later, so the _rn intrinsics (which are never contracted) keep the two roundings.
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// The larger of a and b, keeping a on ties and when b is NaN: exactly std::max(a, b) as the
// CPU kernel's row max uses it (so a NaN logit never becomes the max; it surfaces through the
// sum of exponentials instead, as on the CPU).
template <typename T>
__device__ inline T max_keep(T a, T b) {
  return (a < b) ? b : a;
}

// Butterfly reductions over the 32 lanes of a warp: after log2(32) = 5 exchanges every lane
// holds the result. The pairing is fixed, so the result is the same on every run.
template <typename T>
__device__ inline T warp_max(T v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = max_keep(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}
__device__ inline double warp_sum(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Row r's results: stats[r] = m, stats[R + r] = ls, and loss[r] = w_t * (m + ls - x_t) in
// double (0 for an ignored row). `row` points at the row's first score, `step` apart. With label
// smoothing eps > 0, `spread` is sum_c w_c * ((m - x_c) + ls) and the loss becomes
// (1 - eps) * w_t * (m + ls - x_t) + eps / C * spread.
template <typename T>
__device__ inline void write_row(int64_t r, int64_t R, int64_t C, T m, T ls, const T* row,
                                 int64_t step, const int64_t* __restrict__ target,
                                 const T* __restrict__ weight, int64_t ignore_index, double eps,
                                 double spread, T* __restrict__ loss, T* __restrict__ stats) {
  stats[r] = m;
  stats[R + r] = ls;
  const int64_t t = target[r];
  if (t == ignore_index) {
    loss[r] = T(0);
    return;
  }
  const double w = weight ? static_cast<double>(weight[t]) : 1.0;
  const double nll =
      w * ((static_cast<double>(m) + static_cast<double>(ls)) - static_cast<double>(row[t * step]));
  if (eps == 0.0) {
    loss[r] = static_cast<T>(nll);
    return;
  }
  loss[r] = static_cast<T>((1.0 - eps) * nll + eps / static_cast<double>(C) * spread);
}

// sum_c w_c * ((m - x_c) + ls), the smoothing term's sum, over the classes c = first,
// first + stride, ... of one row: every term is >= 0, so nothing cancels.
template <typename T>
__device__ inline double spread_part(const T* row, int64_t step, int64_t C, int64_t first,
                                     int64_t stride, const T* __restrict__ weight, T m, T ls) {
  double s = 0.0;
  for (int64_t c = first; c < C; c += stride) {
    const double wc = weight ? static_cast<double>(weight[c]) : 1.0;
    s += wc *
         ((static_cast<double>(m) - static_cast<double>(row[c * step])) + static_cast<double>(ls));
  }
  return s;
}

// ---- forward, S == 1: one warp per row ------------------------------------------------------
//
// One warp (32 threads) computes one row i; a block of kBlock threads holds kBlock / 32 warps,
// so it handles that many rows at a time, and warps stride over the rows (grid-stride by
// warps) when N is larger than the grid.
// Memory: lane l reads vector l, l + 32, ... of the row (V elements each, 16 bytes when the rows
// start aligned, else one element) — at each step the 32 lanes read 32 consecutive vectors,
// coalesced. The row is read twice (max, then sum of exponentials); the second pass mostly
// hits L1/L2. No shared memory: partial results are combined with warp shuffles.
// Each lane accumulates its share of sum exp(x - m) in double, then the warp adds the 32
// partial sums; lane 0 writes the row's stats (max m, ls = log of the sum) and loss[i].
// Trade-off: for small C (MNIST's 10) most lanes of the warp idle; for a very large C with few
// rows (N = 1, C = 10^6) one warp walks the whole row. A block per row would be faster there;
// a warp per row is the simple choice that is efficient for the common N >> 32, C ~ 10..10^4.
template <typename T, int V>
__global__ void ce_forward_rows_kernel(int64_t N, int64_t C, const T* __restrict__ logits,
                                       const int64_t* __restrict__ target,
                                       const T* __restrict__ weight, int64_t ignore_index,
                                       double eps, T* __restrict__ loss, T* __restrict__ stats) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t warp_id = global_thread_id() / kWarp;
  const int64_t warp_count = global_thread_count() / kWarp;
  // Every lane of a warp has the same i, so the loop (and every branch inside that depends
  // only on i or on warp-reduced values) is uniform across the warp, as the shuffles require.
  for (const int64_t i : grid_stride(warp_id, N, warp_count)) {
    const T* row = logits + i * C;
    const int64_t Q = C / V;  // vectors per row
    T m = static_cast<T>(-INFINITY);
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = lane; q < Q; q += kWarp) {
      const RowVec<T, V> x = load_row_vec<T, V>(row, q);
#pragma unroll
      for (int k = 0; k < V; ++k) m = max_keep(m, x.v[k]);
    }
    m = warp_max(m);
    // An infinite max (all -inf, or a +inf logit) makes inf - inf = NaN: a NaN loss, as on the CPU.
    double s = 0.0;
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = lane; q < Q; q += kWarp) {
      const RowVec<T, V> x = load_row_vec<T, V>(row, q);
#pragma unroll
      for (int k = 0; k < V; ++k) s += exp_t(static_cast<double>(x.v[k] - m));
    }
    s = warp_sum(s);
    const T ls = static_cast<T>(log_t(s));
    // Label smoothing: a third pass over the row (uniform across the warp: eps is).
    double spread = 0.0;
    if (eps != 0.0) spread = warp_sum(spread_part(row, 1, C, lane, kWarp, weight, m, ls));
    if (lane == 0)
      write_row(i, N, C, m, ls, row, 1, target, weight, ignore_index, eps, spread, loss, stats);
  }
}

// ---- forward, S > 1: one thread per row -------------------------------------------------------
//
// For logits [N, C, d1, ..., dk] row r = n * S + s reads logits[n, c, s] for c = 0..C-1: its
// scores are S elements apart, and the next row's are right beside them. So one thread walks
// one row (grid-stride over the R rows), and at each step c the threads of a warp read 32
// consecutive positions s: one coalesced transaction, as for the warp-per-row kernel. Each row is
// read twice (max, then the sum of exponentials in double). No shared memory, no shuffles.
template <typename T>
__global__ void ce_forward_spatial_kernel(int64_t N, int64_t C, int64_t S,
                                          const T* __restrict__ logits,
                                          const int64_t* __restrict__ target,
                                          const T* __restrict__ weight, int64_t ignore_index,
                                          double eps, T* __restrict__ loss, T* __restrict__ stats) {
  const int64_t R = N * S;
  for (const int64_t r : grid_stride(R)) {
    const T* row = logits + (r / S) * C * S + r % S;
    T m = static_cast<T>(-INFINITY);
    for (int64_t c = 0; c < C; ++c) m = max_keep(m, row[c * S]);
    double s = 0.0;
    for (int64_t c = 0; c < C; ++c) s += exp_t(static_cast<double>(row[c * S] - m));
    const T ls = static_cast<T>(log_t(s));
    const double spread = eps != 0.0 ? spread_part(row, S, C, 0, 1, weight, m, ls) : 0.0;
    write_row(r, R, C, m, ls, row, S, target, weight, ignore_index, eps, spread, loss, stats);
  }
}

// ---- forward: the reduction, one block -----------------------------------------------------
//
// One block of kReduceBlock threads reduces all N rows (here N is the row count R = N * S). Thread
// j adds rows j, j + kReduceBlock, j + 2 * kReduceBlock, ... (consecutive threads read consecutive
// loss[] and target[] entries: coalesced), in double: the sum of the stored loss values, and the
// weight w_t of every row that is not ignored (recomputed from target and weight, so no per-row
// weight buffer is needed). Shared memory holds the kReduceBlock partial sums of each; a tree
// halves them until thread 0 holds the totals and writes weight_sum[0] and out[0]. One block is
// enough: the reduction reads 2N values, next to the N * C exponentials of the row kernel; a single
// block also makes the order of the additions fixed (deterministic).
constexpr int kReduceBlock = 512;

template <typename T>
__global__ void ce_reduce_kernel(int64_t N, const T* __restrict__ loss,
                                 const int64_t* __restrict__ target, const T* __restrict__ weight,
                                 int64_t ignore_index, int reduction, T* __restrict__ out,
                                 T* __restrict__ weight_sum) {
  __shared__ double s_loss[kReduceBlock];
  __shared__ double s_weight[kReduceBlock];
  double sl = 0.0, sw = 0.0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    sl += static_cast<double>(loss[i]);
    const int64_t t = target[i];
    if (t != ignore_index) sw += weight ? static_cast<double>(weight[t]) : 1.0;
  }
  s_loss[threadIdx.x] = sl;
  s_weight[threadIdx.x] = sw;
  __syncthreads();
  for (int half = kReduceBlock / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      s_loss[threadIdx.x] += s_loss[threadIdx.x + half];
      s_weight[threadIdx.x] += s_weight[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double total_loss = s_loss[0], total_weight = s_weight[0];
    if (weight_sum) weight_sum[0] = static_cast<T>(total_weight);
    // Mean: sum loss / sum w, an IEEE division in double: 0 / 0 (every row ignored) is nan,
    // as in PyTorch and on the CPU.
    if (out) out[0] = static_cast<T>(reduction == 2 ? total_loss / total_weight : total_loss);
  }
}

// ---- backward --------------------------------------------------------------------------------
//
// Element e = (n * C + c) * S + s of dlogits belongs to row r = n * S + s:
//   dlogits[e] = (a_r + b_r W) * exp((logits[e] - m_r) - ls_r) - (c == t ? a_r : 0) - b_r w_c
//   a_r = (T)(scale * grad[r * grad_stride] * (1 - eps) * w_t),  scale = 1 / divisor[0] (or 1)
//   b_r = (T)(scale * grad[r * grad_stride] * eps / C)  (the label-smoothing part; 0 without)
// The roundings follow the CPU kernel: a_r rounded to T once, the product (a_r + b_r W) * exp(.)
// rounded, then a_r subtracted at the target class, then b_r * w_c. Both kernels below compute
// exactly that, element by element, so they give the same bits.

// Row r's constants of that formula: a_r, b_r and the coefficient a_r + b_r W, in T.
template <typename T>
struct RowGrad {
  T a, b, coef;
};
template <typename T>
__device__ inline RowGrad<T> row_grad(double scale, double g, double eps, double w, double W,
                                      int64_t C) {
  const T a = static_cast<T>(scale * g * (1.0 - eps) * w);
  const T b = static_cast<T>(scale * g * eps / static_cast<double>(C));
  const T coef =
      eps == 0.0 ? a : static_cast<T>(static_cast<double>(a) + static_cast<double>(b) * W);
  return {a, b, coef};
}

// dlogits[e] of class c in a row whose logit is x, with the row's stats m, ls and target t.
template <typename T>
__device__ inline T element_grad(const RowGrad<T>& k, T x, T m, T ls, int64_t c, int64_t t,
                                 double eps, const T* __restrict__ weight) {
  T v = mul_rn(k.coef, exp_t((x - m) - ls));
  if (c == t) v -= k.a;
  if (eps != 0.0) v -= mul_rn(k.b, weight ? weight[c] : T(1));
  return v;
}

// The mean's divisor lives on the device (written by ce_reduce_kernel): the kernels read it
// rather than the host, so the host never waits for the forward to finish.
template <typename T>
__device__ inline double grad_scale(const T* __restrict__ divisor) {
  return divisor ? 1.0 / static_cast<double>(divisor[0]) : 1.0;
}

// S == 1: one warp per row, as ce_forward_rows_kernel: the row's constants once per lane, then
// lane l writes vector l, l + 32, ... of the row (V elements, 16 bytes when the rows start
// aligned), reading the logits the same way. The only division per element of the kernel below,
// (e / S) % C and friends in 64 bits, is gone with it.
template <typename T, int V>
__global__ void ce_backward_rows_kernel(int64_t N, int64_t C, const T* __restrict__ logits,
                                        const int64_t* __restrict__ target,
                                        const T* __restrict__ weight, int64_t ignore_index,
                                        double eps, const T* __restrict__ weight_total,
                                        const T* __restrict__ stats, const T* __restrict__ grad,
                                        int64_t grad_stride, const T* __restrict__ divisor,
                                        T* __restrict__ dlogits) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t warp_id = global_thread_id() / kWarp;
  const int64_t warp_count = global_thread_count() / kWarp;
  const double scale = grad_scale(divisor);
  const double W = weight_total ? static_cast<double>(weight_total[0]) : static_cast<double>(C);
  const int64_t Q = C / V;  // vectors per row
  for (const int64_t r : grid_stride(warp_id, N, warp_count)) {
    const T* row = logits + r * C;
    T* out = dlogits + r * C;
    const int64_t t = target[r];
    if (t == ignore_index) {
      RowVec<T, V> zero;
#pragma unroll
      for (int k = 0; k < V; ++k) zero.v[k] = T(0);
      for (int64_t q = lane; q < Q; q += kWarp) store_row_vec<T, V>(out, q, zero);
      continue;
    }
    const double w = weight ? static_cast<double>(weight[t]) : 1.0;
    const RowGrad<T> k =
        row_grad<T>(scale, static_cast<double>(grad[r * grad_stride]), eps, w, W, C);
    const T m = stats[r], ls = stats[N + r];
#pragma unroll(V > 1 ? 4 : 1)
    for (int64_t q = lane; q < Q; q += kWarp) {
      const RowVec<T, V> x = load_row_vec<T, V>(row, q);
      RowVec<T, V> d;
#pragma unroll
      for (int j = 0; j < V; ++j)
        d.v[j] = element_grad(k, x.v[j], m, ls, q * V + j, t, eps, weight);
      store_row_vec<T, V>(out, q, d);
    }
  }
}

// S > 1: one thread computes one element of dlogits (grid-stride over N*C*S).
// Memory: consecutive threads read consecutive logits and write consecutive dlogits
// (coalesced); target[r], the stats, grad and weight[t] are shared by the threads of a row
// (consecutive s, consecutive addresses). No shared memory.
template <typename T>
__global__ void ce_backward_kernel(int64_t N, int64_t C, int64_t S, const T* __restrict__ logits,
                                   const int64_t* __restrict__ target, const T* __restrict__ weight,
                                   int64_t ignore_index, double eps,
                                   const T* __restrict__ weight_total, const T* __restrict__ stats,
                                   const T* __restrict__ grad, int64_t grad_stride,
                                   const T* __restrict__ divisor, T* __restrict__ dlogits) {
  const int64_t total = N * C * S, R = N * S;
  const double scale = grad_scale(divisor);
  const double W = weight_total ? static_cast<double>(weight_total[0]) : static_cast<double>(C);
  for (const int64_t e : grid_stride(total)) {
    const int64_t n = e / (C * S);
    const int64_t c = (e / S) % C;
    const int64_t r = n * S + e % S;
    const int64_t t = target[r];
    if (t == ignore_index) {
      dlogits[e] = T(0);
      continue;
    }
    const double w = weight ? static_cast<double>(weight[t]) : 1.0;
    const RowGrad<T> k =
        row_grad<T>(scale, static_cast<double>(grad[r * grad_stride]), eps, w, W, C);
    dlogits[e] = element_grad(k, logits[e], stats[r], stats[R + r], c, t, eps, weight);
  }
}

}  // namespace

void cross_entropy_forward(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                           const int64_t* target, const void* weight, int64_t ignore_index,
                           double label_smoothing, void* loss, void* stats,
                           CrossEntropyReduction reduction_kind, void* out, void* weight_sum) {
  const int reduction = static_cast<int>(reduction_kind);  // 0 none, 1 sum, 2 mean
  EMBER_DISPATCH_FLOAT(dtype, "cross_entropy", [&] {
    const auto* x = static_cast<const scalar_t*>(logits);
    const auto* w = static_cast<const scalar_t*>(weight);
    const double eps = label_smoothing;
    const int64_t R = N * S;
    if (R > 0 && S == 1) {
      // kBlock / 32 rows per block; grid_for caps the grid and the warps stride over the rest.
      constexpr int kRowsPerBlock = kBlock / kWarp;
      if (rows_aligned<scalar_t>(C, {x})) {
        EMBER_LAUNCH(grid_for(N, kRowsPerBlock), kBlock, 0, stream(),
                     ce_forward_rows_kernel<scalar_t, kRowVec<scalar_t>>)
        (N, C, x, target, w, ignore_index, eps, static_cast<scalar_t*>(loss),
         static_cast<scalar_t*>(stats));
      } else {
        EMBER_LAUNCH(grid_for(N, kRowsPerBlock), kBlock, 0, stream(),
                     ce_forward_rows_kernel<scalar_t, 1>)
        (N, C, x, target, w, ignore_index, eps, static_cast<scalar_t*>(loss),
         static_cast<scalar_t*>(stats));
      }
      EMBER_LAUNCH_CHECK("ce_forward_rows_kernel");
    } else if (R > 0) {
      EMBER_LAUNCH(grid_for(R), kBlock, 0, stream(), ce_forward_spatial_kernel<scalar_t>)
      (N, C, S, x, target, w, ignore_index, eps, static_cast<scalar_t*>(loss),
       static_cast<scalar_t*>(stats));
      EMBER_LAUNCH_CHECK("ce_forward_spatial_kernel");
    }
    // Sum and mean write their 0-d results even for R = 0 (sum 0, mean nan).
    if (reduction != 0 && (out != nullptr || weight_sum != nullptr)) {
      EMBER_LAUNCH(1, kReduceBlock, 0, stream(), ce_reduce_kernel<scalar_t>)
      (R, static_cast<const scalar_t*>(loss), target, w, ignore_index, reduction,
       static_cast<scalar_t*>(out), static_cast<scalar_t*>(weight_sum));
      EMBER_LAUNCH_CHECK("ce_reduce_kernel");
    }
  });
}

void cross_entropy_backward(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                            const int64_t* target, const void* weight, int64_t ignore_index,
                            double label_smoothing, const void* weight_total, const void* stats,
                            const void* grad, int64_t grad_stride, const void* divisor,
                            void* dlogits) {
  EMBER_DISPATCH_FLOAT(dtype, "cross_entropy", [&] {
    const int64_t total = N * C * S;
    if (total == 0) return;
    const auto* x = static_cast<const scalar_t*>(logits);
    const auto* w = static_cast<const scalar_t*>(weight);
    const auto* wt = static_cast<const scalar_t*>(weight_total);
    const auto* st = static_cast<const scalar_t*>(stats);
    const auto* g = static_cast<const scalar_t*>(grad);
    const auto* div = static_cast<const scalar_t*>(divisor);
    auto* dx = static_cast<scalar_t*>(dlogits);
    if (S == 1) {
      constexpr int kRowsPerBlock = kBlock / kWarp;
      if (rows_aligned<scalar_t>(C, {x, dx})) {
        EMBER_LAUNCH(grid_for(N, kRowsPerBlock), kBlock, 0, stream(),
                     ce_backward_rows_kernel<scalar_t, kRowVec<scalar_t>>)
        (N, C, x, target, w, ignore_index, label_smoothing, wt, st, g, grad_stride, div, dx);
      } else {
        EMBER_LAUNCH(grid_for(N, kRowsPerBlock), kBlock, 0, stream(),
                     ce_backward_rows_kernel<scalar_t, 1>)
        (N, C, x, target, w, ignore_index, label_smoothing, wt, st, g, grad_stride, div, dx);
      }
      EMBER_LAUNCH_CHECK("ce_backward_rows_kernel");
      return;
    }
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), ce_backward_kernel<scalar_t>)
    (N, C, S, x, target, w, ignore_index, label_smoothing, wt, st, g, grad_stride, div, dx);
    EMBER_LAUNCH_CHECK("ce_backward_kernel");
  });
}

const CrossEntropyKernels cross_entropy_kernels = {&cross_entropy_forward, &cross_entropy_backward};

}  // namespace ember::kernels::cuda
