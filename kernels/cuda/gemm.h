// ember/kernels/cuda/gemm.h — matrix multiply on CUDA: cuBLAS, or ember's own tiled kernel.
//
// Same contract as kernels/cpu/gemm.h: row-major C[M, N] = alpha * op(A) @ op(B) + beta * C,
// with trans flags describing how A and B are stored, and beta == 0 meaning "overwrite C".
// kernels/cuda/gemm.cu checks the request and sends it to the backend chosen with
// ember::cuda::set_gemm_backend: cuBLAS (kernels/cuda/gemm_plan.h writes out how a row-major
// product is expressed to column-major cuBLAS) or gemm_tiled (kernels/cuda/gemm_tiled.cu).
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cuda {

void gemm(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc);

// `batch` independent products; matrix i of each operand starts stride_x elements after
// matrix i - 1 (stride 0: the same matrix for every product, i.e. a broadcast operand).
void gemm_batched(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                  int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc,
                  int64_t stride_c, int64_t batch);

// ember's own kernel (kernels/cuda/gemm_tiled.cu), the request already checked by gemm.cu.
void gemm_tiled(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc, int64_t stride_c,
                int64_t batch);

}  // namespace ember::kernels::cuda
