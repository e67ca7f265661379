// ember/kernels/cuda/reduce.h — CUDA reductions over the middle axis of a contiguous
// [outer, r, inner] block (the form and the rules are those of kernels/cpu/reduce.h: sums
// accumulate in double; max/min ties go to the first index; NaN wins).
// Implemented in kernels/cuda/reduce.cu with warp-shuffle reductions.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"
#include "kernels/elementwise_ops.h"

namespace ember::kernels::cuda {

// out[o, k] = scale * sum_j in[o, j, k]
void reduce_sum(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out,
                double scale);
// out[o, k] = prod_j in[o, j, k] (double accumulation for floats, wrapping int64 for integers)
void reduce_prod(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out);
// grad_in[o, j, k] = grad[o, k] * prod_{i != j} in[o, i, k], every element written (float dtypes).
void reduce_prod_backward(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in,
                          const void* grad, void* grad_in);
// values[o, k] = max_j (or min_j) in[o, j, k], indices[o, k] = that j. r >= 1.
void reduce_max_min(MaxMin which, DType dtype, int64_t outer, int64_t r, int64_t inner,
                    const void* in, void* values, int64_t* indices);
// grad_in[o, j, k] = (j == indices[o, k]) ? grad[o, k] : 0, every element written.
void reduce_max_min_backward(DType dtype, int64_t outer, int64_t r, int64_t inner,
                             const void* grad, const int64_t* indices, void* grad_in);

}  // namespace ember::kernels::cuda
