// Higher-order gradients, op by op: the registry's twice_differentiable_ops() (core/registry.h)
// are held to gradgradcheck (core/gradcheck.h) on every case of the op case table
// (tests/cases/*.cpp), and the not-yet ops to a clear error under create_graph.
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "op_cases.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
// Cases placed on purpose at a kink of the first derivative (ties of max/min/amax: the gradient
// is split by a rule, and jumps there): its finite differences are not a second derivative.
bool at_a_kink(const test::OpCase& c) { return c.label.find("ties") != std::string::npos; }

bool listed(const std::vector<std::string>& list, const std::string& op) {
  for (const std::string& name : list)
    if (name == op) return true;
  return false;
}
}  // namespace

TEST_CASE("gradgrad: every differentiable op is in exactly one of the two lists",
          "[gradgrad][registry]") {
  for (const OpInfo& op : op_registry()) {
    const bool yes = listed(twice_differentiable_ops(), op.name);
    const bool not_yet = listed(not_yet_twice_differentiable_ops(), op.name);
    INFO("op '" << op.name
                << "': add it to twice_differentiable_ops() (and give it a gradgradcheck "
                   "case) or to not_yet_twice_differentiable_ops(), in core/registry.cpp");
    if (op.differentiable) CHECK(yes != not_yet);
    else CHECK((!yes && !not_yet));
  }
  // ... and both lists name registered ops only.
  for (const auto* list : {&twice_differentiable_ops(), &not_yet_twice_differentiable_ops()}) {
    for (const std::string& name : *list) {
      INFO("'" << name << "' is listed but not registered");
      CHECK(find_op(name) != nullptr);
    }
  }
}

TEST_CASE("gradgrad: every op that claims it passes gradgradcheck on all its cases", "[gradgrad]") {
  std::set<std::string> checked_ops;
  for (const test::OpCase& c : test::op_cases()) {
    if (!c.differentiable || !twice_differentiable(c.op) || at_a_kink(c)) continue;
    DYNAMIC_SECTION(c.op << ": " << c.label) {
      const std::vector<Tensor> inputs = c.inputs();
      GradcheckOptions o;
      o.atol = c.atol;
      o.rtol = c.rtol;
      INFO("op " << c.op << ", case " << c.label);
      CHECK_NOTHROW(gradgradcheck(c.fn, inputs, o));
    }
    checked_ops.insert(c.op);
  }
  // A claim without a case is a claim nobody checks.
  for (const std::string& op : twice_differentiable_ops()) {
    INFO("op '" << op << "' claims to be twice differentiable but has no differentiable case");
    CHECK(checked_ops.count(op) == 1);
  }
}

TEST_CASE("gradgrad: under create_graph every claimed op's gradient is its ordinary one",
          "[gradgrad]") {
  // gradgradcheck differentiates the recorded gradient, but a recorded formula that computes
  // the wrong first derivative consistently would pass it: so the first derivative itself must
  // match the ordinary (kernel) backward, case by case.
  for (const test::OpCase& c : test::op_cases()) {
    if (!c.differentiable || !twice_differentiable(c.op)) continue;
    INFO("op " << c.op << ", case " << c.label);
    const std::vector<Tensor> inputs = c.inputs();
    std::vector<Tensor> wrt;
    for (const Tensor& x : inputs)
      if (x.defined() && x.requires_grad()) wrt.push_back(x);
    const Tensor y = c.fn(inputs);
    std::vector<double> values(static_cast<size_t>(y.numel()));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = std::sin(1.0 + 0.7 * static_cast<double>(i));
    const Tensor v = from_vector<double>(values, y.shape(), TensorOptions(kFloat64)).to(y.dtype());
    const auto plain = autograd::grad({y}, wrt, {v}, /*retain_graph=*/true, false, true);
    const auto recorded = autograd::grad({y}, wrt, {v}, true, /*create_graph=*/true, true);
    for (size_t i = 0; i < wrt.size(); ++i) {
      REQUIRE(plain[i].defined() == recorded[i].defined());
      if (!plain[i].defined()) continue;
      const std::vector<double> a = plain[i].to(kFloat64).to_vector<double>();
      const std::vector<double> b = recorded[i].to(kFloat64).to_vector<double>();
      REQUIRE(a.size() == b.size());
      for (size_t k = 0; k < a.size(); ++k) CHECK(b[k] == Approx(a[k]).epsilon(1e-9).margin(1e-12));
    }
  }
}

