// ember/kernels/cuda/gemm.cu — matrix multiply on CUDA: the checks every request goes through,
// then cuBLAS ("kernel 0" of any GEMM ladder: the vendor library every hand-written GEMM is
// measured against) or ember's own kernel (kernels/cuda/gemm_tiled.cu), as
// ember::cuda::set_gemm_backend chose. The emulation build has no cuBLAS: there the own kernel
// is the only backend.
//
// ember's request is row-major, cuBLAS is column-major. kernels/cuda/gemm_plan.h writes out, once
// and in full, why the row-major C = op(A) @ op(B) is the column-major C^T = op(B)^T @ op(A)^T
// with the operands and M/N swapped and each transpose flag kept; tests/kernels/gemm_plan.cpp proves
// that mapping on the CPU. This file only checks the request, picks the precision and makes the
// call.
//
// Precision. Both dtypes go through cublasGemmEx / cublasGemmStridedBatchedEx, which take the
// compute type per call:
//   float64  CUBLAS_COMPUTE_64F
//   float32  CUBLAS_COMPUTE_32F (exact FP32 products and sums: the default, as ember's style asks)
//            or, after cuda::set_allow_tf32(true), CUBLAS_COMPUTE_32F_FAST_TF32: the inputs are
//            rounded to TF32 (10-bit mantissa) and multiplied on the tensor cores, accumulating in
//            FP32 — several times the throughput on Ampere and later, PyTorch's allow_tf32.
// Choosing it per call, instead of with cublasSetMathMode on the handle, keeps the handle free of
// mode state: a switch flipped by one thread can never leak into a GEMM another thread is
// setting up with the same handle.
//
// Handles. cublasCreate is slow (it allocates and initialises per-device state) and a handle is
// tied to the device that was current when it was made, so there is one per device, created on
// first use under a mutex and then read without locking. Threads share it: the cuBLAS docs allow
// one handle in several host threads as long as its configuration is not changed under them.
// ember sets two things, at every call, under a mutex held through the call: the stream — the
// calling thread's current stream (kernels/cuda/launch.cuh): the legacy stream, or a CUDA
// graph's capture stream — and the workspace, one buffer per device that ember allocates with the
// handle. The workspace has two reasons. cublasSetStream resets a handle to cuBLAS's own
// workspace pool, which cuBLAS may grow with an allocation, and an allocation cannot happen during
// a graph capture; with a buffer of ember's, cuBLAS never allocates. And the same workspace for
// eager and captured GEMMs means cuBLAS chooses the same kernels in both, so a replayed step
// gives the same bits as an eager one. Every GEMM that runs runs on the legacy stream (graph
// replays too), one after another, so the one workspace is never used by two at once.
//
// The handles are never destroyed. A static object's destructor would run cublasDestroy during
// process exit, and the order of those destructors against the CUDA runtime's own teardown (which
// also runs at exit and unloads the context the handle lives in) is not under our control: a
// cublasDestroy after the context is gone can fail or crash a program that did nothing wrong. The
// driver reclaims everything a process held when it exits, so leaking them costs nothing.
#ifndef EMBER_CUDA_EMULATED
#include <cublas_v2.h>
#endif
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>

#include "kernels/base/error.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/gemm_plan.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/gemm.h"

// ---- the TF32 switch (kernels/cuda/runtime.h; core/cuda.h's set_allow_tf32) --------------------
namespace ember::kernels::cuda {

namespace {
std::atomic<bool> g_allow_tf32{false};  // exactness first: off until the user turns it on
}  // namespace

void set_allow_tf32(bool allow) { g_allow_tf32.store(allow, std::memory_order_relaxed); }
bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }

// ---- the backend switch (kernels/cuda/runtime.h; core/cuda.h's set_gemm_backend) ---------------
namespace {
#ifdef EMBER_CUDA_EMULATED
std::atomic<GemmBackend> g_gemm_backend{GemmBackend::Ember};
#else
std::atomic<GemmBackend> g_gemm_backend{GemmBackend::Cublas};
#endif
}  // namespace

void set_gemm_backend(GemmBackend backend) {
#ifdef EMBER_CUDA_EMULATED
  EMBER_CHECK_T(DeviceError, backend == GemmBackend::Ember,
                "set_gemm_backend(GemmBackend::Cublas): the emulation build (EMBER_CUDA=EMULATE) "
                "has no cuBLAS; its matmul runs ember's own kernel (GemmBackend::Ember)");
#endif
  g_gemm_backend.store(backend, std::memory_order_relaxed);
}
GemmBackend gemm_backend() { return g_gemm_backend.load(std::memory_order_relaxed); }

}  // namespace ember::kernels::cuda

