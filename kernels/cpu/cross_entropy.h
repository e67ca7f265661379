// ember/kernels/cpu/cross_entropy.h — fused softmax + negative log-likelihood over rows.
//
// Dimension letters: N rows (samples), C classes. logits is a contiguous [N, C]; target holds
// N class indices; weight (optional, nullptr = all ones) holds C per-class weights.
//
// For row i with class t = target[i]:
//   loss_i = w_t * (lse_i - logits[i, t]),   lse_i = log(sum_c exp(logits[i, c]))
// i.e. w_t * -log_softmax(logits_i)[t], computed without ever forming the softmax row. lse_i is
// taken as m + log(sum_c exp(logits[i, c] - m)) with m the row max, so it cannot overflow.
// A row whose target equals ignore_index contributes loss 0 and weight 0.
//
// The backward needs only lse (saved per row), because softmax[i, c] = exp(logits[i, c] - lse_i):
//   dlogits[i, c] = g_i * w_t * (softmax[i, c] - [c == t])
// which stays in [-|g_i w_t|, |g_i w_t|] for any logits: no large intermediate cancels.
//
// The caller validates every target (in [0, C) or == ignore_index) before calling: the kernels
// run on several threads and do not check.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ember::kernels::cpu {

struct CrossEntropySums {
  double loss = 0.0;    // sum_i loss_i
  double weight = 0.0;  // sum of w_t over rows that are not ignored (the count without weights)
};

// Writes loss[N] and lse[N] (both of `dtype`) and returns their sums for the reductions.
CrossEntropySums cross_entropy_forward(DType dtype, int64_t N, int64_t C, const void* logits,
                                       const int64_t* target, const void* weight,
                                       int64_t ignore_index, void* loss, void* lse);

// dlogits [N, C] from the per-row upstream gradient g_i = scale * grad[i * grad_stride]
// (grad_stride 0: one gradient for every row, as after a sum or mean reduction).
void cross_entropy_backward(DType dtype, int64_t N, int64_t C, const void* logits,
                            const int64_t* target, const void* weight, int64_t ignore_index,
                            const void* lse, const void* grad, int64_t grad_stride, double scale,
                            void* dlogits);

}  // namespace ember::kernels::cpu
