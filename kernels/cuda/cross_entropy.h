// ember/kernels/cuda/cross_entropy.h — fused softmax + negative log-likelihood on CUDA.
//
// The math is that of kernels/cpu/cross_entropy.h (logits [N, C, S] contiguous, rows
// r = n * S + s, target [N * S] int64, optional weight [C], ignore_index; the saved per-row
// stats[2, R] hold the row max and the log of the shifted sum). The difference: the CPU kernel
// returns the two sums to the host, but on the GPU that would make the host wait for every loss.
// Here the reduction stays on the device: the forward writes the reduced loss and the weight sum
// into device scalars, and the backward reads the divisor of the mean from device memory. The
// host never waits. Targets are validated by the op card before the launch
// (kernels/cuda/index.h first_out_of_range).
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cuda {

// reduction: 0 = none, 1 = sum, 2 = mean (ember::Reduction's order).
// Always writes loss[R] and stats[2, R] (R = N * S). For sum and mean also writes the 0-d results:
//   weight_sum[0] = sum of w_t over rows not ignored,
//   out[0]        = sum_r loss_r (sum) or sum_r loss_r / weight_sum (mean; nan when 0/0).
// For none, out and weight_sum may be nullptr. All pointers are device memory of `dtype`.
void cross_entropy_forward(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                           const int64_t* target, const void* weight, int64_t ignore_index,
                           void* loss, void* stats, int reduction, void* out, void* weight_sum);

// dlogits[n, c, s] = g_r * w_t * (exp((logits[n, c, s] - max_r) - logsum_r) - [c == t]) with
// r = n * S + s and g_r = grad[r * grad_stride] / divisor[0] (divisor: the device scalar
// weight_sum for mean, nullptr for none and sum). 0 for ignored rows.
void cross_entropy_backward(DType dtype, int64_t N, int64_t C, int64_t S, const void* logits,
                            const int64_t* target, const void* weight, int64_t ignore_index,
                            const void* stats, const void* grad, int64_t grad_stride,
                            const void* divisor, void* dlogits);

}  // namespace ember::kernels::cuda
