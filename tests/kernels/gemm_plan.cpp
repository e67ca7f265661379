// The row-major -> column-major mapping of kernels/cuda/gemm_plan.h, proven on the CPU; and
// ember's own CUDA GEMM kernel (kernels/cuda/gemm_tiled.cu) on the same cases, on a GPU or in the
// emulation build ([cuda] test at the end).
//
// The GPU GEMM (kernels/cuda/gemm.cu) passes plan_cublas_gemm's arguments straight to cuBLAS.
// CI has no GPU, so here a naive column-major GEMM reads those same arguments exactly as cuBLAS
// documents them (op(A) is m x k with A(r, s) at A[r + s * lda], the ld checks that make cuBLAS
// return CUBLAS_STATUS_INVALID_VALUE, beta == 0 not reading C), runs on ember's row-major
// buffers, and must give bit for bit what a plain row-major triple loop gives. All values are
// small integers times powers of two, so every product and sum is exact and the two loops agree
// exactly whatever their summation order.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/gemm_plan.h"
#if defined(EMBER_CUDA_EMULATED)
#include "kernels/emulator/emulator.h"
#endif

using ember::kernels::cuda::CublasGemmArgs;
using ember::kernels::cuda::plan_cublas_gemm;

namespace {

using Buffer = std::vector<double>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// cuBLAS's argument checks for gemm (its documented CUBLAS_STATUS_INVALID_VALUE conditions).
bool cublas_accepts(const CublasGemmArgs& p, int64_t batch) {
  if (p.m < 0 || p.n < 0 || p.k < 0 || batch < 0) return false;
  if (p.lda < std::max<int64_t>(1, p.transa ? p.k : p.m)) return false;
  if (p.ldb < std::max<int64_t>(1, p.transb ? p.n : p.k)) return false;
  if (p.ldc < std::max<int64_t>(1, p.m)) return false;
  return true;
}

// The column-major reference, as cuBLAS defines gemm / gemmStridedBatched:
//   C = alpha * op(A) @ op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n, column-major;
//   op(A)(i, l) = A[i + l * lda] (transa false) or A[l + i * lda] (transa true), likewise B;
//   beta == 0: C is written without being read. Matrix q of a batch starts q * stride later.
void reference_column_major(const CublasGemmArgs& p, int64_t batch, double alpha, double beta) {
  REQUIRE(cublas_accepts(p, batch));
  const double* A = static_cast<const double*>(p.A);
  const double* B = static_cast<const double*>(p.B);
  double* C = static_cast<double*>(p.C);
  for (int64_t q = 0; q < batch; ++q) {
    const double* Aq = A + q * p.strideA;
    const double* Bq = B + q * p.strideB;
    double* Cq = C + q * p.strideC;
    for (int64_t j = 0; j < p.n; ++j) {
      for (int64_t i = 0; i < p.m; ++i) {
        double acc = 0.0;
        for (int64_t l = 0; l < p.k; ++l) {
          const double av = p.transa ? Aq[l + i * p.lda] : Aq[i + l * p.lda];
          const double bv = p.transb ? Bq[j + l * p.ldb] : Bq[l + j * p.ldb];
          acc += av * bv;
        }
        double& cv = Cq[i + j * p.ldc];
        cv = beta == 0.0 ? alpha * acc : alpha * acc + beta * cv;
      }
    }
  }
}

// ember's contract read directly (kernels/cpu/gemm.h): row-major, C[i, j] = c[i * ldc + j],
// op(A)[i, l] = a[i * lda + l] or, transposed storage, a[l * lda + i]; likewise B.
void reference_row_major(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
                         const double* a, int64_t lda, int64_t stride_a, const double* b,
                         int64_t ldb, int64_t stride_b, double beta, double* c, int64_t ldc,
                         int64_t stride_c, int64_t batch) {
  for (int64_t q = 0; q < batch; ++q) {
    const double* aq = a + q * stride_a;
    const double* bq = b + q * stride_b;
    double* cq = c + q * stride_c;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t l = 0; l < K; ++l) {
          const double av = trans_a ? aq[l * lda + i] : aq[i * lda + l];
          const double bv = trans_b ? bq[j * ldb + l] : bq[l * ldb + j];
          acc += av * bv;
        }
        double& cv = cq[i * ldc + j];
        cv = beta == 0.0 ? alpha * acc : alpha * acc + beta * cv;
      }
    }
  }
}

// Elements a row-major [rows, cols] matrix with leading dimension ld spans.
int64_t span(int64_t rows, int64_t cols, int64_t ld) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
}

