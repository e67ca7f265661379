// ember/kernels/cpu/conv.h — 2-d convolution on the CPU, each direction by name (for the
// benchmarks and tests; the op card goes through the conv family, kernels/conv.h, whose table
// kernels/cpu/conv.cpp fills): im2col + GEMM (kernels/cpu/gemm.h).
//
// All tensors contiguous NCHW (see kernels/conv_geometry.h for the letters):
//   x [N, C, H, W], w [K, C, R, S], b [K] (nullable), y [N, K, P, Q].
// Forward, per image n:  col [C*R*S, P*Q] = im2col(x[n]);  y[n] = w[K, C*R*S] @ col (+ b).
// Backward:  dcol = w^T @ dy[n], dx[n] = col2im(dcol)   (input gradient)
//            dw += dy[n] @ col^T, db += sum over p, q of dy[n]   (weight and bias gradients)
// Images are spread over threads (kernels/base/parallel.h); results do not depend on the
// thread count (weight gradients are reduced in a fixed order).
// float32 stride-1 filters of 64 taps or more on AVX-512 CPUs take another path with the same
// contract: an implicit GEMM on a batch-innermost copy of the tensors, no im2col matrix
// (kernels/cpu/conv_implicit.cpp; kernels/cpu/conv.cpp chooses between the two).
#pragma once

#include "kernels/base/dtype.h"
#include "kernels/conv_geometry.h"

namespace ember::kernels::cpu {

void conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                    const void* b, void* y);
// dx fully written.
void conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                           void* dx);
// dw (and db when not null) fully written.
void conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                            void* dw, void* db);
// Both of the above in one call (dx or dw may be null; db only with dw): the same results, but
// the implicit GEMM path changes dy's layout once for the two.
void conv2d_backward(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                     const void* w, void* dx, void* dw, void* db);

}  // namespace ember::kernels::cpu