namespace ember::kernels::cuda {

namespace {

#ifndef EMBER_CUDA_EMULATED
// Throws DeviceError "cublasGemmEx failed at <file>:<line>: CUBLAS_STATUS_... (<description>)"
// for any status but success; an allocation failure inside cuBLAS is an OutOfMemoryError.
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  // `call` is the whole stringified expression; its name is what comes before the '('.
  std::string name(call);
  name = name.substr(0, name.find('('));
  const std::string message =
      detail::concat(name, " failed at ", file, ":", line, ": ", cublasGetStatusName(status), " (",
                     cublasGetStatusString(status), ")");
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    throw OutOfMemoryError(message + ": cuBLAS could not allocate its workspace; free tensors or "
                                     "call ember::cuda::empty_cache()");
  throw DeviceError(message);
}

#define EMBER_CUBLAS_CHECK(call) \
  ::ember::kernels::cuda::check_cublas((call), #call, __FILE__, __LINE__)

// One handle per device index; a zero-initialised array has no destructor (see the comment at
// the top for why the handles must outlive everything).
constexpr int kMaxDevices = 64;
std::mutex g_handles_mutex;

// The workspace cuBLAS recommends: 32 MiB on Hopper (sm_90) and later, 4 MiB before.
size_t workspace_bytes(int device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();
    major = 0;
  }
  return major >= 9 ? size_t{32} << 20 : size_t{4} << 20;
}

// The current device's handle and workspace (created on first use, outside any capture).
struct Cublas {
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};
Cublas g_cublas[kMaxDevices] = {};  // written once per device under g_handles_mutex

// Binds the current device's handle to the current stream and ember's workspace, and holds the
// lock that keeps another thread from rebinding it until the GEMM is queued.
class BoundHandle {
 public:
  BoundHandle() : lock_(g_handles_mutex) {
    int device = 0;
    EMBER_CUDA_CHECK(cudaGetDevice(&device));
    EMBER_CHECK_T(DeviceError, device >= 0 && device < kMaxDevices, "gemm on CUDA: device ",
                  device, " is beyond the ", kMaxDevices, " devices ember keeps cuBLAS handles "
                  "for (raise kMaxDevices in kernels/cuda/gemm.cu)");
    Cublas& c = g_cublas[device];
    if (c.handle == nullptr) {
      refuse_in_capture("the first matmul through cuBLAS on this device",
                        "cuBLAS creates its handle and ember its workspace then, which allocates "
                        "memory outside any graph. Run the step eagerly at least once before "
                        "capturing it (warm-up), as PyTorch requires");
      c.workspace_bytes = workspace_bytes(device);
      EMBER_CUDA_CHECK(cudaMalloc(&c.workspace, c.workspace_bytes));  // kept for the process
      EMBER_CUBLAS_CHECK(cublasCreate(&c.handle));  // on the current device, i.e. `device`
    }
    // cublasSetStream puts back cuBLAS's own workspace pool; ember's goes in after it.
    EMBER_CUBLAS_CHECK(cublasSetStream(c.handle, stream()));
    EMBER_CUBLAS_CHECK(cublasSetWorkspace(c.handle, c.workspace, c.workspace_bytes));
    handle_ = c.handle;
  }
  cublasHandle_t get() const { return handle_; }

