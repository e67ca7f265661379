// Hand-computed answers for where with numbers, pow with a tensor exponent, fmod, remainder,
// cumsum, split and chunk: signs of remainders, integer powers with negative exponents, the
// special gradients of pow at a zero base, dtypes, views, and the error messages. (General
// gradients and CUDA parity: tests/cases/arith_scan.cpp; agreement with PyTorch: the
// differential fixture.)
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }
std::vector<int64_t> ints(const Tensor& t) { return t.to(kInt64).to_vector<int64_t>(); }
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("where with numbers: promotion as a number, gradient to the tensor", "[ops][arith]") {
  const Tensor c = tensor({1, 0, 1}).to(kBool);
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_(true);
  const Tensor y = where(c, x, 0.5);
  CHECK(y.dtype() == kFloat64);
  CHECK(vals(y) == std::vector<double>{1.0, 0.5, 3.0});
  sum(y).backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 0, 1});

  const Tensor i = tensor({1, 2, 3}, kInt64);
  CHECK(where(c, i, 2.5).dtype() == kFloat32);
  CHECK(where(c, i, 7).dtype() == kInt64);
  CHECK(ints(where(c, 7, i)) == std::vector<int64_t>{7, 2, 7});
  CHECK(ints(where(c, i.to(kUInt8), -1)) == std::vector<int64_t>{1, 255, 3});
  CHECK(where(c, 1, 2.5).dtype() == kFloat32);
  CHECK(where(c, 1, 2).dtype() == kInt64);
  CHECK(where(c, true, false).dtype() == kBool);
  CHECK(vals(where(c, 1, 2.5)) == std::vector<double>{1.0, 2.5, 1.0});
  CHECK_THROWS_WITH(where(c, i.to(kUInt8), 300), Contains("where") && Contains("300"));
}

TEST_CASE("pow with a tensor exponent: values, integer powers, PyTorch's gradients at zero",
          "[ops][arith]") {
  // Integers: a negative exponent is no error; 1 / a^|b| truncated.
  CHECK(ints(pow(tensor({2, 3, -2, 1, -1, -1, 0}, kInt64),
                 tensor({-1, -2, 3, -5, -3, -2, 2}, kInt64))) ==
        std::vector<int64_t>{0, 0, -8, 1, -1, 1, 0});
  CHECK_THROWS_WITH(pow(tensor({1}).to(kBool), tensor({1}).to(kBool)), Contains("bool"));

  Tensor a = tensor({0.0, 0.0, -2.0, 2.0}, kFloat64).requires_grad_(true);
  Tensor b = tensor({0.0, 2.0, 2.0, 0.5}, kFloat64).requires_grad_(true);
  const Tensor y = pow(a, b);
  CHECK(vals(y) == std::vector<double>{1.0, 0.0, 4.0, std::sqrt(2.0)});
  sum(y).backward();
  const std::vector<double> ga = vals(a.grad()), gb = vals(b.grad());
  CHECK(ga[0] == 0.0);   // b == 0: flat in a
  CHECK(ga[2] == -4.0);  // 2 * (-2)^1
  CHECK(gb[0] == 0.0);   // a == 0 and b >= 0: flat in b (log 0 would give NaN)
  CHECK(gb[1] == 0.0);
  CHECK(std::isnan(gb[2]));  // a negative base has no real logarithm
  CHECK(gb[3] == Approx(std::sqrt(2.0) * std::log(2.0)));

  // A number base, and its gradient out * log(base).
  Tensor e = tensor({1.0, 2.0, -1.0}, kFloat64).requires_grad_(true);
  const Tensor z = pow(2.0, e);
  CHECK(vals(z) == std::vector<double>{2.0, 4.0, 0.5});
  sum(z).backward();
  CHECK(vals(e.grad())[1] == Approx(4.0 * std::log(2.0)));
  CHECK(pow(2, tensor({1, 2}, kInt64)).dtype() == kInt64);
  CHECK(pow(2.5, tensor({1, 2}, kInt64)).dtype() == kFloat32);
  CHECK(vals(pow(1, tensor({std::nan(""), kInf}, kFloat64))) == std::vector<double>{1.0, 1.0});
  CHECK(vals(tensor({3.0}, kFloat64).pow(tensor({2.0}, kFloat64))) == std::vector<double>{9.0});
}

