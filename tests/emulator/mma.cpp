// The emulated tensor-core fragments (nvcuda::wmma, kernels/emulator/mma.h): __float_to_tf32's
// rounding, the documented lane mapping, one m16n16k8 mma_sync in every layout against a CPU
// reference, element-wise work on x[], and the reports for a misaligned tile, lanes that do not
// call together, and a missing __syncwarp. The kernels are in tests/emulator/kernels_mma.cu.
// Emulation build only (on a GPU, rung 8 of the GEMM ladder exercises the real WMMA).
#ifdef EMBER_CUDA_EMULATED

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "kernels/emulator/emulator.h"
#include "tests/emulator/test_util.h"

namespace ember_test::wmma_kernels {
// tests/emulator/kernels_mma.cu
int launch_tile(const float* A, bool a_col, int lda, const float* B, bool b_col, int ldb,
                const float* C, float* D, int ldc, bool c_col, int ksteps, bool round);
int launch_lanes(const float* A, const float* B, const float* C, float* out);
int launch_elementwise(const float* C, float* D, float* filled, float v);
int launch_tf32(const float* in, float* out, int n);
int launch_shared_roundtrip(const float* C, float* out, bool sync);
int plant_misaligned_load(const float* A, int offset, unsigned ldm, float* out);
int plant_divergent(const float* A, const float* B, float* D, int bug);
int plant_partial_warp(const float* A, float* out);
}  // namespace ember_test::wmma_kernels

namespace {

using ember_test::Checks;
using ember_test::contains;
using ember_test::DeviceBuffer;

namespace emu = ember::emu;
namespace k = ember_test::wmma_kernels;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// cvt.rna.tf32.f32 written independently of the emulator: the float's exact value, rounded on the
// grid of multiples of its TF32 ulp (2^(e - 10)), ties away from zero (std::round does that).
float tf32_rna(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  int e = 0;
  std::frexp(x, &e);                                // |x| = m * 2^e, m in [0.5, 1)
  const int ulp_exp = std::max(e - 11, -126 - 10);  // 10 mantissa bits; subnormals: a fixed grid
  const double r = std::ldexp(std::round(std::ldexp(static_cast<double>(x), -ulp_exp)), ulp_exp);
  if (std::fabs(r) > std::numeric_limits<float>::max()) return std::copysign(INFINITY, x);
  return static_cast<float>(r);
}
float tf32_trunc(float x) {  // what the tensor core reads of an unrounded float
  return std::isfinite(x) ? from_bits(bits_of(x) & ~0x1fffu) : x;
}

std::string last_report() { return emu::last_report(); }

// What every report here names: the checker, the kernel and the launch site in kernels_mma.cu.
void check_report(const std::string& r, const std::string& checker, const std::string& kernel) {
  INFO(r);
  CHECK(contains(r, checker));
  CHECK(contains(r, "in kernel " + kernel));
  CHECK(contains(r, "launched at tests/emulator/kernels_mma.cu:"));
}

}  // namespace

