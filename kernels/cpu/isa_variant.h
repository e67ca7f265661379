// ember/kernels/cpu/isa_variant.h — one kernel file compiled once per instruction set.
//
// The elementwise, reduction, softmax, cross-entropy, pooling and optimizer kernels are plain
// loops that the compiler turns into SIMD code: as wide as the instructions it may use. A
// portable build (EMBER_NATIVE=OFF, the default) may only assume what every x86-64 CPU has,
// SSE2, 4 floats a register and no fused multiply-add; a -march=native build uses all the
// machine has but runs nowhere else. So in a portable x86-64 build CMake compiles each of these
// files three times, as the variants
//
//   baseline  the build's own target (SSE2), for any x86-64 CPU
//   avx2      with AVX2 and FMA enabled: 8 floats a register
//   avx512    with AVX-512 F/DQ/BW/VL and FMA enabled: 16 floats a register
//
// each in a namespace of its own (ember::kernels::cpu::avx2, ...), and kernels/backend.cpp
// gives the CPU backend the tables of the variant that kernels/base/cpu_isa.h chose for this
// process (EMBER_CPU_ISA forces one, as it does for the GEMM). A -march=native build, or an
// aarch64 one (where NEON is part of the baseline), compiles each file once, as `baseline`.
//
// How a kernel file uses it, after its last #include:
//
//     EMBER_CPU_VARIANT_BEGIN
//     namespace ember::kernels::cpu::EMBER_CPU_VARIANT {
//     ... the kernels and, at the bottom, the family's table ...
//     }  // namespace ember::kernels::cpu::EMBER_CPU_VARIANT
//     EMBER_CPU_VARIANT_END
//
// Why a pragma around the code and not -mavx2 on the whole file: an inline function or template
// from a header (std::vector's, std::sort's, ember's own) compiled into several object files is
// kept once by the linker, whichever copy it meets first. Compiled with -mavx2 in one of them,
// that copy could be the one a baseline CPU calls, and die of an illegal instruction. Headers
// are read before EMBER_CPU_VARIANT_BEGIN, so their code stays the build's own target; only the
// code between BEGIN and END, all of it in the variant's namespace (or an unnamed one), is
// compiled for the variant's instructions. scripts/check-isa-variants checks the object files
// for exactly that.
#pragma once

#if !defined(EMBER_CPU_VARIANT)
#define EMBER_CPU_VARIANT baseline
#endif

// Does the variant's code have 256-bit vectors and fused multiply-add? (GCC and Clang do not
// define __AVX__ or __FMA__ inside a target pragma, so the kernels ask these instead.)
#if defined(EMBER_CPU_VARIANT_AVX2) || defined(EMBER_CPU_VARIANT_AVX512)
#define EMBER_CPU_HAS_AVX 1
#define EMBER_CPU_HAS_FMA 1
#else
#if defined(__AVX__)
#define EMBER_CPU_HAS_AVX 1
#else
#define EMBER_CPU_HAS_AVX 0
#endif
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define EMBER_CPU_HAS_FMA 1
#else
#define EMBER_CPU_HAS_FMA 0
#endif
#endif

// The instructions each variant may use: what kernels/base/cpu_isa.cpp asks the CPU for before
// it picks that variant. (Spelled out per compiler: a pragma's argument is not macro-expanded.)
// _Pragma takes one string literal: clang-format would split the long ones, which then would not
// compile.
// clang-format off
#if defined(EMBER_CPU_VARIANT_AVX2) && defined(__clang__)
#define EMBER_CPU_VARIANT_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#elif defined(EMBER_CPU_VARIANT_AVX512) && defined(__clang__)
#define EMBER_CPU_VARIANT_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f,avx512dq,avx512bw,avx512vl,avx2,fma\"))), apply_to = function)")
#elif defined(EMBER_CPU_VARIANT_AVX2) && defined(__GNUC__)
#define EMBER_CPU_VARIANT_BEGIN \
  _Pragma("GCC push_options") \
  _Pragma("GCC target(\"avx2,fma\")")
#elif defined(EMBER_CPU_VARIANT_AVX512) && defined(__GNUC__)
#define EMBER_CPU_VARIANT_BEGIN \
  _Pragma("GCC push_options") \
  _Pragma("GCC target(\"avx512f,avx512dq,avx512bw,avx512vl,avx2,fma\")")
#elif defined(EMBER_CPU_VARIANT_AVX2) || defined(EMBER_CPU_VARIANT_AVX512)
#error "the avx2 and avx512 variants of the CPU kernels need GCC or Clang"
#else
#define EMBER_CPU_VARIANT_BEGIN
#endif
// clang-format on

#if !defined(EMBER_CPU_VARIANT_AVX2) && !defined(EMBER_CPU_VARIANT_AVX512)
#define EMBER_CPU_VARIANT_END
#elif defined(__clang__)
#define EMBER_CPU_VARIANT_END _Pragma("clang attribute pop")
#else
#define EMBER_CPU_VARIANT_END _Pragma("GCC pop_options")
#endif
