// ember/kernels/cpu/conv.cpp — 2-d convolution on the CPU: the entry points of kernels/cpu/conv.h,
// and the choice between its algorithms, which have the same contract:
//   im2col + GEMM   kernels/cpu/conv_im2col.cpp: an image (or a few) at a time through an
//                   im2col matrix and kernels/cpu/gemm.h; float32 and float64, any geometry.
//                   Read it first: the other builds on it.
//   implicit GEMM   kernels/cpu/conv_implicit.cpp: no im2col matrix at all, on a batch-innermost
//                   copy of the tensors; float32, stride 1, where ember's SIMD GEMM runs.
//   direct loops    kernels/cpu/conv_direct.cpp: every output its own short sum; any geometry,
//                   taken for depthwise convolutions (groups == C), whose GEMMs would be R*S deep.
// Other grouped convolutions (1 < groups < C) run the two GEMM algorithms one group at a time
// (kernels/cpu/conv_grouped.cpp), each group's choice made by the rule below.
// What they share (scratch buffers, the weight gradient's reduction): kernels/cpu/conv_internal.h.
//
// Both give results that do not depend on the thread count: every sum runs in an order fixed
// by the sizes (each file says how). The choice below depends only on the dtype, the machine
// and the layer's geometry, never on the batch size or the thread count, so it keeps that
// promise too.
#include "kernels/cpu/conv.h"

#include "kernels/base/error.h"
#include "kernels/conv.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm_simd.h"

namespace ember::kernels::cpu {

namespace {

using namespace conv_detail;

// Which algorithm
// ---------------
// The implicit GEMM runs where ember's own GEMM kernel runs (float32 on AVX-512 or AVX2: it
// reads the input's rows in place through that kernel's row table) for stride 1 (a stride across
// would put gaps between the columns of a row), except:
//   - pointwise convolutions (1x1, stride 1, no padding), which im2col already runs copy-free;
//   - filters of fewer than kImplicitMinTaps taps (C*R*S): a one-channel first layer (25 taps
//     on the cats-vs-dogs CNN) has a large output and short products, and moving its
//     activations through two transposes costs more than its small im2col;
//   - empty layers (no image or no output pixel), which im2col handles.
// Everything else, float64 included, runs im2col + GEMM. The choice depends only on the filter,
// never on the batch, which keeps the bits of an image independent of its batch. What the
// implicit GEMM gained: bench/RESULTS.md, "Implicit-GEMM convolution".
constexpr int64_t kImplicitMinTaps = 64;

bool use_implicit(const ConvGeometry& g) {
  return sgemm_simd_available() && g.stride_h == 1 && g.stride_w == 1 && !is_pointwise(g) &&
         g.C * g.R * g.S >= kImplicitMinTaps && g.N > 0 && g.P > 0 && g.Q > 0;
}

// use_implicit for a request of this dtype.
bool use_implicit(DType dtype, const ConvGeometry& g) {
  return dtype == kFloat32 && use_implicit(g);
}

// Depthwise (one input channel per group): the direct loops. Other groups: the group loop.
bool use_direct(const ConvGeometry& g) { return g.groups > 1 && g.C == g.groups; }

}  // namespace

void conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                    const void* b, void* y) {
  if (use_direct(g)) {
    EMBER_DISPATCH_FLOAT(dtype, "conv2d", [&] {
      direct_forward<scalar_t>(g, static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(w),
                               static_cast<const scalar_t*>(b), static_cast<scalar_t*>(y));
    });
    return;
  }
  if (g.groups > 1) {
    grouped_forward(dtype, g, x, w, b, y);
    return;
  }
  if (use_implicit(dtype, g)) {
    implicit_forward(g, static_cast<const float*>(x), static_cast<const float*>(w),
                     static_cast<const float*>(b), static_cast<float*>(y));
    return;
  }
  EMBER_DISPATCH_FLOAT(dtype, "conv2d", [&] {
    im2col_forward<scalar_t>(g, static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(w),
                             static_cast<const scalar_t*>(b), static_cast<scalar_t*>(y));
  });
}

void conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                           void* dx) {
  if (use_direct(g)) {
    EMBER_DISPATCH_FLOAT(dtype, "conv2d backward", [&] {
      direct_backward_input<scalar_t>(g, static_cast<const scalar_t*>(dy),
                                      static_cast<const scalar_t*>(w), static_cast<scalar_t*>(dx));
    });
    return;
  }
  if (g.groups > 1) {
    grouped_backward(dtype, g, nullptr, dy, w, dx, nullptr, nullptr);
    return;
  }
  if (use_implicit(dtype, g)) {
    implicit_backward_input(g, batch_inner_grad(g, static_cast<const float*>(dy)),
                            static_cast<const float*>(w), static_cast<float*>(dx));
    return;
  }
  EMBER_DISPATCH_FLOAT(dtype, "conv2d backward", [&] {
    im2col_backward_input<scalar_t>(g, static_cast<const scalar_t*>(dy),
                                    static_cast<const scalar_t*>(w), static_cast<scalar_t*>(dx));
  });
}

void conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                            void* dw, void* db) {
  if (use_direct(g)) {
    EMBER_DISPATCH_FLOAT(dtype, "conv2d backward", [&] {
      direct_backward_weight<scalar_t>(g, static_cast<const scalar_t*>(x),
                                       static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dw),
                                       static_cast<scalar_t*>(db));
    });
    return;
  }
  if (g.groups > 1) {
    grouped_backward(dtype, g, x, dy, nullptr, nullptr, dw, db);
    return;
  }
  if (use_implicit(dtype, g)) {
    implicit_backward_weight(g, static_cast<const float*>(x),
                             batch_inner_grad(g, static_cast<const float*>(dy)),
                             static_cast<float*>(dw), static_cast<float*>(db));
    return;
  }
  EMBER_DISPATCH_FLOAT(dtype, "conv2d backward", [&] {
    im2col_backward_weight<scalar_t>(g, static_cast<const scalar_t*>(x),
                                     static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dw),
                                     static_cast<scalar_t*>(db));
  });
}

void conv2d_backward(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                     const void* w, void* dx, void* dw, void* db) {
  if (g.groups > 1 && !use_direct(g)) {  // one pass over the groups for both gradients
    grouped_backward(dtype, g, x, dy, w, dx, dw, db);
    return;
  }
  if (use_implicit(dtype, g) && dx && dw) {  // dy' made once for both
    const float* dyp = batch_inner_grad(g, static_cast<const float*>(dy));
    implicit_backward_input(g, dyp, static_cast<const float*>(w), static_cast<float*>(dx));
    implicit_backward_weight(g, static_cast<const float*>(x), dyp, static_cast<float*>(dw),
                             static_cast<float*>(db));
    return;
  }
  if (dx) conv2d_backward_input(dtype, g, dy, w, dx);
  if (dw) conv2d_backward_weight(dtype, g, x, dy, dw, db);
}

// ---- the conv family's table (kernels/conv.h) -------------------------------------------------
// The CPU picks its algorithm itself (above); the family's `algo` is a CUDA choice, and the op
// card passes Auto for CPU tensors.
namespace {
void check_cpu_algo(ConvAlgo algo) {
  EMBER_CHECK(algo == ConvAlgo::Auto,
              "conv2d on the CPU: the algorithm is chosen by the CPU "
              "kernels themselves (kernels/cpu/conv.cpp); ask for ConvAlgo::Auto");
}
void forward_entry(DType dtype, const ConvGeometry& g, const void* x, const void* w, const void* b,
                   void* y, ConvAlgo algo) {
  check_cpu_algo(algo);
  conv2d_forward(dtype, g, x, w, b, y);
}
void backward_entry(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                    const void* w, void* dx, void* dw, void* db, ConvAlgo algo) {
  check_cpu_algo(algo);
  conv2d_backward(dtype, g, x, dy, w, dx, dw, db);
}
bool no_cudnn() { return false; }
}  // namespace

const ConvKernels conv_kernels = {&forward_entry, &backward_entry, &no_cudnn};

}  // namespace ember::kernels::cpu
