// ember/kernels/base/cpu_isa.h — which SIMD instruction set the CPU kernels use, chosen when the
// program runs.
//
// One build of ember carries several versions of its CPU kernels (the float32 GEMM micro-kernel,
// its packing and the register transposes of the implicit-GEMM convolution: see
// kernels/cpu/gemm_simd.h; and, in a portable build, the elementwise, reduction, softmax,
// cross-entropy, pooling and optimizer kernels: kernels/cpu/isa_variant.h), each compiled for
// one instruction set, and picks one per process from what the CPU reports. So a packager's or a
// container's build (no -march=native, the default) runs the AVX-512 code on a CPU that has it
// and the AVX2 code on one that has only that, as PyTorch's and oneDNN's binaries do.
//
//   x86-64:
//   avx512    AVX-512 F/DQ/BW/VL with FMA: a 12 x 32 register tile in 24 of 32 zmm registers
//   avx2      AVX2 with FMA: a 6 x 16 tile in 12 of 16 ymm registers
//   aarch64 (64-bit ARM: Apple silicon, Graviton, Ampere, ...):
//   neon      Advanced SIMD, which every ARMv8-A CPU has: a 12 x 8 tile in 24 of 32 v registers
//   either:
//   baseline  none of them: Eigen's GEMM and the im2col convolution, compiled for the build's
//             target
//
// EMBER_CPU_ISA=avx512|avx2|neon|baseline forces one (to test each path on one machine, or to
// compare them); asking for one the CPU lacks is an error that says what the CPU has, and asking
// an aarch64 build for an x86-64 one (or the reverse) is an error that says so. The sums run in
// the same order on avx512, avx2 and neon (one fused multiply-add per k, in blocks of 256), so
// those three give the same bits, on any machine; baseline (Eigen) rounds differently.
#pragma once

#include <string>

namespace ember::kernels {

enum class CpuIsa { Baseline = 0, Avx2 = 1, Avx512 = 2, Neon = 3 };

const char* isa_name(CpuIsa isa);  // "baseline", "avx2", "avx512", "neon"
// Parses a name as EMBER_CPU_ISA does; throws ember::Error listing the valid names otherwise.
CpuIsa parse_isa(const std::string& name);

// Can this process run `isa`: compiled into this build (avx512 and avx2: x86-64 with GCC or
// Clang; neon: aarch64) and reported by the CPU? Baseline always can.
bool isa_supported(CpuIsa isa);
// The best instruction set this CPU and build support.
CpuIsa best_isa();

// The instruction set the kernels use now: EMBER_CPU_ISA when set (read once, on first use),
// else best_isa().
CpuIsa cpu_isa();
// Switches the kernels to `isa` for the calls that follow (tests and benchmarks compare the
// paths in one process). Throws when the CPU or build lacks it. Not for use while another thread
// runs ember's kernels.
void set_cpu_isa(CpuIsa isa);

}  // namespace ember::kernels
