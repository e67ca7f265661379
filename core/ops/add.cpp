// Op card: add — out = a + b, NumPy broadcasting.
//
// Math      out[i] = a[i'] + b[i'']   (i', i'' are i mapped through broadcasting)
// Backward  dL/da = sum_to(dL/dout, a.shape), dL/db = sum_to(dL/dout, b.shape).
//           d(a+b)/da = 1, so the gradient passes through unchanged; where a was broadcast
//           (repeated) along a dimension, every copy contributed, so the copies' gradients are
//           summed back down to a's shape.
// Shapes    broadcast(a.shape, b.shape); a, b same dtype and device.
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
  Tensor out = ops::binary_forward(kernels::BinaryOp::Add, a, b, "add");
  if (autograd::grad_needed({&a, &b})) autograd::connect(std::make_shared<AddBackward>(), out, {&a, &b});
  return out;
}

}  // namespace ember
