// ember/kernels/conv_geometry.h — the sizes of one 2-d convolution or pooling, as plain data
// shared by the op cards and the CPU and CUDA kernels.
//
// Dimension letters (NCHW, as PyTorch):
//   N batch, C input channels, H x W input height and width,
//   K output channels (filters), R x S kernel height and width,
//   P x Q output height and width.
// An output pixel (p, q) reads the input window whose top-left tap is at
//   (p * stride_h - pad_h, q * stride_w - pad_w), with taps dil_h / dil_w apart;
// taps that fall outside [0, H) x [0, W) read zero (convolution) or are skipped (pooling).
#pragma once

#include <cstdint>

#include "kernels/base/host_device.h"

namespace ember::kernels {

struct ConvGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t K = 0, R = 0, S = 0;
  int64_t P = 0, Q = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;
};

// Output size along one axis; <= 0 when the kernel does not fit (the op card rejects that).
EMBER_HOST_DEVICE inline int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride,
                                               int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// Pooling: each of the N*C planes is pooled on its own (no K, no dilation).
struct PoolGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t P = 0, Q = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
};

}  // namespace ember::kernels
