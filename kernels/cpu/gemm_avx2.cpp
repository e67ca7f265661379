// ember's float32 GEMM kernel for AVX2 CPUs (kernels/cpu/gemm_simd.h): the kernel of
// gemm_simd_impl.h compiled with 8-float registers, whatever the rest of the build targets, and
// run when the CPU reports AVX2 and FMA but not AVX-512 (most laptops, AMD before Zen 4, many
// cloud instances), or when EMBER_CPU_ISA=avx2 asks for it (kernels/base/cpu_isa.h).
//
// What this file adds to gemm_simd_impl.h, and how AVX2 differs from AVX-512:
//   - 16 ymm registers instead of 32 zmm: the register tile is 6 x 16 (12 accumulators, two
//     registers of B and one broadcast: 15 of 16), half as tall and half as wide as AVX-512's
//     12 x 32. Twelve independent sums still cover the FMA latency of two 256-bit FMA pipes.
//   - no mask registers: a lane mask is a vector whose lanes are all ones (use) or all zeros
//     (skip), and vmaskmovps loads and stores through it without touching the skipped lanes
//     (only where a vector is partial: see V::load).
//   - an 8 x 8 register transpose instead of 16 x 16.
// The sums run in the same order as with AVX-512 (gemm_simd_impl.h, "The order of the sum"),
// so the two give the same bits.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "kernels/cpu/gemm_simd.h"

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_GEMM_AVX2 1
#include <immintrin.h>
#endif

namespace ember::kernels::cpu {

#if defined(EMBER_GEMM_AVX2)

// From here to the end of the region, every function is compiled for AVX2 with FMA (the rest of
// the program may target plain x86-64): the dispatcher only calls in when the CPU has them.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace {

struct V {
  static constexpr int kLanes = 8;
  static constexpr int kMr = 6;  // 12 accumulators of the 16 ymm registers
  using Reg = __m256;
  using Mask = __m256i;  // lane i used when its 32 bits are all ones
  static Mask first(int64_t n) {
    const int k = n >= 8 ? 8 : n <= 0 ? 0 : static_cast<int>(n);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  // A masked load or store of a whole vector is a plain one: vmaskmovps costs more even with
  // every lane on, and as a store AMD's CPUs run it in microcode. With every C tile stored
  // through it, AVX2 ran at 70-80% of AVX-512's speed on the seed models' products on this
  // project's Zen 4 machine; with plain stores for whole vectors, at 83-97% (bench/RESULTS.md,
  // "Run-time SIMD dispatch"). Only the last columns of an edge tile still take the masked path
  // (storing those lane by lane through a buffer was measured slower).
  static bool all(Mask m) { return _mm256_testc_si256(m, _mm256_set1_epi32(-1)); }
  static Reg load(const float* p, Mask m) {
    return all(m) ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
  }
  static void storeu(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static void store(float* p, Mask m, Reg r) {
    if (all(m)) _mm256_storeu_ps(p, r);
    else _mm256_maskstore_ps(p, m, r);
  }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }

  // Transposes the 8 x 8 block r (r[i] = row i) in registers: afterwards r[j] holds column j.
  // Single floats are paired within 128-bit halves, then float pairs, then the halves swap
  // across registers.
  static inline __attribute__((always_inline)) void transpose(Reg r[8]) {
    Reg t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // per half: r_i[0] r_i+1[0] r_i[1] r_i+1[1]
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  //           r_i[2] r_i+1[2] r_i[3] r_i+1[3]
    }
    for (int i = 0; i < 8; i += 4) {  // per half: column 0, 1, 2, 3 of rows i .. i+3
      u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    // u[j] (j < 4) holds column j of rows 0..3 in its low half and column 4 + j in its high
    // half; u[4 + j] the same for rows 4..7.
    for (int j = 0; j < 4; ++j) {
      r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);      // the low halves: column j
      r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);  // the high halves: column 4 + j
    }
  }
};

#include "kernels/cpu/gemm_simd_impl.h"

}  // namespace

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const detail::SimdGemm* detail::simd_gemm_avx2() {
  static const SimdGemm table{kMr, kNr, &entry_sgemm, &entry_sgemm_rows, &entry_transpose};
  return isa_supported(CpuIsa::Avx2) ? &table : nullptr;
}

#else  // not x86-64 with GCC or Clang: no AVX2 version in this build

const detail::SimdGemm* detail::simd_gemm_avx2() { return nullptr; }

#endif

}  // namespace ember::kernels::cpu
