// Op card: exp — out = e^a.
//
// Math      out = e^a
// Backward  dL/da = dL/dout * out   (e^a is its own derivative, so the output is saved, not a)
// Shapes    unchanged.
// Dtypes    a's dtype when floating; integers and bools give float32 (the default float dtype).
// Saved     out.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Exp) (the C library's exp).
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
  Tensor out = ops::unary_forward(kernels::UnaryOp::Exp, a, "exp", 0.0, ops::float_result(a.dtype()));
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<ExpBackward>();
    node->out = ops::SavedTensor(out);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
