// The run-time choice of the CPU kernels' instruction set (kernels/base/cpu_isa.h).
#include "kernels/base/cpu_isa.h"

#include <atomic>
#include <cstdlib>

#include "kernels/base/error.h"

namespace ember::kernels {

namespace {

// x86-64 with a compiler that can build one function for an instruction set the rest of the
// program is not compiled for (kernels/cpu/gemm_avx2.cpp, gemm_avx512.cpp).
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
constexpr bool kX86Simd = true;
#else
constexpr bool kX86Simd = false;
#endif
// aarch64 with GCC or Clang (kernels/cpu/gemm_neon.cpp). Advanced SIMD ("NEON") is part of
// ARMv8-A itself, and the aarch64 ABI passes floats in its registers: every aarch64 CPU has it,
// so there is nothing to ask the CPU.
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
constexpr bool kArmSimd = true;
#else
constexpr bool kArmSimd = false;
#endif

// The machine an instruction set belongs to, and the one this build is for.
const char* isa_machine(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Avx2:
    case CpuIsa::Avx512: return "x86-64";
    case CpuIsa::Neon: return "aarch64";
    case CpuIsa::Baseline: return "any";
  }
  return "?";
}
constexpr const char* kBuildMachine = kX86Simd   ? "x86-64"
                                      : kArmSimd ? "aarch64"
                                                 : "a machine without SIMD kernels";

bool probe_cpu(CpuIsa isa) {
  if (isa == CpuIsa::Baseline) return true;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma");
    default: return false;
  }
#else
  return kArmSimd && isa == CpuIsa::Neon;
#endif
}

// What the CPU reports, asked once (the GEMM asks per product).
bool cpu_has(CpuIsa isa) {
  static const bool has[4] = {true, probe_cpu(CpuIsa::Avx2), probe_cpu(CpuIsa::Avx512),
                              probe_cpu(CpuIsa::Neon)};
  return has[static_cast<int>(isa)];
}

std::string supported_list() {
  std::string s;
  for (CpuIsa i : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Neon, CpuIsa::Baseline}) {
    if (!isa_supported(i)) continue;
    if (!s.empty()) s += ", ";
    s += isa_name(i);
  }
  return s;
}

void require_supported(CpuIsa isa, const char* who) {
  if (isa_supported(isa)) return;
  const bool this_machine = (isa == CpuIsa::Neon && kArmSimd) || (isa != CpuIsa::Neon && kX86Simd);
  if (this_machine) {
    EMBER_CHECK(false, who, " asks for the ", isa_name(isa), " kernels, but this CPU does not ",
                "report the instructions they need; what this process can run: ", supported_list(),
                " (unset EMBER_CPU_ISA to get the best of them)");
  }
  EMBER_CHECK(false, who, " asks for the ", isa_name(isa), " kernels, which are ", isa_machine(isa),
              " instructions, but this build of ember is for ", kBuildMachine,
              "; what this process can run: ", supported_list(),
              " (unset EMBER_CPU_ISA to get the best of them)");
}

CpuIsa from_environment() {
  const char* e = std::getenv("EMBER_CPU_ISA");
  if (e == nullptr || *e == '\0') return best_isa();
  const CpuIsa isa = parse_isa(e);
  require_supported(isa, "EMBER_CPU_ISA");
  return isa;
}

// -1 until the first call of cpu_isa() or set_cpu_isa().
std::atomic<int> g_isa{-1};

}  // namespace

const char* isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Baseline: return "baseline";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
    case CpuIsa::Neon: return "neon";
  }
  return "?";
}

CpuIsa parse_isa(const std::string& name) {
  for (CpuIsa i : {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Neon}) {
    if (name == isa_name(i)) return i;
  }
  EMBER_CHECK(false, "unknown CPU instruction set '", name,
              "' (EMBER_CPU_ISA): use avx512, avx2 or baseline on x86-64, neon or baseline on "
              "aarch64");
  return CpuIsa::Baseline;
}

bool isa_supported(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Baseline: return true;
    case CpuIsa::Avx2:
    case CpuIsa::Avx512: return kX86Simd && cpu_has(isa);
    case CpuIsa::Neon: return kArmSimd && cpu_has(isa);
  }
  return false;
}

CpuIsa best_isa() {
  static const CpuIsa best = isa_supported(CpuIsa::Avx512) ? CpuIsa::Avx512
                             : isa_supported(CpuIsa::Avx2) ? CpuIsa::Avx2
                             : isa_supported(CpuIsa::Neon) ? CpuIsa::Neon
                                                           : CpuIsa::Baseline;
  return best;
}

CpuIsa cpu_isa() {
  int v = g_isa.load(std::memory_order_relaxed);
  if (v < 0) {
    // Several threads may get here at once: they all read the same environment, so whichever
    // store lands last stores the same value. An invalid EMBER_CPU_ISA throws on every call.
    v = static_cast<int>(from_environment());
    g_isa.store(v, std::memory_order_relaxed);
  }
  return static_cast<CpuIsa>(v);
}

void set_cpu_isa(CpuIsa isa) {
  require_supported(isa, "set_cpu_isa");
  g_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
}

}  // namespace ember::kernels
