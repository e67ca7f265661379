// ember/core/gradcheck.h — checking a backward formula against finite differences.
//
// gradcheck(fn, inputs) compares the gradients autograd computes for `fn` with central
// differences (f(x + eps) - f(x - eps)) / 2 eps, one input element at a time. Use float64
// inputs: in float32 the rounding error of the difference swamps the comparison.
//
//   auto f = [](const std::vector<Tensor>& x) { return (x[0] * x[1]).sum(); };
//   std::vector<Tensor> in = {randn({3, 4}, TensorOptions(kFloat64).requires_grad()),
//                             randn({4}, TensorOptions(kFloat64).requires_grad())};
//   gradcheck(f, in);  // throws ember::AutogradError with the first mismatch, else returns true
//
// A non-scalar output y is reduced to the scalar sum(y * r) with a fixed random r, which checks
// a random linear combination of the rows of the Jacobian in one backward pass.
//
// gradgradcheck (below) checks second derivatives the same way.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool raise = true;  // throw on mismatch (else return false)
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Inputs that require grad are checked; others (integer indices, targets) are passed through.
bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options = {});
bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
               double rtol);

// gradgradcheck(fn, inputs): the same check one order up, for backward formulas that must be
// differentiable themselves (create_graph, docs/autograd.md#higher-order-gradients). It draws a
// fixed random grad_output v of fn's output shape (a float64 leaf that requires grad) and
// gradchecks the first-order gradients as a function of the inputs and v:
//
//   G(x, v) = autograd::grad({fn(x)}, {x...}, {v}, create_graph) flattened and concatenated
//
// so the finite differences of the gradient are compared with a backward pass through the
// backward pass (both the x -> gradient and the v -> gradient derivatives). Inputs as gradcheck's.
bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& options = {});

}  // namespace ember
