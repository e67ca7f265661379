// ember/kernels/cuda/conv_cudnn.cu — ConvAlgo::Cudnn: the convolution through cuDNN, the
// reference ember's own kernels (kernels/cuda/conv_im2col.cu, conv_implicit.cu) are tested and
// benchmarked against.
//
// cuDNN is optional. CMake defines EMBER_WITH_CUDNN when it finds cudnn.h and libcudnn; without
// it this file only says so (cudnn_built() is false and every call throws a DeviceError), and
// the rest of ember never needs it.
//
// The calls are cuDNN's "legacy" API, which cuDNN 9 still ships: descriptors for x, w, y and the
// convolution, then cudnnConvolutionForward / BackwardData / BackwardFilter / BackwardBias.
// cuDNN's CUDNN_CROSS_CORRELATION mode is what PyTorch (and ember) call conv2d: the filter is not
// flipped. (CUDNN_CONVOLUTION would flip it.)
//
// Choosing the algorithm. cuDNN has several algorithms per pass (implicit GEMM, precomputed-
// index GEMM, FFT, Winograd, ...) and which is fastest depends on the shape and the GPU. The
// first call for a shape runs cudnnFind*AlgorithmEx, which times each of them on the real
// buffers (like torch.backends.cudnn.benchmark = True), and keeps the fastest that ran; later
// calls with the same shape reuse the choice. (If the search returns nothing usable, cuDNN's
// heuristic, cudnnGet*Algorithm_v7, decides instead.) The search writes the pass's output
// buffer, which the real call then overwrites.
//
// Precision. float32 runs with CUDNN_FMA_MATH — plain FP32 multiply-adds, no TF32 tensor cores —
// unless ember::cuda::set_allow_tf32(true) (kernels/cuda/gemm.cu) allows TF32, in which case
// cuDNN's default math may use it. (PyTorch's torch.backends.cudnn.allow_tf32 defaults to true:
// compare timings with that in mind.) float64 runs in double. Without TF32 the search also skips
// the FFT and Winograd algorithms: they compute the convolution through a transform whose
// float32 rounding error grows with the values' range, far beyond what direct sums make (on an
// H200 they missed ember's float32 tolerance on the seed models' layers, bench/RESULTS.md), so
// they belong with the other fast-math switch. EMBER_CUDNN_VERBOSE=1 prints each choice.
//
// Memory. Workspaces come from ember's caching allocator (a Workspace per call,
// kernels/cuda/workspace.h: cached after the first step; during a CUDA graph capture, from the
// graph's pool); the search may use up to kWorkspaceLimit. Handles: one per device, created on
// first use (never inside a capture: warm up first), bound to the calling thread's current
// stream at every call and never destroyed — the reasons are those of the cuBLAS handles in
// kernels/cuda/gemm.cu. Descriptors and chosen algorithms are kept per (device, dtype, TF32
// switch, geometry), also for the life of the process.
//
// Threads. One mutex covers the plan cache and each whole call: the convolution descriptor's
// math type is set per call, and two host threads must not interleave that with each other's
// calls. The GPU work is serialised by ember's single stream anyway.
#include "kernels/cuda/conv_cudnn.cuh"

#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/conv.h"

#ifdef EMBER_WITH_CUDNN
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/workspace.h"
#endif

