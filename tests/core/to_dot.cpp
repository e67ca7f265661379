// ember::autograd::to_dot: the tape as Graphviz text (core/autograd/to_dot.h).
#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
TensorOptions f64(bool grad) { return TensorOptions(kFloat64).requires_grad(grad); }
}  // namespace

TEST_CASE("to_dot: the graph of tanh(x * w + b), node by node", "[autograd][to_dot]") {
  Tensor x = tensor({1.0, 2.0, 3.0}, f64(false));  // data: no gradient
  Tensor w = tensor({0.5, -1.0, 2.0}, f64(true));
  Tensor b = tensor({0.25}, f64(true));
  Tensor out = tanh(x * w + b);
  const std::string dot = autograd::to_dot(out, {{"w", w}, {"b", b}, {"out", out}});
  INFO(dot);
  CHECK(dot.rfind("digraph tape {\n", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  // Nodes are numbered depth first from the root, inputs in order: tanh, add, mul, w, b.
  CHECK_THAT(dot,
             Contains("  n0 [label=\"TanhBackward\\nsaved: output [3] float64\", style=rounded];"));
  CHECK_THAT(dot, Contains("  n1 [label=\"AddBackward\", style=rounded];"));
  // mul saves only the factor that the other input's gradient needs: x, input 0.
  CHECK_THAT(dot,
             Contains("  n2 [label=\"MulBackward\\nsaved: input 0 [3] float64\", style=rounded];"));
  CHECK_THAT(dot, Contains("  n3 [label=\"w\\n[3] float64\\nrequires_grad\""));
  CHECK_THAT(dot, Contains("  n4 [label=\"b\\n[1] float64\\nrequires_grad\""));
  CHECK_THAT(dot, Contains("  root [label=\"out\\n[3] float64\""));
  // Arrows run forward, labelled with what they carry.
  CHECK_THAT(dot, Contains("  n1 -> n0 [label=\"[3] float64\"];"));
  CHECK_THAT(dot, Contains("  n2 -> n1 [label=\"input 0: [3] float64\"];"));
  CHECK_THAT(dot, Contains("  n4 -> n1 [label=\"input 1: [1] float64\"];"));
  CHECK_THAT(dot, Contains("  n3 -> n2 [label=\"input 1: [3] float64\"];"));
  CHECK_THAT(dot, Contains("  n0 -> root [label=\"[3] float64\"];"));
  // x needs no gradient: a dashed input of its own, no edge of the tape.
  CHECK_THAT(dot, Contains("  n2_in0 [label=\"no grad\", style=dashed];"));
  CHECK_THAT(dot, Contains("  n2_in0 -> n2 [label=\"input 0: [3] float64\", style=dashed];"));
  CHECK(dot.find("n5") == std::string::npos);  // five nodes in all
  CHECK(dot.find("0x") == std::string::npos);  // no addresses: the same text on every run

  // The same graph built again gives the same text; without names, leaves are "leaf".
  Tensor out2 = tanh(x * w + b);
  CHECK(autograd::to_dot(out2, {{"w", w}, {"b", b}, {"out", out2}}) == dot);
  CHECK_THAT(autograd::to_dot(out2), Contains("[label=\"leaf\\n[3] float64\\nrequires_grad\""));
  CHECK_THAT(autograd::to_dot(out2), Contains("root [label=\"tensor\\n[3] float64\""));

  // After backward the saved tensors are gone, and the picture says so.
  out.sum().backward();
  CHECK_THAT(autograd::to_dot(out),
             Contains("saved: output [3] float64\\n(saved tensors freed by backward)"));
}

TEST_CASE("to_dot: a tensor used twice, a side tensor, a leaf and quoting", "[autograd][to_dot]") {
  Tensor w = tensor({2.0}, f64(true));
  const std::string sq = autograd::to_dot(w * w, {{"w", w}});
  INFO(sq);
  // One leaf, two arrows into the product; mul saved both of its inputs (the same tensor).
  CHECK_THAT(sq, Contains("MulBackward\\nsaved: input 0 [1] float64\\nsaved: input 0 [1] float64"));
  CHECK_THAT(sq, Contains("  n1 -> n0 [label=\"input 0: [1] float64\"];"));
  CHECK_THAT(sq, Contains("  n1 -> n0 [label=\"input 1: [1] float64\"];"));

  // cross_entropy saves a private copy of logits (PyTorch keeps its own log-softmax, so logits
  // may change afterwards), its target and its row statistics: none of them an input.
  Tensor logits = tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, f64(true)).reshape({2, 3});
  Tensor target = tensor({0, 2}, kInt64);
  const std::string ce = autograd::to_dot(cross_entropy(logits, target));
  INFO(ce);
  CHECK_THAT(ce, Contains("CrossEntropyBackward\\nsaved: [2, 3] float64\\nsaved: [2] int64"));
  CHECK_THAT(ce, Contains("ReshapeBackward") || Contains("ViewBackward"));

  // A leaf alone: the tensor and nothing else.
  const std::string leaf = autograd::to_dot(w, {{"a \"quoted\" name", w}});
  CHECK_THAT(leaf, Contains("root [label=\"a \\\"quoted\\\" name\\n[1] float64\""));
  CHECK(leaf.find("->") == std::string::npos);
  CHECK_THROWS_AS(autograd::to_dot(Tensor()), ValueError);
}
