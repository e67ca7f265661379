// ember/kernels/cpu/cross_entropy.h — fused softmax + negative log-likelihood over rows.
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
// The caller validates every target (in [0, C) or == ignore_index) before calling: the kernels
// run on several threads and do not check.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cpu {

struct CrossEntropySums {
  double loss = 0.0;    // sum_r loss_r
  double weight = 0.0;  // sum of w_t over rows that are not ignored (the count without weights)
};

// Writes loss[R] and stats[2, R] (both of `dtype`) and returns their sums for the reductions.
CrossEntropySums cross_entropy_forward(DType dtype, int64_t N, int64_t C, int64_t S,
                                       const void* logits, const int64_t* target,
                                       const void* weight, int64_t ignore_index, void* loss,
                                       void* stats);

// dlogits [N, C, S] from the per-row upstream gradient g_r = scale * grad[r * grad_stride]
// (grad_stride 0: one gradient for every row, as after a sum or mean reduction).
void cross_entropy_backward(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                            const int64_t* target, const void* weight, int64_t ignore_index,
                            const void* stats, const void* grad, int64_t grad_stride,
                            double scale, void* dlogits);

}  // namespace ember::kernels::cpu
