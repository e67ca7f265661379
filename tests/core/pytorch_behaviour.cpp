// Behaviour classes where ember once differed from PyTorch 1.13 (issue 27), each pinned to
// PyTorch's answer: gradient routing at ties, dtype rules at the edges of autograd, 0-d and
// empty tensors in indexing and cat, clone()'s layout, and which in-place changes the backward
// refuses. The expected values were read off PyTorch 1.13 (CPU).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/ember.h"
#include "cuda_test_util.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
TensorOptions f64_grad() { return TensorOptions(kFloat64).requires_grad(); }
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Runs `use` (the forward of one op on `in`), changes `changed` in place without recording,
// then runs the backward: true when the backward refused with the in-place message.
template <typename Use>
bool backward_refuses_after_inplace(Use use, Tensor changed) {
  const Tensor out = use();
  {
    NoGradGuard no_grad;
    changed.add_(Scalar(0));  // same values, a new version
  }
  try {
    sum(out.to(kFloat64)).backward();
  } catch (const AutogradError& e) {
    CHECK_THAT(e.what(), Contains("modified by an in-place operation"));
    return true;
  }
  return false;
}
}  // namespace

// ---- a. whole-tensor max()/min() at ties --------------------------------------------------

TEST_CASE("behaviour: max()/min() of a whole tensor share the gradient among ties",
          "[behaviour][reduce]") {
  Tensor a = tensor({1, 3, 3, 2}, {2, 2}, kFloat64).requires_grad_(true);
  max(a).backward();
  CHECK(vals(a.grad()) == std::vector<double>{0, 0.5, 0.5, 0});

  Tensor b = tensor({1, 3, 1, 1}, kFloat64).requires_grad_(true);
  (min(b) * 6.0).backward();
  CHECK(vals(b.grad()) == std::vector<double>{2, 0, 2, 2});

  // A NaN is the max: the NaNs share the gradient (PyTorch 1.13: [0, 0, 0, .5, .5, 0]).
  Tensor c = tensor({1, 3, 3, kNaN, kNaN, 0}, kFloat64).requires_grad_(true);
  max(c).backward();
  CHECK(vals(c.grad()) == std::vector<double>{0, 0, 0, 0.5, 0.5, 0});

  // With a dim the indices decide: the first of the tie takes it all, as in PyTorch.
  Tensor d = tensor({3, 3, 1}, kFloat64).requires_grad_(true);
  max(d, 0).values.backward();
  CHECK(vals(d.grad()) == std::vector<double>{1, 0, 0});

  // The shared gradient is made of ops: a second derivative exists (and is zero).
  Tensor e = tensor({2, 2, 1}, kFloat64).requires_grad_(true);
  const Tensor ge = autograd::grad({max(e)}, {e}, {}, false, /*create_graph=*/true)[0];
  CHECK(vals(ge) == std::vector<double>{0.5, 0.5, 0});
}

TEST_CASE("behaviour: max()/min() ties on CUDA match the CPU", "[behaviour][reduce][cuda]") {
  if (test::skip_without_gpu()) return;
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor host = tensor({4, 1, 4, 4, -2, 0, -2}, dt);
    for (bool is_max : {true, false}) {
      Tensor x = host.detach().requires_grad_(true);
      Tensor xc = host.to(test::kCuda0).requires_grad_(true);
      (is_max ? max(x) : min(x)).backward();
      (is_max ? max(xc) : min(xc)).backward();
      CHECK(vals(xc.grad().cpu()) == vals(x.grad()));
    }
  }
}

// ---- b. dtype rules at the edges of autograd ------------------------------------------------

TEST_CASE("behaviour: backward(gradient) converts a gradient of another dtype",
          "[behaviour][autograd]") {
  Tensor x = tensor({1.0, 2.0, 3.0}, TensorOptions(kFloat32).requires_grad());
  const Tensor y = x * 2.0;
  y.backward(tensor({1.0, 0.5, 2.0}, kFloat64), /*retain_graph=*/true);
  CHECK(x.grad().dtype() == kFloat32);
  CHECK(vals(x.grad()) == std::vector<double>{2.0, 1.0, 4.0});
  // PyTorch 1.13 takes integers and bool too, converted the same way.
  x.zero_grad();
  y.backward(tensor({1, 2, 3}, kInt64), true);
  CHECK(vals(x.grad()) == std::vector<double>{2.0, 4.0, 6.0});
  // The shape must still match.
  CHECK_THROWS_WITH(y.backward(tensor({1.0}, kFloat32), true), Contains("shape"));
}

TEST_CASE("behaviour: set_grad refuses another dtype or shape", "[behaviour][autograd]") {
  Tensor x = tensor({1.0, 2.0, 3.0}, TensorOptions(kFloat32).requires_grad());
  CHECK_THROWS_WITH(x.set_grad(zeros({3}, kFloat64)),
                    Contains("float64") && Contains("float32") && Contains(".to("));
  CHECK_THROWS_WITH(x.set_grad(zeros({4}, kFloat32)), Contains("shape"));
  CHECK_FALSE(x.grad().defined());  // nothing was assigned
  x.set_grad(zeros({3}, kFloat32));
  (x * 2.0).sum().backward();
  CHECK(x.grad().dtype() == kFloat32);
  CHECK(vals(x.grad()) == std::vector<double>{2.0, 2.0, 2.0});
}

