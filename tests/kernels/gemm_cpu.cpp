// The CPU GEMM (kernels/cpu/gemm.h) and ember's own float32 SIMD kernel behind it
// (kernels/cpu/gemm_simd.h), in every version this machine can run (avx512, avx2 or neon, and
// baseline, which is Eigen: kernels/base/cpu_isa.h): every edge of the kernel's 12 x 32, 6 x 16
// or 12 x 8 register tile, its 256-long k-blocks and 512-wide column blocks, the four transpose
// combinations, padded leading dimensions, alpha and beta, against a double-precision reference;
// C outside the product is never written and beta == 0 never reads C; and the sum order depends
// only on K, so a product cut into pieces gives the same bits as the whole (what lets gemm.cpp
// split it across threads), and every SIMD version gives the bits of one scalar sum in that
// order (so avx512, avx2 and neon agree, across machines too).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

#include "cpu_isa_test_util.h"
#include "kernels/base/cpu_isa.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_simd.h"

using namespace ember;
using kernels::CpuIsa;
using test::IsaScope;
using test::runnable_isas;

namespace {

// The instruction sets with a SIMD kernel that this machine can run (none: the tests of the
// kernel itself say SKIPPED).
std::vector<CpuIsa> kernel_isas() {
  std::vector<CpuIsa> v;
  for (CpuIsa isa : runnable_isas()) {
    if (isa != CpuIsa::Baseline) v.push_back(isa);
  }
  if (v.empty()) {
    std::cout << "SKIPPED: this machine or build runs no SIMD GEMM kernel (x86-64 with AVX2 or "
                 "AVX-512, or aarch64, and GCC or Clang); Eigen does float32 too\n";
  }
  return v;
}

struct Layout {
  bool ta = false, tb = false;
  int64_t M = 1, N = 1, K = 1, pad = 0;
  int64_t lda() const { return (ta ? M : K) + pad; }
  int64_t ldb() const { return (tb ? K : N) + pad; }
  int64_t ldc() const { return N + pad; }
  int64_t a_size() const { return (ta ? K : M) * lda(); }
  int64_t b_size() const { return (tb ? N : K) * ldb(); }
  int64_t c_size() const { return M * ldc(); }
  float a_at(const std::vector<float>& a, int64_t i, int64_t k) const {
    return ta ? a[k * lda() + i] : a[i * lda() + k];
  }
  float b_at(const std::vector<float>& b, int64_t k, int64_t j) const {
    return tb ? b[j * ldb() + k] : b[k * ldb() + j];
  }
};

std::vector<float> random_floats(int64_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(gen);
  return v;
}

// Transpose combination t (bit 0: A stored transposed, bit 1: B) at the given sizes.
Layout layout(int t, int64_t M, int64_t N, int64_t K) {
  Layout l;
  l.ta = t & 1;
  l.tb = t & 2;
  l.M = M;
  l.N = N;
  l.K = K;
  return l;
}

using Gemm = void (*)(const Layout&, float, const float*, const float*, float, float*);

void via_gemm(const Layout& l, float alpha, const float* a, const float* b, float beta, float* c) {
  kernels::cpu::gemm(kFloat32, l.ta, l.tb, l.M, l.N, l.K, alpha, a, l.lda(), b, l.ldb(), beta, c,
                     l.ldc());
}
void via_kernel(const Layout& l, float alpha, const float* a, const float* b, float beta,
                float* c) {
  kernels::cpu::sgemm_simd(l.ta, l.tb, l.M, l.N, l.K, alpha, a, l.lda(), b, l.ldb(), beta, c,
                           l.ldc());
}

// Runs one product and checks every element of C (inside: the reference within float32's
// summation error; outside the product, in the padding: untouched). Returns false on the first
// mismatch, after reporting it.
bool check_product(const Layout& l, float alpha, float beta, Gemm run, std::mt19937& gen) {
  const std::vector<float> a = random_floats(l.a_size(), gen);
  const std::vector<float> b = random_floats(l.b_size(), gen);
  std::vector<float> c = random_floats(l.c_size(), gen);
  const float sentinel = 12345.0f;
  for (int64_t i = 0; i < l.M; ++i) {
    for (int64_t j = l.N; j < l.ldc(); ++j) c[i * l.ldc() + j] = sentinel;
    // beta == 0: C is not read, so NaN in it must not reach the result (BLAS's rule).
    if (beta == 0.0f) {
      for (int64_t j = 0; j < l.N; ++j) {
        c[i * l.ldc() + j] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  const std::vector<float> c0 = c;
  run(l, alpha, a.data(), b.data(), beta, c.data());
  for (int64_t i = 0; i < l.M; ++i) {
    for (int64_t j = 0; j < l.ldc(); ++j) {
      const float got = c[i * l.ldc() + j];
      if (j >= l.N) {
        if (got != sentinel) {
          FAIL_CHECK("C[" << i << ", " << j << "] lies outside the product and was written");
          return false;
        }
        continue;
      }
      double want = 0.0, magnitude = 0.0;
      for (int64_t k = 0; k < l.K; ++k) {
        const double p = double(l.a_at(a, i, k)) * double(l.b_at(b, k, j));
        want += p;
        magnitude += std::fabs(p);
      }
      const double c_old = beta == 0.0f ? 0.0 : double(c0[i * l.ldc() + j]);
      want = alpha * want + beta * c_old;
      const double tol = 4.0 * std::numeric_limits<float>::epsilon() *
                         (std::fabs(alpha) * magnitude + std::fabs(beta * c_old) + 1e-30);
      if (!(std::fabs(got - want) <= tol)) {
        FAIL_CHECK("C[" << i << ", " << j << "] = " << got << ", want " << want << " (tolerance "
                        << tol << ")");
        return false;
      }
    }
  }
  return true;
}

}  // namespace

TEST_CASE("cpu gemm: float32 products at every tile edge, transpose and k-block",
          "[gemm][matmul]") {
  std::mt19937 gen(7);
  // Rows around the 12-row (avx512, neon) and 6-row (avx2) tiles, columns around the 16-, 8- and
  // 4-lane vectors and the 32-, 16- and 8-column tiles, depths around the 16-, 8- and 4-wide
  // transposes and the 256-long k-blocks.
  const int64_t Ms[] = {1, 5, 7, 11, 12, 13, 25, 97};
  const int64_t Ns[] = {1, 8, 9, 15, 17, 31, 33, 100};
  const int64_t Ks[] = {1, 7, 16, 17, 255, 256, 257, 530};
  const float alphas[] = {1.0f, -0.5f};
  const float betas[] = {0.0f, 1.0f, 0.25f};
  // kernels::cpu::gemm under each instruction set, and the SIMD kernel called directly.
  std::vector<std::pair<CpuIsa, Gemm>> paths;
  for (CpuIsa isa : runnable_isas()) paths.push_back({isa, via_gemm});
  for (CpuIsa isa : kernel_isas()) paths.push_back({isa, via_kernel});
  int64_t cases = 0;
  for (const auto& [isa, run] : paths) {
    IsaScope scope(isa);
    const char* name = run == via_gemm ? "kernels::cpu::gemm" : "sgemm_simd";
    const char* isa_name = kernels::isa_name(isa);
    for (int t = 0; t < 4; ++t) {
      for (int64_t M : Ms) {
        for (int64_t N : Ns) {
          for (int64_t K : Ks) {
            Layout l = layout(t, M, N, K);
            l.pad = (M + N + K) % 3;  // packed and padded rows alike
            const float alpha = alphas[(M + K) % 2], beta = betas[(N + K) % 3];
            CAPTURE(name, isa_name, l.ta, l.tb, M, N, K, l.pad, alpha, beta);
            REQUIRE(check_product(l, alpha, beta, run, gen));
            ++cases;
          }
        }
      }
    }
  }
  CHECK(cases == int64_t(paths.size()) * 4 * 8 * 8 * 8);
}

TEST_CASE("cpu gemm: wider than a 512-column block, deeper than several k-blocks",
          "[gemm][matmul]") {
  std::mt19937 gen(11);
  for (CpuIsa isa : runnable_isas()) {
    IsaScope scope(isa);
    for (int t = 0; t < 4; ++t) {
      const Layout l = layout(t, 70, 1100, 600);
      CAPTURE(kernels::isa_name(isa), l.ta, l.tb);
      REQUIRE(check_product(l, 1.0f, 0.5f, via_gemm, gen));
      if (kernels::cpu::sgemm_simd_available()) {
        REQUIRE(check_product(l, 1.0f, 0.0f, via_kernel, gen));
      }
    }
  }
}

TEST_CASE("sgemm_simd: avx512 and avx2 give the same bits", "[gemm][matmul]") {
  // Both sum each element in the same order (one fma per k, 256-long k-blocks), whatever their
  // register width: a model trained on either machine gets the same float32 products.
  const std::vector<CpuIsa> isas = kernel_isas();
  if (isas.size() < 2) {
    std::cout << "SKIPPED: this machine runs fewer than two SIMD GEMM versions\n";
    return;
  }
  std::mt19937 gen(5);
  for (int t = 0; t < 4; ++t) {
    for (const auto& mnk : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {13, 33, 7}, {64, 100, 784}, {97, 530, 300}}) {
      Layout l = layout(t, mnk[0], mnk[1], mnk[2]);
      l.pad = 1;
      const std::vector<float> a = random_floats(l.a_size(), gen);
      const std::vector<float> b = random_floats(l.b_size(), gen);
      const std::vector<float> c0 = random_floats(l.c_size(), gen);
      std::vector<std::vector<float>> out;
      for (CpuIsa isa : isas) {
        IsaScope scope(isa);
        std::vector<float> c = c0;
        via_kernel(l, 0.5f, a.data(), b.data(), 0.25f, c.data());
        out.push_back(std::move(c));
      }
      CAPTURE(l.ta, l.tb, l.M, l.N, l.K);
      int64_t differ = 0;
      for (size_t i = 0; i < out[0].size(); ++i) differ += out[0][i] != out[1][i];
      CHECK(differ == 0);
    }
  }
}

TEST_CASE("cpu isa: names, and a clear refusal of an unknown one", "[gemm]") {
  using kernels::isa_name;
  using kernels::parse_isa;
  for (CpuIsa isa : {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Neon}) {
    CHECK(parse_isa(isa_name(isa)) == isa);
  }
  CHECK_THROWS_WITH(parse_isa("avx3"),
                    Catch::Matchers::Contains("use avx512, avx2 or baseline on x86-64, neon or "
                                              "baseline on aarch64"));
  CHECK(kernels::isa_supported(CpuIsa::Baseline));
  CHECK(kernels::isa_supported(kernels::best_isa()));
  // What the process runs: the best it can, unless EMBER_CPU_ISA chose (and the choice held).
  CHECK(kernels::isa_supported(kernels::cpu_isa()));
  {
    IsaScope scope(CpuIsa::Baseline);
    CHECK_FALSE(kernels::cpu::sgemm_simd_available());
    CHECK(kernels::cpu::sgemm_simd_tile_rows() == 0);
    CHECK_THROWS_WITH(kernels::cpu::transpose_simd(nullptr, 1, 1, 1, nullptr, nullptr, 1),
                      Catch::Matchers::Contains("no SIMD GEMM kernel"));
  }
  struct Tile {
    CpuIsa isa;
    int64_t rows, cols;
  };
  for (const Tile& t :
       {Tile{CpuIsa::Avx2, 6, 16}, Tile{CpuIsa::Avx512, 12, 32}, Tile{CpuIsa::Neon, 12, 8}}) {
    if (kernels::isa_supported(t.isa)) {
      IsaScope scope(t.isa);
      CHECK(kernels::cpu::sgemm_simd_available());
      CHECK(kernels::cpu::sgemm_simd_tile_rows() == t.rows);
      CHECK(kernels::cpu::sgemm_simd_tile_cols() == t.cols);
    } else {
      CHECK_THROWS_WITH(kernels::set_cpu_isa(t.isa),
                        Catch::Matchers::Contains("what this process can run"));
    }
  }
  // One machine's instruction sets on the other: the refusal names both machines.
#if defined(__x86_64__)
  CHECK_THROWS_WITH(kernels::set_cpu_isa(CpuIsa::Neon),
                    Catch::Matchers::Contains("neon kernels, which are aarch64 instructions, but "
                                              "this build of ember is for x86-64"));
#elif defined(__aarch64__)
  CHECK(kernels::best_isa() == CpuIsa::Neon);  // every aarch64 CPU has it
  for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512}) {
    CHECK_THROWS_WITH(kernels::set_cpu_isa(isa),
                      Catch::Matchers::Contains("kernels, which are x86-64 instructions, but this "
                                                "build of ember is for aarch64"));
  }
#endif
}

