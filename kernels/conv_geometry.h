// ember/kernels/conv_geometry.h — the sizes of one 2-d convolution or pooling, as plain data
// shared by the op cards and the CPU and CUDA kernels.
//
// Dimension letters (NCHW, as PyTorch):
//   N batch, C input channels, H x W input height and width,
//   K output channels (filters), R x S kernel height and width,
//   P x Q output height and width.
// Grouped convolution (groups > 1): the C input and K output channels are cut into `groups`
// equal blocks, and output channel k sees only the C/groups input channels of its block
// (k / (K/groups)): w is [K, C/groups, R, S]. Depthwise: groups == C.
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
  int64_t groups = 1;  // C and K are multiples of it
};

// Output size along one axis; <= 0 when the kernel does not fit (the op card rejects that).
EMBER_HOST_DEVICE inline int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride,
                                               int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// Pooling: each of the N*C planes is pooled on its own (no K). Window (p, q) has its taps at
// rows p*stride_h - pad_h + i*dil_h (i < kernel_h), columns likewise; those outside the plane
// are skipped. P and Q may come from ceil mode, where the last window can hang over the
// bottom or right padding (the op card's pool_out_size says when).
struct PoolGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t P = 0, Q = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;  // max pooling only (average pooling keeps 1)
  // Average pooling's divisor: true divides by the window clipped to the padded input
  // (H + pad_h rows at most, as PyTorch), false by the taps inside the plane only.
  bool count_include_pad = true;
};

// Average pooling's divisor for window (p, q), PyTorch's rule: the window clipped to the
// padded input (count_include_pad) or to the plane itself.
EMBER_HOST_DEVICE inline int64_t avg_pool_divisor(const PoolGeometry& g, int64_t p, int64_t q) {
  const int64_t h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
  int64_t h1 = h0 + g.kernel_h, w1 = w0 + g.kernel_w;
  if (h1 > g.H + g.pad_h) h1 = g.H + g.pad_h;
  if (w1 > g.W + g.pad_w) w1 = g.W + g.pad_w;
  if (g.count_include_pad) return (h1 - h0) * (w1 - w0);
  const int64_t rows = (h1 < g.H ? h1 : g.H) - (h0 > 0 ? h0 : 0);
  const int64_t cols = (w1 < g.W ? w1 : g.W) - (w0 > 0 ? w0 : 0);
  return rows * cols;
}

}  // namespace ember::kernels
