// Op card: sub — out = a - b, NumPy broadcasting.
//
// Math      out = a - b
// Backward  dL/da = sum_to(dL/dout, a.shape), dL/db = -sum_to(dL/dout, b.shape).
// Shapes    broadcast(a.shape, b.shape); a, b same dtype and device.
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
  Tensor out = ops::binary_forward(kernels::BinaryOp::Sub, a, b, "sub");
  if (autograd::grad_needed({&a, &b})) autograd::connect(std::make_shared<SubBackward>(), out, {&a, &b});
  return out;
}

}  // namespace ember
