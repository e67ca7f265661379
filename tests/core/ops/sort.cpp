// Hand-computed answers for sort and topk: the order (NaN, ties, signed zeros, every dtype), the
// gradient sent back to the positions, the 0-d and empty edges, and the error messages.
// (General gradients and CUDA parity: tests/cases/sort.cpp and tests/kernels/cuda_sort.cpp;
// agreement with PyTorch: the differential fixture.)
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }
std::vector<int64_t> ints(const Tensor& t) { return t.to(kInt64).to_vector<int64_t>(); }
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("sort: ascending and descending along a dim, positions as int64", "[ops][sort]") {
  const Tensor x = tensor({3.0, 1.0, 2.0, 9.0, 7.0, 8.0}, kFloat64).reshape({2, 3});
  const ValuesIndices r = sort(x);
  CHECK(r.indices.dtype() == kInt64);
  CHECK(r.values.shape() == Shape{2, 3});
  CHECK(vals(r.values) == std::vector<double>{1, 2, 3, 7, 8, 9});
  CHECK(ints(r.indices) == std::vector<int64_t>{1, 2, 0, 1, 2, 0});
  const ValuesIndices down = x.sort(0, /*descending=*/true);
  CHECK(vals(down.values) == std::vector<double>{9, 7, 8, 3, 1, 2});
  CHECK(ints(down.indices) == std::vector<int64_t>{1, 1, 1, 0, 0, 0});
  // A transposed (non-contiguous) input sorts its logical rows.
  const ValuesIndices t = sort(x.t(), 1);
  CHECK(vals(t.values) == std::vector<double>{3, 9, 1, 7, 2, 8});
}

TEST_CASE("sort: NaN is the largest value, ties keep their order", "[ops][sort]") {
  const Tensor x = tensor({kNaN, 1.0, -0.0, 0.0, -kInf, 1.0, kNaN}, kFloat64);
  const ValuesIndices up = sort(x, 0, false, /*stable=*/true);
  CHECK(ints(up.indices) == std::vector<int64_t>{4, 2, 3, 1, 5, 0, 6});
  CHECK(std::signbit(vals(up.values)[1]));  // -0.0 stays before 0.0: its position is earlier
  CHECK(std::isnan(vals(up.values)[5]));
  const ValuesIndices down = sort(x, 0, true);
  CHECK(ints(down.indices) == std::vector<int64_t>{0, 6, 1, 5, 2, 3, 4});
  // stable = false gives the same (stable) answer.
  CHECK(ints(sort(x, 0, true, false).indices) == ints(sort(x, 0, true, true).indices));
}

