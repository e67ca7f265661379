// int32 on CUDA against the CPU (issue 27): every kernel family that dispatches over integer
// dtypes, at the sizes where the kernels change path (1, 7, 1023 and 65537 elements: one thread,
// a partial warp, a partial block, more blocks than one wave) and in contiguous, strided and
// transposed layouts. Integers have one right answer, so both devices must agree exactly, wrap-
// around and out-of-range conversions included. tests/core/int32.cpp checks the CPU against
// values computed by hand; the differential suite checks both against PyTorch.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "cuda_test_util.h"

using namespace ember;

namespace {

using test::kCuda0;
using test::skip_without_gpu;

constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();

// n int32 values: the extremes, zeros, both signs and small divisors, in a scrambled order.
Tensor int32_values(int64_t n, int salt) {
  const int32_t pool[] = {0, 1, -1, 2, -3, 7, -7, 100, -100, 65536, kMin32, kMax32, 12345, -99999};
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = pool[(i * 7 + salt * 3 + i / 5) % 14];
  return from_vector<int32_t>(v, {n}, kInt32);
}

// Nonzero small divisors (no -1: INT32_MIN / -1 has its own test).
Tensor divisors(int64_t n, int salt) {
  const int32_t pool[] = {1, 2, -2, 3, -3, 7, -7, 100, kMax32, kMin32};
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = pool[(i * 3 + salt) % 10];
  return from_vector<int32_t>(v, {n}, kInt32);
}

// The values of `flat` in three layouts: contiguous [n], every other element of an [n, 2]
// buffer (strided, stride 2), and the transpose of a [2, n] matrix ([n, 2], strides 1 and n).
std::vector<std::pair<std::string, Tensor>> layouts(const Tensor& flat) {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("contiguous", flat);
  out.emplace_back("strided", stack({flat, flat}, 1).select(1, 0));
  out.emplace_back("transposed", stack({flat, -flat}, 0).t());
  return out;
}

// Both devices, exact: same dtype, same shape, same integers.
void check_same(const Tensor& cpu, const Tensor& dev, const std::string& what) {
  INFO(what);
  REQUIRE(dev.device() == kCuda0);
  REQUIRE(cpu.dtype() == dev.dtype());
  REQUIRE(cpu.shape() == dev.shape());
  if (is_floating(cpu.dtype())) {
    CHECK(cpu.to_vector<double>() == dev.to_vector<double>());
  } else {
    CHECK(cpu.to_vector<int64_t>() == dev.to_vector<int64_t>());
  }
}

const int64_t kSizes[] = {1, 7, 1023, 65537};

}  // namespace

TEST_CASE("cuda int32: elementwise arithmetic, wrap-around and rounded divisions",
          "[cuda][cuda-int32][int32]") {
  if (skip_without_gpu()) return;
  NoGradGuard no_grad;
  for (int64_t n : kSizes) {
    const auto bs = layouts(divisors(n, 2));
    for (const auto& [layout, a] : layouts(int32_values(n, 1))) {
      Tensor b;
      for (const auto& [l, t] : bs)
        if (l == layout) b = t;
      const Tensor da = a.to(kCuda0), db = b.to(kCuda0);
      const std::string tag = std::to_string(n) + " " + layout;
      check_same(a + b, da + db, "add " + tag);
      check_same(a - b, da - db, "sub " + tag);
      check_same(a * b, da * db, "mul " + tag);
      check_same(a * 65536, da * 65536, "mul by a number " + tag);
      check_same(a + (int64_t{1} << 40) + 3, da + (int64_t{1} << 40) + 3,
                 "add a number beyond int32 " + tag);
      check_same(-a, -da, "neg " + tag);
      check_same(abs(a), abs(da), "abs " + tag);
      check_same(relu(a), relu(da), "relu " + tag);
      check_same(pow(a, 3), pow(da, 3), "pow " + tag);
      check_same(a / b, da / db, "true division (float32) " + tag);
      check_same(div(a, b, "floor"), div(da, db, "floor"), "floor division " + tag);
      check_same(div(a, b, "trunc"), div(da, db, "trunc"), "trunc division " + tag);
      check_same(remainder(a, b), remainder(da, db), "remainder " + tag);
      check_same(fmod(a, b), fmod(da, db), "fmod " + tag);
      check_same(maximum(a, b), maximum(da, db), "maximum " + tag);
      check_same(clamp(a, -100, 100), clamp(da, -100, 100), "clamp " + tag);
      check_same(a + b.to(kInt64), da + db.to(kInt64), "int32 + int64 " + tag);
      check_same(a * 0.5, da * 0.5, "times a float number " + tag);
    }
  }
  // INT32_MIN / -1 wraps to INT32_MIN on both devices.
  const Tensor m = from_vector<int32_t>({kMin32, 7}, {2}, kInt32);
  const Tensor minus1 = from_vector<int32_t>({-1, -1}, {2}, kInt32);
  check_same(div(m, minus1, "floor"), div(m.to(kCuda0), minus1.to(kCuda0), "floor"),
             "INT32_MIN / -1");
  check_same(fmod(m, minus1), fmod(m.to(kCuda0), minus1.to(kCuda0)), "INT32_MIN fmod -1");
}