namespace {

// C = alpha * op(A) @ op(B) + beta * C in float32, summed as the SIMD kernels sum
// (kernels/cpu/gemm_simd_impl.h, "The order of the sum"), one element at a time: per k-block of
// 256, acc = fma(A(i, k), B(k, j), acc) from 0 in k order; then after the first block
// C = alpha * acc (+ fma with beta * C), after each later one C = C + alpha * acc.
void gemm_in_kernel_order(const Layout& l, float alpha, const std::vector<float>& a,
                          const std::vector<float>& b, float beta, std::vector<float>& c) {
  constexpr int64_t kKc = 256;
  for (int64_t i = 0; i < l.M; ++i) {
    for (int64_t j = 0; j < l.N; ++j) {
      float& cij = c[i * l.ldc() + j];
      for (int64_t k0 = 0; k0 < l.K; k0 += kKc) {
        float acc = 0.0f;
        for (int64_t k = k0; k < std::min(l.K, k0 + kKc); ++k) {
          acc = std::fma(l.a_at(a, i, k), l.b_at(b, k, j), acc);
        }
        // volatile: the product is rounded on its own, as the kernels' is, and never contracted
        // with the sum that follows into one fused multiply-add.
        const volatile float scaled = alpha == 1.0f ? acc : alpha * acc;
        if (k0 > 0) cij = cij + scaled;
        else if (beta != 0.0f) cij = std::fma(beta, cij, scaled);
        else cij = scaled;
      }
    }
  }
}

}  // namespace

