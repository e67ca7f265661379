// The dispatch of kernels/cpu/gemm_simd.h: each call goes to the version of the instruction set
// in use (kernels/base/cpu_isa.h), looked up per call (one relaxed atomic load: set_cpu_isa may
// switch it between calls).
#include "kernels/cpu/gemm_simd.h"

#include "kernels/base/error.h"

namespace ember::kernels::cpu {

namespace {

const detail::SimdGemm* current() {
  switch (cpu_isa()) {
    case CpuIsa::Avx512: return detail::simd_gemm_avx512();
    case CpuIsa::Avx2: return detail::simd_gemm_avx2();
    case CpuIsa::Neon: return detail::simd_gemm_neon();
    case CpuIsa::Baseline: return nullptr;
  }
  return nullptr;
}

const detail::SimdGemm& require(const char* who) {
  const detail::SimdGemm* k = current();
  EMBER_CHECK(k != nullptr, who, ": the CPU kernels run the '", isa_name(cpu_isa()),
              "' instruction set, which has no SIMD GEMM kernel (kernels/cpu/gemm.cpp uses Eigen "
              "then); check sgemm_simd_available() first, or choose avx512, avx2 or neon "
              "with EMBER_CPU_ISA / set_cpu_isa where the CPU has them");
  return *k;
}

}  // namespace

bool sgemm_simd_available() { return current() != nullptr; }

int64_t sgemm_simd_tile_rows() {
  const detail::SimdGemm* k = current();
  return k ? k->tile_rows : 0;
}

int64_t sgemm_simd_tile_cols() {
  const detail::SimdGemm* k = current();
  return k ? k->tile_cols : 0;
}

void sgemm_simd(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  require("sgemm_simd").sgemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sgemm_simd_rows(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float* a, int64_t lda, const int64_t* a_rows, const float* b,
                     int64_t ldb, const int64_t* b_rows, float beta, float* c, int64_t ldc) {
  EMBER_CHECK(!(a_rows && trans_a), "sgemm_simd_rows: a row table gives the rows of A itself "
                                    "(op(A) = A); pass trans_a = false with a_rows");
  require("sgemm_simd_rows")
      .sgemm_rows(trans_a, trans_b, M, N, K, alpha, a, lda, a_rows, b, ldb, b_rows, beta, c, ldc);
}

void transpose_simd(const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add,
                    float* dst, int64_t ldd) {
  require("transpose_simd").transpose(src, lds, rows, cols, add, dst, ldd);
}

}  // namespace ember::kernels::cpu
