// CPU GEMM: ember's own SIMD kernel for float32 where it is faster (kernels/cpu/gemm_simd.h: the
// AVX-512 or the AVX2 version, whichever the CPU runs, kernels/base/cpu_isa.h), Eigen for the rest
// — float64, CPUs with neither, and the float32 shapes listed at use_own_kernel below. The Eigen
// path works with no copies: every operand is an Eigen::Map over ember's memory.
//
// How row-major data maps to Eigen's layouts
// ------------------------------------------
// Eigen's default matrices are column-major, but a Matrix type can be declared RowMajor, and a
// Map can be given an outer stride (the distance between the starts of consecutive rows, for a
// row-major matrix). So a row-major [R, C] block whose rows lie `ld` elements apart is exactly
//
//   Eigen::Map<const Eigen::Matrix<T, Dynamic, Dynamic, RowMajor>, 0, Eigen::OuterStride<>>
//       (ptr, R, C, Eigen::OuterStride<>(ld))          // element (r, c) at ptr[r * ld + c]
//
// A transposed operand (op(A) = A^T, stored as [K, M]) is mapped as that stored [K, M] matrix
// and handed to the product as `.transpose()`: an expression, not a copy. Eigen sees a
// column-major [M, K] matrix with leading dimension lda and packs it for its kernel just as
// cuBLAS or OpenBLAS would with a 'T' flag. No data moves before the GEMM starts.
//
// The result is a RowMajor Map of C, written with `C.noalias() = alpha * opA * opB`: noalias()
// promises Eigen that C does not overlap A or B, so it writes straight into C instead of
// evaluating into a temporary and copying. That call is Eigen's blocked, vectorized GEMM
// (cache-sized panels of A and B, a register-tiled micro-kernel). For a single row or column
// Eigen switches to its matrix-vector kernel, and for a 1x1 result to a dot product.
//
// Threads
// -------
// Eigen is built without OpenMP and the own kernel is single-threaded, so each call below runs on
// one thread. A large product is cut here into panels of C — kPanel rows, or kPanel columns when
// C is wider than tall — and the panels run on ember's thread pool (kernels/base/parallel.h) like
// any other loop: on a busy machine a descheduled thread holds up one panel, not the product.
// C is bit-identical for 1 thread or 64: for Eigen, whether and how a product is cut depends only
// on its sizes, never on the thread count, and each element of C is computed by one Eigen call
// whose blocking depends only on its panel's sizes; the own kernel's sums depend only on K, so
// how its products are cut does not matter at all (where the panels would run one after another
// anyway, it takes the product whole).
#include "kernels/cpu/gemm.h"

#include "kernels/gemm.h"

#include <algorithm>
#include <type_traits>

// GCC 12 reports "'__Y' may be used uninitialized" deep inside Eigen's AVX-512 packet
// transposes (they start from _mm512_undefined_*() on purpose); the warning is a known false
// positive and would bury real ones, so it is silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <Eigen/Core>

#include "kernels/base/parallel.h"
#include "kernels/cpu/gemm_simd.h"

namespace ember::kernels::cpu {

namespace {

template <typename T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstRowMap = Eigen::Map<const RowMajorMatrix<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using RowMap = Eigen::Map<RowMajorMatrix<T>, 0, Eigen::OuterStride<>>;

// C = alpha * A @ B + beta * C for any two Eigen operand expressions (plain maps or transposes).
template <typename T, typename OpA, typename OpB>
void product(const OpA& A, const OpB& B, T alpha, T beta, RowMap<T>& C) {
  if (beta == T(0)) {
    // `C = A * B` makes Eigen clear C first, and through a strided map that is one memset per
    // row. When C's rows are packed, clear it in one pass and accumulate instead: for small
    // products (the MLP's [64,64] @ [64,10]) the per-row clearing is a large part of the call
    // (bench/RESULTS.md, "CPU core benchmark": zeroing C row by row).
    if (C.outerStride() == C.cols()) std::fill_n(C.data(), C.size(), T(0));
    else C.setZero();
  } else if (beta != T(1)) {
    C *= beta;
  }
  if (alpha == T(1)) C.noalias() += A * B;
  else C.noalias() += alpha * A * B;
}

// Whether a float32 product goes to ember's SIMD kernel. Decided once per product from its
// sizes and transposes (never from the thread count), so a product gives the same bits every
// time. The kernel computes 12 x 32 tiles of C (6 x 16 with AVX2), reads A in place, and must
// first transpose ("pack") op(B) when B is stored [N, K] (gemm_simd_impl.h); Eigen packs both
// operands always but switches to matrix-vector code for very thin products. Measured on one Zen 4
// core, Eigen stays ahead where
//   - C has fewer than 4 columns (matrix-vector shapes, where Eigen's matrix-vector code wins);
//   - C is one row and B must be packed: the packed B then serves a single row, and packing
//     it costs more than the product.
// Everywhere else the kernel was as fast or faster on the seed models' products, thin ones with
// a packed B included since that packing is done once per product. The timings behind this rule
// are in bench/RESULTS.md ("CPU GEMM kernel and convolution layout", "Implicit-GEMM
// convolution" and "Figures that were comments in kernels/").
template <typename T>
bool use_own_kernel(bool trans_b, int64_t M, int64_t N) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    // Asked per product: set_cpu_isa (kernels/base/cpu_isa.h) may switch the instruction set.
    return sgemm_simd_available() && N >= 4 && (!trans_b || M >= 2);
  }
}

