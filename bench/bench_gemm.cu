// bench/bench_gemm.cu — the SGEMM ladder: nine CUDA GEMM kernels, from a naive one-thread-per-
// output kernel to tensor cores, each next to cuBLAS on the same GPU in the same run.
//
// The product is row-major C[M, N] = A[M, K] @ B[K, N] in float32 (alpha = 1, beta = 0). Eight
// kernels are the lessons, one file each under bench/gemm/ (bench/gemm/README.md is the index):
//   01 naive, 02 coalesced, 03 shared-memory tiles, 04 1-D register tiles, 05 2-D register
//   tiles, 06 vectorized (float4) loads, 07 warp tiles + double buffering, 08 TF32 tensor cores;
//   the ninth, 09, is ember's own matmul kernel (kernels/cuda/gemm_tiled.cu: rung 07 made complete
//   for transposes, leading dimensions, batches and float64), which set_gemm_backend(Ember)
//   selects.
// "Kernel 0" is cuBLAS, twice: cublasSgemm (FP32, the reference for rungs 01-07) and
// cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32 (the reference for rung 08), both called with
// the row-major-as-column-major swap written out in kernels/cuda/gemm_plan.h.
//
// Shapes: squares M = N = K in --sizes (default 1024 2048 4096 8192), and the GEMMs of one step
// of the MNIST MLP (batch 64, 784-512-256-128-64-10): per layer the forward product X @ W^T and
// the two backward products dX = dY @ W and dW^T = X^T @ dY, with the shapes the training path
// hands to cuBLAS (here every operand is a contiguous row-major matrix; ember passes W^T and
// X^T to cuBLAS as transposed views instead).
//
// Method, per shape: inputs uniform in [-1, 1) from a fixed seed. First correctness: cuBLAS FP32
// is checked against a float64 CPU dot product at 256 sampled entries; then every kernel's output
// (C pre-filled with NaN, so an element never written fails) is compared with cuBLAS FP32
// (rungs 01-07: |c - ref| <= 1e-4 * (|ref| + sqrt(K))) or cuBLAS TF32 (rung 08:
// 5e-3 * (|ref| + sqrt(K))). An entry is a sum of K products of typical size 1/3, so |C| is of
// order sqrt(K)/3 and the sqrt(K) term is the tolerance's absolute part, for entries near zero.
// A kernel that fails prints FAIL and is not timed. Then timing (bench/harness.h): CUDA events
// around each run on ember's stream, the L2 cache flushed before every run, warm-up runs first,
// the median reported; the number of runs adapts to the kernel's speed (5-20 runs in about 2 s
// per kernel, 3-5 with --quick). % of cuBLAS = cuBLAS time / kernel time.
//
// Without a GPU (or in a CPU-only build of ember) the program says why and exits 0, so CI can
// run it as a smoke test. It exits 1 when a kernel failed its check.
//
// In the emulation build (-DEMBER_CUDA=EMULATE, docs/emulator.md) there is no GPU to time and no
// cuBLAS. This file is compiled there like ember's kernels, with the emulator's access
// instrumentation, and `bench_gemm --emulated` measures what the ladder is about instead: memory
// traffic. For one square shape (256; --sizes picks others, --quick 128) it runs each rung once
// on the emulator with access counting on (kernels/emulator/emulator.h), checks C against a
// float64 CPU product (the FP32 tolerance above, rung 08 the TF32 one; C pre-filled with NaN),
// and prints per output element the global loads and stores, the shared loads and stores (one
// count per load or store instruction: a float4 counts once, and so does each element a WMMA
// load or store moves) and the bytes of global traffic, against rung 01's. Rung 08's tensor-core
// fragments are the emulator's (kernels/emulator/mma.h). What the counts cannot show:
// coalescing (02 makes the loads of 01, but they touch 5 sectors per warp and step k instead of
// 33), bank conflicts, and latency hiding (07 against 06). The counts are of the host compiler's
// accesses: bench/CMakeLists.txt turns off its scalar replacement of aggregates here, which
// would split a float4 into four. Without --emulated the emulation build says what it can do
// and exits 0; --emulated in a GPU build exits 1.
//
// Usage: bench_gemm [--sizes 1024 2048 ...] [--shapes all|squares|mnist] [--kernels 1 7 8]
//                   [--json FILE] [--quick] [--device N] [--emulated]
#include <cuda_runtime.h>
#ifndef EMBER_CUDA_EMULATED
#include <cublas_v2.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/gemm/01_naive.cuh"
#include "bench/gemm/02_coalesced.cuh"
#include "bench/gemm/03_shared_tiles.cuh"
#include "bench/gemm/04_1d_register_tiles.cuh"
#include "bench/gemm/05_2d_register_tiles.cuh"
#include "bench/gemm/06_vectorized.cuh"
#include "bench/gemm/07_warp_tiles.cuh"
#include "bench/gemm/08_tf32_mma.cuh"  // WMMA: CUDA's <mma.h>, or the emulator's
#include "bench/harness.h"
#include "core/cuda.h"
#include "kernels/base/error.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"
#ifdef EMBER_CUDA_EMULATED
#include "kernels/emulator/emulator.h"
#else
#include "kernels/cuda/gemm_plan.h"
#endif

