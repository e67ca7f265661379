// The SGEMM ladder (bench/gemm/): the FP32 rungs (01_naive.cuh to 07_warp_tiles.cuh) against a
// float64 CPU GEMM, and rung 08 (TF32 tensor cores, 08_tf32_mma.cuh) against a float64 GEMM of
// its inputs rounded to TF32, at the shapes where a tiled kernel goes wrong: M, N and K that are
// not multiples of any tile (1, 7, 33, 65, 130 mixed), K smaller than one step along K (and K = 0),
// single rows and columns, and for rungs 06 and 07 their float4 path both taken (K and N multiples
// of 4, aligned operands) and not taken (an odd N or K, or operands one float past a 16-byte
// boundary). C is filled with NaN first, so an output a kernel never writes fails the comparison.
//
// In the emulation build (-DEMBER_CUDA=EMULATE) the kernels run on the CPU under memcheck,
// racecheck, synccheck and initcheck (docs/emulator.md): a read past an operand, a missing
// __syncthreads between staging a tile and reading it, a barrier not every thread reaches, or a
// read of an unwritten byte (the operands are allocated exactly, and the float before an offset
// operand is never written) fails the launch with a report. There a second test checks the
// traffic the emulator counts against what the rungs' comments promise (bench_gemm --emulated
// prints the same numbers). Rung 08's WMMA fragments are the emulator's there
// (kernels/emulator/mma.h: TF32 rounding, float32 accumulation, warp-collective checks). In a
// CUDA build the same comparisons run on the GPU (and print "SKIPPED: ..." without one, or for
// rung 08 on a GPU older than sm_80). The kernels are compiled in
// tests/kernels/gemm_ladder_kernels.cu.
#ifdef EMBER_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
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

constexpr int kRungs = 7;  // the FP32 rungs; 08 is TF32
constexpr int kTf32Rung = 8;

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

// TF32 as the tensor cores' input conversion (cvt.rna.tf32.f32) makes it, from the definition
// rather than from bits: x on the grid of multiples of its TF32 ulp (10 mantissa bits, so
// 2^(e - 11) for |x| = m * 2^e, m in [0.5, 1); a fixed 2^-136 below the normal range), rounded to
// nearest with ties away from zero (std::round). Rung 08 rounds its inputs with
// wmma::__float_to_tf32 before they reach the tensor cores.
float tf32_round(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  int e = 0;
  std::frexp(x, &e);
  const int ulp_exp = std::max(e - 11, -136);
  const double r = std::ldexp(std::round(std::ldexp(static_cast<double>(x), -ulp_exp)), ulp_exp);
  if (std::fabs(r) > std::numeric_limits<float>::max()) return std::copysign(INFINITY, x);
  return static_cast<float>(r);
}

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
//
// Rung 08's reference is the float64 product of the inputs rounded to TF32. Two TF32 values have
// 11 significant bits each, so their product is exact in float32 (and float64): the kernel's only
// error is then its float32 summation, in whatever order its tensor cores add (on a GPU, possibly
// with truncating adders), and the FP32 rungs' tolerance below bounds it as well: K additions,
// each off by at most one float32 ulp of a partial sum (2^-23 relative), the partial sums bounded
// by sum |a b|. The TF32 rounding itself moves a product by up to 2^-10 relative, far beyond that:
// `*beyond_fp32` counts the entries that differ from the float64 product of the unrounded inputs
// by more than the tolerance, which shows that the comparison can tell TF32 from FP32.
std::string check_rung(int rung, const Shape& s, bool* vec_path = nullptr,
                       int* beyond_fp32 = nullptr) {
  std::mt19937 rng(1000 * s.M + 100 * s.N + s.K);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> hA(static_cast<size_t>(s.M) * s.K), hB(static_cast<size_t>(s.K) * s.N);
  for (float& x : hA) x = uni(rng);
  for (float& x : hB) x = uni(rng);
  std::vector<double> ref, mag, fp32_ref, fp32_mag;
  if (rung == kTf32Rung) {
    std::vector<float> rA = hA, rB = hB;
    for (float& x : rA) x = tf32_round(x);
    for (float& x : rB) x = tf32_round(x);
    reference(rA, rB, s, ref, mag);
    reference(hA, hB, s, fp32_ref, fp32_mag);
  } else {
    reference(hA, hB, s, ref, mag);
  }

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
  if (beyond_fp32) *beyond_fp32 = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    const double tol = 2.0 * s.K * std::ldexp(1.0, -24) * mag[e];
    if (beyond_fp32 && !fp32_ref.empty() && std::fabs(got[e] - fp32_ref[e]) > tol) ++*beyond_fp32;
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

TEST_CASE("gemm ladder: rung 08 (TF32 tensor cores) matches a GEMM of TF32-rounded inputs",
          "[cuda][gemm_ladder]") {
  if (ember::test::skip_without_gpu()) return;
#ifdef EMBER_CUDA_EMULATED
  REQUIRE(ember::emu::instrumented());
  AllMemoryCheckers checkers;
#else
  int device = 0, major = 0;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess);
  if (major < 8) {
    std::cout << "SKIPPED: rung 08 needs TF32 tensor cores (sm_80 or newer); this GPU is sm_"
              << major << "x\n";
    return;
  }
#endif
  // {M, N, K, offset}. Rung 08: 128 x 128 block tiles, K step 32 (four mma_sync steps of 8), the
  // float4 path (v) under the same conditions as rungs 06 and 07, scalar loads otherwise.
  const std::vector<Shape> shapes = {
      {1, 1, 1, 0},       // one output: 7 of 8 k of the one mma step, 127 x 127 of C, are padding
      {7, 33, 5, 0},      // K inside one mma step
      {33, 7, 65, 0},     // K = 2 K steps of 32 plus one; N below one 16-column fragment
      {65, 130, 33, 0},   // every dimension one past a tile edge
      {130, 65, 7, 0},    // two 128-row block tiles, the second one 2 rows deep
      {1, 130, 130, 0},   // one row
      {130, 1, 33, 0},    // one column
      {7, 33, 0, 0},      // K = 0: C is all zeros
      {65, 132, 36, 0},   // v: float4 path, partial tiles in M and K
      {33, 68, 4, 0},     // v: K = 4, half an mma step
      {129, 260, 40, 0},  // v: 2 x 3 block tiles, the last row and columns partial
      {65, 132, 36, 1},   // one float off 16-byte alignment: scalar path
  };
  for (const Shape& s : shapes) {
    INFO("rung 08, " << s.label());
    bool vec = false;
    int beyond_fp32 = 0;
    CHECK(check_rung(kTf32Rung, s, &vec, &beyond_fp32) == "");
    CHECK(vec == (s.K % 4 == 0 && s.N % 4 == 0 && s.offset == 0));
    // The FP32 product of the unrounded inputs falls outside the tolerance somewhere: the
    // comparison tells a kernel that rounds to TF32 from one that does not.
    if (s.K > 0) CHECK(beyond_fp32 > 0);
  }
}

