// ember/kernels/cpu/gemm.h — general matrix multiply on the CPU (ember's AVX-512 kernel for
// float32 where it is faster, kernels/cpu/gemm_avx512.cpp; Eigen's blocked GEMM otherwise).
//
//   C[M, N] = alpha * op(A)[M, K] @ op(B)[K, N] + beta * C
//
// Everything is row-major, as ember tensors are. Dimension letters: M rows of the result,
// N columns of the result, K the inner (summed) dimension.
//
// The transpose flags say how an operand is stored, so a transposed view (x.t(), whose last
// stride is not 1 but whose second-to-last is) needs no copy:
//   trans_a == false: A is stored as [M, K], A[i, k] = a[i * lda + k]   (lda >= K)
//   trans_a == true:  A is stored as [K, M], A[i, k] = a[k * lda + i]   (lda >= M)
// and the same for B with [K, N] / [N, K] and ldb. C is always stored as [M, N] with ldc >= N.
//
// beta == 0 means "overwrite C": C is not read then (it may hold garbage, as in BLAS).
// Threads: a large product is cut into panels of C that run on ember's thread pool (gemm.cpp);
// C is the same for any thread count.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cpu {

void gemm(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc);

}  // namespace ember::kernels::cpu