// ---- c. 0-d tensors in index_select and gather ----------------------------------------------

TEST_CASE("behaviour: index_select and gather take 0-d tensors as PyTorch does",
          "[behaviour][index]") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {3, 2}, kFloat64).requires_grad_(true);
  const Tensor row = index_select(a, 0, scalar_tensor(2, kInt64));  // a 0-d index: [1, 2]
  CHECK(row.shape() == Shape{1, 2});
  CHECK(vals(row) == std::vector<double>{5, 6});
  row.sum().backward();
  CHECK(vals(a.grad()) == std::vector<double>{0, 0, 0, 0, 1, 1});

  Tensor s = scalar_tensor(5.0, kFloat64).requires_grad_(true);
  const Tensor picked = index_select(s, 0, scalar_tensor(0, kInt64));
  CHECK(picked.dim() == 0);
  CHECK(picked.item() == 5.0);
  CHECK(index_select(s, -1, tensor({0}, kInt64)).dim() == 0);
  (picked * 3.0).backward();
  CHECK(s.grad().item() == 3.0);
  CHECK_THROWS_WITH(index_select(s, 0, scalar_tensor(1, kInt64)), Contains("out of range"));
  CHECK_THROWS_WITH(index_select(s, 0, tensor({0, 0}, kInt64)), Contains("exactly one"));
  CHECK_THROWS(index_select(s, 1, scalar_tensor(0, kInt64)));

  // gather: a 0-d tensor counts as one dim of size 1.
  Tensor v = tensor({7, 8, 9}, kFloat64).requires_grad_(true);
  const Tensor g0 = gather(v, 0, scalar_tensor(2, kInt64));
  CHECK(g0.dim() == 0);
  CHECK(g0.item() == 9.0);
  g0.backward();
  CHECK(vals(v.grad()) == std::vector<double>{0, 0, 1});
  Tensor s2 = scalar_tensor(4.0, kFloat64).requires_grad_(true);
  const Tensor twice = gather(s2, 0, tensor({0, 0}, kInt64));
  CHECK(twice.shape() == Shape{2});
  twice.sum().backward();
  CHECK(s2.grad().item() == 2.0);
  CHECK(gather(s2, 0, scalar_tensor(0, kInt64)).dim() == 0);
  // A 2-d tensor with a 0-d index is still a rank mismatch (PyTorch refuses it too).
  CHECK_THROWS_WITH(gather(a, 0, scalar_tensor(0, kInt64)), Contains("dims"));
}

// ---- d. cat skips the legacy empty tensor ---------------------------------------------------

TEST_CASE("behaviour: cat skips a legacy [0] tensor among N-d tensors", "[behaviour][cat]") {
  Tensor a = ones({2, 3}, f64_grad());
  Tensor e = empty({0}, f64_grad());
  Tensor b = full({1, 3}, 2.0, f64_grad());
  const Tensor out = cat({a, e, b});
  CHECK(out.shape() == Shape{3, 3});
  CHECK(vals(out) == std::vector<double>{1, 1, 1, 1, 1, 1, 2, 2, 2});
  CHECK(cat({e, a}, 1).shape() == Shape{2, 3});
  CHECK(cat({e, e}).shape() == Shape{0});
  // The skipped tensor still takes part in the result dtype, as in PyTorch.
  CHECK(cat({ones({2, 3}, kFloat32), empty({0}, kFloat64)}).dtype() == kFloat64);
  // dim is checked against the tensors that are joined.
  CHECK_THROWS(cat({e, a}, 2));
  // Gradients: the [0] tensor gets an empty one.
  (out * 3.0).sum().backward();
  CHECK(e.grad().shape() == Shape{0});
  CHECK(vals(b.grad()) == std::vector<double>{3, 3, 3});
  // A [0, 3] tensor is not the legacy case: it joins as usual, and a mismatch is still refused.
  CHECK(cat({a.detach(), empty({0, 3}, kFloat64)}).shape() == Shape{2, 3});
  CHECK_THROWS_WITH(cat({a.detach(), empty({0, 2}, kFloat64)}), Contains("sizes must match"));
}

// ---- e. clone() keeps strides ---------------------------------------------------------------

