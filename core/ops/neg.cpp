// Op card: neg — out = -a.
//
// Math      out = -a
// Backward  dL/da = -dL/dout
// Shapes    unchanged.
// Dtypes    a's dtype; integers wrap (-INT64_MIN = INT64_MIN). A bool tensor is an error (as in
//           PyTorch: a mask is inverted with logical_not, here eq(mask, false)).
// Saved     nothing.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Neg).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct NegBackward final : ops::Node {
  std::string name() const override { return "NegBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {neg(g)}; }
};
}  // namespace

Tensor neg(const Tensor& a) {
  ops::check_defined("neg", a);
  EMBER_CHECK(a.dtype() != kBool, "neg: negation of a bool tensor is not supported (as in "
              "PyTorch): to invert a mask use eq(mask, false)");
  Tensor out = ops::unary_forward(kernels::UnaryOp::Neg, a, "neg");
  if (autograd::grad_needed({&a})) autograd::connect(std::make_shared<NegBackward>(), out, {&a});
  return out;
}

}  // namespace ember
