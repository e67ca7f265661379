// The tape: gradients, accumulation, graph lifetime, error messages, memory.
#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
TensorOptions f64_grad() { return TensorOptions(kFloat64).requires_grad(); }
}  // namespace

TEST_CASE("autograd: gradients of a small expression", "[autograd]") {
  Tensor x = tensor({1.0, 2.0, 3.0}, f64_grad());
  Tensor w = tensor({0.5, -1.0, 2.0}, f64_grad());
  Tensor b = tensor({0.25}, f64_grad());
  Tensor y = (x * w + b).sum();  // dy/dx = w, dy/dw = x, dy/db = 3 (broadcast over 3 elements)
  CHECK(y.item() == Approx(0.5 - 2.0 + 6.0 + 0.75));
  CHECK(y.grad_fn()->name() == "SumBackward");
  y.backward();
  CHECK(vals(x.grad()) == std::vector<double>{0.5, -1.0, 2.0});
  CHECK(vals(w.grad()) == std::vector<double>{1.0, 2.0, 3.0});
  CHECK(vals(b.grad()) == std::vector<double>{3.0});
}

TEST_CASE("autograd: a tensor used twice gets both contributions", "[autograd]") {
  Tensor x = tensor({3.0}, f64_grad());
  Tensor y = x * x + x.exp() * x;  // dy/dx = 2x + e^x + x e^x
  y.backward();
  const double e3 = std::exp(3.0);
  CHECK(x.grad().item() == Approx(6.0 + e3 + 3.0 * e3));
}

TEST_CASE("autograd: gradients accumulate until zero_grad", "[autograd]") {
  Tensor x = tensor({2.0}, f64_grad());
  (x * 3.0).sum().backward();
  (x * 4.0).sum().backward();
  CHECK(x.grad().item() == Approx(7.0));
  x.zero_grad(/*set_to_none=*/false);
  CHECK(x.grad().defined());
  CHECK(x.grad().item() == 0.0);
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  (x * 5.0).sum().backward();
  CHECK(x.grad().item() == Approx(5.0));
}

