// ember/kernels/cuda/conv.h — 2-d convolution on CUDA, each direction and algorithm by name (for
// the benchmarks and tests; the op card goes through the conv family, kernels/conv.h, whose
// contract this is: contiguous NCHW, device pointers, asynchronous on the stream).
//
// Three implementations, to which kernels/cuda/conv.cu routes each request:
//   Im2colGemm    im2col into a scratch buffer, then cuBLAS (kernels/cuda/gemm.h): conv_im2col.cu
//   ImplicitGemm  one kernel that reads the input windows straight from x while it multiplies
//                 (no scratch buffer; written here): conv_implicit.cu
//   Cudnn         cuDNN's best algorithm, when this build has cuDNN (the reference): conv_cudnn.cu
// Auto picks ember's faster native one for the shape (the rule is written in conv.cu).
#pragma once

#include "kernels/base/dtype.h"
#include "kernels/conv.h"
#include "kernels/conv_geometry.h"

namespace ember::kernels::cuda {

using kernels::ConvAlgo;

void conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                    const void* b, void* y, ConvAlgo algo = ConvAlgo::Auto);
void conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                           void* dx, ConvAlgo algo = ConvAlgo::Auto);
void conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                            void* dw, void* db, ConvAlgo algo = ConvAlgo::Auto);

// The scratch memory the Im2colGemm path may use at once (256 MiB by default; a larger batch is
// processed in chunks of images). Tests lower it to exercise the chunking on small layers;
// 0 restores the default.
void set_conv_column_budget(int64_t bytes);

// Was ember built with cuDNN (EMBER_CUDNN found cudnn.h and the library)?
bool cudnn_built();

}  // namespace ember::kernels::cuda
