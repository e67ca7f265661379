// Op card: sigmoid — logistic sigmoid.
//
// Math      out = 1 / (1 + e^-a)
// Backward  dL/da = dL/dout * out * (1 - out)   (s' = s (1 - s))
// Shapes    unchanged.
// Dtypes    a's dtype when floating; integers and bools give float32 (the default float dtype).
// Saved     out (the backward is cheapest written in terms of the output).
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Sigmoid), binary(SigmoidBackward).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct SigmoidBackward final : ops::Node {
  ops::SavedTensor out;
  std::string name() const override { return "SigmoidBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    // create_graph (grad mode on): the same formula with recorded ops, differentiable again.
    if (is_grad_enabled()) {
      const Tensor y = out.unpack(*this, "result");
      return {mul(g, mul(y, sub(ops::scalar_like(1.0, y), y)))};
    }
    return {ops::binary_forward(kernels::BinaryOp::SigmoidBackward, g, out.unpack(*this, "result"),
                                "sigmoid backward")};
  }
  void release_saved() override { out.reset(); }
};
}  // namespace

Tensor sigmoid(const Tensor& a) {
  ops::check_defined("sigmoid", a);
  Tensor out = ops::unary_forward(kernels::UnaryOp::Sigmoid, a, "sigmoid", 0.0, ops::float_result(a.dtype()));
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<SigmoidBackward>();
    node->out = ops::SavedTensor(out);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
