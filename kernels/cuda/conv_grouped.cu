// ember/kernels/cuda/conv_grouped.cu — grouped convolution (1 < groups) on CUDA through the
// ungrouped algorithms (im2col + cuBLAS, the implicit-GEMM kernel), one group at a time. The
// dispatcher (kernels/cuda/conv.cu) sends here every grouped convolution that neither the
// direct kernels (conv_direct.cu: depthwise, or ConvAlgo::Direct) nor cuDNN (which takes the
// groups itself) runs.
//
// Letters as in kernels/conv_geometry.h; Cg = C / groups and Kg = K / groups. Group j is an
// ordinary convolution: input channels [j*Cg, (j+1)*Cg), filters [j*Kg, (j+1)*Kg) (a contiguous
// block of w [K, Cg, R, S], of b and of dw), output channels [j*Kg, (j+1)*Kg). In NCHW a group's
// channels of one image are contiguous but the images are C*H*W apart, so the group's input (and
// output gradient) is gathered into a contiguous [N, Cg, H, W] scratch tensor, the ungrouped
// entry point of kernels/cuda/conv.h runs on it with the group's geometry (C = Cg, K = Kg,
// groups = 1, the same algorithm), and the result is scattered back into its channels. This is
// PyTorch's slow path for groups, too; the copies move each tensor once more.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_internal.cuh"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda::conv_detail {

namespace {

// dst[n, dst_first + c, i] = src[n, src_first + c, i] for c < count, i < plane, n < N. One
// thread per element copied, i fastest: a warp reads and writes contiguous runs.
template <typename T>
__global__ void copy_channels_kernel(const T* __restrict__ src, int64_t src_channels,
                                     int64_t src_first, T* __restrict__ dst, int64_t dst_channels,
                                     int64_t dst_first, int64_t count, int64_t plane,
                                     int64_t total) {
  for (const int64_t t : grid_stride(total)) {
    const int64_t n = t / (count * plane), c = t / plane % count, i = t % plane;
    dst[(n * dst_channels + dst_first + c) * plane + i] =
        src[(n * src_channels + src_first + c) * plane + i];
  }
}

template <typename T>
void copy_channels(int64_t N, int64_t plane, int64_t count, const T* src, int64_t src_channels,
                   int64_t src_first, T* dst, int64_t dst_channels, int64_t dst_first) {
  const int64_t total = N * count * plane;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), copy_channels_kernel<T>)
  (src, src_channels, src_first, dst, dst_channels, dst_first, count, plane, total);
  EMBER_LAUNCH_CHECK("copy_channels_kernel");
}

ConvGeometry one_group(const ConvGeometry& g) {
  ConvGeometry gg = g;
  gg.C = g.C / g.groups;
  gg.K = g.K / g.groups;
  gg.groups = 1;
  return gg;
}

}  // namespace

template <typename T>
void grouped_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y,
                     ConvAlgo algo) {
  const ConvGeometry gg = one_group(g);
  const DType dtype = sizeof(T) == 4 ? DType::Float32 : DType::Float64;
  const int64_t HW = g.H * g.W, PQ = g.P * g.Q, filters = gg.K * gg.C * g.R * g.S;
  Workspace xs = scratch(g.N * gg.C * HW * int64_t(sizeof(T)));
  Workspace ys = scratch(g.N * gg.K * PQ * int64_t(sizeof(T)));
  T* xg = static_cast<T*>(xs.data());
  T* yg = static_cast<T*>(ys.data());
  for (int64_t j = 0; j < g.groups; ++j) {
    copy_channels(g.N, HW, gg.C, x, g.C, j * gg.C, xg, gg.C, int64_t{0});
    conv2d_forward(dtype, gg, xg, w + j * filters, b ? b + j * gg.K : nullptr, yg, algo);
    copy_channels(g.N, PQ, gg.K, static_cast<const T*>(yg), gg.K, int64_t{0}, y, g.K, j * gg.K);
  }
}

template <typename T>
void grouped_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx, ConvAlgo algo) {
  const ConvGeometry gg = one_group(g);
  const DType dtype = sizeof(T) == 4 ? DType::Float32 : DType::Float64;
  const int64_t HW = g.H * g.W, PQ = g.P * g.Q, filters = gg.K * gg.C * g.R * g.S;
  Workspace dys = scratch(g.N * gg.K * PQ * int64_t(sizeof(T)));
  Workspace dxs = scratch(g.N * gg.C * HW * int64_t(sizeof(T)));
  T* dyg = static_cast<T*>(dys.data());
  T* dxg = static_cast<T*>(dxs.data());
  for (int64_t j = 0; j < g.groups; ++j) {
    copy_channels(g.N, PQ, gg.K, dy, g.K, j * gg.K, dyg, gg.K, int64_t{0});
    conv2d_backward_input(dtype, gg, dyg, w + j * filters, dxg, algo);
    copy_channels(g.N, HW, gg.C, static_cast<const T*>(dxg), gg.C, int64_t{0}, dx, g.C, j * gg.C);
  }
}

template <typename T>
void grouped_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db,
                             ConvAlgo algo) {
  const ConvGeometry gg = one_group(g);
  const DType dtype = sizeof(T) == 4 ? DType::Float32 : DType::Float64;
  const int64_t HW = g.H * g.W, PQ = g.P * g.Q, filters = gg.K * gg.C * g.R * g.S;
  Workspace xs = scratch(g.N * gg.C * HW * int64_t(sizeof(T)));
  Workspace dys = scratch(g.N * gg.K * PQ * int64_t(sizeof(T)));
  T* xg = static_cast<T*>(xs.data());
  T* dyg = static_cast<T*>(dys.data());
  for (int64_t j = 0; j < g.groups; ++j) {
    copy_channels(g.N, HW, gg.C, x, g.C, j * gg.C, xg, gg.C, int64_t{0});
    copy_channels(g.N, PQ, gg.K, dy, g.K, j * gg.K, dyg, gg.K, int64_t{0});
    conv2d_backward_weight(dtype, gg, xg, dyg, dw + j * filters, db ? db + j * gg.K : nullptr,
                           algo);
  }
}

#define EMBER_GROUPED_INSTANTIATE(T)                                                              \
  template void grouped_forward<T>(const ConvGeometry&, const T*, const T*, const T*, T*,         \
                                   ConvAlgo);                                                     \
  template void grouped_backward_input<T>(const ConvGeometry&, const T*, const T*, T*, ConvAlgo); \
  template void grouped_backward_weight<T>(const ConvGeometry&, const T*, const T*, T*, T*,       \
                                           ConvAlgo);
EMBER_GROUPED_INSTANTIATE(float)
EMBER_GROUPED_INSTANTIATE(double)
#undef EMBER_GROUPED_INSTANTIATE

}  // namespace ember::kernels::cuda::conv_detail
