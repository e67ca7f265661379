// Op card: sqrt — square root.
//
// Math      out = sqrt(a)
// Backward  dL/da = dL/dout / (2 * out)     (d sqrt(a)/da = 1 / (2 sqrt(a)))
// Shapes    unchanged.
// Dtypes    a's dtype when floating; integers and bools give float32 (the default float dtype).
// Saved     out.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Sqrt).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct SqrtBackward final : ops::Node {
  ops::SavedTensor out;
  std::string name() const override { return "SqrtBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor y = out.unpack(*this, "result");
    return {div(g, mul(y, ops::scalar_like(2.0, y)))};
  }
  void release_saved() override { out.reset(); }
};
}  // namespace

Tensor sqrt(const Tensor& a) {
  ops::check_defined("sqrt", a);
  Tensor out = ops::unary_forward(kernels::UnaryOp::Sqrt, a, "sqrt", 0.0, ops::float_result(a.dtype()));
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<SqrtBackward>();
    node->out = ops::SavedTensor(out);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
