#include "core/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops.h"
#include "kernels/base/philox.h"

namespace ember {

namespace {

// A fixed pseudo-random weight per output element, independent of the global generator so
// that gradcheck does not disturb a user's random stream.
Tensor projection_weights(const Tensor& like) {
  std::vector<double> w(static_cast<size_t>(like.numel()));
  for (size_t i = 0; i < w.size(); ++i) {
    const auto r = kernels::philox4x32(0x6772616463686b, i, 0);
    w[i] = 0.5 + kernels::uniform_double(r.v[0], r.v[1]);  // in [0.5, 1.5): no cancellation
  }
  return from_vector<double>(w, like.shape(), like.options());
}

double scalar_objective(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const Tensor& w) {
  const Tensor y = fn(inputs);
  return sum(mul(y.to(kFloat64), w)).item();
}

// Element j (row-major) of a strided tensor, as a pointer into its storage.
double* element(const Tensor& t, int64_t j) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t size = t.shape()[d];
    off += (j % size) * t.strides()[d];
    j /= size;
  }
  return t.data_ptr<double>() + off;
}

}  // namespace

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& o) {
  auto fail = [&](const std::string& msg) {
    if (o.raise) throw AutogradError("gradcheck: " + msg);
    return false;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    if (x.dtype() != kFloat64) {
      return fail("input " + std::to_string(i) + " is " + dtype_name(x.dtype()) +
                  ": use float64 inputs (in float32 finite differences are too noisy to compare)");
    }
    if (!x.is_leaf()) return fail("input " + std::to_string(i) + " must be a leaf tensor");
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (x.strides()[d] == 0 && x.shape()[d] > 1) {
        return fail("input " + std::to_string(i) +
                    " is expanded (stride 0): one perturbation would move several elements");
      }
    }
  }

  // Analytical: one backward pass of sum(fn(x) * w).
  Tensor w;
  std::vector<Tensor> analytical(inputs.size());
  {
    EnableGradGuard grad_on;
    for (const Tensor& x : inputs)
      if (x.defined() && x.requires_grad()) const_cast<Tensor&>(x).zero_grad();
    const Tensor y = fn(inputs);
    if (!y.requires_grad()) return fail("the function's output does not depend on any input that requires grad");
    w = projection_weights(y.detach().to(kFloat64));
    sum(mul(y.to(kFloat64), w)).backward();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& x = inputs[i];
      if (!x.defined() || !x.requires_grad()) continue;
      analytical[i] = x.grad().defined() ? x.grad() : zeros_like(x);
      const_cast<Tensor&>(x).zero_grad();
    }
  }

  // Numerical: central differences, one element at a time.
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    const std::vector<double> ana = analytical[i].to_vector<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      double* p = element(x, j);
      const double orig = *p;
      *p = orig + o.eps;
      const double f_plus = scalar_objective(fn, inputs, w);
      *p = orig - o.eps;
      const double f_minus = scalar_objective(fn, inputs, w);
      *p = orig;
      const double num = (f_plus - f_minus) / (2 * o.eps);
      const double a = ana[static_cast<size_t>(j)];
      if (!(std::fabs(a - num) <= o.atol + o.rtol * std::fabs(num))) {
        std::ostringstream msg;
        msg.precision(10);
        msg << "gradient mismatch for input " << i << " (shape " << shape_str(x.shape())
            << ") at flat index " << j << ": analytical " << a << " vs numerical " << num
            << " (atol " << o.atol << ", rtol " << o.rtol << ")";
        return fail(msg.str());
      }
    }
  }
  return true;
}

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
               double rtol) {
  GradcheckOptions o;
  o.eps = eps;
  o.atol = atol;
  o.rtol = rtol;
  return gradcheck(fn, inputs, o);
}

bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& o) {
  // The inputs to differentiate, and the shape of the output (for v).
  std::vector<size_t> wrt;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) wrt.push_back(i);
  if (wrt.empty()) {
    if (o.raise) throw AutogradError("gradgradcheck: no input requires grad");
    return false;
  }
  Tensor y0;
  {
    NoGradGuard no_grad;
    y0 = fn(inputs);
  }
  // v: fixed values in [-1, 1), from their own Philox stream (the global generator is untouched).
  std::vector<double> values(static_cast<size_t>(y0.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    const auto r = kernels::philox4x32(0x67726164677261, i, 0);
    values[i] = 2.0 * kernels::uniform_double(r.v[0], r.v[1]) - 1.0;
  }
  const Tensor v =
      from_vector<double>(values, y0.shape(), TensorOptions(kFloat64)).requires_grad_(true);

  // G(x..., v): the first-order gradients, recorded (create_graph), as one flat float64 vector.
  // gradcheck calls it both to differentiate it and, under NoGradGuard, for finite differences:
  // grad mode is switched on inside, since the first-order gradient needs a tape either way.
  const size_t n = inputs.size();
  auto first_order = [&fn, &wrt, n](const std::vector<Tensor>& xs) {
    EnableGradGuard grad_on;
    const std::vector<Tensor> args(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
    const Tensor y = fn(args);
    std::vector<Tensor> diff;
    for (size_t i : wrt) diff.push_back(args[i]);
    const std::vector<Tensor> grads = autograd::grad({y}, diff, {xs[n].to(y.dtype())},
                                                     /*retain_graph=*/true, /*create_graph=*/true,
                                                     /*allow_unused=*/true);
    std::vector<Tensor> flat;
    for (const Tensor& g : grads)
      if (g.defined()) flat.push_back(reshape(g, {-1}).to(kFloat64));
    // + 0 * sum(v): a first-order gradient that is a constant (div with a rounding mode: zero)
    // has no graph; this keeps G a function of v, so its second derivatives are checked as zeros.
    return add(cat(flat, 0), mul(sum(xs[n]), 0.0));
  };
  std::vector<Tensor> extended = inputs;
  extended.push_back(v);
  return gradcheck(first_order, extended, o);
}

}  // namespace ember