// Small integers, different for every position and every buffer (exact in double).
Buffer pattern(int64_t n, int salt) {
  Buffer v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<double>((i * 7 + salt * 13) % 11 - 5);
  return v;
}

bool same(double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; }

struct Case {
  bool trans_a = false, trans_b = false;
  int64_t M = 1, N = 1, K = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;  // 0: the minimum plus pad
  int64_t pad = 0;                    // extra elements per row beyond the minimum
  double alpha = 1.0, beta = 0.0;
  int64_t batch = 1;
  bool broadcast_a = false, broadcast_b = false;  // batch stride 0: one matrix for every product
  int64_t stride_multiple = 1;  // batch strides rounded up to a multiple of this many elements
};

// One case's buffers and layout: leading dimensions (the minimum plus pad, unless given), batch
// strides (whole matrices plus a gap of at least 5 elements that must stay untouched too), A and B
// filled with small integers and C with other ones, or with NaN inside the matrices when beta == 0
// (C is not read then: a NaN must not show up in the result).
struct Operands {
  int64_t lda, ldb, ldc, stride_a, stride_b, stride_c;
  Buffer a, b, c;
};

Operands operands(const Case& cs) {
  Operands o;
  const int64_t a_rows = cs.trans_a ? cs.K : cs.M, a_cols = cs.trans_a ? cs.M : cs.K;
  const int64_t b_rows = cs.trans_b ? cs.N : cs.K, b_cols = cs.trans_b ? cs.K : cs.N;
  o.lda = cs.lda > 0 ? cs.lda : a_cols + cs.pad;
  o.ldb = cs.ldb > 0 ? cs.ldb : b_cols + cs.pad;
  o.ldc = cs.ldc > 0 ? cs.ldc : cs.N + cs.pad;
  const auto round_up = [&](int64_t n) {
    return (n + cs.stride_multiple - 1) / cs.stride_multiple * cs.stride_multiple;
  };
  o.stride_a = cs.broadcast_a ? 0 : round_up(span(a_rows, a_cols, o.lda) + 5);
  o.stride_b = cs.broadcast_b ? 0 : round_up(span(b_rows, b_cols, o.ldb) + 5);
  o.stride_c = round_up(span(cs.M, cs.N, o.ldc) + 5);
  o.a = pattern(o.stride_a * (cs.batch - 1) + span(a_rows, a_cols, o.lda) + 1, 1);
  o.b = pattern(o.stride_b * (cs.batch - 1) + span(b_rows, b_cols, o.ldb) + 1, 2);
  o.c = pattern(o.stride_c * (cs.batch - 1) + span(cs.M, cs.N, o.ldc) + 5, 3);
  if (cs.beta == 0.0)
    for (int64_t q = 0; q < cs.batch; ++q)
      for (int64_t i = 0; i < cs.M; ++i)
        for (int64_t j = 0; j < cs.N; ++j)
          o.c[static_cast<size_t>(q * o.stride_c + i * o.ldc + j)] = kNaN;
  return o;
}

// Runs one case through both paths on identical buffers and compares every element of C,
// including the padding between rows, which neither may touch.
void check_case(const Case& cs) {
  const Operands o = operands(cs);
  const Buffer& a = o.a;
  const Buffer& b = o.b;
  const Buffer& c0 = o.c;
  const int64_t lda = o.lda, ldb = o.ldb, ldc = o.ldc;
  const int64_t stride_a = o.stride_a, stride_b = o.stride_b, stride_c = o.stride_c;
  Buffer c_row = c0, c_col = c0;

  reference_row_major(cs.trans_a, cs.trans_b, cs.M, cs.N, cs.K, cs.alpha, a.data(), lda, stride_a,
                      b.data(), ldb, stride_b, cs.beta, c_row.data(), ldc, stride_c, cs.batch);
  const CublasGemmArgs p =
      plan_cublas_gemm(cs.trans_a, cs.trans_b, cs.M, cs.N, cs.K, a.data(), lda, stride_a, b.data(),
                       ldb, stride_b, c_col.data(), ldc, stride_c);
  reference_column_major(p, cs.batch, cs.alpha, cs.beta);

  INFO("trans_a " << cs.trans_a << " trans_b " << cs.trans_b << " M " << cs.M << " N " << cs.N
                  << " K " << cs.K << " lda " << lda << " ldb " << ldb << " ldc " << ldc
                  << " alpha " << cs.alpha << " beta " << cs.beta << " batch " << cs.batch);
  for (size_t i = 0; i < c0.size(); ++i) {
    INFO("element " << i);
    REQUIRE(same(c_row[i], c_col[i]));
  }
  // With beta == 0 every element of the matrices was overwritten: no NaN is left.
  for (int64_t q = 0; q < cs.batch; ++q)
    for (int64_t i = 0; i < cs.M; ++i)
      for (int64_t j = 0; j < cs.N; ++j)
        REQUIRE_FALSE(std::isnan(c_col[static_cast<size_t>(q * stride_c + i * ldc + j)]));
}

}  // namespace

