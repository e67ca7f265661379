// autograd::grad (torch.autograd.grad) and create_graph: gradients returned instead of
// accumulated, their errors, and gradients of gradients — a second derivative, a Hessian-vector
// product checked against finite differences, a gradient penalty trained one step.
#include <cmath>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "optim/sgd.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
TensorOptions f64_grad() { return TensorOptions(kFloat64).requires_grad(); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("grad: returns the gradients and leaves every .grad alone", "[autograd][grad]") {
  Tensor x = tensor({1.0, 2.0, 3.0}, f64_grad());
  Tensor w = tensor({0.5, -1.0, 2.0}, f64_grad());
  Tensor y = (x * w).sum();
  const std::vector<Tensor> g = autograd::grad({y}, {x, w});
  REQUIRE(g.size() == 2);
  CHECK(vals(g[0]) == std::vector<double>{0.5, -1.0, 2.0});
  CHECK(vals(g[1]) == std::vector<double>{1.0, 2.0, 3.0});
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(w.grad().defined());
  CHECK_FALSE(g[0].requires_grad());  // no create_graph: a plain tensor
}

TEST_CASE("grad: a non-leaf input, several outputs, grad_outputs", "[autograd][grad]") {
  Tensor x = tensor({1.0, 2.0}, f64_grad());
  Tensor h = x * 3.0;  // non-leaf
  Tensor a = h * h;    // da/dh = 2h
  Tensor b = h.exp();  // db/dh = e^h
  const Tensor va = tensor({1.0, 0.5}, TensorOptions(kFloat64));
  const Tensor vb = tensor({2.0, 0.0}, TensorOptions(kFloat64));
  const Tensor gh = autograd::grad({a, b}, {h}, {va, vb})[0];
  const auto hv = vals(h);
  CHECK(vals(gh)[0] == Approx(1.0 * 2 * hv[0] + 2.0 * std::exp(hv[0])));
  CHECK(vals(gh)[1] == Approx(0.5 * 2 * hv[1]));
  // the nodes between h and x did not run: x has no .grad, and x can still be asked for
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("grad: PyTorch's errors", "[autograd][grad]") {
  Tensor x = tensor({1.0, 2.0}, f64_grad());
  Tensor unused = tensor({1.0}, f64_grad());
  Tensor c = tensor({1.0, 2.0}, TensorOptions(kFloat64));
  SECTION("an input that does not require grad") {
    CHECK_THROWS_WITH(autograd::grad({(x * 2.0).sum()}, {c}), Contains("does not require grad"));
  }
  SECTION("an unused input, unless allow_unused") {
    Tensor y = (x * 2.0).sum();
    CHECK_THROWS_WITH(autograd::grad({y}, {x, unused}, {}, true),
                      Contains("was not used in the graph") && Contains("allow_unused"));
    const auto g = autograd::grad({y}, {x, unused}, {}, false, false, /*allow_unused=*/true);
    CHECK(g[0].defined());
    CHECK_FALSE(g[1].defined());
  }
  SECTION("a non-scalar output without its grad_output") {
    CHECK_THROWS_WITH(autograd::grad({x * 2.0}, {x}), Contains("one element"));
  }
  SECTION("an output that does not require grad") {
    CHECK_THROWS_WITH(autograd::grad({c.sum()}, {x}), Contains("does not require grad"));
  }
  SECTION("the graph is freed unless retain_graph (or create_graph)") {
    Tensor y = (x * x).sum();
    autograd::grad({y}, {x});
    CHECK_THROWS_WITH(autograd::grad({y}, {x}), Contains("a second time"));
  }
}

TEST_CASE("create_graph: backward() leaves a .grad that can be differentiated again",
          "[autograd][grad]") {
  Tensor x = tensor({2.0, -1.0}, f64_grad());
  Tensor y = (x * x * x).sum();  // dy/dx = 3x^2, d2y/dx2 = 6x
  y.backward(Tensor(), false, /*create_graph=*/true);
  Tensor g = x.grad();
  REQUIRE(g.requires_grad());
  CHECK(vals(g) == std::vector<double>{12.0, 3.0});
  const Tensor g2 = autograd::grad({g.sum()}, {x})[0];
  CHECK(vals(g2) == std::vector<double>{12.0, -6.0});
  // A .grad with a graph and its leaf hold each other (as in PyTorch): reset it, or the two
  // leak (LeakSanitizer reports them).
  x.zero_grad(/*set_to_none=*/true);
}

TEST_CASE("create_graph: third derivative of tanh through grad()", "[autograd][grad]") {
  Tensor x = tensor({0.3}, f64_grad());
  Tensor y = tanh(x).sum();
  Tensor d1 = autograd::grad({y}, {x}, {}, false, true)[0];         // 1 - t^2
  Tensor d2 = autograd::grad({d1.sum()}, {x}, {}, false, true)[0];  // -2 t (1 - t^2)
  Tensor d3 = autograd::grad({d2.sum()}, {x})[0];                   // (6t^2 - 2)(1 - t^2)
  const double t = std::tanh(0.3);
  CHECK(d1.item() == Approx(1 - t * t));
  CHECK(d2.item() == Approx(-2 * t * (1 - t * t)));
  CHECK(d3.item() == Approx((6 * t * t - 2) * (1 - t * t)));
}

TEST_CASE("gradgradcheck: double backward of tanh, exp, mul, matmul, sigmoid, div",
          "[autograd][grad][gradgrad]") {
  manual_seed(7);
  Tensor a = randn({3, 4}, f64_grad()), b = randn({4, 2}, f64_grad());
  Tensor p = (rand({3, 4}, TensorOptions(kFloat64)) + 0.5).requires_grad_(true);
  CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return tanh(x[0]); }, {a}));
  CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return exp(x[0]); }, {a}));
  CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return sigmoid(x[0]); }, {a}));
  CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return x[0] * x[1]; }, {a, p}));
  CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return x[0] / x[1]; }, {a, p}));
  CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); }, {a, b}));
  CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return tanh(matmul(x[0], x[1])).sum(); },
                      {a, b}));
}