namespace ember::kernels::cuda {

#ifdef EMBER_WITH_CUDNN

bool cudnn_built() { return true; }

namespace {

// The most workspace an algorithm may use (the search skips algorithms that want more).
constexpr size_t kWorkspaceLimit = size_t{512} << 20;

// Throws DeviceError "<call> failed at <file>:<line>: CUDNN_STATUS_... (<cuDNN's last message>)";
// device allocation failures are an OutOfMemoryError.
void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  std::string name(call);
  name = name.substr(0, name.find('('));
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof(last));
  std::string message = detail::concat(name, " failed at ", file, ":", line, ": ",
                                       cudnnGetErrorString(status));
  if (last[0] != '\0') message += detail::concat(" (", last, ")");
  if (status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    throw OutOfMemoryError(message + ": free tensors or call ember::cuda::empty_cache()");
  throw DeviceError(message);
}

#define EMBER_CUDNN_CHECK(call) \
  ::ember::kernels::cuda::check_cudnn((call), #call, __FILE__, __LINE__)

// ---- handles: one per device (see the top of the file) ------------------------------------------
constexpr int kMaxDevices = 64;
std::atomic<cudnnHandle_t> g_handles[kMaxDevices] = {};
std::mutex g_handles_mutex;

// The current device, as an index into the handles.
int handle_device() {
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  EMBER_CHECK_T(DeviceError, device >= 0 && device < kMaxDevices, "conv2d (cuDNN): device ",
                device, " is beyond the ", kMaxDevices, " devices ember keeps cuDNN handles for "
                "(raise kMaxDevices in kernels/cuda/conv_cudnn.cu)");
  return device;
}

cudnnHandle_t current_handle(int device) {
  cudnnHandle_t handle = g_handles[device].load(std::memory_order_acquire);
  if (handle == nullptr) {
    refuse_in_capture("the first cuDNN convolution on this device",
                      "cuDNN creates its handle then, which allocates memory outside any graph. "
                      "Run the step eagerly at least once before capturing it (warm-up)");
    const std::lock_guard<std::mutex> lock(g_handles_mutex);
    handle = g_handles[device].load(std::memory_order_relaxed);
    if (handle == nullptr) {
      EMBER_CUDNN_CHECK(cudnnCreate(&handle));  // on the current device, i.e. `device`
      g_handles[device].store(handle, std::memory_order_release);
    }
  }
  EMBER_CUDNN_CHECK(cudnnSetStream(handle, stream()));
  return handle;
}

int to_int(int64_t v, const char* what) {
  EMBER_CHECK(v >= 0 && v <= INT_MAX, "conv2d (cuDNN): ", what, " = ", v, " exceeds cuDNN's "
              "32-bit int sizes; use ember's own kernels (ConvBackend::Native)");
  return static_cast<int>(v);
}

// ---- plans: descriptors and chosen algorithms per shape ----------------------------------------
enum Pass { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

struct Choice {
  bool found = false;
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // what the search may use
  Choice choice[3];
};

using PlanKey = std::array<int64_t, 19>;
std::mutex g_mutex;  // the plan cache and every call (see the top of the file)

std::map<PlanKey, Plan*>& plans() {
  static auto* cache = new std::map<PlanKey, Plan*>();  // never destroyed, like the handles
  return *cache;
}

Plan& get_plan(int device, DType dtype, const ConvGeometry& g) {
  const bool f64 = dtype == DType::Float64;
  const bool tf32 = !f64 && allow_tf32();
  const PlanKey key = {device,  f64 ? 1 : 0, tf32 ? 1 : 0, g.N,     g.C,     g.H,        g.W,
                       g.K,     g.R,         g.S,          g.P,     g.Q,     g.stride_h, g.stride_w,
                       g.pad_h, g.pad_w,     g.dil_h,      g.dil_w, g.groups};
  auto it = plans().find(key);
  if (it != plans().end()) return *it->second;

  auto* plan = new Plan();
  plan->type = f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  plan->math = (f64 || tf32) ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->x));
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->y));
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->bias));
  EMBER_CUDNN_CHECK(cudnnCreateFilterDescriptor(&plan->w));
  EMBER_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&plan->conv));
  EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NCHW, plan->type,
                                               to_int(g.N, "N"), to_int(g.C, "C"),
                                               to_int(g.H, "H"), to_int(g.W, "W")));
  EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NCHW, plan->type,
                                               to_int(g.N, "N"), to_int(g.K, "K"),
                                               to_int(g.P, "P"), to_int(g.Q, "Q")));
  EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->bias, CUDNN_TENSOR_NCHW, plan->type, 1,
                                               to_int(g.K, "K"), 1, 1));
  // The filters hold C / groups input channels each (w [K, C/groups, R, S]).
  EMBER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan->w, plan->type, CUDNN_TENSOR_NCHW,
                                               to_int(g.K, "K"), to_int(g.C / g.groups, "C"),
                                               to_int(g.R, "R"), to_int(g.S, "S")));
  // Cross-correlation = PyTorch's conv2d. The compute type is the data type.
  EMBER_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      plan->conv, to_int(g.pad_h, "pad_h"), to_int(g.pad_w, "pad_w"),
      to_int(g.stride_h, "stride_h"), to_int(g.stride_w, "stride_w"), to_int(g.dil_h, "dil_h"),
      to_int(g.dil_w, "dil_w"), CUDNN_CROSS_CORRELATION, plan->type));
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(plan->conv, plan->math));
  // Grouped (and depthwise) convolutions: cuDNN splits the channels itself.
  EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(plan->conv, to_int(g.groups, "groups")));
  plans().emplace(key, plan);
  return *plan;
}

