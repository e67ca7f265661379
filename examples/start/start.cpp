// examples/start — the programs of docs/start.md, the first page: a derivative by finite
// differences, the same derivative through ember's autograd, and the tape of tanh(x * w + b)
// walked node by node with its forward and backward values.
//
//   start                      the three steps, as docs/start.md shows them
//   start --dot tanh           the tape of tanh(x * w + b) in Graphviz's language
//   start --dot mnist_mlp      the tape of one training step of examples/mnist_mlp's model
//
// scripts/draw-tape renders the --dot outputs into docs/images/.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "examples/common/models.h"
#include "nn/nn.h"

using namespace ember;

namespace {

// 1. A function of one number and its slope, measured: (f(x + h) - f(x)) / h for smaller and
// smaller h. The error first shrinks with h (the secant closes in on the tangent), then grows
// again (f(x + h) - f(x) loses its digits to rounding).
double f(double x) { return 3 * x * x - 4 * x + 5; }

void finite_differences() {
  const double x = 3.0, exact = 6 * x - 4;  // f'(x) = 6x - 4, by hand
  std::printf("1. f(x) = 3x^2 - 4x + 5 at x = %g: f(x) = %g, f'(x) = 6x - 4 = %g\n", x, f(x),
              exact);
  for (double h : {1e-1, 1e-4, 1e-7, 1e-10, 1e-13}) {
    const double slope = (f(x + h) - f(x)) / h;
    std::printf("   h = %-6g (f(x + h) - f(x)) / h = %.10f   error %.1e\n", h, slope,
                slope - exact);
  }
}

// 2. The same slope through ember: x is a tensor that requires grad, the expression records
// one node per operation, and backward() applies the chain rule to them in reverse.
void through_autograd() {
  const TensorOptions f64 = TensorOptions(kFloat64).requires_grad();
  Tensor x = tensor({3.0}, f64);
  Tensor y = 3 * x * x - 4 * x + 5;
  y.backward();
  std::printf("\n2. the same with ember's autograd: y = %g, made by %s; after y.backward(),\n"
              "   x.grad() = %g (exactly 6x - 4: no h, no rounding error beyond the arithmetic)\n",
              y.item(), y.grad_fn()->name().c_str(), x.grad().item());
}

// 3. The tape of out = tanh(x * w + b): every node, the tensor it made and what flowed back.
void the_tape() {
  const TensorOptions f64 = TensorOptions(kFloat64).requires_grad();
  Tensor x = tensor({2.0}, f64), w = tensor({-0.5}, f64), b = tensor({0.8}, f64);
  Tensor xw = x * w;
  Tensor z = xw + b;
  Tensor out = tanh(z);
  for (Tensor* t : {&xw, &z, &out}) t->retain_grad();  // keep .grad on the intermediates too
  out.backward();

  // Each tensor by the node that stands for it on the tape: the op that made it (grad_fn), or
  // for a leaf the AccumulateGrad that adds into its .grad.
  const std::vector<std::pair<std::string, Tensor>> named = {{"out", out}, {"z", z}, {"x * w", xw},
                                                             {"x", x},     {"w", w}, {"b", b}};
  std::map<const autograd::Node*, std::pair<std::string, Tensor>> by_node;
  for (const auto& [name, t] : named) {
    const autograd::Node* n =
        t.is_leaf() ? t.impl()->grad_accumulator.lock().get() : t.grad_fn().get();
    by_node[n] = {name, t};
  }

  std::printf("\n3. the tape of out = tanh(x * w + b), x = 2, w = -0.5, b = 0.8, from out back:\n");
  std::printf("   %-15s %-7s %-10s %-11s %-10s %s\n", "node", "tensor", "forward", "d out/d it",
              "inputs", "saved for backward");
  std::vector<const autograd::Node*> stack = {out.grad_fn().get()}, seen;
  while (!stack.empty()) {
    const autograd::Node* n = stack.back();
    stack.pop_back();
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    const auto& [name, t] = by_node.at(n);
    std::string inputs, saved;
    for (const autograd::Edge& e : n->next_edges)
      inputs += (inputs.empty() ? "" : ", ") + by_node.at(e.fn.get()).first;
    for (const autograd::SavedInfo& s : n->saved) saved += (saved.empty() ? "" : ", ") + s.role;
    std::printf("   %-15s %-7s %-10.6f %-11.6f %-10s %s\n", n->name().c_str(), name.c_str(),
                t.item(), t.grad().item(), inputs.empty() ? "-" : inputs.c_str(),
                saved.empty() ? "-" : saved.c_str());
    for (auto e = n->next_edges.rbegin(); e != n->next_edges.rend(); ++e)
      stack.push_back(e->fn.get());
  }
  std::printf("   by hand: d out/d z = 1 - tanh(z)^2 = %.6f; d out/d x = that times w = %.6f\n",
              1 - std::pow(std::tanh(-0.2), 2), (1 - std::pow(std::tanh(-0.2), 2)) * -0.5);
}

// --dot tanh: the graph of step 3 before backward.
std::string dot_tanh() {
  const TensorOptions f64 = TensorOptions(kFloat64).requires_grad();
  Tensor x = tensor({2.0}, f64), w = tensor({-0.5}, f64), b = tensor({0.8}, f64);
  Tensor out = tanh(x * w + b);
  return autograd::to_dot(out, {{"x", x}, {"w", w}, {"b", b}, {"out", out}});
}

// --dot mnist_mlp: one training step's tape of examples/mnist_mlp's model (the seed's
// FullyNeuralNetwork, examples/common/models.h) on a batch of 64 images, as its train() builds
// it: outputs = model(inputs), loss = criterion(outputs, target).
std::string dot_mnist_mlp() {
  manual_seed(0);
  examples::mnist_mlp::FullyNeuralNetwork model;
  nn::CrossEntropyLoss criterion;
  const Tensor inputs = randn({64, 1, 28, 28});
  const Tensor target = randint(0, 10, {64});
  const Tensor loss = criterion(model(inputs), target);
  auto names = model.named_parameters();
  names.emplace_back("loss", loss);
  return autograd::to_dot(loss, names);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember's first page (docs/start.md): derivatives, autograd and the tape"};
  std::string dot;
  app.add_option("--dot", dot, "print a tape in Graphviz's language instead: tanh or mnist_mlp")
      ->check(CLI::IsMember({"tanh", "mnist_mlp"}));
  CLI11_PARSE(app, argc, argv);
  if (!dot.empty()) {
    std::printf("%s", (dot == "tanh" ? dot_tanh() : dot_mnist_mlp()).c_str());
    return 0;
  }
  finite_differences();
  through_autograd();
  the_tape();
  return 0;
}
