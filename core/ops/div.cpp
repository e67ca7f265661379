// Op card: div — out = a / b, NumPy broadcasting.
//
// Math      out = a / b
// Backward  dL/da = sum_to(dL/dout / b, a.shape)
//           dL/db = sum_to(-dL/dout * a / b^2, b.shape) = sum_to(-dL/dout * out / b, b.shape)
// Shapes    broadcast(a.shape, b.shape); a, b same dtype and device.
// Saved     b, and a (only if b needs a gradient).
// Kernels   CPU: kernels/cpu/elementwise.cpp binary(Div).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct DivBackward final : ops::Node {
  ops::SavedTensor a, b;
  std::string name() const override { return "DivBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor bv = b.unpack(*this, "other");
    Tensor ga, gb;
    if (needs_input_grad(0)) ga = sum_to(div(g, bv), input_shapes[0]);
    if (needs_input_grad(1)) {
      const Tensor av = a.unpack(*this, "self");
      gb = sum_to(neg(div(mul(g, av), mul(bv, bv))), input_shapes[1]);
    }
    return {ga, gb};
  }
  void release_saved() override { a.reset(); b.reset(); }
};
}  // namespace

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = ops::binary_forward(kernels::BinaryOp::Div, a, b, "div");
  if (autograd::grad_needed({&a, &b})) {
    auto node = std::make_shared<DivBackward>();
    node->b = ops::SavedTensor(b);
    if (b.requires_grad()) node->a = ops::SavedTensor(a);
    autograd::connect(node, out, {&a, &b});
  }
  return out;
}

}  // namespace ember
