// Op card: relu — rectified linear unit.
//
// Math      out = max(a, 0)
// Backward  dL/da = dL/dout where out > 0, else 0 (the subgradient 0 at a == 0, as PyTorch)
// Shapes    unchanged.
// Dtypes    a's dtype (integers too); a bool tensor is an error, as in PyTorch. relu(NaN) = NaN.
// Saved     out (the backward is cheapest written in terms of the output).
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Relu), binary(ReluBackward).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct ReluBackward final : ops::Node {
  ops::SavedTensor out;
  std::string name() const override { return "ReluBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    // create_graph (grad mode on): g masked by a constant (relu'' = 0 away from the kink).
    if (is_grad_enabled()) {
      const Tensor mask = gt(out.unpack(*this, "result").detach(), 0.0);
      return {where(mask, g, ops::scalar_like(0.0, g))};
    }
    return {ops::binary_forward(kernels::BinaryOp::ReluBackward, g, out.unpack(*this, "result"),
                                "relu backward")};
  }
  void release_saved() override { out.reset(); }
};
}  // namespace

Tensor relu(const Tensor& a) {
  ops::check_defined("relu", a);
  EMBER_CHECK(a.dtype() != kBool, "relu: not defined for a bool tensor (as in PyTorch): convert "
              "it with .to(ember::kFloat32) first");
  Tensor out = ops::unary_forward(kernels::UnaryOp::Relu, a, "relu");
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<ReluBackward>();
    node->out = ops::SavedTensor(out);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
