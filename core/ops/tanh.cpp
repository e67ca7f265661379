// Op card: tanh — hyperbolic tangent.
//
// Math      out = tanh(a)
// Backward  dL/da = dL/dout * (1 - out^2)
// Shapes    unchanged.
// Dtypes    a's dtype when floating; integers and bools give float32 (the default float dtype).
// Saved     out (the backward is cheapest written in terms of the output).
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Tanh), binary(TanhBackward).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct TanhBackward final : ops::Node {
  ops::SavedTensor out;
  std::string name() const override { return "TanhBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    // create_graph (grad mode on): the same formula with recorded ops, differentiable again.
    if (is_grad_enabled()) {
      const Tensor y = out.unpack(*this, "result");
      return {mul(g, sub(ops::scalar_like(1.0, y), mul(y, y)))};
    }
    return {ops::binary_forward(kernels::BinaryOp::TanhBackward, g, out.unpack(*this, "result"),
                                "tanh backward")};
  }
  void release_saved() override { out.reset(); }
};
}  // namespace

Tensor tanh(const Tensor& a) {
  ops::check_defined("tanh", a);
  Tensor out = ops::unary_forward(kernels::UnaryOp::Tanh, a, "tanh", 0.0, ops::float_result(a.dtype()));
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<TanhBackward>();
    node->out = ops::SavedTensor(out);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