// alpha = 1 and beta = 0 or 1, in the type cuDNN reads them as (double for double data).
struct Scalars {
  float f[2] = {0.0f, 1.0f};
  double d[2] = {0.0, 1.0};
  bool f64;
  explicit Scalars(DType dtype) : f64(dtype == DType::Float64) {}
  const void* zero() const { return f64 ? static_cast<const void*>(&d[0]) : &f[0]; }
  const void* one() const { return f64 ? static_cast<const void*>(&d[1]) : &f[1]; }
};

// The algorithms that go through a transform (FFT, Winograd): fast, but not exact enough for
// float32 without the fast-math switch (see Precision at the top).
bool transform_algo(Pass pass, int algo) {
  switch (pass) {
    case kForward:
      return algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
             algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case kBackwardData:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
             algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    case kBackwardFilter:
      return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
             algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
  }
  return false;
}

const char* pass_name(Pass pass) {
  return pass == kForward ? "forward" : pass == kBackwardData ? "input gradient" : "weight gradient";
}

// The search, common to the three passes: `size_of(algo, &bytes)` asks one algorithm's
// workspace, `find(count, &returned, perf, ws, ws_bytes)` times them all, `heuristic(count,
// &returned, perf)` is the fallback. Perf is cuDNN's result struct of the pass. `exact`: no
// tensor-op math and no transform algorithms (float32 without TF32).
template <typename Perf, typename SizeOf, typename FindFn, typename Heuristic>
Choice choose(Pass pass, bool exact, const ConvGeometry& g, int algo_count, SizeOf size_of,
              FindFn find, Heuristic heuristic) {
  refuse_in_capture("a cuDNN convolution of a new shape",
                    "cuDNN's algorithm search (cudnnFind...) times every algorithm, waiting for "
                    "the GPU. Run the step eagerly at least once before capturing it (warm-up), "
                    "so that each shape has its algorithm");
  const auto usable = [&](const Perf& p, size_t limit) {
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) return false;
    const bool tensor_ops = p.mathType == CUDNN_TENSOR_OP_MATH ||
                            p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    return !exact || (!tensor_ops && !transform_algo(pass, static_cast<int>(p.algo)));
  };
  const auto chosen = [&](const Perf& p, const char* how) {
    if (const char* v = std::getenv("EMBER_CUDNN_VERBOSE"); v != nullptr && v[0] == '1') {
      std::fprintf(stderr,
                   "ember cuDNN: conv2d %s [%lld,%lld,%lld,%lld]x[%lld,%lld,%lld,%lld]: algo %d "
                   "(%s, math %d, workspace %zu bytes)%s\n",
                   pass_name(pass), static_cast<long long>(g.N), static_cast<long long>(g.C),
                   static_cast<long long>(g.H), static_cast<long long>(g.W),
                   static_cast<long long>(g.K), static_cast<long long>(g.C / g.groups),
                   static_cast<long long>(g.R), static_cast<long long>(g.S),
                   static_cast<int>(p.algo), how, static_cast<int>(p.mathType), p.memory,
                   exact ? ", exact algorithms only" : "");
    }
    return Choice{true, static_cast<int>(p.algo), p.mathType, p.memory};
  };
  // A workspace as large as the hungriest algorithm wants, within the limit.
  size_t ws_bytes = 0;
  for (int a = 0; a < algo_count; ++a) {
    size_t bytes = 0;
    if (size_of(a, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= kWorkspaceLimit)
      ws_bytes = std::max(ws_bytes, bytes);
  }
  Workspace ws;
  if (ws_bytes > 0) {
    try {
      ws = Workspace(ws_bytes);
    } catch (const OutOfMemoryError&) {
      ws_bytes = 0;  // search among the algorithms that need no workspace
    }
  }
  void* ws_ptr = ws.data();

  Perf perf[16];
  const int requested = std::min(algo_count, 16);
  int returned = 0;
  EMBER_CUDNN_CHECK(find(requested, &returned, perf, ws_ptr, ws_bytes));
  for (int i = 0; i < returned; ++i) {  // sorted fastest first
    if (usable(perf[i], ws_bytes)) return chosen(perf[i], "fastest measured");
  }
  EMBER_CUDNN_CHECK(heuristic(requested, &returned, perf));
  for (int i = 0; i < returned; ++i) {
    if (usable(perf[i], kWorkspaceLimit)) return chosen(perf[i], "cuDNN's heuristic");
  }
  throw DeviceError(detail::concat(
      "conv2d (cuDNN): cuDNN offers no ", exact ? "exact float32 " : "", "algorithm for this ",
      pass_name(pass), " within a workspace of 512 MiB; use ember's own kernels "
      "(ConvBackend::Native)", exact ? " or allow TF32 (ember::cuda::set_allow_tf32(true))" : ""));
}

