// ember's float32 GEMM kernel for 64-bit ARM CPUs (kernels/cpu/gemm_simd.h): the kernel of
// gemm_simd_impl.h compiled with 4-float Advanced SIMD ("NEON") registers, and run on every
// aarch64 CPU (Apple silicon, AWS Graviton, Ampere Altra, a Raspberry Pi 4 or 5), or when
// EMBER_CPU_ISA=neon asks for it (kernels/base/cpu_isa.h).
//
// What this file adds to gemm_simd_impl.h, and how NEON differs from AVX-512 and AVX2:
//   - 32 registers of 128 bits (v0-v31), 4 floats each: the register tile is 12 x 8 (12 rows,
//     two vectors per row: 24 accumulators), the same height as AVX-512's 12 x 32 and a quarter
//     of its width. With the two vectors of B that leaves 6 registers for the values of A; GCC
//     turns "broadcast A(i, k), then fused multiply-add" into one `fmla v.4s, v.4s, v.s[0]` (the
//     multiply by one lane of a register), so A's values need no broadcast copies.
//     Per k: 2 vector loads of B, 12 scalar loads of A and 24 FMAs, enough independent sums to
//     cover a 4-cycle FMA latency on two FMA pipes (Neoverse N1/V1, Apple's cores have four).
//   - Every aarch64 CPU has NEON (it is part of ARMv8-A): nothing to switch on, no target
//     attribute, and the file needs no flag; the dispatcher only asks whether this is aarch64.
//   - no masked loads or stores: a lane mask is a count of the first lanes in use, and a
//     partial vector is read or written lane by lane, so nothing is read or written past the
//     matrices (only where a vector is partial: the last columns of an edge tile).
//   - a 4 x 4 register transpose (two rounds of trn1/trn2, on floats then on float pairs).
// The sums run in the same order as with AVX-512 and AVX2 (gemm_simd_impl.h, "The order of the
// sum"): fmla is a fused multiply-add, rounded once, and the tile's final alpha * acc (+ C or
// + beta * C) is the same sequence of single roundings. So all three give the same bits
// (tests/kernels/gemm_cpu.cpp checks each against one scalar sum in that order).
// Speed on real ARM hardware is unmeasured so far: the tests run under QEMU (scripts/ci-aarch64).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "kernels/cpu/gemm_simd.h"

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_GEMM_NEON 1
#include <arm_neon.h>
#endif

namespace ember::kernels::cpu {

#if defined(EMBER_GEMM_NEON)

namespace {

struct V {
  static constexpr int kLanes = 4;
  static constexpr int kMr = 12;  // 24 accumulators of the 32 v registers
  using Reg = float32x4_t;
  using Mask = int;  // the first Mask lanes are used (0 .. 4)
  static Mask first(int64_t n) { return n >= 4 ? 4 : n <= 0 ? 0 : static_cast<int>(n); }
  static Reg zero() { return vdupq_n_f32(0.0f); }
  static Reg set1(float x) { return vdupq_n_f32(x); }
  static Reg loadu(const float* p) { return vld1q_f32(p); }
  // A partial vector (m < 4) lane by lane: only the first m floats at p are read (the other
  // lanes are 0) or, in store, written. No call to memcpy: a call inside the tile's loop over k
  // would make GCC keep the accumulators in memory, since a call may overwrite the v registers.
  static Reg load(const float* p, Mask m) {
    if (m >= 4) return vld1q_f32(p);
    Reg r = vdupq_n_f32(0.0f);
    if (m > 0) r = vsetq_lane_f32(p[0], r, 0);
    if (m > 1) r = vsetq_lane_f32(p[1], r, 1);
    if (m > 2) r = vsetq_lane_f32(p[2], r, 2);
    return r;
  }
  static void storeu(float* p, Reg r) { vst1q_f32(p, r); }
  static void store(float* p, Mask m, Reg r) {
    if (m >= 4) {
      vst1q_f32(p, r);
      return;
    }
    if (m > 0) vst1q_lane_f32(p, r, 0);
    if (m > 1) vst1q_lane_f32(p + 1, r, 1);
    if (m > 2) vst1q_lane_f32(p + 2, r, 2);
  }
  static Reg fmadd(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }  // c + a * b, one rounding
  static Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
  // GCC writes vmulq_f32 and vaddq_f32 as plain `a * b` and `a + b` on vectors, which it may
  // contract into one fused multiply-add (its default for C++, and every aarch64 CPU has the
  // instruction): the tile's alpha * acc + C could then round once instead of twice, unlike
  // AVX's. The empty asm makes the product a value of its own, rounded, whatever the compiler.
  static Reg mul(Reg a, Reg b) {
    Reg r = vmulq_f32(a, b);
    __asm__("" : "+w"(r));
    return r;
  }

  // Transposes the 4 x 4 block r (r[i] = row i) in registers: afterwards r[j] holds column j.
  // trn1/trn2 interleave the even (odd) lanes of two registers: first single floats of rows
  // (0, 1) and (2, 3), then, seen as pairs of floats, the results across the two row pairs.
  static inline __attribute__((always_inline)) void transpose(Reg r[4]) {
    const Reg t0 = vtrn1q_f32(r[0], r[1]);  // r0[0] r1[0] r0[2] r1[2]
    const Reg t1 = vtrn2q_f32(r[0], r[1]);  // r0[1] r1[1] r0[3] r1[3]
    const Reg t2 = vtrn1q_f32(r[2], r[3]);  // r2[0] r3[0] r2[2] r3[2]
    const Reg t3 = vtrn2q_f32(r[2], r[3]);  // r2[1] r3[1] r2[3] r3[3]
    const auto pairs = [](Reg x) { return vreinterpretq_f64_f32(x); };
    const auto floats = [](float64x2_t x) { return vreinterpretq_f32_f64(x); };
    r[0] = floats(vtrn1q_f64(pairs(t0), pairs(t2)));  // r0[0] r1[0] r2[0] r3[0]
    r[1] = floats(vtrn1q_f64(pairs(t1), pairs(t3)));  // r0[1] r1[1] r2[1] r3[1]
    r[2] = floats(vtrn2q_f64(pairs(t0), pairs(t2)));  // r0[2] r1[2] r2[2] r3[2]
    r[3] = floats(vtrn2q_f64(pairs(t1), pairs(t3)));  // r0[3] r1[3] r2[3] r3[3]
  }
};

#include "kernels/cpu/gemm_simd_impl.h"

}  // namespace

const detail::SimdGemm* detail::simd_gemm_neon() {
  static const SimdGemm table{kMr, kNr, &entry_sgemm, &entry_sgemm_rows, &entry_transpose};
  return isa_supported(CpuIsa::Neon) ? &table : nullptr;
}

#else  // not aarch64 with GCC or Clang: no NEON version in this build

const detail::SimdGemm* detail::simd_gemm_neon() { return nullptr; }

#endif

}  // namespace ember::kernels::cpu
