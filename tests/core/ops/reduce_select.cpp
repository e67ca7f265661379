// Exact forward values of max/min/argmax/argmin, comparisons, where and masked_fill on small
// hand-computed examples, their gradients where the answer is obvious, and their error messages.
// (Gradients in general are covered by the gradcheck cases in tests/cases/reduce.cpp, select.cpp.)
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<int64_t> ints(const Tensor& t) { return t.to(kInt64).to_vector<int64_t>(); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

// [[1, 5, 3],
//  [7, 2, 9]]
Tensor example(DType dtype = kFloat32) { return tensor({1, 5, 3, 7, 2, 9}, {2, 3}, dtype); }
}  // namespace

TEST_CASE("max/min over a dim: values and indices", "[reduce]") {
  const Tensor a = example();
  const ValuesIndices mx = max(a, 1);
  CHECK(mx.values.shape() == Shape{2});
  CHECK(mx.values.dtype() == kFloat32);
  CHECK(mx.indices.dtype() == kInt64);
  CHECK(vals(mx.values) == std::vector<double>{5, 9});
  CHECK(ints(mx.indices) == std::vector<int64_t>{1, 2});

  const ValuesIndices mn = min(a, 1);
  CHECK(vals(mn.values) == std::vector<double>{1, 2});
  CHECK(ints(mn.indices) == std::vector<int64_t>{0, 1});

  const ValuesIndices col = max(a, 0);
  CHECK(vals(col.values) == std::vector<double>{7, 5, 9});
  CHECK(ints(col.indices) == std::vector<int64_t>{1, 0, 1});

  const ValuesIndices neg = min(a, -2, true);  // dim -2 is dim 0
  CHECK(neg.values.shape() == Shape{1, 3});
  CHECK(neg.indices.shape() == Shape{1, 3});
  CHECK(vals(neg.values) == std::vector<double>{1, 2, 3});
  CHECK(ints(neg.indices) == std::vector<int64_t>{0, 1, 0});

  CHECK(max(a, 1, true).values.shape() == Shape{2, 1});
  CHECK(a.max(1).shape() == Shape{2});
}

TEST_CASE("max/min over all elements, argmax/argmin", "[reduce]") {
  const Tensor a = example(kFloat64);
  const Tensor mx = max(a);
  CHECK(mx.dim() == 0);
  CHECK(mx.item() == 9);
  CHECK(min(a).item() == 1);

  const Tensor flat = argmax(a);
  CHECK(flat.dim() == 0);
  CHECK(flat.dtype() == kInt64);
  CHECK(flat.item<int64_t>() == 5);
  CHECK(argmax(a.t()).item<int64_t>() == 5);  // [[1,7],[5,2],[3,9]]: 9 is flat element 5 too

  CHECK(ints(argmax(a, 1)) == std::vector<int64_t>{1, 2});
  CHECK(ints(argmin(a, 0)) == std::vector<int64_t>{0, 1, 0});
  const Tensor keep = argmin(a, 1, true);
  CHECK(keep.shape() == Shape{2, 1});
  CHECK(ints(keep) == std::vector<int64_t>{0, 1});

  // Integer tensors reduce too.
  const Tensor i = tensor({4, -1, 8, 8}, {4}, kInt64);
  CHECK(max(i).item<int64_t>() == 8);
  CHECK(argmax(i).item<int64_t>() == 2);  // the first of the tied 8s
  CHECK(ints(min(i, 0).indices) == std::vector<int64_t>{1});
}

TEST_CASE("max/min: ties go to the first index, NaN propagates", "[reduce]") {
  const Tensor t = tensor({3, 1, 3, 1}, kFloat64);
  CHECK(argmax(t).item<int64_t>() == 0);
  CHECK(ints(argmin(t, 0)) == std::vector<int64_t>{1});

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor n = tensor({1, nan, 5, nan}, kFloat64);
  const ValuesIndices mx = max(n, 0);
  CHECK(std::isnan(mx.values.item()));
  CHECK(mx.indices.item<int64_t>() == 1);
  const ValuesIndices mn = min(n, 0);
  CHECK(std::isnan(mn.values.item()));
  CHECK(mn.indices.item<int64_t>() == 1);
  CHECK(std::isnan(max(n).item()));
  // A NaN in the first position is not replaced by a later number either.
  CHECK(std::isnan(min(tensor({nan, -4, 2}, kFloat64)).item()));
}

