// ember/kernels/cuda/cross_entropy.cu — fused softmax + negative log-likelihood on the GPU.
//
// Dimension letters: N samples, C classes, S positions per sample; R = N * S rows. logits is a
// contiguous [N, C, S] (row r = n * S + s holds logits[n, :, s]), target [R] int64, weight [C]
// optional (nullptr = all ones). The math and its derivation are in kernels/cross_entropy.h;
// this file computes the same numbers with the same roundings where it can (the sums run in
// double, in a different but fixed order, and CUDA's exp/log may differ from the host libm in
// the last ulp).
//
// Four kernels (label smoothing adds one more pass over the row to the forwards):
//   ce_forward_rows_kernel     S == 1: one warp per row: row max, sum of exponentials, stats, loss
//   ce_forward_spatial_kernel  S > 1: one thread per row (the rows' scores interleave in memory)
//   ce_reduce_kernel           one block: sum of loss and of the weights -> out[0], weight_sum[0]
//   ce_backward_kernel         one thread per element of dlogits
// The reduction stays on the device (no copy to the host, so the host never waits) and is
// deterministic: a single block with a fixed assignment of rows to threads and a fixed tree
// order, no floating-point atomics, so the same input always gives the same bits.
#include "kernels/cross_entropy.h"

#include <cmath>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch.cuh"

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
// Memory: lane l reads logits[i, l], logits[i, l + 32], ... — at each step the 32 lanes read 32
// consecutive elements of the row, one coalesced 128-byte (float) or 256-byte (double)
// transaction. The row is read twice (max, then sum of exponentials); the second pass mostly
// hits L1/L2. No shared memory: partial results are combined with warp shuffles.
// Each lane accumulates its share of sum exp(x - m) in double, then the warp adds the 32
// partial sums; lane 0 writes the row's stats (max m, ls = log of the sum) and loss[i].
// Trade-off: for small C (MNIST's 10) most lanes of the warp idle; for a very large C with few
// rows (N = 1, C = 10^6) one warp walks the whole row. A block per row would be faster there;
// a warp per row is the simple choice that is efficient for the common N >> 32, C ~ 10..10^4.
template <typename T>
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
    T m = static_cast<T>(-INFINITY);
    for (int64_t c = lane; c < C; c += kWarp) m = max_keep(m, row[c]);
    m = warp_max(m);
    // An infinite max (all -inf, or a +inf logit) makes inf - inf = NaN: a NaN loss, as on the CPU.
    double s = 0.0;
    for (int64_t c = lane; c < C; c += kWarp) s += exp_t(static_cast<double>(row[c] - m));
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
// One block of kReduceBlock threads reduces all N rows (here N is the row count R = N * S). Thread j adds rows j, j + kReduceBlock,
// j + 2 * kReduceBlock, ... (consecutive threads read consecutive loss[] and target[] entries:
// coalesced), in double: the sum of the stored loss values, and the weight w_t of every row
// that is not ignored (recomputed from target and weight, so no per-row weight buffer is
// needed). Shared memory holds the kReduceBlock partial sums of each; a tree halves them until
// thread 0 holds the totals and writes weight_sum[0] and out[0].
// One block is enough: the reduction reads 2N values, next to the N * C exponentials of the
// row kernel; a single block also makes the order of the additions fixed (deterministic).
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

// ---- backward: one thread per element ------------------------------------------------------
//
// One thread computes one element e = (n * C + c) * S + s of dlogits (grid-stride over N*C*S),
// which belongs to row r = n * S + s:
//   dlogits[e] = (a_r + b_r W) * exp((logits[e] - m_r) - ls_r) - (c == t ? a_r : 0) - b_r w_c
//   a_r = (T)(scale * grad[r * grad_stride] * (1 - eps) * w_t),  scale = 1 / divisor[0] (or 1)
//   b_r = (T)(scale * grad[r * grad_stride] * eps / C)  (the label-smoothing part; 0 without)
// Memory: consecutive threads read consecutive logits and write consecutive dlogits
// (coalesced); target[r], the stats, grad and weight[t] are shared by the threads of a row
// (S == 1: one cached load, broadcast; S > 1: consecutive s, consecutive addresses). No shared
// memory. The roundings follow the CPU kernel: a_r rounded to T once, the product
// (a_r + b_r W) * exp(.) rounded, then a_r subtracted at the target class, then b_r * w_c.
template <typename T>
__global__ void ce_backward_kernel(int64_t N, int64_t C, int64_t S, const T* __restrict__ logits,
                                   const int64_t* __restrict__ target, const T* __restrict__ weight,
                                   int64_t ignore_index, double eps,
                                   const T* __restrict__ weight_total, const T* __restrict__ stats,
                                   const T* __restrict__ grad, int64_t grad_stride,
                                   const T* __restrict__ divisor, T* __restrict__ dlogits) {
  const int64_t total = N * C * S, R = N * S;
  // The divisor of the mean lives on the device (written by ce_reduce_kernel): read it here
  // rather than on the host, so the host never waits for the forward to finish.
  const double scale = divisor ? 1.0 / static_cast<double>(divisor[0]) : 1.0;
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
    const double g = static_cast<double>(grad[r * grad_stride]);
    const T a = static_cast<T>(scale * g * (1.0 - eps) * w);
    const T b = static_cast<T>(scale * g * eps / static_cast<double>(C));
    const T coef =
        eps == 0.0 ? a : static_cast<T>(static_cast<double>(a) + static_cast<double>(b) * W);
    T v = mul_rn(coef, exp_t((logits[e] - stats[r]) - stats[R + r]));
    if (c == t) v -= a;
    if (eps != 0.0) v -= mul_rn(b, weight ? weight[c] : T(1));
    dlogits[e] = v;
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
      EMBER_LAUNCH(grid_for(N, kRowsPerBlock), kBlock, 0, stream(),
                   ce_forward_rows_kernel<scalar_t>)
      (N, C, x, target, w, ignore_index, eps, static_cast<scalar_t*>(loss),
       static_cast<scalar_t*>(stats));
      EMBER_LAUNCH_CHECK("ce_forward_rows_kernel");
    } else if (R > 0) {
      EMBER_LAUNCH(grid_for(R), kBlock, 0, stream(), ce_forward_spatial_kernel<scalar_t>)
      (N, C, S, x, target, w, ignore_index, eps, static_cast<scalar_t*>(loss),
       static_cast<scalar_t*>(stats));
      EMBER_LAUNCH_CHECK("ce_forward_spatial_kernel");
    }
    // Sum and mean write their 0-d results even for R = 0 (sum 0, mean nan).
    if (reduction != 0 && (out != nullptr || weight_sum != nullptr)) {
      EMBER_LAUNCH(1, kReduceBlock, 0, stream(), ce_reduce_kernel<scalar_t>)(
          R, static_cast<const scalar_t*>(loss), target, w, ignore_index, reduction,
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
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), ce_backward_kernel<scalar_t>)
    (N, C, S, static_cast<const scalar_t*>(logits), target, static_cast<const scalar_t*>(weight),
     ignore_index, label_smoothing, static_cast<const scalar_t*>(weight_total),
     static_cast<const scalar_t*>(stats), static_cast<const scalar_t*>(grad), grad_stride,
     static_cast<const scalar_t*>(divisor), static_cast<scalar_t*>(dlogits));
    EMBER_LAUNCH_CHECK("ce_backward_kernel");
  });
}

const CrossEntropyKernels cross_entropy_kernels = {&cross_entropy_forward, &cross_entropy_backward};

}  // namespace ember::kernels::cuda