TEST_CASE("gemm plan: the mapping swaps operands and M/N and keeps each transpose flag",
          "[cuda-logic]") {
  double a = 0, b = 0, c = 0;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const CublasGemmArgs p = plan_cublas_gemm(ta, tb, /*M=*/5, /*N=*/3, /*K=*/4, &a, ta ? 9 : 8,
                                                11, &b, tb ? 6 : 7, 12, &c, 10, 13);
      CHECK(p.m == 3);  // N
      CHECK(p.n == 5);  // M
      CHECK(p.k == 4);
      CHECK(p.A == &b);
      CHECK(p.B == &a);
      CHECK(p.C == &c);
      CHECK(p.transa == tb);
      CHECK(p.transb == ta);
      CHECK(p.lda == (tb ? 6 : 7));
      CHECK(p.ldb == (ta ? 9 : 8));
      CHECK(p.ldc == 10);
      CHECK(p.strideA == 12);
      CHECK(p.strideB == 11);
      CHECK(p.strideC == 13);
    }
  }
}

namespace {

// ---- the cases ----------------------------------------------------------------------------------

// All four transpose combinations, odd sizes, packed and padded rows.
std::vector<Case> transpose_cases() {
  std::vector<Case> v;
  const int64_t sizes[] = {1, 7, 13};
  const std::pair<double, double> scalars[] = {{1.0, 0.0}, {0.5, -1.25}, {-2.0, 1.0}};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : sizes)
        for (int64_t N : sizes)
          for (int64_t K : sizes)
            for (int64_t pad : {0, 3})
              for (const auto& [alpha, beta] : scalars) {
                Case cs;
                cs.trans_a = ta;
                cs.trans_b = tb;
                cs.M = M;
                cs.N = N;
                cs.K = K;
                cs.pad = pad;
                cs.alpha = alpha;
                cs.beta = beta;
                v.push_back(cs);
              }
  return v;
}

// K == 0: C = beta * C, as BLAS defines it.
std::vector<Case> empty_depth_cases() {
  std::vector<Case> v;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (double beta : {0.0, 0.5}) {
        Case cs;
        cs.trans_a = ta;
        cs.trans_b = tb;
        cs.M = 7;
        cs.N = 13;
        cs.K = 0;
        cs.beta = beta;
        v.push_back(cs);
      }
  return v;
}

// A single row never uses its ld, and ember may pass anything there (a row cut from a larger
// tensor, a 1-d operand).
std::vector<Case> unused_ld_cases() {
  std::vector<Case> v;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Case row;  // M == 1: op(A) is one row, C is one row
      row.trans_a = ta;
      row.trans_b = tb;
      row.M = 1;
      row.N = 7;
      row.K = 13;
      if (!ta) row.lda = 1;  // stored [1, 13]: ld is irrelevant
      row.ldc = 1;           // C stored [1, 7]
      row.alpha = 0.5;
      row.beta = -1.25;
      v.push_back(row);

      Case col;  // N == 1 with b stored transposed as [1, K]: its ld is irrelevant too
      col.trans_a = ta;
      col.trans_b = tb;
      col.M = 7;
      col.N = 1;
      col.K = 13;
      if (tb) col.ldb = 1;
      v.push_back(col);
    }
  return v;
}

// Strided batches, including a broadcast operand (stride 0).
std::vector<Case> batch_cases() {
  std::vector<Case> v;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int which : {0, 1, 2}) {
        Case cs;
        cs.trans_a = ta;
        cs.trans_b = tb;
        cs.M = 7;
        cs.N = 13;
        cs.K = 5;
        cs.pad = 2;
        cs.alpha = 0.5;
        cs.beta = which == 2 ? -1.0 : 0.0;
        cs.batch = 3;
        cs.broadcast_a = which == 0;
        cs.broadcast_b = which == 1;
        v.push_back(cs);
      }
  return v;
}

}  // namespace

TEST_CASE("gemm plan: all four transpose combinations, odd sizes, packed and padded rows",
          "[cuda-logic]") {
  for (const Case& cs : transpose_cases()) check_case(cs);
}

