// Type promotion (core/promotion.h), integer division and the dtypes of reductions and float
// math on integers: the rules PyTorch users rely on, each with the example that used to go wrong.
// (The differential suite, tests/core/differential.cpp, compares every dtype pair with PyTorch;
// these tests pin the rules down one by one, with values computed by hand.)
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return from_vector<int64_t>(v, {n}, kInt64);
}
Tensor u8(std::vector<uint8_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return from_vector<uint8_t>(v, {n}, kUInt8);
}
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
}  // namespace

TEST_CASE("promotion: the lattice, the tiers and result_type", "[promotion]") {
  CHECK(promote_types(kBool, kUInt8) == kUInt8);
  CHECK(promote_types(kUInt8, kInt64) == kInt64);
  CHECK(promote_types(kInt64, kFloat32) == kFloat32);
  CHECK(promote_types(kFloat32, kFloat64) == kFloat64);
  const Tensor f32 = ones({3}), f64 = ones({3}, kFloat64), i = ones({3}, kInt64);
  // Dimensioned tensors of one category: the wider dtype.
  CHECK(result_type(f32, f64) == kFloat64);
  // A 0-d tensor of the same category does not widen a dimensioned one...
  CHECK(result_type(f32, scalar_tensor(1, kFloat64)) == kFloat32);
  CHECK(result_type(u8({1}), scalar_tensor(1, kInt64)) == kUInt8);
  // ...a higher category does, with its own dtype.
  CHECK(result_type(i, scalar_tensor(1, kFloat64)) == kFloat64);
  // Numbers count by kind: an integer never widens an integer tensor, a float brings float32.
  CHECK(result_type(u8({1}), Scalar(1000)) == kUInt8);
  CHECK(result_type(i, Scalar(2.5)) == kFloat32);
  CHECK(result_type(ones({3}, kBool), Scalar(1)) == kInt64);
  CHECK(result_type(ones({3}, kBool), Scalar(true)) == kBool);
  CHECK(result_type(scalar_tensor(1, kFloat64), Scalar(2.5)) == kFloat64);
  CHECK(result_type({i, f32, ones({2}, kUInt8)}) == kFloat32);
  CHECK(can_cast(kFloat64, kFloat32));
  CHECK(can_cast(kInt64, kUInt8));
  CHECK_FALSE(can_cast(kFloat32, kInt64));
  CHECK_FALSE(can_cast(kInt64, kBool));
}

TEST_CASE("promotion: promote_types over every dtype pair is torch.promote_types", "[promotion]") {
  // The table torch.promote_types(row, column) gives in PyTorch 1.13.
  const DType dtypes[] = {kFloat32, kFloat64, kInt64, kInt32, kUInt8, kBool};
  const DType want[6][6] = {
      {kFloat32, kFloat64, kFloat32, kFloat32, kFloat32, kFloat32},  // float32
      {kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64},  // float64
      {kFloat32, kFloat64, kInt64, kInt64, kInt64, kInt64},          // int64
      {kFloat32, kFloat64, kInt64, kInt32, kInt32, kInt32},          // int32
      {kFloat32, kFloat64, kInt64, kInt32, kUInt8, kUInt8},          // uint8
      {kFloat32, kFloat64, kInt64, kInt32, kUInt8, kBool},           // bool
  };
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) {
      INFO(dtypes[i] << " with " << dtypes[j]);
      CHECK(promote_types(dtypes[i], dtypes[j]) == want[i][j]);
      // Two dimensioned tensors promote the same way.
      CHECK(result_type(zeros({2}, dtypes[i]), zeros({2}, dtypes[j])) == want[i][j]);
    }
  }
}

TEST_CASE("promotion: a float number with an integer tensor is not truncated first", "[promotion]") {
  // The examples: int64 {7} * 2.5 gave 14, + 0.9 changed nothing, uint8 * 0.5 gave zeros.
  const Tensor x = i64({7});
  const Tensor y = x * 2.5;
  CHECK(y.dtype() == kFloat32);
  CHECK(vals(y) == std::vector<double>{17.5});
  CHECK(vals(x + 0.9) == std::vector<double>{static_cast<double>(7.9f)});
  const Tensor h = u8({1, 2, 250}) * 0.5;
  CHECK(h.dtype() == kFloat32);
  CHECK(vals(h) == std::vector<double>{0.5, 1.0, 125.0});
  // An integer number keeps the integer dtype, exactly (no double in between).
  const Tensor big = i64({kMax - 5}) + 3;
  CHECK(big.dtype() == kInt64);
  CHECK(ints(big) == std::vector<int64_t>{kMax - 2});
  CHECK(ints(u8({250}) + 10) == std::vector<int64_t>{4});  // uint8 wraps, as in PyTorch
  CHECK((2.5 * x).dtype() == kFloat32);
  CHECK(vals(10 - x) == std::vector<double>{3});
}