TEST_CASE("sgemm_simd: every SIMD version gives the bits of a scalar sum in the kernel's order",
          "[gemm][matmul]") {
  // The kernels of every register width sum in one order (gemm_simd_impl.h), so each gives the
  // bits of that scalar sum: avx512 and avx2 on x86-64, and neon on aarch64 (under QEMU in CI:
  // scripts/ci-aarch64), which makes the products of an ARM and an x86 machine the same.
  const std::vector<CpuIsa> isas = kernel_isas();
  std::mt19937 gen(17);
  int64_t compared = 0;
  for (CpuIsa isa : isas) {
    IsaScope scope(isa);
    for (int t = 0; t < 4; ++t) {
      for (const auto& mnk : std::vector<std::array<int64_t, 3>>{
               {1, 1, 1}, {13, 33, 7}, {25, 17, 256}, {30, 41, 300}, {64, 100, 784}}) {
        for (const auto& [alpha, beta] :
             std::vector<std::pair<float, float>>{{1.0f, 0.0f}, {-0.5f, 1.0f}, {0.75f, 0.25f}}) {
          Layout l = layout(t, mnk[0], mnk[1], mnk[2]);
          l.pad = 2;
          const std::vector<float> a = random_floats(l.a_size(), gen);
          const std::vector<float> b = random_floats(l.b_size(), gen);
          std::vector<float> want = random_floats(l.c_size(), gen), got = want;
          gemm_in_kernel_order(l, alpha, a, b, beta, want);
          via_kernel(l, alpha, a.data(), b.data(), beta, got.data());
          CAPTURE(kernels::isa_name(isa), l.ta, l.tb, l.M, l.N, l.K, alpha, beta);
          int64_t differ = 0;
          for (size_t i = 0; i < want.size(); ++i) differ += want[i] != got[i];
          CHECK(differ == 0);
          ++compared;
        }
      }
    }
  }
  CHECK(compared == int64_t(isas.size()) * 4 * 5 * 3);
}

