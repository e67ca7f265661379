// ember/kernels/gemm.h — the gemm family: general matrix multiply.
//   CPU:  kernels/cpu/gemm.cpp (ember's SIMD kernel for float32 where it is faster,
//         kernels/cpu/gemm_simd.h, in an AVX-512 and an AVX2 version chosen when the program
//         runs; Eigen's blocked GEMM otherwise).
//   CUDA: kernels/cuda/gemm.cu, which sends the request to the backend chosen with
//         ember::cuda::set_gemm_backend: cuBLAS (kernels/cuda/gemm_plan.h writes out how a
//         row-major product is expressed to column-major cuBLAS) or ember's own tiled kernel
//         (kernels/cuda/gemm_tiled.cu).
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
// CPU threads: a large product is cut into panels of C that run on ember's thread pool
// (gemm.cpp); C is the same for any thread count.
#pragma once

#include <cstdint>
#include "kernels/base/dtype.h"

namespace ember::kernels {

struct GemmKernels {
  void (*gemm)(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
               double alpha, const void* a, int64_t lda, const void* b, int64_t ldb, double beta,
               void* c, int64_t ldc);
  // `batch` independent products; matrix i of each operand starts stride_x elements after
  // matrix i - 1 (stride 0: the same matrix for every product, i.e. a broadcast operand).
  // One launch on a GPU; one product after the other on the CPU.
  void (*gemm_batched)(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                       double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                       int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc,
                       int64_t stride_c, int64_t batch);
};

namespace cpu {
extern const GemmKernels gemm_kernels;
}
namespace cuda {
extern const GemmKernels gemm_kernels;
}

}  // namespace ember::kernels
