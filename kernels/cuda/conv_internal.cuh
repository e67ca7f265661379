// ember/kernels/cuda/conv_internal.cuh — internal to the CUDA convolution: what its dispatcher
// (kernels/cuda/conv.cu) and ember's native algorithms (kernels/cuda/conv_im2col.cu,
// conv_implicit.cu, and the bias of both in conv_bias.cu) share. Not part of ember's interface:
// include it from those files only. (cuDNN's path has its own: kernels/cuda/conv_cudnn.cuh.)
//
// Everything here has the contract of kernels/cuda/conv.h: contiguous NCHW device pointers,
// queued on ember's stream (launch.cuh). The dispatcher has already checked the dtype (float or
// double) and handled empty layers: every function below gets at least one image, output pixel
// and filter tap, unless it says otherwise.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/conv.h"
#include "kernels/conv_geometry.h"
#include "kernels/cuda/conv_index.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/workspace.h"

namespace ember::kernels::cuda::conv_detail {

// ---- the algorithms -----------------------------------------------------------------------------

// Im2colGemm (conv_im2col.cu): im2col into scratch columns, then cuBLAS, a chunk of images at a
// time (set_conv_column_budget caps the chunk's scratch).
template <typename T>
void im2col_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y);
template <typename T>
void im2col_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx);
template <typename T>
void im2col_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw);

// ImplicitGemm (conv_implicit.cu): one kernel that gathers the windows while it multiplies. No
// weight gradient: the dispatcher runs im2col_backward_weight for it.
template <typename T>
void implicit_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y);
template <typename T>
void implicit_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx);

// Direct (conv_direct.cu): one plain sum per output or gradient element; any geometry, groups
// included. db may be null.
template <typename T>
void direct_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y);
template <typename T>
void direct_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx);
template <typename T>
void direct_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db);

// Grouped convolution (groups > 1) one group at a time through the entry points of
// kernels/cuda/conv.h with the group's geometry and `algo` (conv_grouped.cu).
template <typename T>
void grouped_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y,
                     ConvAlgo algo);
template <typename T>
void grouped_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx, ConvAlgo algo);
template <typename T>
void grouped_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db,
                             ConvAlgo algo);

// The bias, the same for every native algorithm (conv_bias.cu).
// y [images, K, PQ] += b, for images * K * PQ < 2^31.
template <typename T>
void launch_add_bias(const ConvIndex& ix, const T* b, T* y, int64_t images);
// y = b broadcast (or zeros): the forward pass of a layer whose filters are empty (C*R*S == 0).
template <typename T>
void fill_with_bias(const ConvGeometry& g, const T* b, T* y);
// db [K] = sum over n, p, q of dy; any sizes (zeros for no image or output pixel).
template <typename T>
void bias_grad(const ConvGeometry& g, const T* dy, T* db);

// ---- host helpers -------------------------------------------------------------------------------

inline int current_device() {
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

// Scratch memory: `bytes` of device memory from ember's caching allocator, on the current device
// (kernels/cuda/workspace.h). After the first step of a training loop it is a cache hit. The
// workspace hands its block back when it goes out of scope at the end of the call, while the
// kernels using it may still be queued — which is safe because the allocator's next user is
// queued on the same in-order stream, behind them. Every scratch buffer of the native
// convolutions (columns, transposed dy, bias-gradient partial sums) comes from here.
inline Workspace scratch(int64_t bytes) { return Workspace(static_cast<size_t>(bytes)); }

inline void check_index_fits(const ConvGeometry& g, const char* what) {
  EMBER_CHECK(conv_index_fits(g), what,
              " on CUDA: the layer is too large for ember's kernels, "
              "which index one image with 32-bit integers (C*H*W = ",
              g.C * g.H * g.W, ", K*P*Q = ", g.K * g.P * g.Q,
              ", C*R*S*P*Q = ", g.C * g.R * g.S * g.P * g.Q,
              " must stay below 2^31); use smaller images or set_conv_backend(ConvBackend::Cudnn)");
}

inline int64_t chunk_or_throw(int64_t nb, const char* what) {
  EMBER_CHECK(nb > 0, what,
              " on CUDA: one image's column matrix has 2^31 elements or more, "
              "beyond ember's 32-bit im2col kernels; use smaller images or "
              "set_conv_backend(ConvBackend::Cudnn)");
  return nb;
}

}  // namespace ember::kernels::cuda::conv_detail
