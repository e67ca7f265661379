// The int32 dtype (issue 27): what PyTorch 1.13 does with torch.int32, rule by rule, with values
// computed by hand. The differential suite (tests/core/differential.cpp) compares the same ops
// with PyTorch's recorded answers over every dtype pair; these tests pin down the int32 rules
// one at a time, so a failure names the rule. The CUDA twin is tests/kernels/cuda_int32.cpp.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "core/serialize.h"
#include "test_files.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();

Tensor i32(std::vector<int32_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return from_vector<int32_t>(v, {n}, kInt32);
}
Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return from_vector<int64_t>(v, {n}, kInt64);
}
std::vector<int32_t> ints32(const Tensor& t) { return t.to_vector<int32_t>(); }
std::vector<int64_t> ints64(const Tensor& t) { return t.to_vector<int64_t>(); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("int32: the dtype itself: size, name, factories", "[int32]") {
  CHECK(dtype_size(kInt32) == 4);
  CHECK(std::string(dtype_name(kInt32)) == "int32");
  CHECK(dtype_category(kInt32) == 1);
  CHECK_FALSE(is_floating(kInt32));
  const Tensor z = zeros({2, 3}, kInt32);
  CHECK(z.dtype() == kInt32);
  CHECK(z.element_size() == 4);
  CHECK(ints32(z) == std::vector<int32_t>(6, 0));
  CHECK(ints32(ones({2}, kInt32)) == std::vector<int32_t>{1, 1});
  CHECK(ints32(full({2}, -7, kInt32)) == std::vector<int32_t>{-7, -7});
  CHECK(ints32(full({1}, 2147483647.0, kInt32)) == std::vector<int32_t>{kMax32});
  CHECK(ints32(arange(-2, 3, 1, kInt32)) == std::vector<int32_t>{-2, -1, 0, 1, 2});
  CHECK(ints32(tensor({1.9, -1.9, 3}, kInt32)) == std::vector<int32_t>{1, -1, 3});  // truncated
  CHECK(ints32(linspace(0, 4, 5, kInt32)) == std::vector<int32_t>{0, 1, 2, 3, 4});
  CHECK(empty({4}, kInt32).numel() == 4);
  CHECK(i32({-6}).item<int64_t>() == -6);
  // Printing names the dtype.
  std::ostringstream os;
  os << i32({1, -2});
  CHECK_THAT(os.str(), Contains("int32"));
  // A value the dtype cannot hold is refused by the factories, as PyTorch's
  // "value cannot be converted to type int without overflow".
  CHECK_THROWS_WITH(full({2}, 2147483648.0, kInt32), Contains("int32") && Contains("does not fit"));
  CHECK_THROWS_AS(full({2}, -2147483649.0, kInt32), ValueError);
}

TEST_CASE("int32: random integers and permutations", "[int32]") {
  manual_seed(7);
  const Tensor a = randint(-5, 5, {1000}, kInt32);
  manual_seed(7);
  const Tensor b = randint(-5, 5, {1000}, kInt64);
  CHECK(a.dtype() == kInt32);
  // The same draws as int64, converted: a seed gives the same numbers in every dtype.
  CHECK(ints64(a) == ints64(b));
  CHECK(a.min().item<int64_t>() >= -5);
  CHECK(a.max().item<int64_t>() <= 4);
  const Tensor p = randperm(50, kInt32);
  CHECK(p.dtype() == kInt32);
  CHECK(ints64(sort(p).values) == ints64(arange(0, 50, 1, kInt64)));
  // rand and randn make floats only.
  CHECK_THROWS_AS(rand({3}, kInt32), ValueError);
}

TEST_CASE("int32: casts to and from every dtype", "[int32]") {
  // float -> int32 truncates toward zero.
  CHECK(ints32(tensor({2.7, -2.7, -0.5, 0.5}, kFloat64).to(kInt32)) ==
        std::vector<int32_t>{2, -2, 0, 0});
  CHECK(ints32(tensor({2.7f, -2.7f}, kFloat32).to(kInt32)) == std::vector<int32_t>{2, -2});
  // Out of range and NaN: INT32_MIN, as PyTorch on x86 (ember defines it on every machine:
  // kernels/base/scalar_math.h), both at the edges and far beyond them.
  const Tensor out_of_range = tensor({2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0,
                                      1e10, -1e300, NAN, INFINITY, -INFINITY},
                                     kFloat64);
  CHECK(ints32(out_of_range.to(kInt32)) == std::vector<int32_t>{kMax32, kMin32, kMin32, kMin32,
                                                                kMin32, kMin32, kMin32, kMin32,
                                                                kMin32});
  CHECK(ints32(out_of_range.to(kFloat32).to(kInt32))[1] == kMin32);
  // int64 -> int32 keeps the low 32 bits (two's complement), as PyTorch.
  CHECK(
      ints32(i64({(int64_t{1} << 32) + 5, -(int64_t{1} << 33) - 1, int64_t{1} << 31}).to(kInt32)) ==
      std::vector<int32_t>{5, -1, kMin32});
  // int32 -> the others.
  const Tensor x = i32({-1, 300, 0, kMax32});
  CHECK(ints64(x.to(kInt64)) == std::vector<int64_t>{-1, 300, 0, kMax32});
  CHECK(ints64(x.to(kUInt8)) == std::vector<int64_t>{255, 44, 0, 255});
  CHECK(ints64(x.to(kBool)) == std::vector<int64_t>{1, 1, 0, 1});
  CHECK(vals(x.to(kFloat64)) == std::vector<double>{-1, 300, 0, 2147483647.0});
  CHECK(vals(x.to(kFloat32))[3] == 2147483648.0);  // rounded to float32
  CHECK(ints32(tensor({1, 0, 1}, kBool).to(kInt32)) == std::vector<int32_t>{1, 0, 1});
  CHECK(ints32(from_vector<uint8_t>({255, 7}, {2}, kUInt8).to(kInt32)) ==
        std::vector<int32_t>{255, 7});
}

TEST_CASE("int32: promotion with every dtype, 0-d tensors and numbers", "[int32][promotion]") {
  CHECK(promote_types(kInt32, kInt64) == kInt64);
  CHECK(promote_types(kInt32, kUInt8) == kInt32);
  CHECK(promote_types(kBool, kInt32) == kInt32);
  CHECK(promote_types(kInt32, kFloat32) == kFloat32);
  CHECK(promote_types(kFloat64, kInt32) == kFloat64);
  const Tensor x = i32({1, -2, 3});
  CHECK((x + i64({1, 1, 1})).dtype() == kInt64);
  CHECK((x + from_vector<uint8_t>({1, 1, 1}, {3}, kUInt8)).dtype() == kInt32);
  CHECK((x + tensor({1, 0, 1}, kBool)).dtype() == kInt32);
  CHECK((x * tensor({0.5, 0.5, 0.5})).dtype() == kFloat32);
  // A 0-d tensor of the same category does not widen: int32 [3] + int64 0-d stays int32;
  // uint8 [2] + int32 0-d stays uint8; a 0-d float64 brings its float dtype.
  CHECK(result_type(x, scalar_tensor(5, kInt64)) == kInt32);
  CHECK(result_type(from_vector<uint8_t>({1, 2}, {2}, kUInt8), scalar_tensor(5, kInt32)) == kUInt8);
  CHECK(result_type(x, scalar_tensor(5, kFloat64)) == kFloat64);
  CHECK(result_type(scalar_tensor(3, kInt32), tensor({1.5})) == kFloat32);
  // Numbers: an integer keeps int32 (and wraps into it, even beyond 2^31), a float brings float32.
  CHECK(result_type(x, Scalar(1000)) == kInt32);
  CHECK(result_type(x, Scalar(2.5)) == kFloat32);
  CHECK(result_type(tensor({1}, kBool), Scalar(1)) == kInt64);
  CHECK(ints32(x + (int64_t{1} << 40)) == std::vector<int32_t>{1, -2, 3});  // 2^40 is 0 as int32
  CHECK(ints32(x + ((int64_t{1} << 32) + 3)) == std::vector<int32_t>{4, 1, 6});
  CHECK(vals(x * 2.5) == std::vector<double>{2.5, -5, 7.5});
  // In place: an int32 tensor takes an int64 operand (the result is stored back as int32) but
  // refuses a float result, as PyTorch.
  Tensor y = i32({1, 2});
  y.add_(i64({int64_t{1} << 32, 5}));
  CHECK(y.dtype() == kInt32);
  CHECK(ints32(y) == std::vector<int32_t>{1, 7});
  CHECK_THROWS_AS(i32({1}).add_(0.5), ValueError);
  CHECK(can_cast(kInt64, kInt32));
  CHECK(can_cast(kInt32, kUInt8));
  CHECK_FALSE(can_cast(kFloat32, kInt32));
  CHECK_FALSE(can_cast(kInt32, kBool));
}

TEST_CASE("int32: arithmetic wraps - division, floor division, remainder, fmod",
          "[int32][promotion][div]") {
  CHECK(ints32(i32({kMax32}) + 1) == std::vector<int32_t>{kMin32});
  CHECK(ints32(i32({kMin32}) - 1) == std::vector<int32_t>{kMax32});
  CHECK(ints32(i32({65536}) * i32({65536})) == std::vector<int32_t>{0});
  CHECK(ints32(-i32({kMin32, 5})) == std::vector<int32_t>{kMin32, -5});
  CHECK(ints32(abs(i32({kMin32, -5}))) == std::vector<int32_t>{kMin32, 5});
  CHECK(ints32(relu(i32({-3, 4}))) == std::vector<int32_t>{0, 4});
  CHECK(ints32(pow(i32({3, -2}), 3)) == std::vector<int32_t>{27, -8});
  CHECK(ints32(pow(i32({65536}), 2)) == std::vector<int32_t>{0});  // wraps
  CHECK_THROWS_AS(pow(i32({2}), -1), ValueError);  // as PyTorch: integers to negative powers
  // True division is float32; floor and trunc keep int32.
  const Tensor a = i32({7, -7, 7, -7}), b = i32({2, 2, -2, -2});
  CHECK((a / b).dtype() == kFloat32);
  CHECK(vals(a / b) == std::vector<double>{3.5, -3.5, -3.5, 3.5});
  CHECK(div(a, b, "floor").dtype() == kInt32);
  CHECK(ints32(div(a, b, "floor")) == std::vector<int32_t>{3, -4, -4, 3});
  CHECK(ints32(div(a, b, "trunc")) == std::vector<int32_t>{3, -3, -3, 3});
  CHECK(ints32(floor_divide(a, 2)) == std::vector<int32_t>{3, -4, 3, -4});
  // remainder has the divisor's sign, fmod the dividend's.
  CHECK(ints32(remainder(i32({-7, 7, -7, 7}), i32({3, 3, -3, -3}))) ==
        std::vector<int32_t>{2, 1, -1, -2});
  CHECK(ints32(fmod(i32({-7, 7, -7, 7}), i32({3, 3, -3, -3}))) ==
        std::vector<int32_t>{-1, 1, -1, 1});
  CHECK(ints32(remainder(i32({kMin32}), 3)) == std::vector<int32_t>{1});
  // INT32_MIN / -1 wraps to INT32_MIN (PyTorch's CPU process dies there).
  CHECK(ints32(div(i32({kMin32}), i32({-1}), "floor")) == std::vector<int32_t>{kMin32});
  CHECK(ints32(fmod(i32({kMin32}), -1)) == std::vector<int32_t>{0});
  CHECK_THROWS_WITH(floor_divide(i32({1, 2}), i32({1, 0})), Contains("division by zero"));
  CHECK_THROWS_AS(remainder(i32({1}), 0), ValueError);
}

TEST_CASE("int32: comparisons, where, cat, clamp, maximum", "[int32]") {
  const Tensor x = i32({1, -2, 3});
  CHECK(ints64(x.lt(1.5)) == std::vector<int64_t>{1, 1, 0});
  CHECK(ints64(x.eq(tensor({1.0, 2.0, 3.0}))) == std::vector<int64_t>{1, 0, 1});
  // 2^32 + 1 compared as int64 (the wider dtype), not wrapped into int32.
  CHECK(ints64(x.eq(i64({(int64_t{1} << 32) + 1, -2, 3}))) == std::vector<int64_t>{0, 1, 1});
  const Tensor c = tensor({1, 0, 1}, kBool);
  CHECK(where(c, x, i64({7, 8, 9})).dtype() == kInt64);
  CHECK(ints32(where(c, x, 5)) == std::vector<int32_t>{1, 5, 3});
  CHECK(where(c, x, 5).dtype() == kInt32);
  CHECK(ints32(masked_fill(x, c, 2.7)) == std::vector<int32_t>{2, -2, 2});
  CHECK_THROWS_WITH(masked_fill(x, c, int64_t{1} << 31),
                    Contains("does not fit") && Contains("int32"));
  const Tensor k = cat({x, from_vector<uint8_t>({200}, {1}, kUInt8)});
  CHECK(k.dtype() == kInt32);
  CHECK(ints32(k) == std::vector<int32_t>{1, -2, 3, 200});
  CHECK(cat({x, i64({1})}).dtype() == kInt64);
  CHECK(ints32(clamp(x, 0, 2)) == std::vector<int32_t>{1, 0, 2});
  CHECK(clamp(x, 0.5, 2).dtype() == kFloat32);
  CHECK(maximum(x, i32({0, 0, 0})).dtype() == kInt32);
  CHECK(maximum(x, i64({0, 0, 0})).dtype() == kInt64);
}

TEST_CASE("int32: fill_ takes exactly the int32 range", "[int32]") {
  Tensor t = zeros({2}, kInt32);
  t.fill_(kMax32);
  CHECK(ints32(t) == std::vector<int32_t>{kMax32, kMax32});
  t.fill_(kMin32);
  CHECK(ints32(t) == std::vector<int32_t>{kMin32, kMin32});
  t.fill_(-2.7);
  CHECK(ints32(t) == std::vector<int32_t>{-2, -2});
  // PyTorch: "value cannot be converted to type int without overflow". Unlike uint8 (which
  // takes -255..255 and wraps) a signed int32 takes no value outside its range.
  CHECK_THROWS_AS(t.fill_(int64_t{1} << 31), ValueError);
  CHECK_THROWS_AS(t.fill_(-(int64_t{1} << 31) - 1), ValueError);
  CHECK_THROWS_AS(t.fill_(2147483647.5), ValueError);
  CHECK_THROWS_AS(t.fill_(NAN), ValueError);
  CHECK_THROWS_AS(t.fill_(INFINITY), ValueError);
  CHECK(ints32(t) == std::vector<int32_t>{-2, -2});  // refused before anything was written
}

TEST_CASE("int32: reductions - sum, prod and cumsum give int64", "[int32]") {
  const Tensor x = i32({kMax32, kMax32, 1 << 30, kMin32});
  // PyTorch sums integers in int64 and returns int64: no wrap at 2^31.
  CHECK(sum(x).dtype() == kInt64);
  CHECK(sum(x).item<int64_t>() == int64_t{kMax32} + kMax32 + (1 << 30) + kMin32);
  CHECK(ints64(cumsum(x, 0)) == std::vector<int64_t>{kMax32, 2 * int64_t{kMax32},
                                                     2 * int64_t{kMax32} + (1 << 30),
                                                     2 * int64_t{kMax32} + (1 << 30) + kMin32});
  CHECK(cumsum(x, 0).dtype() == kInt64);
  CHECK(prod(i32({1 << 20, 1 << 20, -3})).dtype() == kInt64);
  CHECK(prod(i32({1 << 20, 1 << 20, -3})).item<int64_t>() == -3 * (int64_t{1} << 40));
  CHECK(mean(i32({1, 2})).dtype() == kFloat32);  // ember's documented difference (mean-of-integers)
  // max, min, argmax, amax keep int32 (the indices are int64).
  const Tensor y = from_vector<int32_t>({3, -1, 7, 7, kMin32, 0}, {2, 3}, kInt32);
  CHECK(max(y).dtype() == kInt32);
  CHECK(max(y).item<int64_t>() == 7);
  CHECK(min(y).item<int64_t>() == kMin32);
  const ValuesIndices m = max(y, 1);
  CHECK(ints32(m.values) == std::vector<int32_t>{7, 7});
  CHECK(m.indices.dtype() == kInt64);
  CHECK(ints64(m.indices) == std::vector<int64_t>{2, 0});
  CHECK(ints64(argmin(y, 1)) == std::vector<int64_t>{1, 1});
  CHECK(argmax(y).item<int64_t>() == 2);
  CHECK(ints32(amax(y, {0})) == std::vector<int32_t>{7, -1, 7});
  CHECK(any(i32({0, 0, 5})).item<bool>());
  CHECK_FALSE(all(i32({0, 1})).item<bool>());
}

TEST_CASE("int32: sort and topk", "[int32]") {
  const Tensor x = i32({3, kMin32, 7, 0, 7, kMax32, -1});
  const ValuesIndices s = sort(x);
  CHECK(s.values.dtype() == kInt32);
  CHECK(ints32(s.values) == std::vector<int32_t>{kMin32, -1, 0, 3, 7, 7, kMax32});
  CHECK(ints64(s.indices) == std::vector<int64_t>{1, 6, 3, 0, 2, 4, 5});
  const ValuesIndices t = topk(x, 3);
  CHECK(ints32(t.values) == std::vector<int32_t>{kMax32, 7, 7});
  CHECK(ints64(t.indices) == std::vector<int64_t>{5, 2, 4});
}

TEST_CASE(
    "int32: index tensors: index_select and index_add take them, gather and scatter_add do not",
    "[int32]") {
  const Tensor a = arange(0, 6, 1, kFloat64).reshape({2, 3});
  const Tensor ix32 = i32({2, 0, 2});
  // index_select and index_add accept int32 indices in PyTorch 1.13, with the same answers.
  CHECK(vals(index_select(a, 1, ix32)) == vals(index_select(a, 1, ix32.to(kInt64))));
  CHECK(vals(index_select(a, 1, ix32)) == std::vector<double>{2, 0, 2, 5, 3, 5});
  const Tensor src = ones({2, 3}, kFloat64);
  CHECK(vals(index_add(a, 1, ix32, src)) == std::vector<double>{1, 1, 4, 4, 4, 7});
  CHECK_THROWS_WITH(index_select(a, 1, i32({3})),
                    Contains("index value 3") && Contains("out of range"));
  // The gradient flows through an int32 index as through an int64 one.
  const Tensor w = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  index_select(w, 0, ix32).sum().backward();
  CHECK(vals(w.grad()) == std::vector<double>{1, 0, 2});
  // int32 data with an int64 index keeps int32.
  CHECK(ints32(index_select(i32({5, 6, 7}), 0, i64({2, 0}))) == std::vector<int32_t>{7, 5});
  CHECK(ints32(gather(i32({5, 6, 7}), 0, i64({1, 1}))) == std::vector<int32_t>{6, 6});
  CHECK(ints32(scatter_add(i32({5, 6, 7}), 0, i64({2, 0}), i32({10, 20}))) ==
        std::vector<int32_t>{25, 6, 17});
  // gather, scatter_add, cross_entropy and one_hot want int64 in PyTorch 1.13 too.
  CHECK_THROWS_WITH(gather(a, 1, from_vector<int32_t>({0, 1}, {2, 1}, kInt32)),
                    Contains("int64") && Contains("int32"));
  CHECK_THROWS_AS(scatter_add(a, 1, from_vector<int32_t>({0, 1}, {2, 1}, kInt32),
                              ones({2, 1}, kFloat64)),
                  ValueError);
  CHECK_THROWS_WITH(cross_entropy(a, i32({0, 1})), Contains("int64"));
  CHECK_THROWS_AS(index_select(a, 1, tensor({0.0})), ValueError);  // a float index: refused
}

TEST_CASE("int32: tensors cannot require grad, ops on them record nothing", "[int32][autograd]") {
  CHECK_THROWS_WITH(i32({1}).requires_grad_(), Contains("int32"));
  CHECK_THROWS_AS(zeros({2}, TensorOptions(kInt32).requires_grad(true)), ValueError);
  // Mixed with a float tensor that requires grad, the float side gets its gradient.
  const Tensor w = tensor({1.5, 2.0}).requires_grad_();
  (w * i32({3, -1})).sum().backward();
  CHECK(vals(w.grad()) == std::vector<double>{3, -1});
}

TEST_CASE("int32: float math on int32 computes in float32", "[int32]") {
  const Tensor x = i32({1, 4});
  CHECK(exp(x).dtype() == kFloat32);
  CHECK(vals(sqrt(x)) == std::vector<double>{1, 2});
  CHECK(sigmoid(x).dtype() == kFloat32);
  CHECK_THROWS_AS(softmax(x, 0), ValueError);  // PyTorch has no int softmax either
  CHECK_THROWS_AS(matmul(x.reshape({1, 2}), x.reshape({2, 1})), ValueError);  // integer-matmul-conv
}

TEST_CASE("int32: safetensors files read and write I32", "[int32][serialize]") {
  test::TempDir dir("ember_test_int32_");
  const std::string path = dir / "ints.safetensors";
  const Tensor x = from_vector<int32_t>({kMin32, -1, 0, kMax32, 7, 8}, {2, 3}, kInt32);
  save({{"x", x}, {"y", i64({1, 2})}}, path);
  // The header spells the dtype as safetensors does.
  const test::Bytes bytes = test::read_bytes(path);
  const std::string text(bytes.begin(), bytes.end());
  CHECK_THAT(text, Contains("\"dtype\":\"I32\",\"shape\":[2,3]"));
  const NamedTensors back = load(path);
  REQUIRE(back.size() == 2);
  CHECK(back[0].second.dtype() == kInt32);
  CHECK(back[0].second.shape() == Shape{2, 3});
  CHECK(ints32(back[0].second) == ints32(x));
  CHECK(back[1].second.dtype() == kInt64);
}

TEST_CASE("int32: an I32 tensor written by another program loads", "[int32][serialize]") {
  // What Python's safetensors writes for {"t": torch.tensor([-2, 65536], dtype=torch.int32)}:
  // an 8-byte little-endian header length, the JSON header, then the little-endian values.
  const std::string header = R"({"t":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  test::Bytes file(8, 0);
  file[0] = static_cast<uint8_t>(header.size());
  file.insert(file.end(), header.begin(), header.end());
  for (uint8_t b : {0xFE, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x01, 0x00}) file.push_back(b);
  test::TempDir dir("ember_test_int32_");
  test::write_bytes(dir / "t.safetensors", file);
  const NamedTensors t = load(dir / "t.safetensors");
  REQUIRE(t.size() == 1);
  CHECK(t[0].second.dtype() == kInt32);
  CHECK(ints32(t[0].second) == std::vector<int32_t>{-2, 65536});
}
