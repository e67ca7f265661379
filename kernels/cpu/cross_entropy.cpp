// Cross-entropy kernels: one row of logits per step, rows split across threads. The forward
// reads each row twice (its max, then the sum of exponentials); the backward reads it once and
// writes the gradient row in the same pass. Every access walks a row contiguously.
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/parallel.h"

namespace ember::kernels::cpu {

namespace {

template <typename T>
double row_logsumexp(const T* row, int64_t C) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t c = 0; c < C; ++c) m = std::max(m, row[c]);
  if (std::isinf(m)) return static_cast<double>(m);  // all -inf (lse -inf) or a +inf logit
  double s = 0.0;
  for (int64_t c = 0; c < C; ++c) s += std::exp(static_cast<double>(row[c] - m));
  return static_cast<double>(m) + std::log(s);
}

template <typename T>
CrossEntropySums forward_typed(int64_t N, int64_t C, const T* logits, const int64_t* target,
                               const T* weight, int64_t ignore_index, T* loss, T* lse) {
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1));
  parallel_for(0, N, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* row = logits + i * C;
      const double l = row_logsumexp(row, C);
      lse[i] = static_cast<T>(l);
      const int64_t t = target[i];
      if (t == ignore_index) {
        loss[i] = T(0);
        continue;
      }
      const double w = weight ? static_cast<double>(weight[t]) : 1.0;
      loss[i] = static_cast<T>(w * (l - static_cast<double>(row[t])));
    }
  });
  // The sums are cheap (N adds) next to the N*C exponentials: one thread, in double.
  CrossEntropySums sums;
  for (int64_t i = 0; i < N; ++i) {
    sums.loss += static_cast<double>(loss[i]);
    if (target[i] == ignore_index) continue;
    sums.weight += weight ? static_cast<double>(weight[target[i]]) : 1.0;
  }
  return sums;
}

template <typename T>
void backward_typed(int64_t N, int64_t C, const T* logits, const int64_t* target, const T* weight,
                    int64_t ignore_index, const T* lse, const T* grad, int64_t grad_stride,
                    double scale, T* dlogits) {
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1));
  parallel_for(0, N, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T* out = dlogits + i * C;
      const int64_t t = target[i];
      if (t == ignore_index) {
        std::fill(out, out + C, T(0));
        continue;
      }
      const double w = weight ? static_cast<double>(weight[t]) : 1.0;
      const T gw = static_cast<T>(scale * static_cast<double>(grad[i * grad_stride]) * w);
      const T* row = logits + i * C;
      const T l = lse[i];
      for (int64_t c = 0; c < C; ++c) out[c] = gw * std::exp(row[c] - l);
      out[t] -= gw;
    }
  });
}

}  // namespace

CrossEntropySums cross_entropy_forward(DType dtype, int64_t N, int64_t C, const void* logits,
                                       const int64_t* target, const void* weight,
                                       int64_t ignore_index, void* loss, void* lse) {
  return EMBER_DISPATCH_FLOAT(dtype, "cross_entropy", [&] {
    return forward_typed<scalar_t>(N, C, static_cast<const scalar_t*>(logits), target,
                                   static_cast<const scalar_t*>(weight), ignore_index,
                                   static_cast<scalar_t*>(loss), static_cast<scalar_t*>(lse));
  });
}

void cross_entropy_backward(DType dtype, int64_t N, int64_t C, const void* logits,
                            const int64_t* target, const void* weight, int64_t ignore_index,
                            const void* lse, const void* grad, int64_t grad_stride, double scale,
                            void* dlogits) {
  EMBER_DISPATCH_FLOAT(dtype, "cross_entropy", [&] {
    backward_typed<scalar_t>(N, C, static_cast<const scalar_t*>(logits), target,
                             static_cast<const scalar_t*>(weight), ignore_index,
                             static_cast<const scalar_t*>(lse), static_cast<const scalar_t*>(grad),
                             grad_stride, scale, static_cast<scalar_t*>(dlogits));
  });
}

}  // namespace ember::kernels::cpu
