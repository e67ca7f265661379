// Op card: abs — absolute value.
//
// Math      out = |a|
// Backward  dL/da = dL/dout * sign(a)   (the subgradient 0 is used at a == 0, as PyTorch does)
// Shapes    unchanged.
// Dtypes    a's dtype (abs(INT64_MIN) wraps to INT64_MIN); a bool tensor is an error, as in
//           PyTorch. abs(-0.0) = +0.0.
// Saved     a.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Abs), unary(Sign) in backward.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct AbsBackward final : ops::Node {
  ops::SavedTensor a;
  std::string name() const override { return "AbsBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor x = a.unpack(*this, "self");
    return {mul(g, ops::unary_forward(kernels::UnaryOp::Sign, x, "abs backward"))};
  }
  void release_saved() override { a.reset(); }
};
}  // namespace

Tensor abs(const Tensor& a) {
  ops::check_defined("abs", a);
  EMBER_CHECK(a.dtype() != kBool, "abs: not defined for a bool tensor (as in PyTorch): convert "
              "it with .to(ember::kInt64) first");
  Tensor out = ops::unary_forward(kernels::UnaryOp::Abs, a, "abs");
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<AbsBackward>();
    node->a = ops::SavedTensor(a);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
