// Op card: add — out = a + b, NumPy broadcasting.
//
// Math      out[i] = a[i'] + b[i'']   (i', i'' are i mapped through broadcasting)
// Backward  dL/da = sum_to(dL/dout, a.shape), dL/db = sum_to(dL/dout, b.shape).
//           d(a+b)/da = 1, so the gradient passes through unchanged; where a was broadcast
//           (repeated) along a dimension, every copy contributed, so the copies' gradients are
//           summed back down to a's shape.
// Shapes    broadcast(a.shape, b.shape); a, b on one device.
// Dtypes    result_type(a, b) (core/promotion.h): int64 [3] + 0.5 is float32, uint8 + 1000 stays
//           uint8. bool + bool is bool (logical or, as in PyTorch). Each gradient in its input's
//           dtype.
// Saved     nothing (only the input shapes, which every Node keeps).
// Kernels   CPU: kernels/cpu/elementwise.cpp binary(Add).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct AddBackward final : ops::Node {
  std::string name() const override { return "AddBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    return {needs_input_grad(0) ? sum_to(g, input_shapes[0]) : Tensor(),
            needs_input_grad(1) ? sum_to(g, input_shapes[1]) : Tensor()};
  }
};
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  ops::check_defined("add", a, "first operand");
  ops::check_defined("add", b, "second operand");
  const DType dt = result_type(a, b);
  // bool + bool: 0/1 added as uint8, then any nonzero sum is true (logical or).
  Tensor out = dt == kBool ? ops::binary_forward(kernels::BinaryOp::Add, a, b, "add", 1.0, kUInt8).to(kBool)
                           : ops::binary_forward(kernels::BinaryOp::Add, a, b, "add", 1.0, dt);
  if (autograd::grad_needed({&a, &b})) autograd::connect(std::make_shared<AddBackward>(), out, {&a, &b});
  return out;
}

Tensor add(const Tensor& a, const Scalar& b) {
  ops::check_defined("add", a, "first operand");
  return add(a, ops::wrap(b, a));
}

}  // namespace ember
