// ember/kernels/cuda/gemm_plan.h — how ember's row-major GEMM becomes a column-major cuBLAS call.
//
// Plain C++ with no CUDA in it, so the mapping below is tested on the CPU, in CI, without a GPU
// (tests/kernels/gemm_plan.cpp runs a reference column-major GEMM on exactly these arguments).
// kernels/cuda/gemm.cu hands the result to cublasGemmEx / cublasGemmStridedBatchedEx.
//
// The request (kernels/cpu/gemm.h, kernels/cuda/gemm.h), all row-major:
//
//   C[M, N] = alpha * op(A)[M, K] @ op(B)[K, N] + beta * C
//   a stores A as [M, K] (trans_a false) or as [K, M] (trans_a true: op(A) is its transpose),
//   b stores B as [K, N] (trans_b false) or as [N, K] (trans_b true),
//   rows of a, b and c lie lda, ldb and ldc elements apart; C[i, j] = c[i * ldc + j].
//
// cuBLAS speaks column-major: its matrix X with leading dimension ld keeps X(r, s) at
// x[r + s * ld], i.e. a column is contiguous and columns lie ld apart. It computes
//
//   C'(m x n) = alpha * op1(A')(m x k) @ op2(B')(k x n) + beta * C'
//
// The whole trick: the same memory, read the other way
// ---------------------------------------------------
// A row-major [R, S] matrix P with leading dimension ld keeps P[i, j] at p[i * ld + j]. Read as
// a column-major matrix with the same leading dimension, that memory is an S x R matrix X with
// X(j, i) at p[j + i * ld] = P[i, j]: X is P^T. No data moves; only the reading changes. So:
//
//   - c, row-major [M, N] with ldc, is to cuBLAS the N x M matrix C^T (ldc unchanged);
//   - the product we want, C = op(A) @ op(B), is the same statement as C^T = op(B)^T @ op(A)^T;
//   - so we ask cuBLAS for C' = C^T with m = N, n = M, k = K, and the operands SWAPPED:
//     cuBLAS's first operand A' is ember's b, its second operand B' is ember's a.
//
// What are op1 and op2? cuBLAS needs op1(A') = op(B)^T (N x K) and op2(B') = op(A)^T (K x M):
//
//   b with trans_b false stores B as row-major [K, N]; cuBLAS reads it as the N x K matrix B^T,
//     which is already what it needs: op1 = no transpose. cuBLAS wants ld >= m = N, and
//     ember's contract says ldb >= N.
//   b with trans_b true stores S = B^T as row-major [N, K]; cuBLAS reads it as S^T = B, a K x N
//     matrix, and needs B^T: op1 = transpose. cuBLAS wants ld >= k = K; the contract: ldb >= K.
//   a with trans_a false stores A as row-major [M, K]; cuBLAS reads A^T (K x M), as needed:
//     op2 = no transpose. cuBLAS wants ld >= k = K; the contract: lda >= K.
//   a with trans_a true stores A^T as row-major [K, M]; cuBLAS reads A (M x K) and must
//     transpose it: op2 = transpose. cuBLAS wants ld >= n = M; the contract: lda >= M.
//   c is row-major [M, N], read as the N x M matrix C^T. cuBLAS wants ldc >= m = N; the
//     contract: ldc >= N.
//
// So the flags do not flip: each operand keeps its own transpose flag, and the two operands
// (with their flags, leading dimensions and batch strides) trade places. In one line:
//
//   row-major  C = op(A) @ op(B)   ==   cuBLAS gemm(op = trans_b, op = trans_a, m = N, n = M,
//                                                    k = K, A' = b, ldb, B' = a, lda, C' = c, ldc)
//
// and the leading-dimension rules of ember's contract are exactly the ones cuBLAS checks.
// alpha, beta, and "beta == 0: C is not read" carry over unchanged (cuBLAS documents the same).
// For a batch, matrix i of each operand starts stride elements after matrix i - 1 in either
// reading, so the strides travel with their operands.
//
// Leading dimensions that do not matter
// -------------------------------------
// cuBLAS rejects an ld below max(1, rows of the column-major matrix it reads — the row length of
// ember's row-major one) even when the ld is never used: when a row-major matrix has a single row (or none), no second row is ever addressed, and
// when it has no columns nothing is addressed at all. ember can hand such operands over with any
// ld (a [1, K] row cut from a larger tensor, a [M, 0] matrix of a K == 0 product), so the plan
// replaces the ld of those matrices by max(columns, 1), which addresses the same elements and
// satisfies cuBLAS. Every other ld is passed through as given.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ember::kernels::cuda {

// The arguments of one column-major GEMM, named as cuBLAS's documentation names them:
//   C(m x n) = alpha * op(A)(m x k) @ op(B)(k x n) + beta * C
// op(X) is X^T where transX is true. A is ember's b and B is ember's a (see above).
struct CublasGemmArgs {
  bool transa = false, transb = false;
  int64_t m = 0, n = 0, k = 0;
  const void* A = nullptr;
  int64_t lda = 1, strideA = 0;
  const void* B = nullptr;
  int64_t ldb = 1, strideB = 0;
  void* C = nullptr;
  int64_t ldc = 1, strideC = 0;
};

// The ld a row-major [rows, cols] matrix is passed with: its own where it addresses a second
// row, max(cols, 1) where no element beyond the first row is ever read (see above).
inline int64_t effective_ld(int64_t rows, int64_t cols, int64_t ld) {
  if (rows <= 1 || cols == 0) return std::max<int64_t>(cols, 1);
  return ld;
}

// ember's row-major request (arguments as in kernels/cuda/gemm.h; strides 0 for a single
// product) as the column-major cuBLAS call that computes it.
inline CublasGemmArgs plan_cublas_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N,
                                       int64_t K, const void* a, int64_t lda, int64_t stride_a,
                                       const void* b, int64_t ldb, int64_t stride_b, void* c,
                                       int64_t ldc, int64_t stride_c) {
  CublasGemmArgs p;
  // C^T (N x M) = op(B)^T (N x K) @ op(A)^T (K x M).
  p.m = N;
  p.n = M;
  p.k = K;
  // cuBLAS's first operand is ember's b, with b's own transpose flag. b is stored row-major as
  // [K, N] or, transposed, as [N, K].
  p.transa = trans_b;
  p.A = b;
  p.lda = trans_b ? effective_ld(N, K, ldb) : effective_ld(K, N, ldb);
  p.strideA = stride_b;
  // cuBLAS's second operand is ember's a, stored row-major as [M, K] or, transposed, [K, M].
  p.transb = trans_a;
  p.B = a;
  p.ldb = trans_a ? effective_ld(K, M, lda) : effective_ld(M, K, lda);
  p.strideB = stride_a;
  // The result: row-major [M, N] is column-major N x M, same ld.
  p.C = c;
  p.ldc = effective_ld(M, N, ldc);
  p.strideC = stride_c;
  return p;
}

}  // namespace ember::kernels::cuda
