// ember/kernels/pool.h — the pool family: 2-d max and average pooling, contiguous NCHW (see
// kernels/conv_geometry.h PoolGeometry): x [N, C, H, W], y [N, C, P, Q].
//   CPU:  kernels/cpu/pool.cpp.   CUDA: kernels/cuda/pool.cu.
//
// Max pooling keeps, per output, the flat index h * W + w of the chosen input in its plane
// (PyTorch's convention), ties to the first in row-major window order, a NaN wins and of several
// NaNs the last (PyTorch 1.13's rule); taps may be dilated. The backward sends each output's
// gradient to that input (adding where windows overlap).
// Average pooling divides by avg_pool_divisor (conv_geometry.h: the full window, clipped to the
// padded input in ceil mode, or only its taps inside the plane without count_include_pad); its
// backward spreads each gradient evenly over the window.
#pragma once

#include <cstdint>
#include "kernels/base/dtype.h"
#include "kernels/conv_geometry.h"

namespace ember::kernels {

struct PoolKernels {
  void (*max_forward)(DType dtype, const PoolGeometry& g, const void* x, void* y, int64_t* indices);
  // dx fully written (zeros where nothing was picked).
  void (*max_backward)(DType dtype, const PoolGeometry& g, const void* dy, const int64_t* indices,
                       void* dx);
  void (*avg_forward)(DType dtype, const PoolGeometry& g, const void* x, void* y);
  void (*avg_backward)(DType dtype, const PoolGeometry& g, const void* dy, void* dx);
};

// The CPU tables, one per instruction set the kernel file is compiled for
// (kernels/cpu/isa_variant.h: avx2 and avx512 exist in portable x86-64 builds only).
namespace cpu::baseline {
extern const PoolKernels pool_kernels;
}
namespace cpu::avx2 {
extern const PoolKernels pool_kernels;
}
namespace cpu::avx512 {
extern const PoolKernels pool_kernels;
}
namespace cuda {
extern const PoolKernels pool_kernels;
}

}  // namespace ember::kernels
