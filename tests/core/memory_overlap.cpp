// In-place writes and shared memory (core/overlap.h), view's stride rule (core/shape.h
// view_strides) and the rank named by insert-dim errors: views share storage, and every op that
// writes through one, or re-reads memory under a new shape, must know what else it touches.
#include <catch2/catch.hpp>

#include "core/ember.h"
#include "core/overlap.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("overlap: writing into a tensor whose elements share memory is refused", "[overlap]") {
  // The example: add_ on an expanded view added 1 twice; copy_ kept the last row.
  const Tensor base = zeros({3});
  Tensor e = base.unsqueeze(0).expand({2, 3});
  CHECK(has_internal_overlap(e));
  CHECK_THROWS_WITH(e.add_(1.0), Contains("add_") && Contains("single memory location") &&
                                     Contains("clone()"));
  CHECK_THROWS_WITH(e.copy_(tensor({1, 2, 3, 4, 5, 6}, {2, 3})),
                    Contains("copy_") && Contains("single memory location"));
  CHECK_THROWS_AS(e.mul_(tensor({1, 2, 3})), ValueError);
  CHECK_THROWS_AS(e.sub_(1), ValueError);
  CHECK_THROWS_AS(e.div_(2), ValueError);
  CHECK(vals(base) == std::vector<double>{0, 0, 0});  // nothing was written
  // Writing one value everywhere is harmless, so fill_ and zero_ may (as in PyTorch).
  e.fill_(2.0);
  CHECK(vals(base) == std::vector<double>{2, 2, 2});
  e.zero_();
  CHECK(vals(base) == std::vector<double>{0, 0, 0});
  // A broadcast operand is fine: only the written tensor must be free of repeats.
  Tensor x = zeros({2, 3});
  x.add_(base.unsqueeze(0).expand({2, 3}) + 1.0);
  CHECK(vals(x) == std::vector<double>{1, 1, 1, 1, 1, 1});
}

