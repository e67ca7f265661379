// ember/kernels/cuda/conv.cu — 2-d convolution on CUDA: the entry points of kernels/cuda/conv.h,
// and the routing of every request to one of its algorithms:
//   Im2colGemm    kernels/cuda/conv_im2col.cu: im2col into scratch columns, then cuBLAS (the
//                 CPU's method, kernels/cpu/conv_im2col.cpp);
//   ImplicitGemm  kernels/cuda/conv_implicit.cu: one hand-written kernel that gathers the input
//                 windows while it multiplies, no scratch; forward and input gradient only;
//   Cudnn         kernels/cuda/conv_cudnn.cu: cuDNN's best algorithm, when this build has cuDNN;
//   Direct        kernels/cuda/conv_direct.cu: one plain sum per output or gradient element.
// Groups: cuDNN and Direct take them as they are; Im2colGemm and ImplicitGemm run one group at a
// time (kernels/cuda/conv_grouped.cu, which calls back into the entry points here).
// The bias (added to y, and its gradient) is the same for both native algorithms:
// kernels/cuda/conv_bias.cu. What the native files share: kernels/cuda/conv_internal.cuh
// (scratch memory, the index checks).
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, C, R, S] (= [K, CRS] in memory),
// b [K], y [N, K, P, Q]; CRS = C*R*S is the length of one filter, PQ = P*Q one output plane. All
// pointers are contiguous device memory; everything is queued on ember's one in-order stream
// (launch.cuh) and returns before the GPU has finished.
//
// Here: the dtype check, the layers with nothing to compute or nothing to sum (an empty output,
// empty filters: y = b, dx = 0, dw = 0), and the choice of algorithm.
//
// Auto picks per pass (the rules and their reasoning: choose_*_algo in conv_index.h):
//   groups > 1       Direct for depthwise layers (groups == C), else each group by the rules
//                    below;
//   forward          ImplicitGemm when K <= 64 and the kernel fills the GPU (or the layer is
//                    tiny), else Im2colGemm;
//   input gradient   Im2colGemm (col2im): measured faster on every seed layer;
//   weight gradient  Im2colGemm.
// For the seed CNNs (on an H100) that is the implicit kernel for every forward pass except
// cats_vs_dogs's third layer (128 filters), and im2col + cuBLAS for every gradient.
// tests/kernels/conv_cuda.cpp spells these choices out.
//
// Determinism: no atomics anywhere; every sum runs in an order fixed by the geometry (col2im
// loops over the taps in order, the bias gradient reduces with a fixed shuffle tree), so results
// repeat bit for bit (cuBLAS's default GEMMs are deterministic for a given GPU and size).
#include "kernels/cuda/conv.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/cuda/conv_cudnn.cuh"
#include "kernels/cuda/conv_index.h"
#include "kernels/cuda/conv_internal.cuh"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

using namespace conv_detail;

// Streaming multiprocessors of the current device, asked once per device (Auto's rules use it).
int sm_count() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> counts[kMaxDevices] = {};
  const int device = current_device();
  if (device < 0 || device >= kMaxDevices) return 1;
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

void check_dtype(DType dtype, const char* what) {
  EMBER_CHECK(dtype == DType::Float32 || dtype == DType::Float64, what, " on CUDA: expected float32 "
              "or float64, got ", dtype_name(dtype), " (convert with .to(ember::kFloat32))");
}

// ---- one pass, typed ----------------------------------------------------------------------------

template <typename T>
void forward_typed(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y,
                   ConvAlgo algo) {
  if (g.N * g.K * g.P * g.Q == 0) return;  // nothing to write
  if (g.C * g.R * g.S == 0) {              // empty filters: y = b
    fill_with_bias(g, b, y);
    return;
  }
  if (algo == ConvAlgo::Auto) algo = choose_grouped_algo(g);
  if (algo == ConvAlgo::Direct) return direct_forward(g, x, w, b, y);
  if (g.groups > 1) return grouped_forward(g, x, w, b, y, algo);
  if (algo == ConvAlgo::Auto) algo = choose_forward_algo(g, sm_count());
  if (algo == ConvAlgo::ImplicitGemm) implicit_forward(g, x, w, b, y);
  else im2col_forward(g, x, w, b, y);
}

template <typename T>
void backward_input_typed(const ConvGeometry& g, const T* dy, const T* w, T* dx, ConvAlgo algo) {
  if (g.N * g.C * g.H * g.W == 0) return;
  if (g.K * g.R * g.S * g.P * g.Q == 0) {  // no output pixel, or no filter: dx = 0
    EMBER_CUDA_CHECK(cudaMemsetAsync(dx, 0, static_cast<size_t>(g.N * g.C * g.H * g.W) * sizeof(T),
                                     stream()));
    return;
  }
  if (algo == ConvAlgo::Auto) algo = choose_grouped_algo(g);
  if (algo == ConvAlgo::Direct) return direct_backward_input(g, dy, w, dx);
  if (g.groups > 1) return grouped_backward_input(g, dy, w, dx, algo);
  if (algo == ConvAlgo::Auto) algo = choose_backward_input_algo(g, sm_count());
  if (algo == ConvAlgo::ImplicitGemm) implicit_backward_input(g, dy, w, dx);
  else im2col_backward_input(g, dy, w, dx);
}

