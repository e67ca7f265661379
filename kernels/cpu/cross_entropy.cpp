// Cross-entropy kernels: one row of logits per step (C scores, S elements apart), rows split
// across threads. The forward reads each row twice (its max, then the sum of exponentials); the
// backward reads it once and writes the gradient row in the same pass. With S = 1 every access
// walks a row contiguously.
#include "kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/base/parallel.h"
#include "kernels/cpu/isa_variant.h"  // last: what follows is compiled per variant

EMBER_CPU_VARIANT_BEGIN
namespace ember::kernels::cpu::EMBER_CPU_VARIANT {

namespace {

struct CrossEntropySums {
  double loss = 0.0;    // sum_r loss_r
  double weight = 0.0;  // sum of w_t over rows that are not ignored (the count without weights)
};

// The row max m and ls = log(sum_c exp(x_c - m)), the sum in double. A row whose max is
// infinite (all -inf, or a +inf logit) gets inf - inf = NaN in the sum, so its loss and gradient
// are NaN, as in PyTorch.
template <typename T>
void row_stats(const T* row, int64_t C, int64_t S, T& m, T& ls) {
  m = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < C; ++c) m = std::max(m, row[c * S]);
  double s = 0.0;
  for (int64_t c = 0; c < C; ++c) s += std::exp(static_cast<double>(row[c * S] - m));
  ls = static_cast<T>(std::log(s));
}

template <typename T>
CrossEntropySums forward_typed(int64_t N, int64_t C, int64_t S, const T* logits,
                               const int64_t* target, const T* weight, int64_t ignore_index,
                               double eps, T* loss, T* stats) {
  const int64_t R = N * S;
  T* row_max = stats;
  T* log_sum = stats + R;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1));
  parallel_for(0, R, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* row = logits + (r / S) * C * S + r % S;
      row_stats(row, C, S, row_max[r], log_sum[r]);
      const int64_t t = target[r];
      if (t == ignore_index) {
        loss[r] = T(0);
        continue;
      }
      const double w = weight ? static_cast<double>(weight[t]) : 1.0;
      const double m = static_cast<double>(row_max[r]), ls = static_cast<double>(log_sum[r]);
      const double nll = w * ((m + ls) - static_cast<double>(row[t * S]));
      if (eps == 0.0) {
        loss[r] = static_cast<T>(nll);
        continue;
      }
      // The smoothing term eps / C * sum_c w_c (lse - x_c), with lse - x_c = (m - x_c) + ls:
      // every term is >= 0, so nothing cancels however large the logits are.
      double spread = 0.0;
      for (int64_t c = 0; c < C; ++c) {
        const double wc = weight ? static_cast<double>(weight[c]) : 1.0;
        spread += wc * ((m - static_cast<double>(row[c * S])) + ls);
      }
      loss[r] = static_cast<T>((1.0 - eps) * nll + eps / static_cast<double>(C) * spread);
    }
  });
  // The sums are cheap (R adds) next to the R*C exponentials: one thread, in double.
  CrossEntropySums sums;
  for (int64_t r = 0; r < R; ++r) {
    sums.loss += static_cast<double>(loss[r]);
    if (target[r] == ignore_index) continue;
    sums.weight += weight ? static_cast<double>(weight[target[r]]) : 1.0;
  }
  return sums;
}

template <typename T>
void backward_typed(int64_t N, int64_t C, int64_t S, const T* logits, const int64_t* target,
                    const T* weight, int64_t ignore_index, double eps, const T* weight_total,
                    const T* stats, const T* grad, int64_t grad_stride, double scale, T* dlogits) {
  const int64_t R = N * S;
  // W = sum_c w_c (C without weights): the smoothing term's softmax coefficient.
  const double W = weight_total ? static_cast<double>(*weight_total) : static_cast<double>(C);
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1));
  parallel_for(0, R, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = (r / S) * C * S + r % S;
      T* out = dlogits + base;
      const int64_t t = target[r];
      if (t == ignore_index) {
        for (int64_t c = 0; c < C; ++c) out[c * S] = T(0);
        continue;
      }
      const double w = weight ? static_cast<double>(weight[t]) : 1.0;
      const double g = static_cast<double>(grad[r * grad_stride]);
      // a: the gradient of the target-class term, b: of the smoothing term (0 without it).
      const T a = static_cast<T>(scale * g * (1.0 - eps) * w);
      const T b = static_cast<T>(scale * g * eps / static_cast<double>(C));
      const T coef =
          eps == 0.0 ? a : static_cast<T>(static_cast<double>(a) + static_cast<double>(b) * W);
      const T* row = logits + base;
      const T m = stats[r], ls = stats[R + r];
      for (int64_t c = 0; c < C; ++c) out[c * S] = coef * std::exp((row[c * S] - m) - ls);
      out[t * S] -= a;
      if (eps == 0.0) continue;
      for (int64_t c = 0; c < C; ++c) {
        const T wc = weight ? weight[c] : T(1);
        const T bw = b * wc;
        out[c * S] -= bw;
      }
    }
  });
}

}  // namespace

void cross_entropy_forward(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                           const int64_t* target, const void* weight, int64_t ignore_index,
                           double label_smoothing, void* loss, void* stats,
                           CrossEntropyReduction reduction, void* out, void* weight_sum) {
  EMBER_DISPATCH_FLOAT(dtype, "cross_entropy", [&] {
    const CrossEntropySums sums =
        forward_typed<scalar_t>(N, C, S, static_cast<const scalar_t*>(logits), target,
                                static_cast<const scalar_t*>(weight), ignore_index, label_smoothing,
                                static_cast<scalar_t*>(loss), static_cast<scalar_t*>(stats));
    if (reduction == CrossEntropyReduction::None) return;
    // The sums are exact to double; each 0-d result is rounded once.
    *static_cast<scalar_t*>(weight_sum) = static_cast<scalar_t>(sums.weight);
    *static_cast<scalar_t*>(out) = static_cast<scalar_t>(
        reduction == CrossEntropyReduction::Sum ? sums.loss : sums.loss / sums.weight);
  });
}

void cross_entropy_backward(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                            const int64_t* target, const void* weight, int64_t ignore_index,
                            double label_smoothing, const void* weight_total, const void* stats,
                            const void* grad, int64_t grad_stride, const void* divisor,
                            void* dlogits) {
  EMBER_DISPATCH_FLOAT(dtype, "cross_entropy", [&] {
    const double scale =
        divisor ? 1.0 / static_cast<double>(*static_cast<const scalar_t*>(divisor)) : 1.0;
    backward_typed<scalar_t>(N, C, S, static_cast<const scalar_t*>(logits), target,
                             static_cast<const scalar_t*>(weight), ignore_index, label_smoothing,
                             static_cast<const scalar_t*>(weight_total),
                             static_cast<const scalar_t*>(stats),
                             static_cast<const scalar_t*>(grad), grad_stride, scale,
                             static_cast<scalar_t*>(dlogits));
  });
}

const CrossEntropyKernels cross_entropy_kernels = {&cross_entropy_forward, &cross_entropy_backward};

}  // namespace ember::kernels::cpu::EMBER_CPU_VARIANT
EMBER_CPU_VARIANT_END