TEST_CASE("gradgrad: conv2d and the pools differentiate a third time", "[gradgrad]") {
  // Their recorded backwards are ops whose own backward is recorded again, so the gradient of
  // sum(y^3) can go through gradgradcheck: a third derivative against finite differences.
  const TensorOptions f64 = TensorOptions(kFloat64).requires_grad();
  auto cubed_gradient = [](const std::function<Tensor(const std::vector<Tensor>&)>& f) {
    return [f](const std::vector<Tensor>& in) {
      EnableGradGuard grad_on;  // also when gradcheck evaluates it for finite differences
      const Tensor y = f(in);
      const Tensor loss = sum(mul(mul(y, y), y));
      std::vector<Tensor> flat;
      for (const Tensor& g : autograd::grad({loss}, in, {}, true, /*create_graph=*/true))
        flat.push_back(reshape(g, {-1}));
      return cat(flat, 0);
    };
  };
  SECTION("conv2d, stride 2, padding 1, dilation (1, 2), groups 2") {
    Conv2dOptions o;
    o.stride = {2, 2};
    o.padding = {1, 1};
    o.dilation = {1, 2};
    o.groups = 2;
    const std::vector<Tensor> in{randn({1, 4, 5, 6}, f64), randn({2, 2, 2, 2}, f64)};
    CHECK_NOTHROW(gradgradcheck(
        cubed_gradient([o](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], {}, o); }),
        in));
  }
  SECTION("avg_pool2d and max_pool2d, k3 s2 pad 1") {
    Pool2dOptions o;
    o.kernel_size = {3, 3};
    o.stride = {2, 2};
    o.padding = {1, 1};
    const std::vector<Tensor> in{randn({1, 2, 5, 5}, f64)};
    CHECK_NOTHROW(gradgradcheck(
        cubed_gradient([o](const std::vector<Tensor>& t) { return avg_pool2d(t[0], o); }), in));
    CHECK_NOTHROW(gradgradcheck(
        cubed_gradient([o](const std::vector<Tensor>& t) { return max_pool2d(t[0], o); }), in));
  }
}

TEST_CASE("gradgrad: the not-yet ops refuse create_graph with an error naming the op",
          "[gradgrad]") {
  // Every differentiable case of each not-yet op, with create_graph and a grad_output that
  // requires grad: the backward either throws an AutogradError naming the op, or (when what it
  // computes does not depend on anything that requires grad, e.g. scatter_add without padding)
  // returns a gradient. At least one case of each op must throw: no op is listed for nothing.
  std::map<std::string, int> threw;
  for (const test::OpCase& c : test::op_cases()) {
    if (!c.differentiable || !listed(not_yet_twice_differentiable_ops(), c.op)) continue;
    threw.emplace(c.op, 0);
    INFO("op " << c.op << ", case " << c.label);  // no section: the counts span all cases
    const std::vector<Tensor> inputs = c.inputs();
    std::vector<Tensor> wrt;
    for (const Tensor& x : inputs)
      if (x.defined() && x.requires_grad()) wrt.push_back(x);
    const Tensor y = c.fn(inputs);
    // A grad_output that requires grad: the first-order gradient then depends on it.
    const Tensor v = ones_like(y).requires_grad_(true);
    try {
      autograd::grad({y}, wrt, {v}, false, /*create_graph=*/true, /*allow_unused=*/true);
    } catch (const AutogradError& e) {
      ++threw[c.op];
      INFO(e.what());
      CHECK_THAT(e.what(), Contains("'s backward is not differentiable twice in ember yet"));
    }
  }
  for (const auto& [op, count] : threw) {
    INFO("op '" << op << "' is listed as not yet twice differentiable, but no case of it throws");
    CHECK(count > 0);
  }
}

TEST_CASE("gradgrad: a kernel-only backward refuses create_graph with an error naming the op",
          "[gradgrad]") {
  // The guard a not-yet op calls first (autograd::check_twice_differentiable): y = x^2 with a
  // backward that computes 2 x g on the host and records nothing.
  struct HostSquareBackward final : autograd::Node {
    autograd::SavedTensor x;
    std::string name() const override { return "HostSquareBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
      autograd::check_twice_differentiable(*this, "host_square", g, {&x});
      const std::vector<double> xv = x.unpack(*this, "self").to_vector<double>();
      const std::vector<double> gv = g.to_vector<double>();
      std::vector<double> out(xv.size());
      for (size_t i = 0; i < out.size(); ++i) out[i] = 2.0 * xv[i] * gv[i];
      return {from_vector<double>(out, input_shapes[0], TensorOptions(kFloat64))};
    }
    void release_saved() override { x.reset(); }
  };
  auto host_square = [](const Tensor& x) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = mul(x, x);
    }
    auto node = std::make_shared<HostSquareBackward>();
    node->x = autograd::SavedTensor(x);
    autograd::connect(node, y, {&x});
    return y;
  };
  const Tensor x =
      from_vector<double>({1.0, -2.0, 3.0}, {3}, TensorOptions(kFloat64)).requires_grad_(true);
  // An ordinary backward works, and gives 2 x.
  CHECK(autograd::grad({sum(host_square(x))}, {x})[0].to_vector<double>() ==
        std::vector<double>{2.0, -4.0, 6.0});
  // Under create_graph its gradient would depend on x, which requires grad: refused by name.
  CHECK_THROWS_WITH(autograd::grad({sum(host_square(x))}, {x}, {}, false, /*create_graph=*/true),
                    Contains("host_square's backward is not differentiable twice in ember yet"));
}

