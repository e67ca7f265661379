// ember/kernels/cuda/conv_cudnn.cuh — internal: ConvAlgo::Cudnn, implemented in
// kernels/cuda/conv_cudnn.cu and called only by kernels/cuda/conv.cu (which has already checked
// the dtype and handled empty layers: every size here is at least 1).
//
// Same contract as kernels/cuda/conv.h: contiguous NCHW device pointers, queued on ember's stream.
// In a build without cuDNN (EMBER_WITH_CUDNN undefined) each of them throws a DeviceError.
#pragma once

#include "kernels/base/dtype.h"
#include "kernels/conv_geometry.h"

namespace ember::kernels::cuda {

void cudnn_conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                          const void* b, void* y);
void cudnn_conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy,
                                 const void* w, void* dx);
// db may be null.
void cudnn_conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x,
                                  const void* dy, void* dw, void* db);

}  // namespace ember::kernels::cuda
