// Hand-computed answers for clamp, maximum/minimum, amax/amin, any/all, argmin over every element
// and the bool tests and logic: NaN, ties and their gradients, empty reductions, dtypes, and the
// error messages. (General gradients: tests/cases/extremes_logic.cpp; agreement with PyTorch:
// the differential fixture.)
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }
std::vector<int64_t> ints(const Tensor& t) { return t.to(kInt64).to_vector<int64_t>(); }
const double kNaN = std::nan("");
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("maximum/minimum: NaN wins, ties split the gradient in halves", "[ops][extremes]") {
  Tensor a = tensor({1.0, 2.0, kNaN, 3.0, 4.0}, kFloat64).requires_grad_(true);
  Tensor b = tensor({1.0, 3.0, 1.0, kNaN, 0.0}, kFloat64).requires_grad_(true);
  const Tensor y = maximum(a, b);
  const std::vector<double> v = vals(y);
  CHECK(v[0] == 1.0);
  CHECK(v[1] == 3.0);
  CHECK(std::isnan(v[2]));
  CHECK(std::isnan(v[3]));
  CHECK(v[4] == 4.0);
  sum(y).backward();
  // tie: 1/2 each; a < b: all to b; NaN: both get the whole gradient (PyTorch's formula).
  CHECK(vals(a.grad()) == std::vector<double>{0.5, 0.0, 1.0, 1.0, 1.0});
  CHECK(vals(b.grad()) == std::vector<double>{0.5, 1.0, 1.0, 1.0, 0.0});

  CHECK(vals(minimum(tensor({1.0, 5.0}), tensor({2.0, -1.0}))) == std::vector<double>{1.0, -1.0});
  // -0 against +0 is a tie: the first operand's zero comes out.
  CHECK(std::signbit(vals(maximum(tensor({-0.0}), tensor({0.0})))[0]));
  CHECK_FALSE(std::signbit(vals(minimum(tensor({0.0}), tensor({-0.0})))[0]));
  // dtypes: promoted; bool with bool is logical or / and.
  CHECK(maximum(tensor({1, 2}, kInt64), tensor({1.5, 0.5}, kFloat64)).dtype() == kFloat64);
  const Tensor t = tensor({1, 0, 1, 0}).to(kBool), f = tensor({1, 1, 0, 0}).to(kBool);
  CHECK(maximum(t, f).dtype() == kBool);
  CHECK(ints(maximum(t, f)) == std::vector<int64_t>{1, 1, 1, 0});
  CHECK(ints(minimum(t, f)) == std::vector<int64_t>{1, 0, 0, 0});
  CHECK_THROWS_WITH(maximum(tensor({1.0, 2.0, 3.0}), tensor({1.0, 2.0})), Contains("maximum"));
}

TEST_CASE("clamp: bounds inclusive for the gradient, min > max gives max, NaN", "[ops][extremes]") {
  Tensor x = tensor({0.0, 1.0, 2.0, 3.0, kNaN, 1.5}, kFloat64).requires_grad_(true);
  const Tensor y = clamp(x, 1.0, 2.0);
  const std::vector<double> v = vals(y);
  CHECK(v[0] == 1.0);
  CHECK(v[3] == 2.0);
  CHECK(std::isnan(v[4]));
  sum(y).backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 1, 1, 0, 0, 1});

  CHECK(vals(clamp(tensor({1.0, 2.5, 4.0}), 3.0, 2.0)) == std::vector<double>{2, 2, 2});
  CHECK(vals(clamp_min(tensor({-1.0, 3.0}), 0.0)) == std::vector<double>{0, 3});
  CHECK(vals(clamp_max(tensor({-1.0, 3.0}), 0.0)) == std::vector<double>{-1, 0});
  // A NaN bound: NaN everywhere with both bounds and in clamp_min / clamp_max; skipped by clamp
  // with that single bound (PyTorch 1.13's answers).
  CHECK(std::isnan(vals(clamp(tensor({1.0}), kNaN, 3.0))[0]));
  CHECK(std::isnan(vals(clamp_max(tensor({1.0}), kNaN))[0]));
  CHECK(vals(clamp(tensor({1.0, 2.0}), kNaN, std::nullopt)) == std::vector<double>{1, 2});
  // dtypes: an integer tensor with a float bound is float32; -1 fits uint8 as 255.
  CHECK(clamp(tensor({1, 2, 3}, kInt64), 1.5, std::nullopt).dtype() == kFloat32);
  CHECK(clamp(tensor({1, 2, 3}, kInt64), 2, std::nullopt).dtype() == kInt64);
  CHECK(ints(clamp(tensor({1, 2}, kUInt8), -1, std::nullopt)) == std::vector<int64_t>{255, 255});
  CHECK(vals(clamp(tensor({1.0, 2.0}), -kInf, kInf)) == std::vector<double>{1, 2});

  CHECK_THROWS_WITH(clamp(tensor({1.0}), std::nullopt, std::nullopt),
                    Contains("clamp: at least one of min and max"));
  CHECK_THROWS_WITH(clamp(tensor({1, 2}, kUInt8), 2, 300), Contains("300"));
  CHECK_THROWS_WITH(clamp(tensor({1, 0}).to(kBool), false, true), Contains("bool"));
}

