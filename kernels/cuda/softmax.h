// ember/kernels/cuda/softmax.h — CUDA softmax and log_softmax over the middle axis of a
// contiguous [outer, D, inner] block; the math (max-shifted forward, fused backward from the
// saved output) is written out in kernels/cpu/softmax.h. Implemented in kernels/cuda/softmax.cu.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cuda {

void softmax_forward(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner, const void* x,
                     void* y);
void softmax_backward(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner,
                      const void* g, const void* y, void* dx);

}  // namespace ember::kernels::cuda