TEST_CASE("emulator wmma: __float_to_tf32 rounds to nearest with ties away from zero",
          "[emulator][wmma]") {
  // {input, cvt.rna's answer}: the low 13 bits are dropped, half of their weight is 0x1000.
  const std::vector<std::pair<uint32_t, uint32_t>> cases = {
      {0x3f800000u, 0x3f800000u},  // 1: already TF32
      {0x3f800fffu, 0x3f800000u},  // just below the tie: down
      {0x3f801000u, 0x3f802000u},  // a tie, the kept part even: away from zero (even would stay)
      {0x3f803000u, 0x3f804000u},  // a tie, the kept part odd: away from zero
      {0xbf801000u, 0xbf802000u},  // a negative tie: away from zero, more negative
      {0x3f801001u, 0x3f802000u},  // just above the tie: up
      {0x3fffffffu, 0x40000000u},  // the carry goes into the exponent
      {0x7f7fefffu, 0x7f7fe000u},  // the largest float below the top tie stays finite
      {0x7f7fffffu, 0x7f800000u},  // FLT_MAX rounds to infinity
      {0x00001000u, 0x00002000u},  // a subnormal tie
      {0x00000fffu, 0x00000000u},  // a subnormal below half an ulp: zero
      {0x80000000u, 0x80000000u},  // -0
      {0x7f800000u, 0x7f800000u},  // infinity
      {0xff800000u, 0xff800000u},  // -infinity
  };
  std::vector<float> in;
  for (const auto& c : cases) in.push_back(from_bits(c.first));
  in.push_back(std::nanf(""));
  in.push_back(from_bits(0x7f800001u));  // a NaN whose payload is all in the dropped bits
  // and random floats of every magnitude, against the independent rounding above
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 4000; ++i) {
    const float f = from_bits(any_bits(rng));
    if (std::isfinite(f)) in.push_back(f);
  }
  DeviceBuffer<float> din(in), dout(in.size());
  REQUIRE(k::launch_tf32(din.p, dout.p, static_cast<int>(in.size())) == cudaSuccess);
  const std::vector<float> out = dout.get();
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("input 0x" << std::hex << cases[i].first);
    CHECK(bits_of(out[i]) == cases[i].second);
  }
  CHECK(std::isnan(out[cases.size()]));
  CHECK(std::isnan(out[cases.size() + 1]));
  int wrong = 0;
  for (size_t i = cases.size() + 2; i < in.size(); ++i) {
    if (bits_of(out[i]) != bits_of(tf32_rna(in[i])) || (bits_of(out[i]) & 0x1fffu) != 0) {
      if (wrong++ == 0) {
        INFO("input 0x" << std::hex << bits_of(in[i]) << " gave 0x" << bits_of(out[i])
                        << ", expected 0x" << bits_of(tf32_rna(in[i])));
        CHECK(false);
      }
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("emulator wmma: each fragment element belongs to the lane the mapping documents",
          "[emulator][wmma]") {
  // Element (r, c) of each tile holds its own index, so a lane's x[i] says where it came from.
  std::vector<float> A(16 * 8), B(8 * 16), C(16 * 16);
  for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i);
  for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(i);
  for (size_t i = 0; i < C.size(); ++i) C[i] = static_cast<float>(i);
  DeviceBuffer<float> dA(A), dB(B), dC(C), out(32 * 16);
  REQUIRE(k::launch_lanes(dA.p, dB.p, dC.p, out.p) == cudaSuccess);
  const std::vector<float> v = out.get();
  // The table in kernels/emulator/mma.h, with g = lane / 4 and t = lane % 4.
  std::vector<int> seen_a(128), seen_b(128), seen_c(256);
  for (int lane = 0; lane < 32; ++lane) {
    INFO("lane " << lane);
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int ar = g + 8 * (i % 2), ac = t + 4 * (i / 2);
      CHECK(v[lane * 16 + i] == static_cast<float>(ar * 8 + ac));
      const int br = t + 4 * (i % 2), bc = g + 8 * (i / 2);
      CHECK(v[lane * 16 + 4 + i] == static_cast<float>(br * 16 + bc));
      ++seen_a[static_cast<size_t>(v[lane * 16 + i])];
      ++seen_b[static_cast<size_t>(v[lane * 16 + 4 + i])];
    }
    for (int i = 0; i < 8; ++i) {
      const int cr = g + 8 * (i / 2 % 2), cc = 2 * t + i % 2 + 8 * (i / 4);
      CHECK(v[lane * 16 + 8 + i] == static_cast<float>(cr * 16 + cc));
      ++seen_c[static_cast<size_t>(v[lane * 16 + 8 + i])];
    }
  }
  // every element of every tile is held by exactly one lane
  CHECK(std::count(seen_a.begin(), seen_a.end(), 1) == 128);
  CHECK(std::count(seen_b.begin(), seen_b.end(), 1) == 128);
  CHECK(std::count(seen_c.begin(), seen_c.end(), 1) == 256);
}

