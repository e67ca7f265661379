// ember/kernels/cuda/gemm.h — the CUDA GEMMs by name, for the CUDA kernels that multiply
// matrices themselves (the im2col convolution, kernels/cuda/conv_im2col.cu), the benchmarks and
// the tests. The contract is the gemm family's (kernels/gemm.h); op cards reach gemm and
// gemm_batched through that family. gemm_tiled is ember's own kernel, which kernels/cuda/gemm.cu
// sends requests to when the backend is GemmBackend::Ember.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cuda {

void gemm(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc);
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