TEST_CASE("gradgrad: cross_entropy's Hessian is softmax's, row by row", "[gradgrad]") {
  // L = mean_r (lse(x_r) - x_r[t_r]) over the rows not ignored: dL/dx_r = (p_r - onehot) / n,
  // and the Hessian-vector product is (p_r * v_r - p_r (p_r . v_r)) / n, with n the rows kept.
  const Tensor x = randn({4, 5}, TensorOptions(kFloat64).requires_grad());
  const Tensor target = from_vector<int64_t>({0, 3, -100, 4}, {4}, TensorOptions(kInt64));
  const Tensor gx = autograd::grad({cross_entropy(x, target)}, {x}, {}, false,
                                   /*create_graph=*/true)[0];
  REQUIRE(gx.requires_grad());  // the gradient depends on x through the softmax
  const Tensor v = randn({4, 5}, TensorOptions(kFloat64));
  const std::vector<double> hv = autograd::grad({sum(mul(gx, v))}, {x})[0].to_vector<double>();
  const std::vector<double> p = softmax(x.detach(), 1).to_vector<double>();
  const std::vector<double> vv = v.to_vector<double>();
  const std::vector<int64_t> t = target.to_vector<int64_t>();
  REQUIRE(hv.size() == 20);
  for (size_t r = 0; r < 4; ++r) {
    double pv = 0.0;
    for (size_t c = 0; c < 5; ++c) pv += p[r * 5 + c] * vv[r * 5 + c];
    for (size_t c = 0; c < 5; ++c) {
      const size_t i = r * 5 + c;
      const double expected = t[r] == -100 ? 0.0 : (p[i] * vv[i] - p[i] * pv) / 3.0;
      CHECK(hv[i] == Approx(expected).margin(1e-12));
    }
  }
}

TEST_CASE("gradgrad: max over a dim puts the second derivative at its indices", "[gradgrad]") {
  // z = sum(max(x, 1)^2): dz/dx = 2 m at each row's maximum, so H v = 2 v at those positions.
  const Tensor x = randn({3, 6}, TensorOptions(kFloat64).requires_grad());
  const ValuesIndices m = max(x, 1);
  const Tensor gx = autograd::grad({sum(mul(m.values, m.values))}, {x}, {}, false, true)[0];
  REQUIRE(gx.requires_grad());
  const Tensor v = randn({3, 6}, TensorOptions(kFloat64));
  const std::vector<double> hv = autograd::grad({sum(mul(gx, v))}, {x})[0].to_vector<double>();
  const std::vector<int64_t> idx = m.indices.to_vector<int64_t>();
  const std::vector<double> vv = v.to_vector<double>();
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 6; ++c) {
      const size_t i = r * 6 + c;
      CHECK(hv[i] == Approx(static_cast<int64_t>(c) == idx[r] ? 2.0 * vv[i] : 0.0).margin(1e-12));
    }
}

TEST_CASE("gradgrad: max_pool2d's second derivative routes through the saved indices",
          "[gradgrad]") {
  // z = sum(max_pool2d(x)^2): dz/dx = 2 m at each window's maximum (summed where overlapping
  // windows pick one pixel twice), so the Hessian-vector product H v = 2 * (each pick of
  // pixel i counts v[i]) again at the picks: scatter(2 * gather(v, idx)).
  Tensor x = randn({1, 2, 5, 5}, TensorOptions(kFloat64).requires_grad());
  Pool2dOptions o;
  o.kernel_size = {3, 3};
  o.stride = {1, 1};  // overlapping windows: one pixel can win several
  const ValuesIndices mi = max_pool2d_with_indices(x, o);
  const Tensor z = sum(mul(mi.values, mi.values));
  const Tensor gx = autograd::grad({z}, {x}, {}, false, /*create_graph=*/true)[0];
  REQUIRE(gx.requires_grad());
  const Tensor v = randn({1, 2, 5, 5}, TensorOptions(kFloat64));
  const std::vector<double> hv = autograd::grad({sum(mul(gx, v))}, {x})[0].to_vector<double>();
  const std::vector<int64_t> idx = mi.indices.to_vector<int64_t>();  // [2 planes, 9 windows]
  const std::vector<double> vv = v.to_vector<double>();
  std::vector<double> expected(50, 0.0);
  for (size_t plane = 0; plane < 2; ++plane)
    for (size_t win = 0; win < 9; ++win) {
      const size_t pixel = plane * 25 + static_cast<size_t>(idx[plane * 9 + win]);
      expected[pixel] += 2.0 * vv[pixel];
    }
  REQUIRE(hv.size() == expected.size());
  for (size_t i = 0; i < hv.size(); ++i) CHECK(hv[i] == Approx(expected[i]).margin(1e-12));
}
