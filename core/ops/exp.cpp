// Op card: exp — out = e^a.
//
// Math      out = e^a
// Backward  dL/da = dL/dout * out   (e^a is its own derivative, so the output is saved, not a)
// Shapes    unchanged.
// Saved     out.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Exp) (Eigen's vectorized exp when contiguous).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct ExpBackward final : ops::Node {
  ops::SavedTensor out;
  std::string name() const override { return "ExpBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {mul(g, out.unpack(*this, "result"))}; }
  void release_saved() override { out.reset(); }
};
}  // namespace

Tensor exp(const Tensor& a) {
  ops::check_defined("exp", a);
  ops::check_float("exp", a);
  Tensor out = ops::unary_forward(kernels::UnaryOp::Exp, a, "exp");
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<ExpBackward>();
    node->out = ops::SavedTensor(out);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