namespace {

namespace eb = ember::bench;
namespace gemm = ember::bench::gemm;

using LaunchFn = void (*)(const float*, const float*, float*, int, int, int, cudaStream_t);

struct Rung {
  int number;
  const char* name;
  LaunchFn launch;
  bool tf32;  // validated against cuBLAS TF32 instead of FP32
};

// Rung 09: the kernel behind ember's matmul with set_gemm_backend(GemmBackend::Ember), called
// through its entry point as matmul calls it (it launches on ember's stream, which is `stream`).
void launch_ember(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t) {
  ember::kernels::cuda::gemm_tiled(ember::DType::Float32, false, false, M, N, K, 1.0, A, K, 0, B, N,
                                   0, 0.0, C, N, 0, 1);
}

const Rung kRungs[] = {
    {1, "01 naive", gemm::launch_01, false},
    {2, "02 coalesced", gemm::launch_02, false},
    {3, "03 shared tiles", gemm::launch_03, false},
    {4, "04 1d register tiles", gemm::launch_04, false},
    {5, "05 2d register tiles", gemm::launch_05, false},
    {6, "06 vectorized", gemm::launch_06, false},
    {7, "07 warp tiles", gemm::launch_07, false},
    {8, "08 tf32 wmma", gemm::launch_08, true},
    {9, "09 ember gemm_tiled", launch_ember, false},
};

// Tolerances: |got - ref| <= rtol * (|ref| + sqrt(K)) (see the top of the file).
constexpr double kRtolFp32 = 1e-4;
constexpr double kRtolTf32 = 5e-3;

struct Shape {
  std::string what;  // "square", "L1 forward", ...
  int M, N, K;
  std::string label() const {
    std::ostringstream os;
    os << "[" << M << "," << K << "] @ [" << K << "," << N << "]";
    return os.str();
  }
  double flops() const { return 2.0 * M * N * static_cast<double>(K); }
};

#ifndef EMBER_CUDA_EMULATED
std::vector<Shape> mnist_shapes() {
  const int batch = 64;
  const int widths[] = {784, 512, 256, 128, 64, 10};
  std::vector<Shape> shapes;
  for (int l = 0; l < 5; ++l) {
    const int in = widths[l], out = widths[l + 1];
    const std::string L = "L" + std::to_string(l + 1);
    shapes.push_back({L + " forward Y = X W^T", batch, out, in});
    shapes.push_back({L + " grad input dX = dY W", batch, in, out});
    shapes.push_back({L + " grad weight dW^T = X^T dY", in, out, batch});
  }
  return shapes;
}

#endif  // !EMBER_CUDA_EMULATED

// ---- device memory and cuBLAS ----------------------------------------------------------------

struct DeviceBuffer {
  float* ptr = nullptr;
  explicit DeviceBuffer(size_t n) {
    EMBER_CUDA_CHECK(
        cudaMalloc(reinterpret_cast<void**>(&ptr), std::max<size_t>(n, 1) * sizeof(float)));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

#ifndef EMBER_CUDA_EMULATED

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw ember::DeviceError(std::string(what) + " failed: cuBLAS status " +
                             std::to_string(static_cast<int>(s)));
  }
}

struct Cublas {
  cublasHandle_t handle = nullptr;
  Cublas() {
    cublas_check(cublasCreate(&handle), "cublasCreate");
    cublas_check(cublasSetStream(handle, ember::kernels::cuda::stream()), "cublasSetStream");
    // No TF32 in the FP32 reference: the default math mode, stated explicitly.
    cublas_check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  ~Cublas() { cublasDestroy(handle); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // Row-major C[M, N] = A[M, K] @ B[K, N]. cuBLAS is column-major: it is asked for
  // C^T = B^T @ A^T, which is the same memory read the other way (kernels/cuda/gemm_plan.h
  // derives it in full): m = N, n = M, first operand b, second operand a.
  void gemm(const float* A, const float* B, float* C, int M, int N, int K, bool tf32) const {
    const auto p = ember::kernels::cuda::plan_cublas_gemm(false, false, M, N, K, A, K, 0, B, N,
                                                          0, C, N, 0);
    const float alpha = 1.0f, beta = 0.0f;
    const auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
    if (!tf32) {
      cublas_check(cublasSgemm(handle, op(p.transa), op(p.transb), static_cast<int>(p.m),
                               static_cast<int>(p.n), static_cast<int>(p.k), &alpha,
                               static_cast<const float*>(p.A), static_cast<int>(p.lda),
                               static_cast<const float*>(p.B), static_cast<int>(p.ldb), &beta,
                               static_cast<float*>(p.C), static_cast<int>(p.ldc)),
                   "cublasSgemm");
    } else {
      cublas_check(cublasGemmEx(handle, op(p.transa), op(p.transb), static_cast<int>(p.m),
                                static_cast<int>(p.n), static_cast<int>(p.k), &alpha, p.A,
                                CUDA_R_32F, static_cast<int>(p.lda), p.B, CUDA_R_32F,
                                static_cast<int>(p.ldb), &beta, p.C, CUDA_R_32F,
                                static_cast<int>(p.ldc), CUBLAS_COMPUTE_32F_FAST_TF32,
                                CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx(CUBLAS_COMPUTE_32F_FAST_TF32)");
    }
  }
};

#endif  // !EMBER_CUDA_EMULATED

// ---- checking ---------------------------------------------------------------------------------

struct Check {
  bool ok = true;
  double worst = 0.0;  // max over entries of |got - ref| / tolerance (<= 1 passes)
  std::string cell() const {
    return std::string(ok ? "ok" : "FAIL") + " (" + eb::fmt(worst, 3) + ")";
  }
};

Check compare(const std::vector<float>& got, const std::vector<float>& ref, int K, double rtol) {
  Check c;
  const double scale = std::sqrt(static_cast<double>(std::max(K, 1)));
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rtol * (std::fabs(static_cast<double>(ref[i])) + scale);
    const double r = std::fabs(static_cast<double>(got[i]) - ref[i]) / tol;
    if (!(r <= 1.0)) c.ok = false;  // also catches NaN (an element never written)
    c.worst = std::isnan(r) ? INFINITY : std::max(c.worst, r);
  }
  return c;
}

#ifndef EMBER_CUDA_EMULATED
// cuBLAS FP32 itself against a float64 dot product at `samples` random entries: the reference
// (and the row-major mapping in gemm_plan.h) is checked before anything is compared with it.
Check check_reference(const std::vector<float>& A, const std::vector<float>& B,
                      const std::vector<float>& C, const Shape& s, int samples) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> row(0, s.M - 1), col(0, s.N - 1);
  std::vector<float> got, ref;
  for (int t = 0; t < samples; ++t) {
    const int i = row(rng), j = col(rng);
    double dot = 0.0;
    for (int k = 0; k < s.K; ++k) {
      dot += static_cast<double>(A[static_cast<size_t>(i) * s.K + k]) *
             B[static_cast<size_t>(k) * s.N + j];
    }
    got.push_back(C[static_cast<size_t>(i) * s.N + j]);
    ref.push_back(static_cast<float>(dot));
  }
  return compare(got, ref, s.K, kRtolFp32);
}

#endif  // !EMBER_CUDA_EMULATED

std::vector<float> to_host(const float* d, size_t n) {
  std::vector<float> h(n);
  EMBER_CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

#ifndef EMBER_CUDA_EMULATED
// ---- timing -----------------------------------------------------------------------------------

// One probe run sizes the measurement: about budget_ms of timed runs, within [min_runs, max_runs].
eb::Timing time_kernel(const std::function<void()>& fn, bool quick) {
  const eb::Timing probe = eb::time_cuda(fn, 0, 1);
  const double budget_ms = quick ? 300.0 : 2000.0;
  const int min_runs = quick ? 3 : 5, max_runs = quick ? 5 : 20;
  const int runs = std::clamp(static_cast<int>(budget_ms / std::max(probe.median_ms, 1e-3)),
                              min_runs, max_runs);
  const int warmup = probe.median_ms > 100.0 ? 1 : 3;
  return eb::time_cuda(fn, warmup, runs);
}

std::string gflops_cell(const Shape& s, double ms) { return eb::fmt(s.flops() / (ms * 1e6), 0); }
std::string percent_cell(double ref_ms, double ms) { return eb::fmt(100.0 * ref_ms / ms, 1); }

// ---- one shape --------------------------------------------------------------------------------

struct ShapeResult {
  eb::Table table;
  double cublas_ms = 0.0, cublas_tf32_ms = 0.0;
  int best_rung = 0;       // the fastest FP32 rung that passed its check (0: none)
  double best_ms = 0.0;
  double tf32_rung_ms = 0.0;  // rung 08, 0 when not run
  bool failed = false;
};

ShapeResult run_shape(const Shape& s, const std::vector<int>& kernels, const Cublas& cublas,
                      bool quick, bool tf32_supported) {
  const size_t nA = static_cast<size_t>(s.M) * s.K, nB = static_cast<size_t>(s.K) * s.N,
               nC = static_cast<size_t>(s.M) * s.N;
  std::ostringstream title;
  title << s.label() << "  " << s.what << "  (" << eb::fmt(s.flops() / 1e9, 2) << " GFLOP)";
  ShapeResult res{eb::Table(title.str(), {"kernel", "ms", "GFLOP/s", "% cuBLAS FP32",
                                          "% cuBLAS TF32", "check (err/tol)"})};

  std::vector<float> hA(nA), hB(nB);
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (float& x : hA) x = uni(rng);
  for (float& x : hB) x = uni(rng);
  DeviceBuffer dA(nA), dB(nB), dRef(nC), dRefTf32(nC), dC(nC);
  EMBER_CUDA_CHECK(cudaMemcpy(dA.ptr, hA.data(), nA * sizeof(float), cudaMemcpyHostToDevice));
  EMBER_CUDA_CHECK(cudaMemcpy(dB.ptr, hB.data(), nB * sizeof(float), cudaMemcpyHostToDevice));

  // Kernel 0: the references, checked, then timed.
  cublas.gemm(dA.ptr, dB.ptr, dRef.ptr, s.M, s.N, s.K, false);
  cublas.gemm(dA.ptr, dB.ptr, dRefTf32.ptr, s.M, s.N, s.K, true);
  const std::vector<float> ref = to_host(dRef.ptr, nC);
  const std::vector<float> refTf32 = to_host(dRefTf32.ptr, nC);
  const Check refCheck = check_reference(hA, hB, ref, s, 256);
  const Check tf32Check = compare(refTf32, ref, s.K, kRtolTf32);
  if (!refCheck.ok) {
    // Nothing can be judged against a wrong reference.
    res.table.add_row({"0 cuBLAS FP32", "FAIL", "-", "-", "-", refCheck.cell() + " vs CPU"});
    res.failed = true;
    return res;
  }
  const eb::Timing tRef = time_kernel(
      [&] { cublas.gemm(dA.ptr, dB.ptr, dRef.ptr, s.M, s.N, s.K, false); }, quick);
  const eb::Timing tRefTf32 = time_kernel(
      [&] { cublas.gemm(dA.ptr, dB.ptr, dRefTf32.ptr, s.M, s.N, s.K, true); }, quick);
  res.cublas_ms = tRef.median_ms;
  res.cublas_tf32_ms = tRefTf32.median_ms;
  res.table.add_row({"0 cuBLAS FP32", eb::fmt(tRef.median_ms, 4), gflops_cell(s, tRef.median_ms),
                     "100.0", "-", refCheck.cell() + " vs CPU"});
  res.table.add_row({"0 cuBLAS TF32", eb::fmt(tRefTf32.median_ms, 4),
                     gflops_cell(s, tRefTf32.median_ms),
                     percent_cell(tRef.median_ms, tRefTf32.median_ms), "100.0",
                     tf32Check.cell() + " vs FP32"});

  for (const Rung& r : kRungs) {
    if (std::find(kernels.begin(), kernels.end(), r.number) == kernels.end()) continue;
    if (r.tf32 && !tf32_supported) {
      res.table.add_row({r.name, "needs sm_80", "-", "-", "-", "-"});
      continue;
    }
    const auto run = [&] { r.launch(dA.ptr, dB.ptr, dC.ptr, s.M, s.N, s.K, 0); };
    EMBER_CUDA_CHECK(cudaMemset(dC.ptr, 0xff, nC * sizeof(float)));  // NaN everywhere
    run();
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    const Check c = compare(to_host(dC.ptr, nC), r.tf32 ? refTf32 : ref, s.K,
                            r.tf32 ? kRtolTf32 : kRtolFp32);
    const std::string checkCell = c.cell() + (r.tf32 ? " vs TF32" : "");
    if (!c.ok) {
      res.table.add_row({r.name, "FAIL", "FAIL", "-", "-", checkCell});
      res.failed = true;
      continue;
    }
    const eb::Timing t = time_kernel(run, quick);
    res.table.add_row({r.name, eb::fmt(t.median_ms, 4), gflops_cell(s, t.median_ms),
                       percent_cell(tRef.median_ms, t.median_ms),
                       r.tf32 ? percent_cell(tRefTf32.median_ms, t.median_ms) : "-", checkCell});
    if (r.tf32) {
      res.tf32_rung_ms = t.median_ms;
    } else if (res.best_rung == 0 || t.median_ms < res.best_ms) {
      res.best_rung = r.number;
      res.best_ms = t.median_ms;
    }
  }
  return res;
}

#endif  // !EMBER_CUDA_EMULATED

// What the command line asks for.
struct Options {
  std::vector<int> sizes;
  std::string shapes = "all";
  std::vector<int> kernels = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::string json;
  bool quick = false;
  int device = 0;
  bool emulated = false;
};

#ifndef EMBER_CUDA_EMULATED
// ---- on a GPU: time every rung against cuBLAS ---------------------------------------------------

std::string rung_name(int number) {
  for (const Rung& r : kRungs) {
    if (r.number == number) return r.name;
  }
  return "-";
}

int run_on_gpu(const Options& o) {
  const std::vector<int>& kernels = o.kernels;
  const std::string& json = o.json;
  const std::string& shapes = o.shapes;
  const bool quick = o.quick;
  const int device = o.device;
  std::vector<int> sizes = o.sizes;
  if (sizes.empty()) sizes = quick ? std::vector<int>{1024, 2048} : std::vector<int>{1024, 2048, 4096, 8192};

  std::cout << "ember bench_gemm: the SGEMM ladder vs cuBLAS, row-major C[M,N] = A[M,K] @ B[K,N], "
               "float32\n";
  if (!ember::cuda::is_available() || device >= ember::cuda::device_count()) {
    std::cout << eb::gpu_header(device)
              << "bench_gemm: nothing to time: "
              << (ember::cuda::is_available() ? "no GPU with index " + std::to_string(device)
                                              : std::string(ember::cuda::unavailable_reason()))
              << ". Run it on a machine with an NVIDIA GPU and a CUDA build of ember.\n";
    if (!json.empty()) eb::write_json(json, "bench_gemm", eb::gpu_header(device), {});  // no tables
    return 0;
  }
  std::string why;
  if (!ember::cuda::device_supported(device, &why)) {
    std::cout << eb::gpu_header(device) << "bench_gemm: " << why << "\n";
    return 1;
  }
  ember::cuda::set_device(device);
  const std::string header = eb::gpu_header(device);
  std::cout << header;
  if (const char* o = std::getenv("NVIDIA_TF32_OVERRIDE")) {
    std::cout << "  NVIDIA_TF32_OVERRIDE=" << o << " is set: it changes what cuBLAS FP32 computes\n";
  }
  std::cout << "  method: CUDA events, L2 flushed before every run, median of 5-20 runs "
               "(3-5 with --quick); each kernel checked against cuBLAS before it is timed, "
               "tolerance rtol * (|ref| + sqrt(K)) with rtol "
            << kRtolFp32 << " (FP32) and " << kRtolTf32 << " (TF32, vs cuBLAS TF32)\n\n";

  std::vector<Shape> shapes_to_run;
  if (shapes != "mnist") {
    for (int n : sizes) shapes_to_run.push_back({"square", n, n, n});
  }
  if (shapes != "squares") {
    for (const Shape& s : mnist_shapes()) shapes_to_run.push_back(s);
  }

  const Cublas cublas;
  const bool tf32_supported = gemm::tf32_mma_supported(device);
  std::vector<eb::Table> tables;
  eb::Table summary("Summary: the fastest FP32 rung per shape, and what ember's training path uses",
                    {"shape", "what", "best FP32 rung", "% cuBLAS FP32", "08 tf32: % cuBLAS TF32",
                     "ember training path"});
  bool failed = false;
  double best_pct_4096 = -1.0, tf32_pct_4096 = -1.0;
  for (const Shape& s : shapes_to_run) {
    ShapeResult r = run_shape(s, kernels, cublas, quick, tf32_supported);
    r.table.print(std::cout);
    std::cout << "\n" << std::flush;
    failed = failed || r.failed;
    const double best_pct = r.best_rung ? 100.0 * r.cublas_ms / r.best_ms : -1.0;
    const double tf32_pct = r.tf32_rung_ms > 0 ? 100.0 * r.cublas_tf32_ms / r.tf32_rung_ms : -1.0;
    // ember's matmul calls cuBLAS unless set_gemm_backend(Ember) selects rung 09.
    std::string path = "cuBLAS (rung 09 with GemmBackend::Ember)";
    if (best_pct > 100.0) path += " (rung " + rung_name(r.best_rung).substr(0, 2) + " is faster here; not wired in)";
    summary.add_row({s.label(), s.what, r.best_rung ? rung_name(r.best_rung) : "-",
                     best_pct >= 0 ? eb::fmt(best_pct, 1) : "-",
                     tf32_pct >= 0 ? eb::fmt(tf32_pct, 1) : "-", path});
    if (s.what == "square" && s.M == 4096) {
      best_pct_4096 = best_pct;
      tf32_pct_4096 = tf32_pct;
    }
    tables.push_back(std::move(r.table));
  }
  summary.print(std::cout);
  tables.push_back(summary);
  if (best_pct_4096 >= 0 || tf32_pct_4096 >= 0) {
    eb::Table goals("Goals at 4096 (issue 6)", {"goal", "measured", "met"});
    if (best_pct_4096 >= 0) {
      goals.add_row({"best FP32 rung >= 90% of cuBLAS SGEMM", eb::fmt(best_pct_4096, 1) + "%",
                     best_pct_4096 >= 90.0 ? "yes" : "no"});
    }
    if (tf32_pct_4096 >= 0) {
      goals.add_row({"08 tf32 >= 70% of cuBLAS TF32", eb::fmt(tf32_pct_4096, 1) + "%",
                     tf32_pct_4096 >= 70.0 ? "yes" : "no"});
    }
    std::cout << "\n";
    goals.print(std::cout);
    tables.push_back(goals);
  }
  if (!json.empty()) {
    eb::write_json(json, "bench_gemm", header, tables);
    std::cout << "\nwrote " << json << "\n";
  }
  if (failed) std::cout << "\nbench_gemm: at least one kernel FAILED its check (see the tables)\n";
  return failed ? 1 : 0;
}
#endif  // !EMBER_CUDA_EMULATED

#ifdef EMBER_CUDA_EMULATED
// ---- in the emulation build: count each rung's memory traffic ---------------------------------

// A count per output element: whole numbers as they are, fractions with up to 3 decimals.
std::string per_output(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return std::to_string(std::llround(v));
  std::string t = eb::fmt(v, 3);
  while (t.back() == '0') t.pop_back();
  return t;
}

std::string checker_names(unsigned mask) {
  namespace emu = ember::emu;
  const std::pair<unsigned, const char*> names[] = {{emu::kMemcheck, "memcheck"},
                                                    {emu::kRacecheck, "racecheck"},
                                                    {emu::kSynccheck, "synccheck"},
                                                    {emu::kInitcheck, "initcheck"},
                                                    {emu::kHostcheck, "hostcheck"}};
  std::string out;
  for (const auto& [bit, name] : names) {
    if (mask & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out.empty() ? "none" : out;
}

// The first line of an error message (a checker's report goes on for several).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

int run_emulated(const Options& o) {
  namespace emu = ember::emu;
  std::cout << "ember bench_gemm --emulated: the SGEMM ladder's memory traffic on the CUDA "
               "emulator, row-major C[M,N] = A[M,K] @ B[K,N], float32\n";
  const std::string header = eb::gpu_header(o.device);
  std::cout << header;
  if (!emu::instrumented()) {
    std::cout << "bench_gemm: the kernels were compiled without the emulator's access "
                 "instrumentation (EMBER_EMULATOR_INSTRUMENT=OFF): there is nothing to count\n";
    return 1;
  }
  std::cout << "  method: each rung runs once with access counting on "
               "(ember::emu::set_access_counting); every load and store of the kernel's code is "
               "counted as the compiler emitted it (a float4 is one access of 16 bytes, a value "
               "kept in a register is none), divided by M * N. C is checked against a float64 "
               "CPU product, tolerance "
            << kRtolFp32 << " * (|ref| + sqrt(K)) (rung 08, TF32: " << kRtolTf32
            << "). Checkers in force: " << checker_names(emu::checks())
            << " (EMBER_EMULATOR_CHECKS; the counts do not depend on them)\n\n";

  std::vector<int> sizes = o.sizes;
  if (sizes.empty()) sizes = {o.quick ? 128 : 256};
  std::vector<eb::Table> tables;
  bool failed = false;
  for (const int n : sizes) {
    const Shape s{"square", n, n, n};
    const size_t nA = static_cast<size_t>(s.M) * s.K, nB = static_cast<size_t>(s.K) * s.N,
                 nC = static_cast<size_t>(s.M) * s.N;
    std::vector<float> hA(nA), hB(nB), ref(nC);
    std::mt19937 rng(2024);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    for (float& x : hA) x = uni(rng);
    for (float& x : hB) x = uni(rng);
    for (int i = 0; i < s.M; ++i) {  // the float64 reference, every entry
      std::vector<double> row(s.N, 0.0);
      for (int k = 0; k < s.K; ++k) {
        const double a = hA[static_cast<size_t>(i) * s.K + k];
        const float* b = &hB[static_cast<size_t>(k) * s.N];
        for (int j = 0; j < s.N; ++j) row[j] += a * b[j];
      }
      for (int j = 0; j < s.N; ++j)
        ref[static_cast<size_t>(i) * s.N + j] = static_cast<float>(row[j]);
    }
    DeviceBuffer dA(nA), dB(nB), dC(nC);
    EMBER_CUDA_CHECK(cudaMemcpy(dA.ptr, hA.data(), nA * sizeof(float), cudaMemcpyHostToDevice));
    EMBER_CUDA_CHECK(cudaMemcpy(dB.ptr, hB.data(), nB * sizeof(float), cudaMemcpyHostToDevice));

    eb::Table table(s.label() + " on the emulator: memory traffic per output element",
                    {"kernel", "global loads", "global stores", "shared loads", "shared stores",
                     "global bytes", "rung 01 / this", "check (err/tol)"});
    double bytes01 = 0.0;
    double seconds = 0.0;
    for (const Rung& r : kRungs) {
      if (std::find(o.kernels.begin(), o.kernels.end(), r.number) == o.kernels.end()) continue;
      EMBER_CUDA_CHECK(cudaMemset(dC.ptr, 0xff, nC * sizeof(float)));  // NaN everywhere
      const auto t0 = std::chrono::steady_clock::now();
      emu::set_access_counting(true);
      try {
        r.launch(dA.ptr, dB.ptr, dC.ptr, s.M, s.N, s.K, 0);
        EMBER_CUDA_CHECK(cudaDeviceSynchronize());
      } catch (const std::exception& e) {  // a checker stopped the kernel
        emu::set_access_counting(false);
        table.add_row({r.name, "-", "-", "-", "-", "-", "-", "FAIL: " + first_line(e.what())});
        failed = true;
        continue;
      }
      const emu::AccessCounts c = emu::access_counts();
      emu::set_access_counting(false);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const Check check = compare(to_host(dC.ptr, nC), ref, s.K, r.tf32 ? kRtolTf32 : kRtolFp32);
      failed = failed || !check.ok;
      const double per = 1.0 / static_cast<double>(nC);
      const double bytes = static_cast<double>(c.global_reads.bytes + c.global_writes.bytes) * per;
      if (r.number == 1) bytes01 = bytes;
      table.add_row({r.name, per_output(c.global_reads.accesses * per),
                     per_output(c.global_writes.accesses * per),
                     per_output(c.shared_reads.accesses * per),
                     per_output(c.shared_writes.accesses * per), per_output(bytes),
                     bytes01 > 0 ? eb::fmt(bytes01 / bytes, 1) + "x" : "-", check.cell()});
    }
    table.print(std::cout);
    std::cout << "  (" << eb::fmt(seconds, 1) << " s of emulation for this shape)\n\n"
              << std::flush;
    tables.push_back(std::move(table));
  }
  std::cout << "What the counts do not show: coalescing (rung 02 makes rung 01's loads, but per "
               "step k a warp's loads touch 5 32-byte sectors instead of 33), shared-memory bank "
               "conflicts, and latency hiding (rung 07 against rung 06): those are timing, for a "
               "GPU (bench/RESULTS.md).\n";
  if (!o.json.empty()) {
    eb::write_json(o.json, "bench_gemm", header, tables);
    std::cout << "\nwrote " << o.json << "\n";
  }
  if (failed) std::cout << "\nbench_gemm: at least one kernel FAILED its check (see the tables)\n";
  return failed ? 1 : 0;
}
#endif  // EMBER_CUDA_EMULATED

int run(int argc, char** argv) {
  CLI::App app{"ember bench_gemm: the SGEMM ladder (bench/gemm/) against cuBLAS FP32 and TF32"};
  Options o;
  app.add_option("--sizes", o.sizes,
                 "square sizes M = N = K (default 1024 2048 4096 8192; --quick: 1024 2048; "
                 "--emulated: 256, --quick 128)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--shapes", o.shapes, "which shapes: all, squares or mnist")
      ->check(CLI::IsMember({"all", "squares", "mnist"}));
  app.add_option("--kernels", o.kernels, "rungs to run, 1-9 (cuBLAS always runs)")
      ->check(CLI::Range(1, 9));
  app.add_option("--json", o.json, "also write the tables to this JSON file");
  app.add_flag("--quick", o.quick, "a short run: fewer timed runs, sizes 1024 and 2048");
  app.add_option("--device", o.device, "the GPU to run on")->check(CLI::NonNegativeNumber);
  app.add_flag("--emulated", o.emulated,
               "emulation build only: count each rung's memory traffic per output element on the "
               "CPU emulator instead of timing on a GPU");
  CLI11_PARSE(app, argc, argv);
#ifdef EMBER_CUDA_EMULATED
  if (o.emulated) return run_emulated(o);
  std::cout << "ember bench_gemm: the SGEMM ladder, row-major C[M,N] = A[M,K] @ B[K,N], float32\n"
            << "bench_gemm: this is the emulation build (-DEMBER_CUDA=EMULATE): the kernels run on "
               "the CPU, so there is nothing to time against cuBLAS (which it does not have).\n"
               "Run `bench_gemm --emulated` for what the emulator can measure: each rung's memory "
               "traffic per output element (global and shared loads and stores, bytes).\n";
  if (!o.json.empty()) eb::write_json(o.json, "bench_gemm", eb::gpu_header(o.device), {});
  return 0;
#else
  if (o.emulated) {
    std::cout << "bench_gemm: --emulated counts memory traffic on the CUDA emulator, which needs "
                 "the emulation build (cmake -DEMBER_CUDA=EMULATE); this build runs on a GPU "
                 "(run bench_gemm without --emulated)\n";
    return 1;
  }
  return run_on_gpu(o);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_gemm: error: " << e.what() << "\n";
    return 1;
  }
}