TEST_CASE("promotion: mixed float dtypes, gradients in each input's dtype", "[promotion][autograd]") {
  const Tensor a = tensor({1, 2, 3}).requires_grad_();                     // float32
  const Tensor b = tensor({0.5, 0.25, 2}, kFloat64).requires_grad_();      // float64
  const Tensor y = a * b;
  CHECK(y.dtype() == kFloat64);
  y.sum().backward();
  REQUIRE(a.grad().defined());
  CHECK(a.grad().dtype() == kFloat32);
  CHECK(b.grad().dtype() == kFloat64);
  CHECK(vals(a.grad()) == std::vector<double>{0.5, 0.25, 2});
  CHECK(vals(b.grad()) == std::vector<double>{1, 2, 3});
  // A float32 weight against a float64 0-d scale stays float32 and so does its gradient.
  const Tensor w = ones({2, 2}).requires_grad_();
  const Tensor z = w * scalar_tensor(3, kFloat64);
  CHECK(z.dtype() == kFloat32);
  (z.sum() + (w / tensor({2.0, 4.0}, kFloat64)).sum()).backward();
  CHECK(w.grad().dtype() == kFloat32);
  CHECK(vals(w.grad()) == std::vector<double>{3.5, 3.25, 3.5, 3.25});
}

TEST_CASE("promotion: comparisons, where and cat in the promoted dtype", "[promotion]") {
  CHECK(ints(i64({2, 3}).lt(2.5)) == std::vector<int64_t>{1, 0});
  CHECK(ints(i64({2, 3}).eq(tensor({2.0, 3.5}))) == std::vector<int64_t>{1, 0});
  CHECK(ints(u8({44}).eq(300)) == std::vector<int64_t>{1});  // 300 is 44 as uint8, as in PyTorch
  const Tensor w = where(tensor({1, 0}, kBool), i64({1, 2}), tensor({1.5, 2.5}));
  CHECK(w.dtype() == kFloat32);
  CHECK(vals(w) == std::vector<double>{1, 2.5});
  const Tensor c = cat({i64({1}), tensor({1.5}, kFloat64), u8({3})});
  CHECK(c.dtype() == kFloat64);
  CHECK(vals(c) == std::vector<double>{1, 1.5, 3});
  CHECK(stack({ones({2}, kBool), ones({2}, kUInt8)}).dtype() == kUInt8);
}

TEST_CASE("division: true division of integers, rounded quotients, floor_divide", "[promotion][div]") {
  const Tensor a = i64({7, -7, 7, -7, 0}), b = i64({2, 2, -2, -2, 3});
  const Tensor q = a / b;
  CHECK(q.dtype() == kFloat32);
  CHECK(vals(q) == std::vector<double>{3.5, -3.5, -3.5, 3.5, 0});
  const Tensor t = div(a, b, "trunc"), f = div(a, b, "floor");
  CHECK(t.dtype() == kInt64);
  CHECK(ints(t) == std::vector<int64_t>{3, -3, -3, 3, 0});
  CHECK(ints(f) == std::vector<int64_t>{3, -4, -4, 3, 0});
  CHECK(ints(floor_divide(a, b)) == ints(f));
  CHECK(ints(floor_divide(a, 2)) == std::vector<int64_t>{3, -4, 3, -4, 0});
  CHECK(ints(div(u8({255, 7}), 2, "floor")) == std::vector<int64_t>{127, 3});
  // Floats: rounded quotients as Python computes them; x / 0 stays IEEE.
  const Tensor x = tensor({7.5, -7.5, 1.0, -1.0, 0.0}, kFloat64), y = tensor({2, 2, 0, 0, 0}, kFloat64);
  const std::vector<double> fl = vals(div(x, y, "floor"));
  CHECK(fl[0] == 3);
  CHECK(fl[1] == -4);
  CHECK(fl[2] == INFINITY);
  CHECK(fl[3] == -INFINITY);
  CHECK(std::isnan(fl[4]));
  CHECK(vals(div(x, y, "trunc"))[1] == -3);
  CHECK_THROWS_WITH(div(a, b, "round"), Contains("rounding_mode") && Contains("round"));
}