TEST_CASE("overlap: an operand that partly overlaps the written tensor is refused", "[overlap]") {
  // x.slice(0, 1, 6).add_(x.slice(0, 0, 5)) made a running sum; x.add_(x.t()) was not symmetric.
  Tensor x = arange(6.0);
  CHECK(overlap(x.slice(0, 1, 6), x.slice(0, 0, 5)) == Overlap::Partial);
  CHECK_THROWS_WITH(x.slice(0, 1, 6).add_(x.slice(0, 0, 5)),
                    Contains("add_") && Contains("same memory") && Contains("clone()"));
  CHECK(vals(x) == std::vector<double>{0, 1, 2, 3, 4, 5});
  Tensor m = arange(9.0).reshape({3, 3});
  CHECK(overlap(m, m.t()) == Overlap::Partial);
  for (const char* op : {"add_", "sub_", "mul_", "div_", "copy_"}) {
    INFO(op);
    const std::string name = op;
    CHECK_THROWS_AS([&] {
      if (name == "add_") m.add_(m.t());
      else if (name == "sub_") m.sub_(m.t());
      else if (name == "mul_") m.mul_(m.t());
      else if (name == "div_") m.div_(m.t());
      else m.copy_(m.t());
    }(), ValueError);
  }
  CHECK(vals(m) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  // The fix the message suggests works:
  x.slice(0, 1, 6).add_(x.slice(0, 0, 5).clone());
  CHECK(vals(x) == std::vector<double>{0, 1, 3, 5, 7, 9});
  m.add_(m.t().clone());
  CHECK(vals(m) == std::vector<double>{0, 4, 8, 4, 8, 12, 8, 12, 16});
}

TEST_CASE("overlap: full overlap works, disjoint views and irregular overlaps compute right", "[overlap]") {
  Tensor x = tensor({1, 2, 3});
  CHECK(overlap(x, x) == Overlap::Full);
  x.add_(x);
  CHECK(vals(x) == std::vector<double>{2, 4, 6});
  x.mul_(x.view({3}));  // another handle, the same elements in the same places
  CHECK(vals(x) == std::vector<double>{4, 16, 36});
  x.copy_(x);
  CHECK(vals(x) == std::vector<double>{4, 16, 36});
  // Interleaved views share no element: nothing to refuse, nothing to copy.
  Tensor y = arange(8.0);
  CHECK(overlap(y.slice(0, 0, 8, 2), y.slice(0, 1, 8, 2)) == Overlap::Unknown);
  y.slice(0, 0, 8, 2).add_(y.slice(0, 1, 8, 2));
  CHECK(vals(y) == std::vector<double>{1, 1, 5, 3, 9, 5, 13, 7});
  // Strided views whose spans cross and that do share elements: computed from a copy of the
  // operand, so the result is that of the out-of-place op (no running sum).
  Tensor z = arange(8.0);
  z.slice(0, 0, 6, 2).add_(z.slice(0, 2, 8, 2));
  CHECK(vals(z) == std::vector<double>{2, 1, 6, 3, 10, 5, 6, 7});
  Tensor w = arange(8.0);
  w.slice(0, 2, 8, 2).add_(w.slice(0, 0, 6, 2));  // the other direction: PyTorch's order would chain
  CHECK(vals(w) == std::vector<double>{0, 1, 2, 3, 6, 5, 10, 7});
  // Different storages never overlap; empty tensors neither.
  CHECK(overlap(zeros({3}), zeros({3})) == Overlap::None);
  CHECK(overlap(x.slice(0, 0, 0), x) == Overlap::None);
  CHECK(is_non_overlapping_and_dense(arange(6.0).reshape({2, 3}).t()));
  CHECK_FALSE(is_non_overlapping_and_dense(arange(6.0).slice(0, 0, 6, 2)));
  CHECK_FALSE(is_non_overlapping_and_dense(arange(3.0).expand({2, 3})));
}

TEST_CASE("view: PyTorch's stride rule, not only contiguous tensors", "[layout][view]") {
  const Tensor m = arange(12.0).reshape({3, 4});
  const Tensor t = m.t();  // [4, 3], strides [1, 4]
  // Splitting a dim of a non-contiguous tensor is a view: the same storage, no copy.
  const Tensor v = t.view({2, 2, 3});
  CHECK(v.storage() == m.storage());
  CHECK(v.strides() == Shape{2, 1, 4});
  CHECK(vals(v) == vals(t.contiguous().view({2, 2, 3})));
  CHECK(t.view({4, 1, 3}).storage() == m.storage());
  // Merging dims that are not one run of memory needs a copy: view refuses, reshape copies.
  CHECK_THROWS_WITH(t.view({12}), Contains("view") && Contains("reshape"));
  CHECK(t.reshape({12}).storage() != m.storage());
  CHECK(vals(t.reshape({12})) == vals(t.contiguous().view({12})));
  // reshape is a view wherever view is.
  CHECK(t.reshape({2, 2, 3}).storage() == m.storage());
  // Dims of a permuted tensor that are contiguous with each other can merge, others cannot.
  const Tensor p = arange(24.0).reshape({2, 3, 4}).permute({0, 2, 1});  // [2, 4, 3] strides [12, 1, 4]
  CHECK_THROWS_AS(p.view({2, 12}), ValueError);
  const Tensor q = arange(24.0).reshape({2, 3, 4}).permute({2, 0, 1});  // [4, 2, 3] strides [1, 12, 4]
  CHECK(q.view({4, 6}).strides() == Shape{1, 4});
  CHECK(vals(q.view({4, 6})) == vals(q.contiguous().view({4, 6})));
  // Every other element is one run with stride 2: it flattens; a slice of each row does not.
  const Tensor s = arange(12.0).reshape({2, 6}).slice(1, 0, 6, 2);  // [2, 3] strides [6, 2]
  CHECK(s.view({6}).strides() == Shape{2});
  CHECK(vals(s.view({6})) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(s.view({2, 3, 1}).storage() == s.storage());
  CHECK_THROWS_AS(arange(12.0).reshape({3, 4}).slice(1, 0, 3).view({9}), ValueError);
  // Expanded tensors: unit dims come and go, repeated elements cannot be flattened.
  const Tensor e = arange(4.0).unsqueeze(0).expand({3, 4});
  CHECK(e.view({3, 1, 4}).strides() == Shape{0, 4, 1});
  CHECK_THROWS_AS(e.view({12}), ValueError);
  // Empty and 0-d tensors.
  CHECK(zeros({0, 3}).t().view({3, 0}).shape() == Shape{3, 0});
  CHECK(scalar_tensor(2).view({1, 1}).shape() == Shape{1, 1});
  // Gradients flow back through a strided view.
  const Tensor leaf = arange(6.0).reshape({2, 3}).requires_grad_();
  (leaf.t().view({3, 2, 1}) * tensor({1, 2, 3, 4, 5, 6}, {3, 2, 1})).sum().backward();
  CHECK(vals(leaf.grad()) == std::vector<double>{1, 3, 5, 2, 4, 6});
}

TEST_CASE("unsqueeze and stack: dim errors name the tensor's own rank", "[layout][errors]") {
  // unsqueeze of a 2-d tensor said "out of range for a 3-d tensor".
  CHECK_THROWS_WITH(ones({2, 3}).unsqueeze(5),
                    Contains("unsqueeze: dim 5 out of range for a 2-d tensor") && Contains("-3 to 2"));
  CHECK_THROWS_WITH(ones({2, 3}).unsqueeze(-4), Contains("2-d tensor"));
  CHECK(ones({2, 3}).unsqueeze(-3).shape() == Shape{1, 2, 3});
  CHECK(ones({2, 3}).unsqueeze(2).shape() == Shape{2, 3, 1});
  CHECK_THROWS_WITH(stack({ones({2, 3}), ones({2, 3})}, 4),
                    Contains("stack: dim 4 out of range for a 2-d tensor"));
  CHECK(stack({ones({2, 3}), ones({2, 3})}, -1).shape() == Shape{2, 3, 2});
  CHECK_THROWS_WITH(scalar_tensor(1).unsqueeze(2), Contains("0-d tensor") && Contains("-1 to 0"));
}