TEST_CASE("emulator wmma: mma_sync matches a TF32 reference in every layout", "[emulator][wmma]") {
  Checks on(emu::kAllChecks & ~emu::kHostcheck);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
  for (int ksteps : {1, 2}) {
    const int K = 8 * ksteps;
    for (int layout = 0; layout < 8; ++layout) {
      const bool a_col = layout & 1, b_col = layout & 2, c_col = layout & 4;
      INFO("K " << K << ", A " << (a_col ? "col" : "row") << "-major, B " << (b_col ? "col" : "row")
                << "-major, C and D " << (c_col ? "col" : "row") << "-major");
      // Leading dimensions larger than the tile, multiples of 4 floats.
      const int lda = a_col ? 20 : K + 4, ldb = b_col ? K + 4 : 20, ldc = 24;
      std::vector<float> A(static_cast<size_t>(a_col ? K * lda : 16 * lda));
      std::vector<float> B(static_cast<size_t>(b_col ? 16 * ldb : K * ldb));
      std::vector<float> C(static_cast<size_t>(16 * ldc));
      for (float& x : A) x = uni(rng);
      for (float& x : B) x = uni(rng);
      for (float& x : C) x = uni(rng);
      const auto a_at = [&](int r, int kk) { return A[a_col ? kk * lda + r : r * lda + kk]; };
      const auto b_at = [&](int kk, int n) { return B[b_col ? n * ldb + kk : kk * ldb + n]; };
      const auto c_index = [&](int r, int n) { return c_col ? n * ldc + r : r * ldc + n; };
      DeviceBuffer<float> dA(A), dB(B), dC(C), dD(C.size());
      REQUIRE(k::launch_tile(dA.p, a_col, lda, dB.p, b_col, ldb, dC.p, dD.p, ldc, c_col, ksteps,
                             true) == cudaSuccess);
      const std::vector<float> D = dD.get();
      int wrong = 0;
      for (int r = 0; r < 16; ++r) {
        for (int n = 0; n < 16; ++n) {
          // The emulator's documented order: C, then k = 0, 1, ... in float32, each product of
          // two TF32 values exact. A GPU sums in its own order: within the bound below.
          float want = C[c_index(r, n)];
          double exact = want, mag = std::fabs(want);
          for (int kk = 0; kk < K; ++kk) {
            const float p = tf32_rna(a_at(r, kk)) * tf32_rna(b_at(kk, n));
            want = want + p;
            exact += static_cast<double>(p);
            mag += std::fabs(static_cast<double>(p));
          }
          const float got = D[c_index(r, n)];
          // K additions, each off by at most one float32 ulp of a partial sum <= mag.
          const bool ok = bits_of(got) == bits_of(want) &&
                          std::fabs(got - exact) <= K * std::ldexp(1.0, -23) * mag;
          if (!ok && wrong++ == 0) {
            INFO("D[" << r << "][" << n << "] = " << got << ", expected " << want);
            CHECK(false);
          }
        }
      }
      CHECK(wrong == 0);
      // store_matrix_sync leaves the padding between D's rows (or columns) alone (zero).
      int padding_written = 0;
      for (size_t i = 0; i < D.size(); ++i)
        padding_written += static_cast<int>(i % static_cast<size_t>(ldc)) >= 16 && D[i] != 0.0f;
      CHECK(padding_written == 0);
    }
  }
}

