// The SGEMM ladder's FP32 rungs (bench/gemm/01_naive.cuh to 07_warp_tiles.cuh) against a float64
// CPU GEMM, at the shapes where a tiled kernel goes wrong: M, N and K that are not multiples of
// any tile (1, 7, 33, 65, 130 mixed), K smaller than one step along K (and K = 0), single rows and
// columns, and for rungs 06 and 07 their float4 path both taken (K and N multiples of 4, aligned
// operands) and not taken (an odd N or K, or operands one float past a 16-byte boundary). C is
// filled with NaN first, so an output a kernel never writes fails the comparison.
//
// In the emulation build (-DEMBER_CUDA=EMULATE) the kernels run on the CPU under memcheck,
// racecheck, synccheck and initcheck (docs/emulator.md): a read past an operand, a missing
// __syncthreads between staging a tile and reading it, a barrier not every thread reaches, or a
// read of an unwritten byte (the operands are allocated exactly, and the float before an offset
// operand is never written) fails the launch with a report. There a second test checks the
// traffic the emulator counts against what the rungs' comments promise (bench_gemm --emulated
// prints the same numbers). In a CUDA build the same comparison runs on the GPU (and prints
// "SKIPPED: ..." without one); rung 08 (TF32 tensor cores) is validated by bench_gemm there.
// The kernels are compiled in tests/kernels/gemm_ladder_kernels.cu.
#ifdef EMBER_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "tests/cuda_test_util.h"
#ifdef EMBER_CUDA_EMULATED
#include "kernels/emulator/emulator.h"
#endif

namespace ember_test::gemm_ladder {
// tests/kernels/gemm_ladder_kernels.cu
int run_rung(int rung, const float* A, const float* B, float* C, int M, int N, int K);
bool float4_path(const float* A, const float* B, const float* C, int N, int K);
}  // namespace ember_test::gemm_ladder