TEST_CASE("gemm plan: K == 0 gives C = beta * C, as BLAS defines it", "[cuda-logic]") {
  for (const Case& cs : empty_depth_cases()) check_case(cs);
}

TEST_CASE("gemm plan: leading dimensions that address nothing are made acceptable to cuBLAS",
          "[cuda-logic]") {
  // cuBLAS would reject ld < max(1, rows); the plan replaces it.
  for (const Case& cs : unused_ld_cases()) check_case(cs);
  // K == 0: a stored [M, 0] may come with ld 0 (nothing is ever addressed).
  const CublasGemmArgs p =
      plan_cublas_gemm(false, false, 7, 5, 0, nullptr, 0, 0, nullptr, 0, 0, nullptr, 5, 0);
  CHECK(cublas_accepts(p, 1));
  CHECK(p.lda >= 1);
  CHECK(p.ldb >= 1);
}

TEST_CASE("gemm plan: strided batches, including a broadcast operand (stride 0)", "[cuda-logic]") {
  for (const Case& cs : batch_cases()) check_case(cs);
}

// ==== ember's own GEMM kernel on the device ===========================================================
// Only a build with the CUDA backend has kernels::cuda to call (a CPU-only build has no stubs).
#if defined(EMBER_WITH_CUDA)

namespace {

// One case through kernels::cuda::gemm_batched with the Ember backend, on device copies of the
// same buffers, in `dtype`; C (padding and gaps included) must equal the row-major reference
// exactly (the values are small integers, exact in float32 too).
void check_device_case(const Case& cs, ember::DType dtype) {
  using namespace ember;
  const Operands o = operands(cs);
  const Buffer& a = o.a;
  const Buffer& b = o.b;
  const Buffer& c = o.c;
  const int64_t lda = o.lda, ldb = o.ldb, ldc = o.ldc;
  const int64_t stride_a = o.stride_a, stride_b = o.stride_b, stride_c = o.stride_c;
  Buffer want = c;
  reference_row_major(cs.trans_a, cs.trans_b, cs.M, cs.N, cs.K, cs.alpha, a.data(), lda, stride_a,
                      b.data(), ldb, stride_b, cs.beta, want.data(), ldc, stride_c, cs.batch);
  const auto on_device = [&](const Buffer& v) {
    return from_vector<double>(v, {static_cast<int64_t>(v.size())}, kFloat64)
        .to(dtype)
        .to(Device::cuda(0));
  };
  const Tensor da = on_device(a), db = on_device(b), dc = on_device(c);
  kernels::cuda::gemm_batched(dtype, cs.trans_a, cs.trans_b, cs.M, cs.N, cs.K, cs.alpha,
                              da.raw_data(), lda, stride_a, db.raw_data(), ldb, stride_b, cs.beta,
                              dc.raw_data(), ldc, stride_c, cs.batch);
  const std::vector<double> got = dc.to_vector<double>();
  INFO(dtype_name(dtype) << " trans_a " << cs.trans_a << " trans_b " << cs.trans_b << " M " << cs.M
                         << " N " << cs.N << " K " << cs.K << " lda " << lda << " ldb " << ldb
                         << " ldc " << ldc << " alpha " << cs.alpha << " beta " << cs.beta
                         << " batch " << cs.batch);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(same(got[i],
                 static_cast<double>(dtype == kFloat32 ? static_cast<float>(want[i]) : want[i])));
  }
}

}  // namespace

TEST_CASE("gemm tiled: ember's CUDA GEMM kernel computes every case of the plan tests",
          "[cuda][gemm]") {
  using namespace ember;
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  const cuda::GemmBackend saved = cuda::gemm_backend();
  cuda::set_gemm_backend(cuda::GemmBackend::Ember);
  std::vector<Case> cases = transpose_cases();
  for (const auto& more : {empty_depth_cases(), unused_ld_cases(), batch_cases()})
    cases.insert(cases.end(), more.begin(), more.end());
  // Several tiles in every direction (the float32 tile is 128 x 128, float64 64 x 64, 8 deep),
  // ragged edges, and a batch of them.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Case big;
      big.trans_a = ta;
      big.trans_b = tb;
      big.M = 131;
      big.N = 257;
      big.K = 37;
      big.pad = 1;
      big.alpha = 0.5;
      big.beta = -1.0;
      cases.push_back(big);
      big.M = 65;
      big.N = 3;
      big.K = 300;
      big.batch = 2;
      big.beta = 0.0;
      cases.push_back(big);
      // Rows that start on 16 bytes (leading dimensions and batch strides multiples of 4
      // elements), so that the kernel's 16-byte loads and stores run, with every edge ragged:
      // a vector along K, M or N that reaches past the matrix falls back to element-wise
      // accesses in the same launch.
      Case vec;
      vec.trans_a = ta;
      vec.trans_b = tb;
      vec.M = 133;
      vec.N = 262;
      vec.K = 37;
      const auto multiple_of_4 = [](int64_t n) { return (n + 3) / 4 * 4; };
      vec.lda = multiple_of_4(ta ? vec.M : vec.K);
      vec.ldb = multiple_of_4(tb ? vec.K : vec.N);
      vec.ldc = multiple_of_4(vec.N) + 4;
      vec.stride_multiple = 4;
      vec.batch = 2;
      vec.alpha = 0.5;
      vec.beta = -1.0;
      cases.push_back(vec);
      vec.beta = 0.0;
      vec.batch = 1;
      cases.push_back(vec);
    }
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& cs : cases) check_device_case(cs, dt);
  cuda::set_gemm_backend(saved);
}