// Under FMA-only math a choice keeps that restriction, whatever the search reports.
cudnnMathType_t math_for(const Plan& plan, const Choice& c) {
  return plan.math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : c.math;
}

}  // namespace

void cudnn_conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                          const void* b, void* y) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const int device = handle_device();
  const cudnnHandle_t h = current_handle(device);
  Plan& plan = get_plan(device, dtype, g);
  Choice& c = plan.choice[kForward];
  if (!c.found) {
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, plan.math));
    c = choose<cudnnConvolutionFwdAlgoPerf_t>(
        kForward, plan.math == CUDNN_FMA_MATH, g, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
        [&](int a, size_t* bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(
              h, plan.x, plan.w, plan.conv, plan.y, static_cast<cudnnConvolutionFwdAlgo_t>(a),
              bytes);
        },
        [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* perf, void* ws, size_t ws_bytes) {
          return cudnnFindConvolutionForwardAlgorithmEx(h, plan.x, x, plan.w, w, plan.conv,
                                                        plan.y, y, n, got, perf, ws, ws_bytes);
        },
        [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* perf) {
          return cudnnGetConvolutionForwardAlgorithm_v7(h, plan.x, plan.w, plan.conv, plan.y, n,
                                                        got, perf);
        });
  }
  const Scalars s(dtype);
  const Workspace ws(c.workspace);  // nothing for 0 bytes
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, math_for(plan, c)));
  EMBER_CUDNN_CHECK(cudnnConvolutionForward(h, s.one(), plan.x, x, plan.w, w, plan.conv,
                                            static_cast<cudnnConvolutionFwdAlgo_t>(c.algo),
                                            ws.data(), c.workspace, s.zero(), plan.y, y));
  // y += b, broadcast over n, p, q.
  if (b != nullptr)
    EMBER_CUDNN_CHECK(cudnnAddTensor(h, s.one(), plan.bias, b, s.one(), plan.y, y));
}