TEST_CASE("cuda int32: comparisons, where, fill, arange, cat", "[cuda][cuda-int32][int32]") {
  if (skip_without_gpu()) return;
  for (int64_t n : kSizes) {
    const Tensor a = int32_values(n, 3), b = int32_values(n, 4);
    const Tensor da = a.to(kCuda0), db = b.to(kCuda0);
    const std::string tag = std::to_string(n);
    check_same(a.lt(b), da.lt(db), "lt " + tag);
    check_same(a.eq(b.to(kInt64) + (int64_t{1} << 32)), da.eq(db.to(kInt64) + (int64_t{1} << 32)),
               "eq against int64 beyond int32 " + tag);
    check_same(a.ge(0.5), da.ge(0.5), "ge a float number " + tag);
    check_same(where(a.gt(b), a, b), where(da.gt(db), da, db), "where " + tag);
    check_same(masked_fill(a, a.lt(0), kMax32), masked_fill(da, da.lt(0), kMax32),
               "masked_fill " + tag);
    check_same(full({n}, -123456, kInt32), full({n}, -123456, TensorOptions(kInt32).device(kCuda0)),
               "full " + tag);
    check_same(zeros({n}, kInt32), zeros({n}, TensorOptions(kInt32).device(kCuda0)),
               "zeros " + tag);
    check_same(arange(-3, static_cast<double>(n) - 3, 1, kInt32),
               arange(-3, static_cast<double>(n) - 3, 1, TensorOptions(kInt32).device(kCuda0)),
               "arange " + tag);
    const Tensor u = from_vector<uint8_t>({200, 3}, {2}, kUInt8);
    check_same(cat({a, u}), cat({da, u.to(kCuda0)}), "cat with uint8 " + tag);
    Tensor f = zeros({n}, kInt32), df = zeros({n}, TensorOptions(kInt32).device(kCuda0));
    f.fill_(kMin32);
    df.fill_(kMin32);
    check_same(f, df, "fill_ INT32_MIN " + tag);
  }
}

TEST_CASE("cuda int32: casts from and to every dtype, out of range included",
          "[cuda][cuda-int32][int32]") {
  if (skip_without_gpu()) return;
  // Floats beyond int32, NaN and inf become INT32_MIN on both devices (the GPU's own conversion
  // would saturate); the rest truncate toward zero.
  std::vector<double> edges = {0.0,           -0.0,          2.7,          -2.7,
                               2147483647.0,  2147483647.9,  2147483648.0, -2147483648.0,
                               -2147483648.9, -2147483649.0, 1e10,         -1e300,
                               NAN,           INFINITY,      -INFINITY,    0.5};
  for (int64_t n : kSizes) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = edges[(i * 5 + i / 3) % edges.size()];
    const Tensor f64 = tensor(v, {n}, kFloat64);
    for (DType from : {kFloat64, kFloat32}) {
      const Tensor src = f64.to(from);
      check_same(src.to(kInt32), src.to(kCuda0).to(kInt32),
                 std::string(dtype_name(from)) + " -> int32 " + std::to_string(n));
    }
    const Tensor a = int32_values(n, 5);
    const Tensor da = a.to(kCuda0);
    for (DType to : {kFloat32, kFloat64, kInt64, kUInt8, kBool}) {
      check_same(a.to(to), da.to(to),
                 std::string("int32 -> ") + dtype_name(to) + " " + std::to_string(n));
      check_same(a.to(to).to(kInt32), da.to(to).to(kInt32),
                 std::string(dtype_name(to)) + " -> int32 " + std::to_string(n));
    }
    const Tensor wide = a.to(kInt64) * ((int64_t{1} << 32) + 1);  // beyond int32: wraps
    check_same(wide.to(kInt32), wide.to(kCuda0).to(kInt32), "int64 beyond int32 -> int32");
  }
}