 private:
  std::lock_guard<std::mutex> lock_;
  cublasHandle_t handle_ = nullptr;
};

// cuBLAS takes its sizes and leading dimensions as int.
void check_fits_int(int64_t value, const char* what) {
  EMBER_CHECK(value <= INT_MAX, "gemm on CUDA: ", what, " = ", value,
              " exceeds cuBLAS's 32-bit int limit (", INT_MAX, "); split the product into "
              "smaller ones, or use set_gemm_backend(GemmBackend::Ember)");
}

#endif  // !EMBER_CUDA_EMULATED

// A row-major [rows, cols] operand needs its rows at least cols apart once it has two of them.
void check_ld(const char* name, int64_t rows, int64_t cols, int64_t ld) {
  EMBER_CHECK(rows <= 1 || cols == 0 || ld >= cols, "gemm on CUDA: ", name, " is stored as [",
              rows, ", ", cols, "] with leading dimension ", ld, ", but rows must lie at least ",
              cols, " elements apart (make the operand contiguous)");
}

#ifndef EMBER_CUDA_EMULATED
cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

void run_cublas(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
                int64_t batch) {
  const CublasGemmArgs p =
      plan_cublas_gemm(trans_a, trans_b, M, N, K, a, lda, stride_a, b, ldb, stride_b, c, ldc,
                       stride_c);
  check_fits_int(p.m, "N");
  check_fits_int(p.n, "M");
  check_fits_int(p.k, "K");
  check_fits_int(p.lda, "ldb");
  check_fits_int(p.ldb, "lda");
  check_fits_int(p.ldc, "ldc");
  check_fits_int(batch, "batch");

  // alpha and beta are read from host memory (cuBLAS's default pointer mode) before the call
  // returns, in the compute type's precision.
  const bool f64 = dtype == DType::Float64;
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_ptr = f64 ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_ptr = f64 ? static_cast<const void*>(&beta) : &beta_f;
  const cudaDataType_t type = f64 ? CUDA_R_64F : CUDA_R_32F;
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F : (allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);

  const BoundHandle bound;
  const cublasHandle_t handle = bound.get();
  if (batch == 1) {
    EMBER_CUBLAS_CHECK(cublasGemmEx(handle, op(p.transa), op(p.transb), static_cast<int>(p.m),
                                    static_cast<int>(p.n), static_cast<int>(p.k), alpha_ptr, p.A,
                                    type, static_cast<int>(p.lda), p.B, type,
                                    static_cast<int>(p.ldb), beta_ptr, p.C, type,
                                    static_cast<int>(p.ldc), compute, CUBLAS_GEMM_DEFAULT));
  } else {
    // Batch strides are 64-bit in cuBLAS already; 0 repeats one matrix for every product.
    EMBER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, op(p.transa), op(p.transb), static_cast<int>(p.m), static_cast<int>(p.n),
        static_cast<int>(p.k), alpha_ptr, p.A, type, static_cast<int>(p.lda),
        static_cast<long long>(p.strideA), p.B, type, static_cast<int>(p.ldb),
        static_cast<long long>(p.strideB), beta_ptr, p.C, type, static_cast<int>(p.ldc),
        static_cast<long long>(p.strideC), static_cast<int>(batch), compute,
        CUBLAS_GEMM_DEFAULT));
  }
}

#endif  // !EMBER_CUDA_EMULATED

void run_gemm(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
              double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
              int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
              int64_t batch) {
  EMBER_CHECK(dtype == DType::Float32 || dtype == DType::Float64, "gemm on CUDA: expected float32 "
              "or float64, got ", dtype_name(dtype), " (convert with .to(ember::kFloat32))");
  EMBER_CHECK(M >= 0 && N >= 0 && K >= 0 && batch >= 0, "gemm on CUDA: negative size (M ", M,
              ", N ", N, ", K ", K, ", batch ", batch, ")");
  // An empty result: nothing to compute (and cuBLAS would reject ldc for an empty C).
  if (M == 0 || N == 0 || batch == 0) return;
  // K == 0 is left to the backend, which then computes C = beta * C as BLAS defines it.

  check_ld("a", trans_a ? K : M, trans_a ? M : K, lda);
  check_ld("b", trans_b ? N : K, trans_b ? K : N, ldb);
  check_ld("c", M, N, ldc);
  // The batch's results must not overlap, or the products would race on them.
  EMBER_CHECK(batch == 1 || stride_c >= (M - 1) * ldc + N, "gemm on CUDA: the ", batch,
              " results overlap (stride_c ", stride_c, " for [", M, ", ", N, "] matrices with "
              "ldc ", ldc, ")");
  if (gemm_backend() == GemmBackend::Ember) {
    gemm_tiled(dtype, trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta,
               c, ldc, stride_c, batch);
    return;
  }
#ifdef EMBER_CUDA_EMULATED
  throw DeviceError("gemm on CUDA: cuBLAS is not part of the emulation build");
#else
  run_cublas(dtype, trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
             ldc, stride_c, batch);
#endif
}

}  // namespace

void gemm(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc) {
  run_gemm(dtype, trans_a, trans_b, M, N, K, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

void gemm_batched(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                  int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc,
                  int64_t stride_c, int64_t batch) {
  run_gemm(dtype, trans_a, trans_b, M, N, K, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
           ldc, stride_c, batch);
}

const GemmKernels gemm_kernels = {&gemm, &gemm_batched};

}  // namespace ember::kernels::cuda