TEST_CASE("behaviour: clone keeps a dense layout, as preserve_format", "[behaviour][layout]") {
  const Tensor t = arange(12, kFloat64).reshape({3, 4}).t();  // [4, 3], strides [1, 4]
  const Tensor c = t.clone();
  CHECK(c.strides() == Shape{1, 4});
  CHECK_FALSE(c.is_contiguous());
  CHECK(vals(c) == vals(t));
  CHECK(c.storage() != t.storage());
  CHECK_THROWS(c.view({12}));  // PyTorch refuses this view too
  CHECK(vals(c.contiguous().view({12})) == vals(t.reshape({12})));
  // A permute keeps its order; a stepped slice (not dense) and an expand clone to row-major.
  const Tensor p = arange(24, kFloat64).reshape({2, 3, 4}).permute({2, 0, 1});
  CHECK(p.clone().strides() == Shape{1, 12, 4});
  CHECK(arange(12, kFloat64).reshape({3, 4}).slice(1, 0, 4, 2).clone().strides() == Shape{2, 1});
  CHECK(ones({3, 1}, kFloat64).expand({3, 4}).clone().strides() == Shape{4, 1});
  // Leaf gradients stay row-major whatever the incoming gradient's layout (here a transpose).
  Tensor w = ones({3, 4}, f64_grad());
  (w.t() * arange(12, kFloat64).reshape({4, 3})).sum().backward();
  CHECK(w.grad().is_contiguous());
  CHECK(vals(w.grad()) == vals(arange(12, kFloat64).reshape({4, 3}).t().contiguous()));
}

// ---- f. saved-tensor version checks, both ways ----------------------------------------------

TEST_CASE("behaviour: backward refuses exactly the in-place changes PyTorch refuses",
          "[behaviour][autograd]") {
  auto leaf = [](const Shape& shape, bool transposed = false) {
    manual_seed(3);
    Tensor t = transposed ? randn({shape[1], shape[0]}, kFloat64).t() : randn(shape, kFloat64);
    return t.requires_grad_(true);
  };
  const Tensor target = tensor({0, 1, 2, 3}, kInt64);
  SECTION("cross_entropy: logits may change (PyTorch saves its own log-softmax)") {
    for (bool transposed : {false, true}) {
      Tensor x = leaf({4, 5}, transposed);
      CHECK_FALSE(backward_refuses_after_inplace([&] { return cross_entropy(x, target); }, x));
      Tensor y = leaf({4, 5}, transposed);
      CHECK_FALSE(backward_refuses_after_inplace(
          [&] { return cross_entropy(y, target, Tensor(), Reduction::Mean, -100, 0.1); }, y));
    }
  }
  SECTION("cross_entropy: target and weight may not") {
    Tensor x = leaf({4, 5});
    Tensor t = target.clone();
    CHECK(backward_refuses_after_inplace([&] { return cross_entropy(x, t); }, t));
    Tensor strided_t = tensor({0, 9, 1, 9, 2, 9, 3, 9}, kInt64).slice(0, 0, 8, 2);
    CHECK(backward_refuses_after_inplace([&] { return cross_entropy(x, strided_t); }, strided_t));
    Tensor w = ones({5}, kFloat64);
    CHECK(backward_refuses_after_inplace([&] { return cross_entropy(x, target, w); }, w));
    Tensor probs = full({4, 5}, 0.2, kFloat64);
    CHECK(backward_refuses_after_inplace([&] { return cross_entropy(x, probs); }, probs));
  }
  SECTION("ops that save their input refuse; ops that save only their output do not") {
    Tensor a = leaf({4, 5});
    CHECK(backward_refuses_after_inplace([&] { return a.abs(); }, a));
    CHECK(backward_refuses_after_inplace([&] { return max(a); }, a));
    CHECK(backward_refuses_after_inplace([&] { return amax(a, {1}); }, a));
    CHECK(backward_refuses_after_inplace([&] { return prod(a, 1); }, a));
    CHECK(backward_refuses_after_inplace([&] { return a.prod(); }, a));
    Tensor at = leaf({4, 5}, true);
    CHECK(backward_refuses_after_inplace([&] { return prod(at, 0); }, at));
    CHECK(backward_refuses_after_inplace([&] { return gather(a, 1, zeros({4, 2}, kInt64)); }, a));
    CHECK_FALSE(backward_refuses_after_inplace([&] { return max(a, 1).values; }, a));
    CHECK_FALSE(backward_refuses_after_inplace([&] { return softmax(a, 1); }, a));
    CHECK_FALSE(backward_refuses_after_inplace([&] { return log_softmax(a, 1); }, a));
    CHECK_FALSE(backward_refuses_after_inplace(
        [&] {
          return index_select(a, 0, tensor({1, 2}, kInt64));
        },
        a));
    CHECK_FALSE(backward_refuses_after_inplace([&] { return cumsum(a, 1); }, a));
  }
  SECTION("an index saved as a copy is still checked as the caller's tensor") {
    Tensor a = leaf({4, 5});
    Tensor ix = tensor({1, 9, 2, 9}, kInt64).slice(0, 0, 4, 2);  // not contiguous: copied
    CHECK(backward_refuses_after_inplace([&] { return index_select(a, 0, ix); }, ix));
    Tensor gi = zeros({2, 4}, kInt64).t();
    CHECK(backward_refuses_after_inplace([&] { return gather(a, 1, gi); }, gi));
  }
}