#ifdef EMBER_CUDA_EMULATED
// What each rung's comment promises about its memory traffic, as the emulator counts it (the
// numbers bench_gemm --emulated prints). At M = N = K = 128 every tile is full, so the counts are
// exact. Per output element:
//   global loads    2K floats in 01 and 02 (a row of A and a column of B); 2K/32 in 03 (32 x 32
//                   tiles); K/32 in 04 (a 64 x 64 block tile); K/64 in 05, and in 06, 07 and 08
//                   the same bytes as K/256 float4 loads;
//   global stores   one float, in 06 and 07 one float4 per four outputs;
//   shared loads    2K in 03; 9K/8 in 04 (per k, one B value for 8 outputs and their 8 A values);
//                   K/4 in 05 (8 + 8 values for 64 outputs); K/16 float4 loads in 06 and 07;
//                   in 08, 3K/64 fragment elements (per step of 8 along k, a warp loads 4 A and 2
//                   B fragments of 128 elements for its 64 x 32 outputs) and 1 (the epilogue
//                   reads each output back from its warp's scratch tile);
//   shared stores   one per global load, except in 06 and 07, which store the transposed A
//                   tile one float at a time: 5 stores (4 + one float4) for 2 global float4 loads,
//                   and in 08 one per global float4 load plus 1 (store_matrix_sync's scratch).
// A float4 counts as one access because the test kernels are compiled without GCC's scalar
// replacement of aggregates (tests/CMakeLists.txt), which would split it into four; a WMMA load
// or store is one 4-byte access per element (kernels/emulator/mma.h).
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
  const Expect expect[kTf32Rung] = {
      {2 * K, 8 * K, 1, 4, 0, 0, 0, 0},
      {2 * K, 8 * K, 1, 4, 0, 0, 0, 0},
      {K / 16, K / 4, 1, 4, 2 * K, 8 * K, K / 16, K / 4},
      {K / 32, K / 8, 1, 4, 9 * K / 8, 9 * K / 2, K / 32, K / 8},
      {K / 64, K / 16, 1, 4, K / 4, K, K / 64, K / 16},
      {K / 256, K / 16, 0.25, 4, K / 16, K, 5 * K / 512, K / 16},
      {K / 256, K / 16, 0.25, 4, K / 16, K, 5 * K / 512, K / 16},
      {K / 256, K / 16, 1, 4, 3 * K / 64 + 1, 3 * K / 16 + 4, K / 256 + 1, K / 16 + 4},
  };
  std::vector<float> ones(static_cast<size_t>(n) * n, 1.0f);
  Operand A(ones.size(), 0), B(ones.size(), 0), C(ones.size(), 0);
  A.set(ones);
  B.set(ones);
  for (int rung = 1; rung <= kTf32Rung; ++rung) {
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
    const std::vector<float> got = C.get();  // all ones (TF32 too): every entry is exactly K
    CHECK(std::count(got.begin(), got.end(), static_cast<float>(n)) ==
          static_cast<long>(got.size()));
  }
}
#endif

#endif  // EMBER_WITH_CUDA