// Products of fewer multiply-adds than this run as one Eigen call: below it, handing panels to
// other threads costs more than it saves (the time such a product took is in bench/RESULTS.md,
// "Figures that were comments in kernels/").
constexpr int64_t kParallelMacs = int64_t(1) << 21;
// The rows (or columns) of C in a panel: a multiple of every SIMD width and of the own kernel's
// 12- and 6-row tiles (so a panel has no ragged tiles), and large enough that packing op(B) (or
// op(A)) once per panel stays a small part of the panel's work.
constexpr int64_t kPanel = 96;

template <typename T>
void gemm_panel(bool own_kernel, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                int64_t ldc) {
  if (M == 0 || N == 0) return;
  RowMap<T> C(c, M, N, Eigen::OuterStride<>(ldc));
  if (K == 0) {  // an empty sum: op(A) @ op(B) is all zeros
    if (beta == T(0)) C.setZero();
    else C *= beta;
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (own_kernel) {
      sgemm_simd(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
  }
  // The stored shapes: [M, K] or [K, M] for A, [K, N] or [N, K] for B.
  const ConstRowMap<T> A(a, trans_a ? K : M, trans_a ? M : K, Eigen::OuterStride<>(lda));
  const ConstRowMap<T> B(b, trans_b ? N : K, trans_b ? K : N, Eigen::OuterStride<>(ldb));
  if (!trans_a && !trans_b) product<T>(A, B, alpha, beta, C);
  else if (!trans_a && trans_b) product<T>(A, B.transpose(), alpha, beta, C);
  else if (trans_a && !trans_b) product<T>(A.transpose(), B, alpha, beta, C);
  else product<T>(A.transpose(), B.transpose(), alpha, beta, C);
}

template <typename T>
void gemm_typed(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const bool own = use_own_kernel<T>(trans_b, M, N);
  const bool by_rows = M >= N;  // cut the longer side of C
  const int64_t side = by_rows ? M : N;
  // The own kernel's results do not depend on how C is cut (each sum's order depends only on K),
  // so where the panels would run one after another anyway — inside another parallel loop (the
  // convolutions' image loop) or on one thread — it takes the whole product in one call, and
  // packs a transposed B once instead of once per panel.
  const bool serial = in_parallel_region() || this_thread_serial() || num_threads() == 1;
  if (M * N * std::max<int64_t>(K, 1) < kParallelMacs || side <= kPanel || (own && serial)) {
    gemm_panel(own, trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t panels = (side + kPanel - 1) / kPanel;
  parallel_for(0, panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t lo = p * kPanel, len = std::min(kPanel, side - lo);
      if (by_rows) {  // rows [lo, lo + len) of C and of op(A): A is [M, K], or [K, M] if trans_a
        gemm_panel(own, trans_a, trans_b, len, N, K, alpha, trans_a ? a + lo : a + lo * lda, lda,
                   b, ldb, beta, c + lo * ldc, ldc);
      } else {  // columns [lo, lo + len) of C and of op(B): B is [K, N], or [N, K] if trans_b
        gemm_panel(own, trans_a, trans_b, M, len, K, alpha, a, lda,
                   trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
      }
    }
  });
}

}  // namespace

void gemm(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc) {
  EMBER_DISPATCH_FLOAT(dtype, "gemm", [&] {
    gemm_typed<scalar_t>(trans_a, trans_b, M, N, K, static_cast<scalar_t>(alpha),
                         static_cast<const scalar_t*>(a), lda, static_cast<const scalar_t*>(b), ldb,
                         static_cast<scalar_t>(beta), static_cast<scalar_t*>(c), ldc);
  });
}

void gemm_batched(DType dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  double alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                  int64_t ldb, int64_t stride_b, double beta, void* c, int64_t ldc,
                  int64_t stride_c, int64_t batch) {
  const auto es = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t i = 0; i < batch; ++i)
    gemm(dtype, trans_a, trans_b, M, N, K, alpha, static_cast<const char*>(a) + i * stride_a * es,
         lda, static_cast<const char*>(b) + i * stride_b * es, ldb, beta,
         static_cast<char*>(c) + i * stride_c * es, ldc);
}

const GemmKernels gemm_kernels = {&gemm, &gemm_batched};

}  // namespace ember::kernels::cpu