TEST_CASE("sgemm_simd: a product cut into row and column pieces gives the same bits",
          "[gemm][matmul]") {
  std::mt19937 gen(3);
  for (CpuIsa isa : kernel_isas()) {
    IsaScope scope(isa);
    for (int t = 0; t < 4; ++t) {
      const Layout l = layout(t, 53, 141, 300);
      const std::vector<float> a = random_floats(l.a_size(), gen);
      const std::vector<float> b = random_floats(l.b_size(), gen);
      std::vector<float> whole(static_cast<size_t>(l.c_size())), pieces(whole.size());
      via_kernel(l, 1.0f, a.data(), b.data(), 0.0f, whole.data());
      // Rows [0, 29) and [29, 53); within the second, columns [0, 37) and [37, 141).
      const int64_t r = 29, q = 37;
      const float* a_rows2 = l.ta ? a.data() + r : a.data() + r * l.lda();
      kernels::cpu::sgemm_simd(l.ta, l.tb, r, l.N, l.K, 1.0f, a.data(), l.lda(), b.data(), l.ldb(),
                               0.0f, pieces.data(), l.ldc());
      kernels::cpu::sgemm_simd(l.ta, l.tb, l.M - r, q, l.K, 1.0f, a_rows2, l.lda(), b.data(),
                               l.ldb(), 0.0f, pieces.data() + r * l.ldc(), l.ldc());
      const float* b_cols2 = l.tb ? b.data() + q * l.ldb() : b.data() + q;
      kernels::cpu::sgemm_simd(l.ta, l.tb, l.M - r, l.N - q, l.K, 1.0f, a_rows2, l.lda(), b_cols2,
                               l.ldb(), 0.0f, pieces.data() + r * l.ldc() + q, l.ldc());
      CAPTURE(kernels::isa_name(isa), l.ta, l.tb);
      int64_t differ = 0;
      for (size_t i = 0; i < whole.size(); ++i) differ += whole[i] != pieces[i];
      CHECK(differ == 0);
    }
  }
}