TEST_CASE("max/min backward: the gradient goes to the picked element", "[reduce][autograd]") {
  Tensor a = example(kFloat64).requires_grad_(true);
  const ValuesIndices mx = max(a, 1);
  CHECK(mx.values.requires_grad());
  CHECK_FALSE(mx.indices.requires_grad());
  CHECK(mx.values.grad_fn()->name() == "MaxBackward");
  (mx.values * tensor({10, 20}, kFloat64)).sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{0, 10, 0, 0, 0, 20});

  a.zero_grad();
  min(a).backward();
  CHECK(vals(a.grad()) == std::vector<double>{1, 0, 0, 0, 0, 0});

  // A tie in the whole-tensor max: the gradient is shared evenly, as in PyTorch 1.13.
  Tensor t = tensor({2, 7, 7}, kFloat64).requires_grad_(true);
  max(t).backward();
  CHECK(vals(t.grad()) == std::vector<double>{0, 0.5, 0.5});
  // With a dim there are indices, and the gradient follows them (the first of the tie).
  Tensor u = tensor({2, 7, 7}, {1, 3}, kFloat64).requires_grad_(true);
  max(u, 1).values.sum().backward();
  CHECK(vals(u.grad()) == std::vector<double>{0, 1, 0});

  // Over dim 0 of a transposed (non-contiguous) input, with keepdim.
  Tensor b = example(kFloat64).requires_grad_(true);
  const Tensor bt = b.t();  // [[1,7],[5,2],[3,9]]
  min(bt, 0, true).values.sum().backward();  // picks 1 (row 0, col 0) and 2 (row 1, col 1)
  CHECK(vals(b.grad()) == std::vector<double>{1, 0, 0, 0, 1, 0});

  CHECK_FALSE(argmax(a, 1).requires_grad());
}

TEST_CASE("max/min: large shapes match a plain loop", "[reduce]") {
  // Shapes that take the row path with threads ([2, 40000] over dim 1) and the column path with
  // several blocks of outputs ([3, 50, 300] over dim 1).
  for (const Shape& shape : {Shape{2, 40000}, Shape{3, 50, 300}}) {
    manual_seed(7);
    const Tensor a = randn(shape, kFloat64);
    const int64_t outer = shape[0], r = shape[1], inner = shape.size() == 3 ? shape[2] : 1;
    const std::vector<double> x = vals(a);
    const ValuesIndices mx = max(a, 1);
    const ValuesIndices mn = min(a, 1);
    const std::vector<double> mxv = vals(mx.values), mnv = vals(mn.values);
    const std::vector<int64_t> mxi = ints(mx.indices), mni = ints(mn.indices);
    bool ok = true;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t k = 0; k < inner; ++k) {
        int64_t hi = 0, lo = 0;
        for (int64_t j = 1; j < r; ++j) {
          if (x[(o * r + j) * inner + k] > x[(o * r + hi) * inner + k]) hi = j;
          if (x[(o * r + j) * inner + k] < x[(o * r + lo) * inner + k]) lo = j;
        }
        const size_t out = static_cast<size_t>(o * inner + k);
        ok = ok && mxi[out] == hi && mni[out] == lo;
        ok = ok && mxv[out] == x[(o * r + hi) * inner + k] && mnv[out] == x[(o * r + lo) * inner + k];
      }
    }
    INFO("shape " << shape_str(shape));
    CHECK(ok);
  }
}

TEST_CASE("max/min: 0-d, empty and bad-dim inputs", "[reduce][errors]") {
  const Tensor s = scalar_tensor(4.0);
  CHECK(max(s, 0).values.item() == 4.0);
  CHECK(max(s, -1).indices.item<int64_t>() == 0);
  CHECK(argmax(s).item<int64_t>() == 0);
  CHECK_THROWS_WITH(max(s, 1), Contains("max") && Contains("dim 1 out of range"));

  // Reducing a non-empty dim of a tensor with no elements is fine: the result is empty too.
  CHECK(max(zeros({0, 3}), 1).values.shape() == Shape{0});
  CHECK_THROWS_WITH(max(zeros({0, 3}), 0), Contains("max: cannot reduce over dim 0 of size 0"));
  CHECK_THROWS_WITH(min(zeros({2, 0})), Contains("min: the input has no elements"));
  CHECK_THROWS_WITH(argmax(zeros({0})), Contains("argmax"));

  const Tensor a = example();
  CHECK_THROWS_WITH(max(a, 2), Contains("max: dim 2 out of range for a 2-d tensor"));
  CHECK_THROWS_WITH(argmin(a, -3), Contains("argmin: dim -3 out of range"));
  CHECK_THROWS_WITH(argmax(a, 5, true), Contains("argmax"));
}