TEST_CASE("gradgradcheck: catches a backward that is not differentiated correctly",
          "[autograd][grad][gradgrad]") {
  // x * x * x.detach() has the value x^3 but a tape that forgets the third factor: the gradient
  // it records, 2 x x.detach() v, differentiates to 2 x v where the finite differences of the same
  // gradient give 4 x v. gradgradcheck must see that.
  Tensor a = tensor({0.5, -0.3, 1.2}, f64_grad());
  auto cut = [](const std::vector<Tensor>& x) { return x[0] * x[0] * x[0].detach(); };
  GradcheckOptions o;
  o.raise = false;
  CHECK_FALSE(gradgradcheck(cut, {a}, o));
}

// f(W1, W2) = mean((tanh(x W1) W2 - t)^2): a two-layer net's loss as a function of its weights.
namespace {
Tensor mlp_loss(const Tensor& x, const Tensor& t, const Tensor& w1, const Tensor& w2) {
  return mse_loss(matmul(tanh(matmul(x, w1)), w2), t);
}
}  // namespace

TEST_CASE("create_graph: Hessian-vector product of a small MLP vs finite differences",
          "[autograd][grad]") {
  manual_seed(11);
  const TensorOptions f64(kFloat64);
  const Tensor x = randn({5, 3}, f64), t = randn({5, 2}, f64);
  Tensor w1 = randn({3, 4}, f64_grad()), w2 = randn({4, 2}, f64_grad());
  const Tensor v1 = randn({3, 4}, f64), v2 = randn({4, 2}, f64);

  // Hv = d/dw (g(w) . v), with g = dL/dw recorded by create_graph.
  const Tensor loss = mlp_loss(x, t, w1, w2);
  const auto g = autograd::grad({loss}, {w1, w2}, {}, false, /*create_graph=*/true);
  const Tensor gv = (g[0] * v1).sum() + (g[1] * v2).sum();
  const auto hv = autograd::grad({gv}, {w1, w2});

  // Finite differences of the gradient along v: (g(w + eps v) - g(w - eps v)) / 2 eps.
  const double eps = 1e-5;
  auto grad_at = [&](double s) {
    Tensor a = (w1.detach() + v1 * s).requires_grad_(true);
    Tensor b = (w2.detach() + v2 * s).requires_grad_(true);
    return autograd::grad({mlp_loss(x, t, a, b)}, {a, b});
  };
  const auto plus = grad_at(eps), minus = grad_at(-eps);
  for (int k = 0; k < 2; ++k) {
    const auto num = vals((plus[k] - minus[k]) / (2 * eps));
    const auto ana = vals(hv[k]);
    REQUIRE(num.size() == ana.size());
    for (size_t i = 0; i < num.size(); ++i)
      CHECK(ana[i] == Approx(num[i]).margin(1e-6).epsilon(1e-5));
  }
}

TEST_CASE("create_graph: a gradient penalty ||dL/dx||^2 trained one step", "[autograd][grad]") {
  manual_seed(5);
  const TensorOptions f64(kFloat64);
  Tensor w = randn({3, 2}, f64_grad()), b = zeros({2}, f64_grad());
  const Tensor x0 = randn({4, 3}, f64);
  // objective(w, b) = sum(tanh(x w + b)) + ||d sum(tanh(x w + b)) / dx||^2
  auto objective = [&](const Tensor& wv, const Tensor& bv, bool record) {
    Tensor x = x0.detach().requires_grad_(true);
    Tensor out = tanh(matmul(x, wv) + bv).sum();
    Tensor gx = autograd::grad({out}, {x}, {}, false, /*create_graph=*/record)[0];
    return out + (gx * gx).sum();
  };
  Tensor total = objective(w, b, true);
  total.backward();
  REQUIRE(w.grad().defined());
  REQUIRE(b.grad().defined());

  // The penalty's part of w.grad is a second derivative: check it all by finite differences.
  const double eps = 1e-6;
  const auto gw = vals(w.grad());
  for (int64_t j = 0; j < w.numel(); ++j) {
    Tensor d = zeros({w.numel()}, f64);
    d.data_ptr<double>()[j] = eps;
    d = d.reshape(w.shape());
    const double fp = objective((w.detach() + d).requires_grad_(true), b.detach(), false).item();
    const double fm = objective((w.detach() - d).requires_grad_(true), b.detach(), false).item();
    CHECK(gw[static_cast<size_t>(j)] == Approx((fp - fm) / (2 * eps)).epsilon(1e-5).margin(1e-7));
  }

  // One SGD step lowers the objective.
  const double before = total.item();
  optim::SGDOptions options;
  options.lr = 0.01;
  optim::SGD sgd({w, b}, options);
  sgd.step();
  CHECK(objective(w, b, false).item() < before);
}
