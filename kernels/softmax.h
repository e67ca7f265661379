// ember/kernels/softmax.h — the softmax family: softmax and log_softmax over the middle axis of
// a contiguous [outer, D, inner] block.
//   CPU:  kernels/cpu/softmax.cpp.   CUDA: kernels/cuda/softmax.cu.
//
// A softmax over dim d of a contiguous tensor has this form: outer = product of the dims before
// d, D = the size of d, inner = product of the dims after d. Element (o, j, k) sits at
// (o * D + j) * inner + k. The last dim is inner == 1 (each softmax is one contiguous row).
//
// Forward is numerically stable: with m = max_j x_j,
//   softmax_j     = exp(x_j - m) / sum_i exp(x_i - m)       (no exp overflows: every x_j - m <= 0)
//   log_softmax_j = (x_j - m) - log(sum_i exp(x_i - m))
// Sums are accumulated in double.
//
// Backward is fused, from the saved output y and the incoming gradient g:
//   softmax:      dx_j = y_j * (g_j - sum_i g_i y_i)      (dy_i/dx_j = y_i ([i == j] - y_j))
//   log_softmax:  dx_j = g_j - exp(y_j) * sum_i g_i       (dy_i/dx_j = [i == j] - softmax_j)
#pragma once

#include <cstdint>
#include "kernels/base/dtype.h"

namespace ember::kernels {

struct SoftmaxKernels {
  // y = softmax(x) (or log_softmax when `log`), x and y contiguous [outer, D, inner].
  void (*forward)(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner, const void* x,
                  void* y);
  // dx from g and the forward's output y, all contiguous [outer, D, inner].
  void (*backward)(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner, const void* g,
                   const void* y, void* dx);
};

// The CPU tables, one per instruction set the kernel file is compiled for
// (kernels/cpu/isa_variant.h: avx2 and avx512 exist in portable x86-64 builds only).
namespace cpu::baseline {
extern const SoftmaxKernels softmax_kernels;
}
namespace cpu::avx2 {
extern const SoftmaxKernels softmax_kernels;
}
namespace cpu::avx512 {
extern const SoftmaxKernels softmax_kernels;
}
namespace cuda {
extern const SoftmaxKernels softmax_kernels;
}

}  // namespace ember::kernels
