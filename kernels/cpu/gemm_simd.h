// ember/kernels/cpu/gemm_simd.h — ember's own float32 GEMM kernel for SIMD CPUs (x86-64 and
// aarch64), in one version per instruction set, the one to run chosen when the program runs
// (kernels/base/cpu_isa.h).
//
// The same contract as kernels/cpu/gemm.h (row-major, transpose flags, leading dimensions,
// beta == 0 does not read C), for float32 on one thread. kernels/cpu/gemm.cpp calls it for every
// float32 product while sgemm_simd_available() (the process runs the avx512, avx2 or neon
// kernels) and splits large products into panels on the thread pool first; float64, and CPUs with
// none of them, use Eigen. The kernel is written once, for any register width, in
// gemm_simd_impl.h (how it works and why it is shaped so: the comment at its top);
// gemm_avx512.cpp, gemm_avx2.cpp and gemm_neon.cpp compile it for AVX-512, AVX2 and ARM's NEON.
#pragma once

#include <cstdint>

#include "kernels/base/cpu_isa.h"

namespace ember::kernels::cpu {

// Whether the instruction set in use (cpu_isa()) has this kernel: avx512, avx2 or neon. The
// functions below throw otherwise.
bool sgemm_simd_available();
// The register tile of the kernel in use (rows x columns of C): 12 x 32 with avx512, 6 x 16 with
// avx2, 12 x 8 with neon; 0 x 0 without one.
int64_t sgemm_simd_tile_rows();
int64_t sgemm_simd_tile_cols();

// C[M, N] = alpha * op(A) @ op(B) + beta * C, float32, on the calling thread. M, N, K >= 1.
// The result of each element depends only on K (the order of its sum), never on M, N, where the
// element lies or which of avx512, avx2 and neon runs, so a product cut into panels gives the
// same bits as the whole, and every machine gives the same bits.
void sgemm_simd(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc);

// The same product with either operand given row by row, for operands that are sets of rows
// scattered through a tensor: kernels/cpu/conv_implicit.cpp's convolution reads its input's
// shifted rows this way instead of copying them into an im2col matrix. Offsets in floats,
// negative allowed; each row runs on contiguously.
//   a_rows (or null): A(i, k) = a[a_rows[i] + k] (trans_a must be false; lda unused);
//   b_rows (or null): row r of the stored B starts at b + b_rows[r] (ldb unused): op(B)'s K rows
//     without trans_b, read in place; its N columns with trans_b, packed as usual.
// The sum order is the same as sgemm_simd's.
void sgemm_simd_rows(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float* a, int64_t lda, const int64_t* a_rows, const float* b,
                     int64_t ldb, const int64_t* b_rows, float beta, float* c, int64_t ldc);

// dst[j * ldd + i] = src[i * lds + j] (+ *add, when add is not null) for i < rows, j < cols:
// a float32 matrix transposed through register blocks (16 x 16 with avx512, 8 x 8 with avx2,
// 4 x 4 with neon; conv_implicit.cpp's layout changes).
void transpose_simd(const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add,
                    float* dst, int64_t ldd);

namespace detail {
// One instruction set's version of the functions above (gemm_avx512.cpp, gemm_avx2.cpp,
// gemm_neon.cpp); null where this build or target has none.
struct SimdGemm {
  int64_t tile_rows, tile_cols;
  void (*sgemm)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                int64_t, float, float*, int64_t);
  void (*sgemm_rows)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                     const int64_t*, const float*, int64_t, const int64_t*, float, float*, int64_t);
  void (*transpose)(const float*, int64_t, int64_t, int64_t, const float*, float*, int64_t);
};
const SimdGemm* simd_gemm_avx512();
const SimdGemm* simd_gemm_avx2();
const SimdGemm* simd_gemm_neon();
}  // namespace detail

}  // namespace ember::kernels::cpu
