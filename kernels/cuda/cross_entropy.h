// ember/kernels/cuda/cross_entropy.h — fused softmax + negative log-likelihood on CUDA.
//
// The math is that of kernels/cpu/cross_entropy.h (logits [N, C] contiguous, target [N] int64,
// optional weight [C], ignore_index). The difference: the CPU kernel returns the two sums to the
// host, but on the GPU that would make the host wait for every loss. Here the reduction stays on
// the device: the forward writes the reduced loss and the weight sum into device scalars, and the
// backward reads the divisor of the mean from device memory. The host never waits.
// Targets are validated by the op card before the launch (kernels/cuda/index.h
// first_out_of_range).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ember::kernels::cuda {

// reduction: 0 = none, 1 = sum, 2 = mean (ember::Reduction's order).
// Always writes loss[N] and lse[N]. For sum and mean also writes the 0-d results:
//   weight_sum[0] = sum of w_t over rows not ignored,
//   out[0]        = sum_i loss_i (sum) or sum_i loss_i / weight_sum (mean; nan when 0/0).
// For none, out and weight_sum may be nullptr. All pointers are device memory of `dtype`.
void cross_entropy_forward(DType dtype, int64_t N, int64_t C, const void* logits,
                           const int64_t* target, const void* weight, int64_t ignore_index,
                           void* loss, void* lse, int reduction, void* out, void* weight_sum);

// dlogits[i, c] = g_i * w_t * (exp(logits[i, c] - lse_i) - [c == t]) with
// g_i = grad[i * grad_stride] / divisor[0]  (divisor: the device scalar weight_sum for mean,
// nullptr for none and sum). 0 for ignored rows.
void cross_entropy_backward(DType dtype, int64_t N, int64_t C, const void* logits,
                            const int64_t* target, const void* weight, int64_t ignore_index,
                            const void* lse, const void* grad, int64_t grad_stride,
                            const void* divisor, void* dlogits);

}  // namespace ember::kernels::cuda