TEST_CASE("division: integer division by zero raises instead of killing the process", "[promotion][div]") {
  // The first example: true division, so IEEE results, as PyTorch (no signal).
  const Tensor q = i64({1, 0, -1}) / i64({0, 0, 0});
  const std::vector<double> v = vals(q);
  CHECK(v[0] == INFINITY);
  CHECK(std::isnan(v[1]));
  CHECK(v[2] == -INFINITY);
  // Integer quotients by zero have no value: a ValueError that says what to do.
  CHECK_THROWS_AS(div(i64({1, 0, -1}), i64({0, 0, 0}), "trunc"), ValueError);
  CHECK_THROWS_WITH(floor_divide(i64({1, 2, 3}), i64({1, 0, 1})),
                    Contains("floor_divide") && Contains("division by zero") && Contains("1 zero"));
  CHECK_THROWS_AS(floor_divide(u8({1}), 0), ValueError);
  CHECK_THROWS_AS(div(u8({1}), 256, "floor"), ValueError);  // 256 is 0 as uint8
  Tensor z = i64({4, 5});
  CHECK_THROWS_AS(z.div_(i64({1, 0}), "floor"), ValueError);
  CHECK(ints(z) == std::vector<int64_t>{4, 5});  // refused before anything was written
}

TEST_CASE("division: INT64_MIN / -1 wraps instead of trapping", "[promotion][div]") {
  const Tensor a = i64({kMin, kMin, 5}), m1 = i64({-1, 1, -1});
  CHECK(ints(div(a, m1, "trunc")) == std::vector<int64_t>{kMin, kMin, -5});
  CHECK(ints(div(a, m1, "floor")) == std::vector<int64_t>{kMin, kMin, -5});
  CHECK(ints(floor_divide(a, -1)) == std::vector<int64_t>{kMin, kMin, -5});
  Tensor c = a.clone();
  c.div_(-1, "trunc");
  CHECK(ints(c) == std::vector<int64_t>{kMin, kMin, -5});
  CHECK(ints(-i64({kMin})) == std::vector<int64_t>{kMin});
  CHECK(ints(abs(i64({kMin}))) == std::vector<int64_t>{kMin});
}

TEST_CASE("promotion: in-place ops store only what the tensor can hold", "[promotion][inplace]") {
  Tensor i = i64({1, 2});
  CHECK_THROWS_WITH(i.add_(0.5), Contains("add_") && Contains("float32") && Contains("int64"));
  CHECK_THROWS_WITH(i.div_(2), Contains("div_") && Contains("rounding mode"));
  i.div_(2, "floor");
  CHECK(ints(i) == std::vector<int64_t>{0, 1});
  i.add_(i64({5, 5}), 3);
  CHECK(ints(i) == std::vector<int64_t>{15, 16});
  CHECK_THROWS_WITH(i.add_(i64({1, 1}), 0.5), Contains("alpha"));
  Tensor f = zeros({2});
  f.add_(tensor({1e-9, 2.5}, kFloat64));  // computed in float64, stored rounded to float32
  CHECK(f.dtype() == kFloat32);
  CHECK(vals(f) == std::vector<double>{static_cast<double>(1e-9f), 2.5});
  Tensor m = ones({2}, kBool);
  CHECK_THROWS_AS(m.add_(1), ValueError);  // bool + int is int64: does not fit bool
  CHECK_THROWS_WITH(ones({2}).sub_(ones({2}, kBool)), Contains("sub_") && Contains("bool"));
  CHECK_THROWS_WITH(ones({2}, kUInt8).fill_(300), Contains("fill_") && Contains("uint8"));
  CHECK_THROWS_AS(ones({2}, kUInt8).fill_(-1.5), ValueError);
  Tensor e = zeros({2}, kInt64);
  e.fill_(kMax);
  CHECK(ints(e) == std::vector<int64_t>{kMax, kMax});
}