namespace {

namespace ladder = ember_test::gemm_ladder;

constexpr int kRungs = 7;  // the FP32 rungs; 08 needs tensor cores

// A device buffer of `n` floats that starts `offset` floats into its allocation of exactly
// n + offset floats: memcheck catches any access past the end, initcheck any read of the
// `offset` floats before the start (they are never written).
struct Operand {
  float* base = nullptr;
  float* p = nullptr;
  size_t n = 0;
  Operand(size_t count, int offset) : n(count) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&base), (count + offset + 1) * sizeof(float)) ==
            cudaSuccess);
    p = base + offset;
  }
  ~Operand() { cudaFree(base); }
  Operand(const Operand&) = delete;
  Operand& operator=(const Operand&) = delete;
  void set(const std::vector<float>& v) {
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice) ==
            cudaSuccess);
  }
  void fill_nan() { REQUIRE(cudaMemset(p, 0xff, n * sizeof(float)) == cudaSuccess); }
  std::vector<float> get() const {
    std::vector<float> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

struct Shape {
  int M, N, K;
  int offset;  // floats A, B and C start past a 16-byte boundary (1: the float4 path is refused)
  std::string label() const {
    std::ostringstream os;
    os << "[" << M << "," << K << "] @ [" << K << "," << N << "]";
    if (offset) os << " at +" << offset << " float";
    return os.str();
  }
};

// C = A @ B in float64, and for each entry sum_k |a_ik * b_kj|, which bounds the float32 rounding
// error of any order of summation: |fl(c) - c| <= K * 2^-24 * sum |a b| (to first order).
void reference(const std::vector<float>& A, const std::vector<float>& B, const Shape& s,
               std::vector<double>& C, std::vector<double>& mag) {
  C.assign(static_cast<size_t>(s.M) * s.N, 0.0);
  mag.assign(C.size(), 0.0);
  for (int i = 0; i < s.M; ++i) {
    for (int k = 0; k < s.K; ++k) {
      const double a = A[static_cast<size_t>(i) * s.K + k];
      for (int j = 0; j < s.N; ++j) {
        const double p = a * B[static_cast<size_t>(k) * s.N + j];
        C[static_cast<size_t>(i) * s.N + j] += p;
        mag[static_cast<size_t>(i) * s.N + j] += std::fabs(p);
      }
    }
  }
}

// Runs `rung` on fresh operands and compares every entry of C; returns "" or what went wrong.
std::string check_rung(int rung, const Shape& s, bool* vec_path = nullptr) {
  std::mt19937 rng(1000 * s.M + 100 * s.N + s.K);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> hA(static_cast<size_t>(s.M) * s.K), hB(static_cast<size_t>(s.K) * s.N);
  for (float& x : hA) x = uni(rng);
  for (float& x : hB) x = uni(rng);
  std::vector<double> ref, mag;
  reference(hA, hB, s, ref, mag);

  Operand A(hA.size(), s.offset), B(hB.size(), s.offset), C(ref.size(), s.offset);
  A.set(hA);
  B.set(hB);
  C.fill_nan();
  if (vec_path) *vec_path = ladder::float4_path(A.p, B.p, C.p, s.N, s.K);
  int err = 0;
  try {
    err = ladder::run_rung(rung, A.p, B.p, C.p, s.M, s.N, s.K);
  } catch (const std::exception& e) {  // a checker's report (emulation build)
    return std::string("the launch failed: ") + e.what();
  }
  if (err != 0) return "the launch returned CUDA error " + std::to_string(err);
  const std::vector<float> got = C.get();
  int bad = 0;
  std::ostringstream first;
  for (size_t e = 0; e < got.size(); ++e) {
    const double tol = 2.0 * s.K * std::ldexp(1.0, -24) * mag[e];
    if (!(std::fabs(got[e] - ref[e]) <= tol)) {  // NaN (never written) fails too
      if (bad++ == 0)
        first << "C[" << e / s.N << ", " << e % s.N << "] = " << got[e] << ", expected " << ref[e]
              << " (tolerance " << tol << ")";
    }
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(got.size()) + " entries wrong, first " +
         first.str();
}

#ifdef EMBER_CUDA_EMULATED
// Every memory checker on (hostcheck kept as the run set it) for one scope.
struct AllMemoryCheckers {
  unsigned saved = ember::emu::checks();
  AllMemoryCheckers() {
    ember::emu::set_checks(saved | ember::emu::kMemcheck | ember::emu::kRacecheck |
                           ember::emu::kSynccheck | ember::emu::kInitcheck);
  }
  ~AllMemoryCheckers() { ember::emu::set_checks(saved); }
};
#endif

}  // namespace

TEST_CASE("gemm ladder: the FP32 rungs match a float64 GEMM at odd shapes", "[cuda][gemm_ladder]") {
  if (ember::test::skip_without_gpu()) return;
#ifdef EMBER_CUDA_EMULATED
  REQUIRE(ember::emu::instrumented());  // memcheck, racecheck and initcheck need the hooks
  AllMemoryCheckers checkers;
#endif
  // {M, N, K, offset}. Tiles: rungs 01-03 32 x 32 (K step 32), 04 64 x 64 (K step 8), 05-07
  // 128 x 128 (K step 8). The float4 path (06, 07) needs K % 4 == 0, N % 4 == 0 and aligned
  // operands: taken where all three hold (marked v), refused otherwise.
  const std::vector<Shape> shapes = {
      {1, 1, 1, 0},      // one output
      {7, 33, 5, 0},     // K below every K step
      {33, 7, 65, 0},    // N below a warp; K = 2 K steps of 32 plus one
      {65, 130, 33, 0},  // every dimension one past a tile edge
      {130, 65, 7, 0},   // two 128-row block tiles, the second one 2 rows deep
      {1, 130, 130, 0},  // one row
      {130, 1, 33, 0},   // one column
      {7, 33, 0, 0},     // K = 0: C is all zeros
      {65, 132, 36, 0},  // v: float4 path, partial tiles in M and K
      {33, 68, 4, 0},    // v: float4 path, K = 4 (half a K step)
      {65, 132, 36, 1},  // the same shape one float off 16-byte alignment: scalar path
  };
  for (const Shape& s : shapes) {
    for (int rung = 1; rung <= kRungs; ++rung) {
      INFO("rung " << rung << ", " << s.label());
      bool vec = false;
      CHECK(check_rung(rung, s, &vec) == "");
      CHECK(vec == (s.K % 4 == 0 && s.N % 4 == 0 && s.offset == 0));
    }
  }
}

#ifdef EMBER_CUDA_EMULATED
// What each rung's comment promises about its memory traffic, as the emulator counts it (the
// numbers bench_gemm --emulated prints). At M = N = K = 128 every tile is full, so the counts are
// exact. Per output element:
//   global loads    2K floats in 01 and 02 (a row of A and a column of B); 2K/32 in 03 (32 x 32
//                   tiles); K/32 in 04 (a 64 x 64 block tile); K/64 in 05, and in 06 and 07 the
//                   same bytes as K/256 float4 loads;
//   global stores   one float, in 06 and 07 one float4 per four outputs;
//   shared loads    2K in 03; 9K/8 in 04 (per k, one B value for 8 outputs and their 8 A values);
//                   K/4 in 05 (8 + 8 values for 64 outputs); K/16 float4 loads in 06 and 07;
//   shared stores   one per global load, except in 06 and 07, which store the transposed A
//                   tile one float at a time: 5 stores (4 + one float4) for 2 global float4 loads.
// A float4 counts as one access because the test kernels are compiled without GCC's scalar
// replacement of aggregates (tests/CMakeLists.txt), which would split it into four.
TEST_CASE("gemm ladder: the emulator counts the traffic each rung's comment promises",
          "[cuda][gemm_ladder]") {
  if (ember::test::skip_without_gpu()) return;  // CUDA_VISIBLE_DEVICES=-1 hides the emulator's
  namespace emu = ember::emu;
  REQUIRE(emu::instrumented());
  const int n = 128;
  const double K = n, outputs = static_cast<double>(n) * n;
  struct Expect {
    double gl, gl_bytes, gs, gs_bytes, sl, sl_bytes, ss, ss_bytes;  // per output element
  };
  const Expect expect[kRungs] = {
      {2 * K, 8 * K, 1, 4, 0, 0, 0, 0},
      {2 * K, 8 * K, 1, 4, 0, 0, 0, 0},
      {K / 16, K / 4, 1, 4, 2 * K, 8 * K, K / 16, K / 4},
      {K / 32, K / 8, 1, 4, 9 * K / 8, 9 * K / 2, K / 32, K / 8},
      {K / 64, K / 16, 1, 4, K / 4, K, K / 64, K / 16},
      {K / 256, K / 16, 0.25, 4, K / 16, K, 5 * K / 512, K / 16},
      {K / 256, K / 16, 0.25, 4, K / 16, K, 5 * K / 512, K / 16},
  };
  std::vector<float> ones(static_cast<size_t>(n) * n, 1.0f);
  Operand A(ones.size(), 0), B(ones.size(), 0), C(ones.size(), 0);
  A.set(ones);
  B.set(ones);
  for (int rung = 1; rung <= kRungs; ++rung) {
    INFO("rung " << rung);
    emu::set_access_counting(true);
    REQUIRE(ladder::run_rung(rung, A.p, B.p, C.p, n, n, n) == 0);
    const emu::AccessCounts c = emu::access_counts();
    emu::set_access_counting(false);
    const Expect& e = expect[rung - 1];
    CHECK(c.launches == 1);
    CHECK(c.global_reads.accesses / outputs == Approx(e.gl));
    CHECK(c.global_reads.bytes / outputs == Approx(e.gl_bytes));
    CHECK(c.global_writes.accesses / outputs == Approx(e.gs));
    CHECK(c.global_writes.bytes / outputs == Approx(e.gs_bytes));
    CHECK(c.shared_reads.accesses / outputs == Approx(e.sl));
    CHECK(c.shared_reads.bytes / outputs == Approx(e.sl_bytes));
    CHECK(c.shared_writes.accesses / outputs == Approx(e.ss));
    CHECK(c.shared_writes.bytes / outputs == Approx(e.ss_bytes));
    const std::vector<float> got = C.get();  // all ones: every entry is exactly K
    CHECK(std::count(got.begin(), got.end(), static_cast<float>(n)) ==
          static_cast<long>(got.size()));
  }
}
#endif

#endif  // EMBER_WITH_CUDA
