// ember/kernels/cpu/gemm_avx512.h — ember's own float32 GEMM kernel for CPUs with AVX-512.
//
// The same contract as kernels/cpu/gemm.h (row-major, transpose flags, leading dimensions,
// beta == 0 does not read C), for float32 on one thread. kernels/cpu/gemm.cpp calls it for every
// float32 product when the build targets AVX-512 (-march=native on such a CPU) and splits large
// products into panels on the thread pool first; float64 and CPUs without AVX-512 use Eigen.
// How it works and why it is shaped so: the comment at the top of gemm_avx512.cpp.
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

// Whether this build has the kernel (compiled with AVX-512F); sgemm_avx512 throws otherwise.
bool sgemm_avx512_available();

// C[M, N] = alpha * op(A) @ op(B) + beta * C, float32, on the calling thread. M, N, K >= 1.
// The result of each element depends only on K (the order of its sum), never on M, N or where
// the element lies, so a product cut into panels gives the same bits as the whole.
void sgemm_avx512(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc);

// The same product with either operand given row by row, for operands that are sets of rows
// scattered through a tensor: kernels/cpu/conv_implicit.cpp's convolution reads its input's
// shifted rows this way instead of copying them into an im2col matrix. Offsets in floats,
// negative allowed; each row runs on contiguously.
//   a_rows (or null): A(i, k) = a[a_rows[i] + k] (trans_a must be false; lda unused);
//   b_rows (or null): row r of the stored B starts at b + b_rows[r] (ldb unused): op(B)'s K rows
//     without trans_b, read in place; its N columns with trans_b, packed as usual.
// The sum order is the same as sgemm_avx512's.
void sgemm_avx512_rows(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* a, int64_t lda, const int64_t* a_rows, const float* b,
                       int64_t ldb, const int64_t* b_rows, float beta, float* c, int64_t ldc);

// dst[j * ldd + i] = src[i * lds + j] (+ *add, when add is not null) for i < rows, j < cols:
// a float32 matrix transposed through 16 x 16 register blocks (conv_implicit.cpp's layout changes).
void transpose_avx512(const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add,
                      float* dst, int64_t ldd);

}  // namespace ember::kernels::cpu