TEST_CASE("sgemm_simd_rows: operands given by row tables give the dense product's bits",
          "[gemm][matmul][conv2d]") {
  // kernels/cpu/conv.cpp's implicit convolution hands the kernel A or B as rows scattered
  // through a tensor. The rows here lie in shuffled order in a larger buffer, overlapping and
  // some before the base pointer (negative offsets); the result must be the bits of the same
  // product on dense copies, whose sum order is the same.
  std::mt19937 gen(11);
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1},     {13, 33, 7},    {12, 32, 256},
                                                     {25, 47, 300}, {40, 100, 530}, {7, 530, 17}};
  for (CpuIsa isa : kernel_isas()) {
    IsaScope scope(isa);
    for (const auto& mnk : sizes) {
      for (int t = 0; t < 4; ++t) {
        const bool a_table = t & 1, tb = t & 2;
        const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
        // Stored B: K rows of N (no trans_b) or N rows of K (trans_b); each row `len` long.
        const int64_t b_count = tb ? N : K, b_len = tb ? K : N;
        const int64_t spread = 3;  // rows start at random multiples of 5 in a buffer this many
                                   // rows long (so neighbours overlap)
        const std::vector<float> pool_a = random_floats((M + 1) * spread * K + K, gen);
        const std::vector<float> pool_b =
            random_floats((b_count + 1) * spread * b_len + b_len, gen);
        auto table = [&](int64_t count, int64_t len, int64_t pool) {
          std::uniform_int_distribution<int64_t> start(0, (pool - len) / 5);
          std::vector<int64_t> rows(static_cast<size_t>(count));
          for (int64_t& r : rows) r = 5 * start(gen) - pool / 2;  // relative to the pool's middle
          return rows;
        };
        const std::vector<int64_t> a_rows = table(M, K, static_cast<int64_t>(pool_a.size()));
        const std::vector<int64_t> b_rows =
            table(b_count, b_len, static_cast<int64_t>(pool_b.size()));
        const float* a_base = pool_a.data() + pool_a.size() / 2;
        const float* b_base = pool_b.data() + pool_b.size() / 2;
        // Dense copies: A [M, K], stored B [b_count, b_len].
        std::vector<float> a_dense(static_cast<size_t>(M * K));
        std::vector<float> b_dense(static_cast<size_t>(b_count * b_len));
        for (int64_t i = 0; i < M; ++i)
          std::copy(a_base + a_rows[i], a_base + a_rows[i] + K, a_dense.begin() + i * K);
        for (int64_t r = 0; r < b_count; ++r)
          std::copy(b_base + b_rows[r], b_base + b_rows[r] + b_len, b_dense.begin() + r * b_len);
        const std::vector<float> c0 = random_floats(M * N, gen);
        for (float beta : {0.0f, 1.0f}) {
          std::vector<float> want = c0, got = c0;
          kernels::cpu::sgemm_simd(false, tb, M, N, K, 0.5f, a_dense.data(), K, b_dense.data(),
                                   b_len, beta, want.data(), N);
          kernels::cpu::sgemm_simd_rows(false, tb, M, N, K, 0.5f, a_table ? a_base : a_dense.data(),
                                        K, a_table ? a_rows.data() : nullptr, b_base, 0,
                                        b_rows.data(), beta, got.data(), N);
          CAPTURE(kernels::isa_name(isa), M, N, K, a_table, tb, beta);
          int64_t differ = 0;
          for (size_t i = 0; i < want.size(); ++i) differ += want[i] != got[i];
          CHECK(differ == 0);
        }
      }
    }
  }
  if (kernel_isas().empty()) return;
  CHECK_THROWS_WITH(kernels::cpu::sgemm_simd_rows(true, false, 1, 1, 1, 1.0f, nullptr, 1,
                                                  std::vector<int64_t>{0}.data(), nullptr, 0,
                                                  nullptr, 0.0f, nullptr, 1),
                    Catch::Matchers::Contains("trans_a = false"));
}