#if defined(EMBER_CUDA_EMULATED)
// The traffic kernels/cuda/gemm_tiled.cu's comment promises, as the emulator counts it (bench_gemm
// --emulated prints rung 09's): at M = N = K = 128 every tile is full, so per output element
//   aligned rows    one 16-byte load per thread per operand tile: 2K / (V * BN) loads (V = 4
//                   floats, BN = 128; V = 2 doubles, BN = 64), the bytes of 2K elements spread
//                   over whole tiles; one 16-byte store per V outputs; with beta != 0 one
//                   16-byte load of C per V outputs more;
//   odd rows        leading dimensions one element longer: V element-wise loads instead of each
//                   16-byte one, the same bytes, and one store per output.
// in every transpose combination: a layout that never takes its 16-byte path fails here.
TEST_CASE("gemm tiled: 16-byte accesses where the rows allow them, element-wise ones elsewhere",
          "[cuda][gemm]") {
  using namespace ember;
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  namespace emu = ember::emu;
  REQUIRE(emu::instrumented());
  const cuda::GemmBackend saved = cuda::gemm_backend();
  cuda::set_gemm_backend(cuda::GemmBackend::Ember);
  const int64_t n = 128;
  const double outputs = static_cast<double>(n * n);
  for (DType dt : {kFloat32, kFloat64})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t extra : {0, 1})
          for (double beta : {0.0, 2.0}) {
            const double V = dt == kFloat32 ? 4 : 2, BN = dt == kFloat32 ? 128 : 64;
            const double elem = dt == kFloat32 ? 4 : 8;
            INFO(dtype_name(dt) << " trans_a " << ta << " trans_b " << tb << " ld extra " << extra
                                << " beta " << beta);
            const int64_t ld = n + extra;
            const Tensor a = full({n, ld}, 1.0).to(dt).to(Device::cuda(0));
            const Tensor b = full({n, ld}, 1.0).to(dt).to(Device::cuda(0));
            const Tensor c = full({n, ld}, 1.0).to(dt).to(Device::cuda(0));
            emu::set_access_counting(true);
            kernels::cuda::gemm_batched(dt, ta, tb, n, n, n, 1.0, a.raw_data(), ld, 0, b.raw_data(),
                                        ld, 0, beta, c.raw_data(), ld, 0, 1);
            cuda::synchronize();
            const emu::AccessCounts counts = emu::access_counts();
            emu::set_access_counting(false);
            const double vector_loads = 2.0 * n / (V * BN);  // of A and B, per output
            const double c_loads = beta != 0 ? (extra == 0 ? 1 / V : 1) : 0;
            CHECK(counts.launches == 1);
            CHECK(counts.global_reads.accesses / outputs ==
                  Approx((extra == 0 ? vector_loads : vector_loads * V) + c_loads));
            CHECK(counts.global_reads.bytes / outputs ==
                  Approx(vector_loads * V * elem + (beta != 0 ? elem : 0)));
            CHECK(counts.global_writes.accesses / outputs == Approx(extra == 0 ? 1 / V : 1));
            CHECK(counts.global_writes.bytes / outputs == Approx(elem));
            // Every output is 128 (the sum of 128 ones), plus 2 * 1 where beta = 2.
            const std::vector<double> got = c.to_vector<double>();
            int64_t right = 0;
            for (int64_t i = 0; i < n; ++i)
              for (int64_t j = 0; j < n; ++j)
                right += got[static_cast<size_t>(i * ld + j)] == n + beta;
            CHECK(right == n * n);
          }
  cuda::set_gemm_backend(saved);
}
#endif  // EMBER_CUDA_EMULATED

#endif  // EMBER_WITH_CUDA
