// ember/kernels/conv.h — the conv family: 2-d convolution, all tensors contiguous NCHW (see
// kernels/conv_geometry.h for the letters): x [N, C, H, W], w [K, C/groups, R, S], b [K]
// (nullable), y [N, K, P, Q].
//   CPU:  kernels/cpu/conv.cpp chooses between im2col + GEMM (kernels/cpu/conv_im2col.cpp) and
//         an implicit GEMM on a batch-innermost layout (kernels/cpu/conv_implicit.cpp).
//   CUDA: kernels/cuda/conv.cu chooses between im2col + GEMM (kernels/cuda/conv_im2col.cu), an
//         implicit-GEMM kernel (kernels/cuda/conv_implicit.cu) and cuDNN
//         (kernels/cuda/conv_cudnn.cu), as `algo` asks.
// Each backend's header (kernels/cpu/conv.h, kernels/cuda/conv.h) also names each direction and
// algorithm on its own, for the benchmarks and tests.
#pragma once

#include "kernels/base/dtype.h"
#include "kernels/conv_geometry.h"

namespace ember::kernels {

// Which CUDA algorithm runs: Auto picks ember's faster native one for the shape (the rule is
// written in kernels/cuda/conv.cu); Direct is one plain sum per output (kernels/cuda/
// conv_direct.cu, Auto's choice for depthwise layers); Cudnn needs a build with cuDNN. The CPU
// has its own rule and takes Auto only. Every algorithm takes groups (ConvGeometry::groups).
enum class ConvAlgo { Auto, Im2colGemm, ImplicitGemm, Cudnn, Direct };

struct ConvKernels {
  void (*forward)(DType dtype, const ConvGeometry& g, const void* x, const void* w, const void* b,
                  void* y, ConvAlgo algo);
  // The gradients that are asked for, in one call: dx (when not null; needs dy and w) and dw
  // (when not null; needs x and dy) with db (only with dw, may be null), each fully written.
  // One call lets the CPU's implicit GEMM lay dy out once for both.
  void (*backward)(DType dtype, const ConvGeometry& g, const void* x, const void* dy, const void* w,
                   void* dx, void* dw, void* db, ConvAlgo algo);
  // Can `algo` == Cudnn run (a build with cuDNN)?
  bool (*has_cudnn)();
};

namespace cpu {
extern const ConvKernels conv_kernels;
}
namespace cuda {
extern const ConvKernels conv_kernels;
}

}  // namespace ember::kernels