TEST_CASE("transpose_simd: every edge of its 16 x 16 or 8 x 8 blocks, with and without an "
          "added value",
          "[gemm][conv2d]") {
  std::mt19937 gen(12);
  for (CpuIsa isa : kernel_isas()) {
    IsaScope scope(isa);
    for (int64_t rows : {1, 5, 8, 9, 16, 17, 33, 100}) {
      for (int64_t cols : {1, 7, 15, 16, 31, 48, 361}) {
        const int64_t lds = cols + 3, ldd = rows + 5;
        const std::vector<float> src = random_floats(rows * lds, gen);
        for (bool with_add : {false, true}) {
          const float add = 0.25f;
          std::vector<float> dst(static_cast<size_t>(cols * ldd), -7.0f);
          kernels::cpu::transpose_simd(src.data(), lds, rows, cols, with_add ? &add : nullptr,
                                       dst.data(), ldd);
          CAPTURE(kernels::isa_name(isa), rows, cols, with_add);
          int64_t wrong = 0, touched = 0;
          for (int64_t j = 0; j < cols; ++j) {
            for (int64_t i = 0; i < ldd; ++i) {
              const float got = dst[j * ldd + i];
              if (i >= rows) {
                touched += got != -7.0f;  // the padding of dst's rows is never written
                continue;
              }
              const float want = with_add ? src[i * lds + j] + add : src[i * lds + j];
              wrong += got != want;
            }
          }
          CHECK(wrong == 0);
          CHECK(touched == 0);
        }
      }
    }
  }
}
