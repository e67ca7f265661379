// Higher-order gradients, op by op: the registry's twice_differentiable_ops() (core/registry.h)
// are held to gradgradcheck (core/gradcheck.h) on every case of the op case table
// (tests/cases/*.cpp), and the not-yet ops to a clear error under create_graph.
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

TEST_CASE("gradgrad: max_pool2d under create_graph names the op", "[gradgrad]") {
  Tensor x = randn({1, 1, 4, 4}, TensorOptions(kFloat64).requires_grad());
  Tensor y = max_pool2d(x).sum();
  Tensor gx = autograd::grad({y}, {x}, {}, false, true)[0];  // grad_output 1: a constant
  CHECK_FALSE(gx.requires_grad());                           // the gradient needs no graph
  Tensor z = (max_pool2d(x) * max_pool2d(x)).sum();          // now it depends on x
  CHECK_THROWS_WITH(autograd::grad({z}, {x}, {}, false, true),
                    Contains("max_pool2d's backward is not differentiable twice in ember yet"));
}
