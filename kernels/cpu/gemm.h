// ember/kernels/cpu/gemm.h — the CPU's GEMM by name, for the CPU kernels that multiply matrices
// themselves (the im2col convolution, kernels/cpu/conv_im2col.cpp) and for the tests. The
// contract is the gemm family's (kernels/gemm.h); op cards reach it through that family.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cpu {

void gemm(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc);

}  // namespace ember::kernels::cpu