TEST_CASE("cuda int32: reductions (sum, prod, cumsum in int64), max/min, sort, topk",
          "[cuda][cuda-int32][int32]") {
  if (skip_without_gpu()) return;
  for (int64_t n : kSizes) {
    for (const auto& [layout, a] : layouts(int32_values(n, 6))) {
      const Tensor da = a.to(kCuda0);
      const std::string tag = std::to_string(n) + " " + layout;
      check_same(sum(a), sum(da), "sum " + tag);
      check_same(cumsum(a, 0), cumsum(da, 0), "cumsum " + tag);
      check_same(prod(a), prod(da), "prod " + tag);
      check_same(max(a), max(da), "max " + tag);
      check_same(min(a), min(da), "min " + tag);
      check_same(argmax(a), argmax(da), "argmax " + tag);
      check_same(amax(a), amax(da), "amax " + tag);
      check_same(any(a), any(da), "any " + tag);
      const ValuesIndices s = sort(a, 0, true), ds = sort(da, 0, true);
      check_same(s.values, ds.values, "sort values " + tag);
      check_same(s.indices, ds.indices, "sort indices " + tag);
      const int64_t k = std::min<int64_t>(n, 5);
      const ValuesIndices t = topk(a, k, 0), dt = topk(da, k, 0);
      check_same(t.values, dt.values, "topk values " + tag);
      check_same(t.indices, dt.indices, "topk indices " + tag);
    }
    // Along a dim of a matrix: the column kernels.
    const Tensor m = int32_values(7 * n, 7).reshape({7, n});
    check_same(sum(m, {0}), sum(m.to(kCuda0), {0}), "sum dim 0 of [7, n]");
    check_same(max(m, 0).indices, max(m.to(kCuda0), 0).indices, "max dim 0 of [7, n]");
    check_same(cumsum(m, 1), cumsum(m.to(kCuda0), 1), "cumsum dim 1 of [7, n]");
  }
}

TEST_CASE("cuda int32: index ops with int32 data and int32 indices", "[cuda][cuda-int32][int32]") {
  if (skip_without_gpu()) return;
  for (int64_t n : kSizes) {
    const Tensor a = int32_values(3 * n, 8).reshape({3, n});
    std::vector<int32_t> ix(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      ix[static_cast<size_t>(i)] = static_cast<int32_t>((i * 13 + 5) % n);
    const Tensor idx32 = from_vector<int32_t>(ix, {n}, kInt32);
    const Tensor idx64 = idx32.to(kInt64);
    const Tensor da = a.to(kCuda0);
    const std::string tag = std::to_string(n);
    // int32 data.
    check_same(index_select(a, 1, idx64), index_select(da, 1, idx64.to(kCuda0)),
               "index_select int32 data " + tag);
    check_same(gather(a, 1, idx64.reshape({1, n}).expand({3, n}).contiguous()),
               gather(da, 1, idx64.reshape({1, n}).expand({3, n}).contiguous().to(kCuda0)),
               "gather " + tag);
    check_same(index_add(a, 1, idx64, a), index_add(da, 1, idx64.to(kCuda0), da),
               "index_add int32 data " + tag);
    check_same(scatter_add(a, 1, idx64.reshape({1, n}).expand({3, n}).contiguous(), a),
               scatter_add(da, 1, idx64.reshape({1, n}).expand({3, n}).contiguous().to(kCuda0), da),
               "scatter_add int32 data " + tag);
    // int32 indices, as PyTorch 1.13 takes them for index_select and index_add.
    const Tensor x = tensor(std::vector<double>(static_cast<size_t>(2 * n), 1.5), {2, n}, kFloat64);
    check_same(index_select(a, 1, idx32), index_select(da, 1, idx32.to(kCuda0)),
               "index_select int32 index " + tag);
    check_same(index_add(x, 1, idx32, x),
               index_add(x.to(kCuda0), 1, idx32.to(kCuda0), x.to(kCuda0)),
               "index_add int32 index " + tag);
  }
  // An int32 index out of range is refused on the GPU too.
  const Tensor a = zeros({4}, TensorOptions(kInt32).device(kCuda0));
  const Tensor bad = from_vector<int32_t>({0, 4}, {2}, kInt32).to(kCuda0);
  CHECK_THROWS_WITH(index_select(a, 0, bad), Catch::Matchers::Contains("index value 4"));
}

TEST_CASE("cuda int32: random integers match the CPU's", "[cuda][cuda-int32][int32]") {
  if (skip_without_gpu()) return;
  for (int64_t n : kSizes) {
    manual_seed(42);
    const Tensor c = randint(-1000, 1000, {n}, kInt32);
    manual_seed(42);
    const Tensor d = randint(-1000, 1000, {n}, TensorOptions(kInt32).device(kCuda0));
    check_same(c, d, "randint " + std::to_string(n));
  }
}
