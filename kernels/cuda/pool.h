// ember/kernels/cuda/pool.h — 2-d max and average pooling on CUDA: the contract of
// kernels/cpu/pool.h (contiguous NCHW device pointers, asynchronous on the stream), repeated:
// x [N, C, H, W], y [N, C, P, Q].
//
// Max pooling keeps, per output, the flat index h * W + w of the chosen input in its plane
// (PyTorch's convention), ties to the first in row-major window order, NaN wins; the backward
// sends each output's gradient to that input (adding where windows overlap).
// Average pooling divides by the full window size, padding included (PyTorch's default
// count_include_pad = true); its backward spreads each gradient evenly over the window.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"
#include "kernels/conv_geometry.h"

namespace ember::kernels::cuda {

void max_pool2d_forward(DType dtype, const PoolGeometry& g, const void* x, void* y,
                        int64_t* indices);
// dx fully written (zeros where nothing was picked).
void max_pool2d_backward(DType dtype, const PoolGeometry& g, const void* dy,
                         const int64_t* indices, void* dx);
void avg_pool2d_forward(DType dtype, const PoolGeometry& g, const void* x, void* y);
void avg_pool2d_backward(DType dtype, const PoolGeometry& g, const void* dy, void* dx);

}  // namespace ember::kernels::cuda