TEST_CASE("amax/amin: several dims, ties share the gradient, NaN rows", "[ops][extremes]") {
  Tensor a = tensor({1.0, 3.0, -3.0, 3.0, -3.0, 3.0}, kFloat64).requires_grad_(true);
  const Tensor m = amax(a);
  CHECK(m.dim() == 0);
  CHECK(vals(m)[0] == 3.0);
  m.backward();
  const double third = 1.0 / 3.0;
  CHECK(vals(a.grad()) == std::vector<double>{0, third, 0, third, 0, third});

  Tensor b = tensor({1.0, kNaN, 2.0, 3.0, 3.0, 1.0}, {2, 3}, kFloat64).requires_grad_(true);
  const Tensor r = amin(b, {1}, true);
  CHECK(r.shape() == Shape{2, 1});
  CHECK(std::isnan(vals(r)[0]));
  CHECK(vals(r)[1] == 1.0);
  sum(r).backward();
  const std::vector<double> g = vals(b.grad());
  for (int i = 0; i < 3; ++i) CHECK(std::isnan(g[i]));  // a NaN row: NaN for each element
  CHECK(g[3] == 0.0);
  CHECK(g[5] == 1.0);

  const Tensor c = arange(24, kFloat32).reshape({2, 3, 4});
  CHECK(vals(amax(c, {0, 2})) == std::vector<double>{15, 19, 23});
  CHECK(vals(amin(c, {-1, -3}, true)) == std::vector<double>{0, 4, 8});
  CHECK(amin(c, {-1, -3}, true).shape() == Shape{1, 3, 1});
  CHECK(amax(zeros({2, 0}), {0}).shape() == Shape{0});

  CHECK_THROWS_WITH(amax(zeros({0})), Contains("amax: the input has no elements"));
  CHECK_THROWS_WITH(amin(zeros({2, 0}), {1}), Contains("amin: cannot reduce"));
  CHECK_THROWS_WITH(amax(c, {1, 1}), Contains("appears twice"));
}

TEST_CASE("any/all: truth of each element, empty reductions, uint8 stays uint8", "[ops][logical]") {
  const Tensor x = tensor({0.0, -0.0, kNaN, 0.0}, {2, 2}, kFloat32);
  CHECK(any(x).dtype() == kBool);
  CHECK(ints(any(x)) == std::vector<int64_t>{1});  // NaN is true
  CHECK(ints(all(x)) == std::vector<int64_t>{0});
  CHECK(ints(any(x, 1)) == std::vector<int64_t>{0, 1});
  CHECK(any(x, 0, true).shape() == Shape{1, 2});
  CHECK(ints(any(zeros({0}))) == std::vector<int64_t>{0});
  CHECK(ints(all(zeros({0}))) == std::vector<int64_t>{1});
  CHECK(ints(all(zeros({3, 0}), 1)) == std::vector<int64_t>{1, 1, 1});
  CHECK(all(tensor({1, 2}, kUInt8)).dtype() == kUInt8);
  CHECK_THROWS_WITH(any(x, 2), Contains("any"));
}

TEST_CASE("argmin over every element: the first of the smallest, NaN first", "[ops][reduce]") {
  CHECK(ints(argmin(tensor({3.0, 1.0, 1.0, 2.0}))) == std::vector<int64_t>{1});
  CHECK(ints(argmin(tensor({3.0, kNaN, 1.0, kNaN}))) == std::vector<int64_t>{1});
  // the flat index of a transposed tensor counts in its logical (row-major) order
  const Tensor t = tensor({5.0, 0.0, 7.0, 8.0, 9.0, -1.0}, {2, 3}).transpose(0, 1);
  CHECK(ints(argmin(t)) == std::vector<int64_t>{5});
  CHECK_THROWS_WITH(argmin(zeros({0})), Contains("argmin"));
}

TEST_CASE("isnan/isinf/isfinite and the logical ops", "[ops][logical]") {
  const Tensor s = tensor({0.0, kNaN, kInf, -kInf, 1e-30}, kFloat32);
  CHECK(ints(isnan(s)) == std::vector<int64_t>{0, 1, 0, 0, 0});
  CHECK(ints(isinf(s)) == std::vector<int64_t>{0, 0, 1, 1, 0});
  CHECK(ints(isfinite(s)) == std::vector<int64_t>{1, 0, 0, 0, 1});
  CHECK(isnan(s).dtype() == kBool);
  CHECK(ints(isfinite(tensor({1, 2}, kInt64))) == std::vector<int64_t>{1, 1});
  CHECK(ints(logical_not(tensor({0.0, -0.0, kNaN, 2.0}))) == std::vector<int64_t>{1, 1, 0, 0});

  const Tensor a = tensor({0, 1}, {2, 1}, kInt64), b = tensor({0.0, 0.5, kNaN});
  CHECK(logical_and(a, b).shape() == Shape{2, 3});
  CHECK(ints(logical_and(a, b)) == std::vector<int64_t>{0, 0, 0, 0, 1, 1});
  CHECK(ints(logical_or(a, b)) == std::vector<int64_t>{0, 1, 1, 1, 1, 1});
  CHECK(ints(logical_xor(a, b)) == std::vector<int64_t>{0, 1, 1, 1, 0, 0});
  // The truth is read in the promoted dtype: 1e-310 as float32 (the 0-d operand does not widen
  // a float32 tensor) is 0, false.
  const Tensor tiny = scalar_tensor(1e-310, kFloat64);
  CHECK(ints(logical_or(tensor({0.0f}), tiny)) == std::vector<int64_t>{0});
  CHECK(ints(logical_or(tensor({0.0}, kFloat64), tiny)) == std::vector<int64_t>{1});
  CHECK_THROWS_WITH(logical_and(tensor({1.0, 2.0, 3.0}), tensor({1.0, 2.0})),
                    Contains("logical_and"));
}