TEST_CASE("emulator wmma: mma_sync truncates what __float_to_tf32 did not round",
          "[emulator][wmma]") {
  // D = A @ I: with B the 8 x 16 identity (ones at (k, k)) and C = 0, D[r][c < 8] = A[r][c] as
  // the tensor core read it: rounded to nearest by __float_to_tf32, or its low 13 bits dropped.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> A(16 * 8), B(8 * 16, 0.0f), C(16 * 16, 0.0f);
  for (float& x : A) x = uni(rng);
  for (int kk = 0; kk < 8; ++kk) B[static_cast<size_t>(kk * 16 + kk)] = 1.0f;
  int differ = 0;  // elements where the two readings differ: the test can tell them apart
  for (float x : A) differ += tf32_rna(x) != tf32_trunc(x);
  REQUIRE(differ > 32);
  DeviceBuffer<float> dA(A), dB(B), dC(C), dD(C.size());
  for (bool round : {true, false}) {
    INFO((round ? "rounded with __float_to_tf32" : "not rounded"));
    REQUIRE(k::launch_tile(dA.p, false, 8, dB.p, false, 16, dC.p, dD.p, 16, false, 1, round) ==
            cudaSuccess);
    const std::vector<float> D = dD.get();
    int wrong = 0;
    for (int r = 0; r < 16; ++r) {
      for (int c = 0; c < 16; ++c) {
        const float a = c < 8 ? A[static_cast<size_t>(r * 8 + c)] : 0.0f;
        const float want = round ? tf32_rna(a) : tf32_trunc(a);
        wrong += bits_of(D[static_cast<size_t>(r * 16 + c)]) != bits_of(want);
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("emulator wmma: element-wise work on x[] and fill_fragment", "[emulator][wmma]") {
  std::vector<float> C(256);
  for (int i = 0; i < 256; ++i) C[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i) - 7.0f;
  DeviceBuffer<float> dC(C), dD(256), filled(256);
  REQUIRE(k::launch_elementwise(dC.p, dD.p, filled.p, 3.5f) == cudaSuccess);
  const std::vector<float> D = dD.get(), F = filled.get();
  for (int i = 0; i < 256; ++i) {
    CHECK(D[static_cast<size_t>(i)] == 2.0f * C[static_cast<size_t>(i)] + 1.0f);
    CHECK(F[static_cast<size_t>(i)] == 3.5f);
  }
}

TEST_CASE("emulator wmma: a tile stored to shared memory needs a __syncwarp before other lanes "
          "read it",
          "[emulator][wmma][planted]") {
  Checks on(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck);
  std::vector<float> C(256);
  for (int i = 0; i < 256; ++i) C[static_cast<size_t>(i)] = static_cast<float>(i);
  DeviceBuffer<float> dC(C), out(256);
  REQUIRE(k::launch_shared_roundtrip(dC.p, out.p, true) == cudaSuccess);
  CHECK(out.get() == C);
  CHECK(k::launch_shared_roundtrip(dC.p, out.p, false) == cudaErrorLaunchFailure);
  const std::string r = last_report();
  check_report(r, "racecheck", "shared_roundtrip_kernel");
  CHECK(contains(r, "hazard on shared memory"));
}

TEST_CASE("emulator wmma: loads are memory-checked like any access", "[emulator][wmma][planted]") {
  Checks on(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck);
  DeviceBuffer<float> A(16 * 8), out(32);
  // ldm 16 on a 16 x 8 allocation: rows 8 to 15 lie past its end.
  CHECK(k::plant_misaligned_load(A.p, 0, 16u, out.p) == cudaErrorIllegalAddress);
  const std::string r = last_report();
  check_report(r, "memcheck", "misaligned_load_kernel");
  CHECK(contains(r, "invalid read of 4 bytes"));
  CHECK(contains(r, "past the end of a 512-byte block"));
}

TEST_CASE("emulator wmma: a misaligned tile pointer or ldm is a memcheck report",
          "[emulator][wmma][planted]") {
  Checks on(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck);
  DeviceBuffer<float> A(16 * 16), out(32);
  REQUIRE(k::plant_misaligned_load(A.p, 8, 8u, out.p) == cudaSuccess);  // 32 bytes on: fine
  SECTION("a pointer 16 bytes past a 32-byte boundary") {
    CHECK(k::plant_misaligned_load(A.p, 4, 8u, out.p) == cudaErrorMisalignedAddress);
    const std::string r = last_report();
    check_report(r, "memcheck", "misaligned_load_kernel");
    CHECK(contains(r, "misaligned wmma::load_matrix_sync at tests/emulator/kernels_mma.cu:"));
    CHECK(contains(r, "is not 32-byte aligned"));
    CHECK(contains(r, "byte 16 of a 1024-byte block"));
  }
  SECTION("ldm not a multiple of 4 floats") {
    CHECK(k::plant_misaligned_load(A.p, 0, 10u, out.p) == cudaErrorMisalignedAddress);
    const std::string r = last_report();
    check_report(r, "memcheck", "misaligned_load_kernel");
    CHECK(contains(r, "ldm = 10 is not a multiple of 4 floats"));
  }
}

TEST_CASE("emulator wmma: lanes that do not call together are a synccheck report",
          "[emulator][wmma][planted]") {
  Checks on(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck);
  DeviceBuffer<float> A(16 * 16), B(8 * 16), D(16 * 16), out(32);
  REQUIRE(k::plant_divergent(A.p, B.p, D.p, 3) == cudaSuccess);  // no bug: the control
  SECTION("half the warp returns before mma_sync") {
    CHECK(k::plant_divergent(A.p, B.p, D.p, 0) == cudaErrorLaunchFailure);
    const std::string r = last_report();
    check_report(r, "synccheck", "divergent_kernel");
    // Which comes first depends on the schedule: a lane that returns while others wait at the
    // mma_sync, or the mma_sync after lanes returned.
    CHECK((contains(r, "returned while lanes of its warp wait for it at the warp operation at "
                       "tests/emulator/kernels_mma.cu:") ||
           contains(r, "synccheck: wmma::mma_sync at tests/emulator/kernels_mma.cu:")));
    CHECK(contains(r, "returned"));
  }
  SECTION("the two halves load at different call sites") {
    CHECK(k::plant_divergent(A.p, B.p, D.p, 1) == cudaErrorLaunchFailure);
    const std::string r = last_report();
    check_report(r, "synccheck", "divergent_kernel");
    CHECK(contains(r, "synccheck: wmma::load_matrix_sync at tests/emulator/kernels_mma.cu:"));
    CHECK(contains(r, "is at wmma::load_matrix_sync at tests/emulator/kernels_mma.cu:"));
    CHECK(contains(r, "all 32 lanes of a warp must call a wmma operation together"));
  }
  SECTION("the two halves pass different pointers") {
    CHECK(k::plant_divergent(A.p, B.p, D.p, 2) == cudaErrorLaunchFailure);
    const std::string r = last_report();
    check_report(r, "synccheck", "divergent_kernel");
    CHECK(contains(r, "with another pointer, ldm or layout"));
  }
  SECTION("a block of 16 threads: half a warp") {
    CHECK(k::plant_partial_warp(A.p, out.p) == cudaErrorLaunchFailure);
    const std::string r = last_report();
    check_report(r, "synccheck", "misaligned_load_kernel");
    CHECK(contains(r, "synccheck: wmma::load_matrix_sync at tests/emulator/kernels_mma.cu:"));
    CHECK(contains(r, "has only lanes 0xffff (the block has 16 threads"));
  }
}

#endif  // EMBER_CUDA_EMULATED