TEST_CASE("reductions: integer and bool sums are int64, means are float", "[promotion][reduce]") {
  // The example: uint8 {200, 100, 5} summed to 49 (wrapping in uint8); PyTorch: 305.
  const Tensor s = u8({200, 100, 5}).sum();
  CHECK(s.dtype() == kInt64);
  CHECK(ints(s) == std::vector<int64_t>{305});
  CHECK(ints(tensor({1, 0, 1, 1}, kBool).sum()) == std::vector<int64_t>{3});
  CHECK(ints(i64({kMax, -1, 1}).sum()) == std::vector<int64_t>{kMax});  // exact above 2^53
  const Tensor p = u8({200, 100}).prod();
  CHECK(p.dtype() == kInt64);
  CHECK(ints(p) == std::vector<int64_t>{20000});
  // 2^40 * 2^30 * 3 = 3 * 2^70, which is 0 modulo 2^64: int64 products wrap, as in PyTorch.
  CHECK(ints(i64({int64_t{1} << 40, int64_t{1} << 30, 3}).prod()) == std::vector<int64_t>{0});
  CHECK(ints(i64({int64_t{1} << 40, 5, -3}).prod()) == std::vector<int64_t>{-15 * (int64_t{1} << 40)});
  const Tensor m = i64({1, 2}).mean();
  CHECK(m.dtype() == kFloat32);
  CHECK(vals(m) == std::vector<double>{1.5});
  CHECK(vals(tensor({1, 0, 0, 0}, kBool).mean()) == std::vector<double>{0.25});
  CHECK(tensor({1, 2}, kFloat64).sum().dtype() == kFloat64);
}

TEST_CASE("float math of integers is float32 and pow keeps integer powers exact", "[promotion]") {
  for (const Tensor& y : {exp(i64({0, 1})), log(i64({1, 2})), sqrt(u8({4, 9})),
                          sigmoid(i64({0})), tanh(tensor({1, 0}, kBool))}) {
    CHECK(y.dtype() == kFloat32);
  }
  CHECK(vals(sqrt(u8({4, 9}))) == std::vector<double>{2, 3});
  const Tensor p = pow(i64({3, -2}), 39);
  CHECK(p.dtype() == kInt64);
  int64_t want = 1;
  for (int k = 0; k < 39; ++k) want = static_cast<int64_t>(static_cast<uint64_t>(want) * 3u);
  CHECK(ints(p)[0] == want);  // exact (wrapping) integer arithmetic, not a rounded double
  CHECK(ints(p)[1] == -(int64_t{1} << 39));
  CHECK(pow(i64({2}), 2.5).dtype() == kFloat32);
  CHECK(pow(tensor({1, 0}, kBool), 2).dtype() == kInt64);
  CHECK_THROWS_WITH(pow(i64({2}), -1), Contains("negative integer powers"));
  CHECK_THROWS_WITH(neg(ones({2}, kBool)), Contains("neg") && Contains("bool"));
  CHECK(relu(i64({-3, 4})).dtype() == kInt64);
}

TEST_CASE("division on cuda: the same integer quotients, the same refusals", "[cuda][promotion][div]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  const Device gpu = Device::cuda(0);
  const Tensor a = i64({7, -7, 7, -7, kMin, kMin}).to(gpu), b = i64({2, 2, -2, -2, -1, 1}).to(gpu);
  CHECK(ints(div(a, b, "trunc")) == std::vector<int64_t>{3, -3, -3, 3, kMin, kMin});
  CHECK(ints(div(a, b, "floor")) == std::vector<int64_t>{3, -4, -4, 3, kMin, kMin});
  CHECK(ints(floor_divide(a, b)) == std::vector<int64_t>{3, -4, -4, 3, kMin, kMin});
  const Tensor q = a / b;
  CHECK(q.dtype() == kFloat32);
  CHECK(vals(q)[1] == -3.5);
  // A zero divisor raises on the GPU too (the check waits for the device), before any write.
  Tensor z = i64({4, 5}).to(gpu);
  CHECK_THROWS_AS(floor_divide(z, i64({1, 0}).to(gpu)), ValueError);
  CHECK_THROWS_AS(z.div_(0, "trunc"), ValueError);
  CHECK(ints(z) == std::vector<int64_t>{4, 5});
  CHECK(ints(u8({200, 100, 5}).to(gpu).sum()) == std::vector<int64_t>{305});
  CHECK(ints(i64({kMax, -1, 1}).to(gpu).sum()) == std::vector<int64_t>{kMax});
  CHECK(vals(i64({7}).to(gpu) * 2.5) == std::vector<double>{17.5});
}