TEST_CASE("sort: every dtype, bool included", "[ops][sort]") {
  const Tensor i = tensor({5, -2, 7, -2}, kInt64);
  CHECK(ints(sort(i).values) == std::vector<int64_t>{-2, -2, 5, 7});
  CHECK(ints(sort(i).indices) == std::vector<int64_t>{1, 3, 0, 2});
  CHECK(ints(sort(tensor({200, 3, 255}, kInt64).to(kUInt8), 0, true).values) ==
        std::vector<int64_t>{255, 200, 3});
  const ValuesIndices b = sort(tensor({1, 0, 1, 0}, kInt64).to(kBool));
  CHECK(b.values.dtype() == kBool);
  CHECK(ints(b.values) == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(ints(b.indices) == std::vector<int64_t>{1, 3, 0, 2});
  CHECK(sort(tensor({2.5, 1.5}, kFloat32)).values.dtype() == kFloat32);
}

TEST_CASE("sort: the gradient goes back to each value's position", "[ops][sort]") {
  Tensor x = tensor({3.0, 1.0, 2.0}, kFloat64).detach().requires_grad_(true);
  const ValuesIndices r = sort(x);  // values 1, 2, 3 from positions 1, 2, 0
  CHECK(r.values.grad_fn() != nullptr);
  CHECK(!r.indices.requires_grad());
  sum(r.values * tensor({10.0, 20.0, 30.0}, kFloat64)).backward();
  CHECK(vals(x.grad()) == std::vector<double>{30, 10, 20});
}

TEST_CASE("sort: 0-d and empty tensors", "[ops][sort]") {
  const ValuesIndices s = sort(scalar_tensor(2.5, kFloat64), -1);
  CHECK(s.values.dim() == 0);
  CHECK(s.values.item<double>() == 2.5);
  CHECK(s.indices.item<int64_t>() == 0);
  const ValuesIndices e = sort(zeros({0, 3}, kFloat64), 1);
  CHECK(e.values.shape() == Shape{0, 3});
  CHECK(e.indices.shape() == Shape{0, 3});
  CHECK_THROWS_WITH(sort(zeros({2, 3}), 2), Contains("sort") && Contains("dim 2"));
  CHECK_THROWS_WITH(sort(scalar_tensor(1.0), 1), Contains("sort"));
}

TEST_CASE("topk: the k largest (or smallest), sorted, NaN counted as largest", "[ops][sort]") {
  const Tensor x = tensor({1.0, 5.0, kNaN, 3.0, 5.0, -1.0}, kFloat64);
  const ValuesIndices top = topk(x, 3);
  CHECK(ints(top.indices) == std::vector<int64_t>{2, 1, 4});  // NaN, then the tied 5s in order
  CHECK(std::isnan(vals(top.values)[0]));
  const ValuesIndices low = x.topk(2, 0, /*largest=*/false);
  CHECK(vals(low.values) == std::vector<double>{-1, 1});
  CHECK(ints(low.indices) == std::vector<int64_t>{5, 0});
  // Along dim 0 of a matrix: a k x columns result.
  const Tensor m = tensor({1.0, 6.0, 4.0, 2.0, 5.0, 3.0}, kFloat64).reshape({3, 2});
  const ValuesIndices c = topk(m, 2, 0);
  CHECK(c.values.shape() == Shape{2, 2});
  CHECK(vals(c.values) == std::vector<double>{5, 6, 4, 3});
  CHECK(ints(c.indices) == std::vector<int64_t>{2, 0, 1, 2});
  // sorted = false returns them sorted too.
  CHECK(ints(topk(x, 3, 0, true, false).indices) == ints(top.indices));
}

TEST_CASE("topk: gradient to the kept positions, zero elsewhere", "[ops][sort]") {
  Tensor x = tensor({0.5, 4.0, -1.0, 3.0}, kFloat64).detach().requires_grad_(true);
  const ValuesIndices r = topk(x, 2);  // 4 (position 1), 3 (position 3)
  sum(r.values * tensor({2.0, 7.0}, kFloat64)).backward();
  CHECK(vals(x.grad()) == std::vector<double>{0, 2, 0, 7});
}

TEST_CASE("topk: k = 0, k = n, 0-d inputs and the errors", "[ops][sort]") {
  const Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64);
  CHECK(topk(x, 0).values.shape() == Shape{0});
  CHECK(vals(topk(x, 3).values) == std::vector<double>{3, 2, 1});
  CHECK(topk(scalar_tensor(4.0, kFloat64), 1).values.item<double>() == 4.0);
  CHECK(topk(scalar_tensor(4.0, kFloat64), 0).values.dim() == 0);  // PyTorch's answer too
  CHECK_THROWS_WITH(topk(x, 4),
                    Contains("topk") && Contains("k = 4") && Contains("between 0 and 3"));
  CHECK_THROWS_WITH(topk(x, -1), Contains("k = -1"));
  CHECK_THROWS_WITH(topk(scalar_tensor(4.0, kFloat64), 2), Contains("between 0 and 1"));
  CHECK_THROWS_WITH(topk(zeros({2, 3}), 1, -3), Contains("topk") && Contains("-3"));
  CHECK_THROWS_WITH(topk(tensor({1, 0}, kInt64).to(kBool), 1),
                    Contains("bool") && Contains("kUInt8"));
}

TEST_CASE("sort and topk: a long row takes the same order as a short one", "[ops][sort]") {
  // 5000 values with many ties: every position is checked against a direct definition.
  const int64_t n = 5000;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = double((i * 7919) % 97);
  const Tensor x = tensor(v, {n}, kFloat64);
  const std::vector<int64_t> idx = ints(sort(x, 0, true).indices);
  for (int64_t i = 1; i < n; ++i) {
    const double a = v[idx[i - 1]], b = v[idx[i]];
    INFO("position " << i);
    REQUIRE((a > b || (a == b && idx[i - 1] < idx[i])));
  }
  CHECK(ints(topk(x, 50).indices) == std::vector<int64_t>(idx.begin(), idx.begin() + 50));
}
