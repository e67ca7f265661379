// ember/kernels/cross_entropy.h — the cross-entropy family: fused softmax + negative
// log-likelihood over rows.
//   CPU:  kernels/cpu/cross_entropy.cpp.   CUDA: kernels/cuda/cross_entropy.cu.
//
// Dimension letters: N samples, C classes, S positions per sample (S = d1 * ... * dk for logits
// [N, C, d1, ..., dk]; S = 1 for the usual [N, C]). logits is a contiguous [N, C, S]: the C
// scores of row r = n * S + s sit at logits[n, :, s], S elements apart. target holds the R = N * S
// class indices, [N, S] row-major; weight (optional, nullptr = all ones) holds C per-class
// weights.
//
// For row r with class t = target[r]:
//   loss_r = w_t * (lse_r - logits[r, t]),   lse_r = log(sum_c exp(logits[r, c]))
// i.e. w_t * -log_softmax(logits_r)[t], computed without ever forming the softmax row. lse_r is
// taken as m_r + log(sum_c exp(logits[r, c] - m_r)) with m_r the row max, so it cannot overflow.
// A row whose target equals ignore_index contributes loss 0 and weight 0.
//
// Label smoothing eps (0 <= eps <= 1; torch.nn.functional.cross_entropy's label_smoothing)
// mixes the one-hot target with the uniform distribution, (1 - eps) * onehot(t) + eps / C:
//   loss_r = (1 - eps) * w_t * (lse_r - logits[r, t]) + smooth_r
//   smooth_r = eps / C * sum_c w_c * (lse_r - logits[r, c])        (0 for an ignored row)
// and the mean divides both parts by the same weight sum, as PyTorch 1.13 does. The gradient
// of smooth_r, with W = sum_c w_c (C without weights):
//   d smooth_r / d logits[r, c] = eps / C * (W * softmax[r, c] - w_c)
//
// The backward needs two numbers per row, saved as stats[2, R] in the logits' dtype: the max m_r
// and the log of the shifted sum, ls_r = log(sum_c exp(logits[r, c] - m_r)) (0 <= ls_r <= log C),
// because softmax[r, c] = exp((logits[r, c] - m_r) - ls_r):
//   dlogits[r, c] = g_r * w_t * (softmax[r, c] - [c == t])
// which stays in [-|g_r w_t|, |g_r w_t|] for any logits: no large intermediate cancels. Saving
// lse_r itself would not do: rounded to float32, lse = 1e4 + log 2 is off by up to 5e-4, and
// exp(logits - lse) inherits that as a relative error (logits {1e4, 1e4, 0} gave gradients
// 0.49989 / -0.50011 instead of 0.5 / -0.5). logits - m_r is exact for the large entries and
// ls_r is small, so each factor keeps float32's precision.
//
// The reduction of the losses stays with the kernels, in the backend's memory: the forward
// writes the reduced loss and the weight sum into 0-d buffers, and the backward reads the mean's
// divisor from there. On a GPU the host never waits for a loss value; the CPU follows the same
// contract, so both devices divide by the same weight sum, held in the logits' dtype.
//
// The caller validates every target (in [0, C) or == ignore_index) before calling: the kernels
// run on several threads and do not check.
#pragma once

#include <cstdint>
#include "kernels/base/dtype.h"

namespace ember::kernels {

// Which reduction the forward applies; ember::Reduction's order.
enum class CrossEntropyReduction { None = 0, Sum = 1, Mean = 2 };

struct CrossEntropyKernels {
  // Always writes loss[R] and stats[2, R] (R = N * S). For Sum and Mean also writes the 0-d
  // results:
  //   weight_sum[0] = sum of w_t over rows not ignored (the count without weights),
  //   out[0]        = sum_r loss_r (Sum) or sum_r loss_r / weight_sum (Mean; nan when 0/0).
  // For None, out and weight_sum may be nullptr. Every buffer is of `dtype`.
  void (*forward)(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                  const int64_t* target, const void* weight, int64_t ignore_index,
                  double label_smoothing, void* loss, void* stats, CrossEntropyReduction reduction,
                  void* out, void* weight_sum);

  // With r = n * S + s, a_r = (T)(g_r * (1 - eps) * w_t), b_r = (T)(g_r * eps / C):
  //   dlogits[n, c, s] = (a_r + b_r * W) * exp((logits[n, c, s] - max_r) - logsum_r)
  //                      - a_r * [c == t] - b_r * w_c
  // where g_r = grad[r * grad_stride] / divisor[0] (divisor: the forward's weight_sum for Mean,
  // nullptr for None and Sum; grad_stride 0: one gradient for every row, as after a sum or
  // mean). 0 for ignored rows.
  // weight_total: the 0-d W = sum_c w_c when there is a weight and label_smoothing > 0
  // (nullptr otherwise: W = C).
  void (*backward)(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                   const int64_t* target, const void* weight, int64_t ignore_index,
                   double label_smoothing, const void* weight_total, const void* stats,
                   const void* grad, int64_t grad_stride, const void* divisor, void* dlogits);
};

// The CPU tables, one per instruction set the kernel file is compiled for
// (kernels/cpu/isa_variant.h: avx2 and avx512 exist in portable x86-64 builds only).
namespace cpu::baseline {
extern const CrossEntropyKernels cross_entropy_kernels;
}
namespace cpu::avx2 {
extern const CrossEntropyKernels cross_entropy_kernels;
}
namespace cpu::avx512 {
extern const CrossEntropyKernels cross_entropy_kernels;
}
namespace cuda {
extern const CrossEntropyKernels cross_entropy_kernels;
}

}  // namespace ember::kernels
