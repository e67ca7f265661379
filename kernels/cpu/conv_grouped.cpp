// ember/kernels/cpu/conv_grouped.cpp — grouped convolution (1 < groups) on the CPU through the
// ungrouped algorithms, one group at a time. The dispatcher (kernels/cpu/conv.cpp) sends here
// every grouped convolution that the direct loops (conv_direct.cpp: depthwise) do not take.
//
// Letters as in kernels/conv_geometry.h; Cg = C / groups and Kg = K / groups. Group j is an
// ordinary convolution of its own: input channels [j*Cg, (j+1)*Cg), filters [j*Kg, (j+1)*Kg)
// (rows of w, which is [K, Cg, R, S]: the group's filters are one contiguous block, and so are
// its bias and weight-gradient entries), output channels [j*Kg, (j+1)*Kg). In NCHW a group's
// channels of one image are contiguous but the images are C*H*W apart, so the group's input
// (and output gradient) is copied into a contiguous [N, Cg, H, W] buffer, the ungrouped entry
// point of kernels/cpu/conv.h runs on it with the group's geometry (C = Cg, K = Kg, groups = 1),
// and the group's output (or input gradient) is copied back into its channels. PyTorch's CPU
// convolution without MKL-DNN does the same loop over groups.
#include <vector>

#include "kernels/base/dtype.h"
#include "kernels/base/parallel.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_internal.h"

namespace ember::kernels::cpu::conv_detail {

namespace {

// dst[n, dst_first + c] = src[n, src_first + c] for c < count, every image n < N; a channel is a
// `plane` of elements, src has src_channels of them per image and dst dst_channels.
void copy_channels(int64_t elem, int64_t N, int64_t plane, int64_t count, const void* src,
                   int64_t src_channels, int64_t src_first, void* dst, int64_t dst_channels,
                   int64_t dst_first) {
  const int64_t run = count * plane * elem;  // bytes of one image's block
  parallel_for(0, N, grain_for(count * plane), [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const char* from =
          static_cast<const char*>(src) + (n * src_channels + src_first) * plane * elem;
      char* to = static_cast<char*>(dst) + (n * dst_channels + dst_first) * plane * elem;
      std::copy(from, from + run, to);
    }
  });
}

ConvGeometry one_group(const ConvGeometry& g) {
  ConvGeometry gg = g;
  gg.C = g.C / g.groups;
  gg.K = g.K / g.groups;
  gg.groups = 1;
  return gg;
}

}  // namespace

void grouped_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                     const void* b, void* y) {
  const ConvGeometry gg = one_group(g);
  const int64_t elem = dtype_size(dtype), HW = g.H * g.W, PQ = g.P * g.Q;
  const int64_t filters = gg.K * gg.C * g.R * g.S;  // elements of one group's filters
  std::vector<char> xg(static_cast<size_t>(g.N * gg.C * HW * elem));
  std::vector<char> yg(static_cast<size_t>(g.N * gg.K * PQ * elem));
  for (int64_t j = 0; j < g.groups; ++j) {
    copy_channels(elem, g.N, HW, gg.C, x, g.C, j * gg.C, xg.data(), gg.C, 0);
    conv2d_forward(dtype, gg, xg.data(), static_cast<const char*>(w) + j * filters * elem,
                   b ? static_cast<const char*>(b) + j * gg.K * elem : nullptr, yg.data());
    copy_channels(elem, g.N, PQ, gg.K, yg.data(), gg.K, 0, y, g.K, j * gg.K);
  }
}

void grouped_backward(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                      const void* w, void* dx, void* dw, void* db) {
  const ConvGeometry gg = one_group(g);
  const int64_t elem = dtype_size(dtype), HW = g.H * g.W, PQ = g.P * g.Q;
  const int64_t filters = gg.K * gg.C * g.R * g.S;
  std::vector<char> dyg(static_cast<size_t>(g.N * gg.K * PQ * elem));
  std::vector<char> xg(static_cast<size_t>(g.N * gg.C * HW * elem));  // x's group, or dx's
  for (int64_t j = 0; j < g.groups; ++j) {
    copy_channels(elem, g.N, PQ, gg.K, dy, g.K, j * gg.K, dyg.data(), gg.K, 0);
    if (dw) copy_channels(elem, g.N, HW, gg.C, x, g.C, j * gg.C, xg.data(), gg.C, 0);
    // The weight gradient first: it reads the group's x from xg, which the input gradient
    // then overwrites with the group's dx.
    if (dw) {
      conv2d_backward_weight(dtype, gg, xg.data(), dyg.data(),
                             static_cast<char*>(dw) + j * filters * elem,
                             db ? static_cast<char*>(db) + j * gg.K * elem : nullptr);
    }
    if (dx) {
      conv2d_backward_input(dtype, gg, dyg.data(), static_cast<const char*>(w) + j * filters * elem,
                            xg.data());
      copy_channels(elem, g.N, HW, gg.C, xg.data(), gg.C, 0, dx, g.C, j * gg.C);
    }
  }
}

}  // namespace ember::kernels::cpu::conv_detail