TEST_CASE("comparisons: bool results, broadcasting, no gradient", "[compare]") {
  const Tensor a = tensor({1, 2, 3}, kFloat64).requires_grad_(true);
  const Tensor b = tensor({2, 2, 2}, kFloat64);
  CHECK(eq(a, b).dtype() == kBool);
  CHECK(ints(eq(a, b)) == std::vector<int64_t>{0, 1, 0});
  CHECK(ints(ne(a, b)) == std::vector<int64_t>{1, 0, 1});
  CHECK(ints(lt(a, b)) == std::vector<int64_t>{1, 0, 0});
  CHECK(ints(le(a, b)) == std::vector<int64_t>{1, 1, 0});
  CHECK(ints(gt(a, b)) == std::vector<int64_t>{0, 0, 1});
  CHECK(ints(ge(a, b)) == std::vector<int64_t>{0, 1, 1});
  CHECK_FALSE(gt(a, b).requires_grad());
  CHECK_FALSE(a.ge(b).grad_fn());

  // [3, 1] vs [4] -> [3, 4]
  const Tensor col = tensor({0, 1, 2}, {3, 1}, kInt64);
  const Tensor row = tensor({0, 1, 2, 3}, {4}, kInt64);
  const Tensor m = lt(col, row);
  CHECK(m.shape() == Shape{3, 4});
  CHECK(ints(m) == std::vector<int64_t>{0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1});

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor n = tensor({nan}, kFloat64);
  CHECK(ints(eq(n, n)) == std::vector<int64_t>{0});
  CHECK(ints(ne(n, n)) == std::vector<int64_t>{1});

  CHECK_THROWS_WITH(lt(a, tensor({1, 2}, kFloat64)), Contains("lt") && Contains("broadcast"));
}

TEST_CASE("where and masked_fill: values and gradients", "[where]") {
  const Tensor cond = tensor({1, 0, 1}, {3}, kFloat64).to(kBool);
  Tensor a = tensor({1, 2, 3}, kFloat64).requires_grad_(true);
  Tensor b = scalar_tensor(10.0, kFloat64).requires_grad_(true);
  const Tensor out = where(cond, a, b);
  CHECK(out.shape() == Shape{3});
  CHECK(vals(out) == std::vector<double>{1, 10, 3});
  CHECK(out.grad_fn()->name() == "WhereBackward");
  (out * tensor({1, 2, 3}, kFloat64)).sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{1, 0, 3});
  CHECK(b.grad().dim() == 0);
  CHECK(b.grad().item() == 2.0);  // b was broadcast; it was picked once, with weight 2

  // cond [2, 1] x a [3] -> [2, 3]
  const Tensor c2 = tensor({1, 0}, {2, 1}, kFloat64).to(kBool);
  const Tensor o2 = where(c2, tensor({1, 2, 3}, kFloat32), zeros({2, 3}));
  CHECK(o2.shape() == Shape{2, 3});
  CHECK(vals(o2) == std::vector<double>{1, 2, 3, 0, 0, 0});

  Tensor x = tensor({1, 2, 3, 4}, {2, 2}, kFloat64).requires_grad_(true);
  const Tensor mask = tensor({0, 1}, {2}, kFloat64).to(kBool);
  const Tensor f = masked_fill(x, mask, -7.0);
  CHECK(vals(f) == std::vector<double>{1, -7, 3, -7});
  f.sum().backward();
  CHECK(vals(x.grad()) == std::vector<double>{1, 0, 1, 0});
  const Tensor mask_row = tensor({0, 1}, {2, 1}, kFloat64).to(kBool).t();  // [1, 2], strided
  CHECK(vals(x.detach().masked_fill(mask_row, 0.0)) == std::vector<double>{1, 0, 3, 0});

  CHECK_THROWS_WITH(where(tensor({1.0}), a, a), Contains("where: the condition must be a bool"));
  CHECK_THROWS_WITH(masked_fill(x, tensor({1.0, 0.0}), 1.0),
                    Contains("masked_fill: the mask must be a bool"));
  // A mask with more dims broadcasts the output, as PyTorch's out-of-place masked_fill does.
  CHECK(masked_fill(x, tensor({1, 0, 1, 0, 1, 0}, {3, 1, 2}).to(kBool), 1.0).shape() ==
        Shape{3, 2, 2});
  CHECK_THROWS_WITH(masked_fill(x.to(kUInt8), mask, 300), Contains("masked_fill") &&
                                                             Contains("300") && Contains("uint8"));
}
