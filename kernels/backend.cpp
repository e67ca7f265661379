// ember/kernels/backend.cpp — the two backends, assembled from the tables at the bottom of each
// kernel file. The only places where builds differ: the CPU-only build has no CUDA tables to
// name, and a portable x86-64 build has three CPU backends, one per instruction set, of which
// cpu_backend() hands out the one kernels/base/cpu_isa.h chose.
#include "kernels/backend.h"

#include "kernels/base/cpu_isa.h"

#include "kernels/conv.h"
#include "kernels/cross_entropy.h"
#include "kernels/device_runtime.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/index.h"
#include "kernels/optim.h"
#include "kernels/pool.h"
#include "kernels/random.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"
#include "kernels/sort.h"

namespace ember::kernels {

// The CPU backend of one variant V of the per-instruction-set kernel files
// (kernels/cpu/isa_variant.h); the other families pick their instruction set inside (the GEMM
// and the convolution: kernels/cpu/gemm_simd.h) or have nothing to vectorize.
#define EMBER_CPU_BACKEND(V)                                                              \
  Backend {                                                                               \
    "cpu", cpu::V::elementwise_kernels, cpu::V::reduce_kernels, cpu::V::softmax_kernels,  \
        cpu::V::cross_entropy_kernels, cpu::index_kernels, cpu::V::pool_kernels,          \
        cpu::conv_kernels, cpu::gemm_kernels, cpu::V::optim_kernels, cpu::random_kernels, \
        cpu::sort_kernels, nullptr                                                        \
  }

namespace {
constexpr Backend kCpuBaseline = EMBER_CPU_BACKEND(baseline);
#if defined(EMBER_CPU_VARIANTS)
constexpr Backend kCpuAvx2 = EMBER_CPU_BACKEND(avx2);
constexpr Backend kCpuAvx512 = EMBER_CPU_BACKEND(avx512);
#endif
}  // namespace
#undef EMBER_CPU_BACKEND

const Backend& cpu_backend() {
#if defined(EMBER_CPU_VARIANTS)
  switch (cpu_isa()) {
    case CpuIsa::Avx512: return kCpuAvx512;
    case CpuIsa::Avx2: return kCpuAvx2;
    default: break;
  }
#endif
  return kCpuBaseline;
}

const char* cpu_backend_variant() {
#if defined(EMBER_CPU_VARIANTS)
  if (&cpu_backend() == &kCpuAvx512) return "avx512";
  if (&cpu_backend() == &kCpuAvx2) return "avx2";
#endif
  return "baseline";
}

const Backend* cuda_backend() {
#if defined(EMBER_WITH_CUDA)
  static const Backend backend{"cuda",
                               cuda::elementwise_kernels,
                               cuda::reduce_kernels,
                               cuda::softmax_kernels,
                               cuda::cross_entropy_kernels,
                               cuda::index_kernels,
                               cuda::pool_kernels,
                               cuda::conv_kernels,
                               cuda::gemm_kernels,
                               cuda::optim_kernels,
                               cuda::random_kernels,
                               cuda::sort_kernels,
                               &cuda::device_runtime};
  return &backend;
#else
  return nullptr;
#endif
}

}  // namespace ember::kernels