void cudnn_conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy,
                                 const void* w, void* dx) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const int device = handle_device();
  const cudnnHandle_t h = current_handle(device);
  Plan& plan = get_plan(device, dtype, g);
  Choice& c = plan.choice[kBackwardData];
  if (!c.found) {
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, plan.math));
    c = choose<cudnnConvolutionBwdDataAlgoPerf_t>(
        kBackwardData, plan.math == CUDNN_FMA_MATH, g, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
        [&](int a, size_t* bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(
              h, plan.w, plan.y, plan.conv, plan.x,
              static_cast<cudnnConvolutionBwdDataAlgo_t>(a), bytes);
        },
        [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perf, void* ws, size_t ws_bytes) {
          return cudnnFindConvolutionBackwardDataAlgorithmEx(h, plan.w, w, plan.y, dy, plan.conv,
                                                             plan.x, dx, n, got, perf, ws,
                                                             ws_bytes);
        },
        [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
          return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, plan.w, plan.y, plan.conv, plan.x,
                                                             n, got, perf);
        });
  }
  const Scalars s(dtype);
  const Workspace ws(c.workspace);  // nothing for 0 bytes
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, math_for(plan, c)));
  EMBER_CUDNN_CHECK(cudnnConvolutionBackwardData(h, s.one(), plan.w, w, plan.y, dy, plan.conv,
                                                 static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                                 ws.data(), c.workspace, s.zero(), plan.x, dx));
}

void cudnn_conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x,
                                  const void* dy, void* dw, void* db) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const int device = handle_device();
  const cudnnHandle_t h = current_handle(device);
  Plan& plan = get_plan(device, dtype, g);
  Choice& c = plan.choice[kBackwardFilter];
  if (!c.found) {
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, plan.math));
    c = choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
        kBackwardFilter, plan.math == CUDNN_FMA_MATH, g, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
        [&](int a, size_t* bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(
              h, plan.x, plan.y, plan.conv, plan.w,
              static_cast<cudnnConvolutionBwdFilterAlgo_t>(a), bytes);
        },
        [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perf, void* ws,
            size_t ws_bytes) {
          return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, plan.x, x, plan.y, dy,
                                                               plan.conv, plan.w, dw, n, got,
                                                               perf, ws, ws_bytes);
        },
        [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
          return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, plan.x, plan.y, plan.conv,
                                                               plan.w, n, got, perf);
        });
  }
  const Scalars s(dtype);
  const Workspace ws(c.workspace);  // nothing for 0 bytes
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, math_for(plan, c)));
  EMBER_CUDNN_CHECK(
      cudnnConvolutionBackwardFilter(h, s.one(), plan.x, x, plan.y, dy, plan.conv,
                                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo),
                                     ws.data(), c.workspace, s.zero(), plan.w, dw));
  // db = sum of dy over n, p, q.
  if (db != nullptr)
    EMBER_CUDNN_CHECK(cudnnConvolutionBackwardBias(h, s.one(), plan.y, dy, s.zero(), plan.bias, db));
}

#else  // no cuDNN in this build

bool cudnn_built() { return false; }

namespace {
[[noreturn]] void no_cudnn(const char* what) {
  throw DeviceError(std::string(what) + ": this build has no cuDNN: ember was configured "
                    "without it (install cuDNN next to the CUDA toolkit and reconfigure; "
                    "-DEMBER_CUDNN=ON makes it required), or use ember's own kernels "
                    "(ConvBackend::Native)");
}
}  // namespace

void cudnn_conv2d_forward(DType, const ConvGeometry&, const void*, const void*, const void*,
                          void*) {
  no_cudnn("conv2d (cuDNN)");
}
void cudnn_conv2d_backward_input(DType, const ConvGeometry&, const void*, const void*, void*) {
  no_cudnn("conv2d backward (cuDNN)");
}
void cudnn_conv2d_backward_weight(DType, const ConvGeometry&, const void*, const void*, void*,
                                  void*) {
  no_cudnn("conv2d backward (cuDNN)");
}

#endif

}  // namespace ember::kernels::cuda