template <typename T>
void backward_weight_typed(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db,
                           ConvAlgo algo) {
  if (db != nullptr) bias_grad(g, dy, db);
  const int64_t dw_numel = g.K * (g.C / g.groups) * g.R * g.S;
  if (dw_numel == 0) return;
  if (g.N * g.P * g.Q == 0) {  // no output pixel: dw = 0
    EMBER_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(dw_numel) * sizeof(T), stream()));
    return;
  }
  if (algo == ConvAlgo::Auto) algo = choose_grouped_algo(g);
  T* const no_db = nullptr;  // done above
  if (algo == ConvAlgo::Direct) return direct_backward_weight(g, x, dy, dw, no_db);
  if (g.groups > 1) return grouped_backward_weight(g, x, dy, dw, no_db, algo);
  // The GEMM algorithms (Auto, Im2colGemm, ImplicitGemm) compute dw with im2col + cuBLAS:
  // choose_backward_weight_algo() in conv_index.h says why.
  im2col_backward_weight(g, x, dy, dw);
}

// Throws for Cudnn in a build without it, before any work is queued.
void check_algo(ConvAlgo algo, const char* what) {
  if (algo == ConvAlgo::Cudnn && !cudnn_built())
    throw DeviceError(detail::concat(what, ": this build has no cuDNN: ConvAlgo::Cudnn needs "
                                           "ember configured with cuDNN installed (EMBER_CUDNN=ON); "
                                           "use ConvAlgo::Auto for ember's own kernels"));
}

}  // namespace

// ---- the entry points (kernels/cuda/conv.h; set_conv_column_budget is in conv_im2col.cu) ------

void conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                    const void* b, void* y, ConvAlgo algo) {
  check_dtype(dtype, "conv2d");
  check_algo(algo, "conv2d");
  if (algo == ConvAlgo::Cudnn && g.N * g.K * g.P * g.Q > 0 && g.C * g.R * g.S > 0) {
    cudnn_conv2d_forward(dtype, g, x, w, b, y);
    return;
  }
  // (Cudnn with an empty layer falls through: there is nothing for cuDNN to compute.)
  if (dtype == DType::Float32)
    forward_typed(g, static_cast<const float*>(x), static_cast<const float*>(w),
                  static_cast<const float*>(b), static_cast<float*>(y), algo);
  else
    forward_typed(g, static_cast<const double*>(x), static_cast<const double*>(w),
                  static_cast<const double*>(b), static_cast<double*>(y), algo);
}

void conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                           void* dx, ConvAlgo algo) {
  check_dtype(dtype, "conv2d backward");
  check_algo(algo, "conv2d backward");
  if (algo == ConvAlgo::Cudnn && g.N * g.C * g.H * g.W > 0 && g.K * g.R * g.S * g.P * g.Q > 0) {
    cudnn_conv2d_backward_input(dtype, g, dy, w, dx);
    return;
  }
  if (dtype == DType::Float32)
    backward_input_typed(g, static_cast<const float*>(dy), static_cast<const float*>(w),
                         static_cast<float*>(dx), algo);
  else
    backward_input_typed(g, static_cast<const double*>(dy), static_cast<const double*>(w),
                         static_cast<double*>(dx), algo);
}

void conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                            void* dw, void* db, ConvAlgo algo) {
  check_dtype(dtype, "conv2d backward");
  check_algo(algo, "conv2d backward");
  if (algo == ConvAlgo::Cudnn && g.K * (g.C / g.groups) * g.R * g.S > 0 && g.N * g.P * g.Q > 0) {
    cudnn_conv2d_backward_weight(dtype, g, x, dy, dw, db);
    return;
  }
  if (dtype == DType::Float32)
    backward_weight_typed(g, static_cast<const float*>(x), static_cast<const float*>(dy),
                          static_cast<float*>(dw), static_cast<float*>(db), algo);
  else
    backward_weight_typed(g, static_cast<const double*>(x), static_cast<const double*>(dy),
                          static_cast<double*>(dw), static_cast<double*>(db), algo);
}

// The conv family's backward: the gradients that are asked for, one direction after the other.
void conv2d_backward(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                     const void* w, void* dx, void* dw, void* db, ConvAlgo algo) {
  if (dx) conv2d_backward_input(dtype, g, dy, w, dx, algo);
  if (dw) conv2d_backward_weight(dtype, g, x, dy, dw, db, algo);
}

const ConvKernels conv_kernels = {&conv2d_forward, &conv2d_backward, &cudnn_built};

}  // namespace ember::kernels::cuda
