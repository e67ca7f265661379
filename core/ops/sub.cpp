// Op card: sub — out = a - b, NumPy broadcasting.
//
// Math      out = a - b
// Backward  dL/da = sum_to(dL/dout, a.shape), dL/db = -sum_to(dL/dout, b.shape).
// Shapes    broadcast(a.shape, b.shape); a, b on one device.
// Dtypes    result_type(a, b) (core/promotion.h); a bool operand is an error (PyTorch's rule:
//           for masks, ne(a, b) is exclusive or). Each gradient in its input's dtype.
// Saved     nothing.
// Kernels   CPU: kernels/cpu/elementwise.cpp binary(Sub).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct SubBackward final : ops::Node {
  std::string name() const override { return "SubBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    return {needs_input_grad(0) ? sum_to(g, input_shapes[0]) : Tensor(),
            needs_input_grad(1) ? neg(sum_to(g, input_shapes[1])) : Tensor()};
  }
};
}  // namespace

Tensor sub(const Tensor& a, const Tensor& b) {
  ops::check_defined("sub", a, "first operand");
  ops::check_defined("sub", b, "second operand");
  EMBER_CHECK(a.dtype() != kBool && b.dtype() != kBool, "sub: subtraction with a bool tensor is "
              "not supported (as in PyTorch): convert it with .to(ember::kInt64) first, or use "
              "ne(a, b) for the exclusive or of two masks");
  Tensor out = ops::binary_forward(kernels::BinaryOp::Sub, a, b, "sub");
  if (autograd::grad_needed({&a, &b})) autograd::connect(std::make_shared<SubBackward>(), out, {&a, &b});
  return out;
}

Tensor sub(const Tensor& a, const Scalar& b) {
  ops::check_defined("sub", a, "first operand");
  EMBER_CHECK(!b.is_bool(), "sub: subtraction with a bool is not supported (as in PyTorch): "
              "subtract 1 or 0");
  return sub(a, ops::wrap(b, a));
}

}  // namespace ember