TEST_CASE("autograd: the graph is freed after backward unless retain_graph", "[autograd]") {
  Tensor x = tensor({1.5}, f64_grad());
  Tensor y = (x.exp() * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  const double g1 = x.grad().item();
  y.backward();  // graph kept by the first call: works, and accumulates
  CHECK(x.grad().item() == Approx(2 * g1));
  try {
    y.backward();
    FAIL("a second backward through a freed graph must throw");
  } catch (const AutogradError& e) {
    CHECK_THAT(e.what(), Contains("second time") && Contains("retain_graph"));
  }
}

TEST_CASE("autograd: backward of a non-scalar needs an explicit gradient", "[autograd]") {
  Tensor x = tensor({1.0, 2.0}, f64_grad());
  Tensor y = x * 2.0;
  try {
    y.backward();
    FAIL("expected an error");
  } catch (const AutogradError& e) {
    CHECK_THAT(e.what(), Contains("[2]") && Contains("gradient"));
  }
  y.backward(tensor({1.0, 10.0}, kFloat64));
  CHECK(vals(x.grad()) == std::vector<double>{2.0, 20.0});
  Tensor z = x * 3.0;
  CHECK_THROWS_AS(z.backward(tensor({1.0, 2.0, 3.0}, kFloat64)), AutogradError);
}

TEST_CASE("autograd: backward on a tensor that needs no grad is an error", "[autograd]") {
  Tensor x = tensor({1.0, 2.0});
  CHECK_THROWS_WITH(x.sum().backward(), Contains("does not require grad"));
}

TEST_CASE("autograd: in-place change of a saved tensor is detected", "[autograd]") {
  Tensor x = tensor({1.0, 2.0}, f64_grad());
  Tensor c = tensor({3.0, 4.0}, kFloat64);  // needs no grad: in-place is allowed
  Tensor y = (x * c).sum();                 // MulBackward saves c
  c.add_(1.0);
  try {
    y.backward();
    FAIL("expected the version counter to catch the in-place update");
  } catch (const AutogradError& e) {
    CHECK_THAT(e.what(), Contains("MulBackward") && Contains("in-place") && Contains("version 0") &&
                             Contains("version 1"));
  }

  // An op's own saved output, modified through a view under NoGradGuard.
  Tensor a = tensor({0.5, 1.0}, f64_grad());
  Tensor e = a.exp();
  {
    NoGradGuard ng;
    e.narrow(0, 0, 1).mul_(2.0);
  }
  CHECK_THROWS_WITH(e.sum().backward(), Contains("ExpBackward") && Contains("in-place"));
}

TEST_CASE("autograd: in-place ops on tensors that require grad need NoGradGuard", "[autograd]") {
  Tensor w = tensor({1.0, 2.0}, f64_grad());
  CHECK_THROWS_WITH(w.add_(1.0), Contains("add_") && Contains("NoGradGuard"));
  {
    NoGradGuard ng;
    w.sub_(tensor({0.5, 0.5}, kFloat64), 2.0);  // an SGD-style update
  }
  CHECK(vals(w) == std::vector<double>{0.0, 1.0});
  CHECK(w.requires_grad());
  CHECK(w.is_leaf());
}

TEST_CASE("autograd: NoGradGuard records nothing and restores the mode", "[autograd]") {
  Tensor x = tensor({1.0}, f64_grad());
  CHECK(is_grad_enabled());
  {
    NoGradGuard ng;
    CHECK_FALSE(is_grad_enabled());
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
    CHECK_FALSE(y.grad_fn());
    {
      EnableGradGuard eg;
      CHECK((x * 2.0).requires_grad());
    }
    CHECK_FALSE(is_grad_enabled());
  }
  CHECK(is_grad_enabled());
}

TEST_CASE("autograd: detach cuts the graph but shares the data", "[autograd]") {
  Tensor x = tensor({1.0, 2.0}, f64_grad());
  Tensor d = (x * 2.0).detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  Tensor y = (x * d).sum();  // d is a constant here
  y.backward();
  CHECK(vals(x.grad()) == std::vector<double>{2.0, 4.0});
  Tensor e = x.detach();
  CHECK(e.storage() == x.storage());
}

TEST_CASE("autograd: retain_grad keeps the gradient of an intermediate", "[autograd]") {
  Tensor x = tensor({1.0, -2.0}, f64_grad());
  Tensor h = x * 3.0;
  h.retain_grad();
  Tensor y = (h * h).sum();
  y.backward();
  CHECK(vals(h.grad()) == std::vector<double>{6.0, -12.0});
  CHECK(vals(x.grad()) == std::vector<double>{18.0, -36.0});
}

TEST_CASE("autograd: requires_grad only on float leaves", "[autograd]") {
  Tensor i = tensor({1.0, 2.0}, kInt64);
  CHECK_THROWS_WITH(i.requires_grad_(), Contains("float"));
  Tensor x = tensor({1.0}, f64_grad());
  Tensor y = x * 2.0;
  CHECK_THROWS_WITH(y.requires_grad_(false), Contains("detach"));
}

TEST_CASE("autograd: a 100k-op chain runs backward and is destroyed without recursion", "[autograd]") {
  Tensor x = tensor({0.0}, f64_grad());
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + 1.0;
  CHECK(y.item() == Approx(100000.0));
  y.backward();
  CHECK(x.grad().item() == Approx(1.0));
  // and a chain that is never backwarded, freed by dropping the last tensor
  Tensor z = x;
  for (int i = 0; i < 100000; ++i) z = z * 1.0;
  CHECK(autograd::Node::live_count() >= 100000);
  y = Tensor();
  z = Tensor();
  CHECK(autograd::Node::live_count() == 0);
}

TEST_CASE("autograd: repeated forward/backward does not grow memory", "[autograd][memory]") {
  manual_seed(0);
  Tensor w1 = (randn({8, 16}) * 0.1).detach().requires_grad_();
  Tensor w2 = (randn({16, 4}) * 0.1).detach().requires_grad_();
  Tensor x = randn({32, 8});
  auto step = [&] {
    Tensor h = (x.matmul(w1)).relu();
    Tensor loss = (h.matmul(w2)).pow(2.0).mean();
    loss.backward();
    NoGradGuard ng;
    w1.sub_(w1.grad(), 0.01);
    w2.sub_(w2.grad(), 0.01);
    w1.zero_grad();
    w2.zero_grad();
  };
  step();
  const int64_t storages = Storage::live_count();
  const int64_t bytes = Storage::live_bytes();
  const int64_t impls = TensorImpl::live_count();
  const int64_t nodes = autograd::Node::live_count();
  for (int i = 0; i < 200; ++i) step();
  CHECK(Storage::live_count() == storages);
  CHECK(Storage::live_bytes() == bytes);
  CHECK(TensorImpl::live_count() == impls);
  CHECK(autograd::Node::live_count() == nodes);
  CHECK(nodes == 0);
}

TEST_CASE("gradcheck: passes a correct gradient and reports a wrong one", "[autograd][gradcheck]") {
  manual_seed(3);
  std::vector<Tensor> in = {randn({3, 4}, f64_grad()), randn({4}, f64_grad())};
  auto f = [](const std::vector<Tensor>& x) { return (x[0] * x[1]).tanh(); };
  CHECK(gradcheck(f, in));
  // x * x.detach() has value x^2 but autograd sees the detached copy as a constant, so its
  // gradient is x where finite differences measure 2x.
  auto wrong = [](const std::vector<Tensor>& x) { return x[0] * x[0].detach(); };
  GradcheckOptions quiet;
  quiet.raise = false;
  CHECK_FALSE(gradcheck(wrong, {in[1]}, quiet));
  CHECK_THROWS_WITH(gradcheck(wrong, {in[1]}), Contains("mismatch") && Contains("analytical"));
  std::vector<Tensor> f32 = {randn({2}, TensorOptions(kFloat32).requires_grad())};
  CHECK_THROWS_WITH(gradcheck(f, {f32[0], f32[0]}), Contains("float64"));
}
