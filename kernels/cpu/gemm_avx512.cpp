// ember's float32 GEMM kernel for AVX-512 CPUs (kernels/cpu/gemm_simd.h): the kernel of
// gemm_simd_impl.h compiled with 16-float registers, whatever the rest of the build targets, and
// run when the CPU reports AVX-512 (kernels/base/cpu_isa.h).
//
// Why not only Eigen: on the products of the seed models (the MLP's layers, a [64, 800] filter
// bank against an im2col matrix [800, 361] and the gradients' products) Eigen's blocked GEMM
// stays well below a Zen 4 core's FMA peak, and this kernel runs every one of them closer
// to it (bench/RESULTS.md, "CPU GEMM kernel and convolution layout"). It is the CPU twin
// of the lesson in bench/gemm/ (siboehm's SGEMM ladder on the GPU): keep a tile of C in registers
// and stream the operands past it.
//
// What this file adds to gemm_simd_impl.h: AVX-512's masks (one bit per lane, so an edge tile's
// loads and stores are as fast as full ones) and its 16 x 16 register transpose.

// GCC 12 reports "'__Y' may be used uninitialized" inside its own AVX-512 intrinsics (they start
// from _mm512_undefined_*() on purpose): a known false positive, silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "kernels/cpu/gemm_simd.h"

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_GEMM_AVX512 1
#include <immintrin.h>
#endif

namespace ember::kernels::cpu {

#if defined(EMBER_GEMM_AVX512)

// From here to the end of the region, every function is compiled for AVX-512 (the rest of the
// program may target plain x86-64): the dispatcher only calls in when the CPU has it.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,fma")
#endif

namespace {

struct V {
  static constexpr int kLanes = 16;
  static constexpr int kMr = 12;  // 24 accumulators of the 32 zmm registers
  using Reg = __m512;
  using Mask = __mmask16;
  static Mask first(int64_t n) {
    return n >= 16 ? Mask(0xFFFF) : n <= 0 ? Mask(0) : Mask((1u << n) - 1);
  }
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static Reg load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void storeu(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static void store(float* p, Mask m, Reg r) { _mm512_mask_storeu_ps(p, m, r); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }

  // Transposes the 16 x 16 block r (r[i] = row i) in registers: afterwards r[j] holds column j.
  // Three rounds of shuffles, each pairing elements at twice the distance of the round before:
  // single floats within 128-bit lanes, then float pairs, then 128-bit lanes across registers.
  static inline __attribute__((always_inline)) void transpose(Reg r[16]) {
    Reg t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);      // per lane: r_i[0] r_i+1[0] r_i[1] r_i+1[1]
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);  //           r_i[2] r_i+1[2] r_i[3] r_i+1[3]
    }
    for (int i = 0; i < 16; i += 4) {  // per lane: column 0, 1, 2, 3 of rows i .. i+3
      const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
      const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
      r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
      r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
      r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
      r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    // Now lane L of r[4q + j] holds column 4L + j of rows 4q .. 4q+3; gather the four lanes of
    // column 4L + j from r[j], r[4 + j], r[8 + j], r[12 + j].
    for (int j = 0; j < 4; ++j) {
      const Reg lo02 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);  // r_j.L0 L2, r_4+j.L0 L2
      const Reg lo13 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);  // r_j.L1 L3, r_4+j.L1 L3
      const Reg hi02 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
      const Reg hi13 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
      t[j] = _mm512_shuffle_f32x4(lo02, hi02, 0x88);       // column j       (lane 0 of each)
      t[8 + j] = _mm512_shuffle_f32x4(lo02, hi02, 0xdd);   // column 8 + j   (lane 2)
      t[4 + j] = _mm512_shuffle_f32x4(lo13, hi13, 0x88);   // column 4 + j   (lane 1)
      t[12 + j] = _mm512_shuffle_f32x4(lo13, hi13, 0xdd);  // column 12 + j  (lane 3)
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
  }
};

#include "kernels/cpu/gemm_simd_impl.h"

}  // namespace

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const detail::SimdGemm* detail::simd_gemm_avx512() {
  static const SimdGemm table{kMr, kNr, &entry_sgemm, &entry_sgemm_rows, &entry_transpose};
  return isa_supported(CpuIsa::Avx512) ? &table : nullptr;
}

#else  // not x86-64 with GCC or Clang: no AVX-512 version in this build

const detail::SimdGemm* detail::simd_gemm_avx512() { return nullptr; }

#endif

}  // namespace ember::kernels::cpu