TEST_CASE("fmod and remainder: the signs, integers, division by zero, gradients", "[ops][arith]") {
  const Tensor a = tensor({5.0, -5.0, 5.0, -5.0}, kFloat64);
  const Tensor b = tensor({3.0, 3.0, -3.0, -3.0}, kFloat64);
  CHECK(vals(fmod(a, b)) == std::vector<double>{2, -2, 2, -2});       // sign of a
  CHECK(vals(remainder(a, b)) == std::vector<double>{2, 1, -1, -2});  // sign of b
  CHECK(ints(fmod(tensor({7, -7}, kInt64), 3)) == std::vector<int64_t>{1, -1});
  CHECK(ints(remainder(tensor({7, -7}, kInt64), 3)) == std::vector<int64_t>{1, 2});
  CHECK(ints(tensor({7, -7}, kInt64).remainder(-3)) == std::vector<int64_t>{-2, -1});
  CHECK(fmod(tensor({7}, kInt64), 2.5).dtype() == kFloat32);
  // INT64_MIN % -1 would trap in C++; it is 0.
  constexpr int64_t lo = std::numeric_limits<int64_t>::min();
  CHECK(ints(fmod(tensor({lo}, kInt64), -1)) == std::vector<int64_t>{0});
  CHECK_THROWS_WITH(fmod(tensor({1, 2}, kInt64), tensor({1, 0}, kInt64)),
                    Contains("fmod") && Contains("division by zero"));
  CHECK_THROWS_WITH(remainder(tensor({1}, kInt64), 0), Contains("remainder"));
  CHECK_THROWS_WITH(fmod(tensor({1}).to(kBool), tensor({1}).to(kBool)), Contains("bool"));
  // Float division by zero is NaN, no error.
  CHECK(std::isnan(vals(fmod(tensor({1.0}, kFloat64), 0.0))[0]));

  Tensor x = tensor({5.5, -5.5}, kFloat64).requires_grad_(true);
  Tensor d = tensor({2.0, 2.0}, kFloat64).requires_grad_(true);
  sum(remainder(x, d)).backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 1});
  CHECK(vals(d.grad()) == std::vector<double>{-2, 3});  // -floor(a / b)
  x.zero_grad();
  d.zero_grad();
  sum(fmod(x, d)).backward();
  CHECK(vals(d.grad()) == std::vector<double>{-2, 2});  // -trunc(a / b)
}

TEST_CASE("cumsum: running sums, int64 for integers, reversed sums as the gradient",
          "[ops][arith]") {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, kFloat64)
                 .reshape({2, 3})
                 .detach()
                 .requires_grad_(true);
  CHECK(vals(cumsum(x, 1)) == std::vector<double>{1, 3, 6, 4, 9, 15});
  CHECK(vals(x.cumsum(0)) == std::vector<double>{1, 2, 3, 5, 7, 9});
  const Tensor w = tensor({1.0, 10.0, 100.0, 1.0, 10.0, 100.0}, kFloat64).reshape({2, 3});
  sum(cumsum(x, 1) * w).backward();
  CHECK(vals(x.grad()) == std::vector<double>{111, 110, 100, 111, 110, 100});
  CHECK(cumsum(tensor({1, 0, 1}).to(kBool), 0).dtype() == kInt64);
  CHECK(ints(cumsum(tensor({1, 0, 1}).to(kUInt8), 0)) == std::vector<int64_t>{1, 1, 2});
  // float32 sums are accumulated in double: 1e8 + 1 + 1 - 1e8 is 2, not 0.
  CHECK(vals(cumsum(tensor({1e8, 1.0, 1.0, -1e8}, kFloat32), 0))[3] == 2.0);
  CHECK(vals(cumsum(scalar_tensor(2.5, kFloat64), -1)) == std::vector<double>{2.5});
  CHECK_THROWS_WITH(cumsum(x, 2), Contains("cumsum") && Contains("dim 2"));
}

TEST_CASE("split and chunk: views, the last smaller piece, PyTorch's piece counts",
          "[ops][arith]") {
  const Tensor x = arange(0, 7, 1, kInt64);
  std::vector<Tensor> p = split(x, 3);
  REQUIRE(p.size() == 3);
  CHECK(ints(p[2]) == std::vector<int64_t>{6});
  CHECK(p[1].data_ptr<int64_t>() == x.data_ptr<int64_t>() + 3);  // a view into x
  p = x.split(std::vector<int64_t>{1, 0, 6});
  REQUIRE(p.size() == 3);
  CHECK(p[1].numel() == 0);
  CHECK(chunk(arange(0, 6, 1, kInt64), 4).size() == 3);  // ceil(6 / 4) = 2 per piece
  CHECK(chunk(arange(0, 5, 1, kInt64), 7).size() == 5);
  CHECK(chunk(zeros({0}), 3).size() == 3);
  CHECK(split(zeros({0}), 2).size() == 1);
  CHECK(x.chunk(2)[1].numel() == 3);

  Tensor y = tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64).requires_grad_(true);
  sum(split(y, 2)[1] * 3.0).backward();
  CHECK(vals(y.grad()) == std::vector<double>{0, 0, 3, 3, 0});

  CHECK_THROWS_WITH(split(x, 0), Contains("split_size 0"));
  CHECK_THROWS_WITH(split(x, std::vector<int64_t>{2, 2}),
                    Contains("add up to 4") && Contains("size 7"));
  CHECK_THROWS_WITH(split(scalar_tensor(1.0), 1), Contains("0-d"));
  CHECK_THROWS_WITH(chunk(x, 0), Contains("positive"));
  CHECK_THROWS_WITH(chunk(x, 2, 1), Contains("chunk") && Contains("dim 1"));
}
