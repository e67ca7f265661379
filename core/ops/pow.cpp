// Op card: pow — out = a ^ p for a scalar exponent p.
//
// Math      out = a^p
// Backward  dL/da = dL/dout * p * a^(p-1)   (p == 0: zero; p == 1: dL/dout; p == 2: 2a dL/dout)
// Shapes    unchanged.
// Saved     a, p.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Pow) (x.square() for p = 2, sqrt for 0.5).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct PowBackward final : ops::Node {
  ops::SavedTensor a;
  double p = 1.0;
  std::string name() const override { return "PowBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor x = a.unpack(*this, "self");
    if (p == 0.0) return {zeros_like(g)};
    if (p == 1.0) return {g};
    const Tensor dx = p == 2.0 ? mul(x, ops::scalar_like(2.0, x))
                               : mul(pow(x, p - 1.0), ops::scalar_like(p, x));
    return {mul(g, dx)};
  }
  void release_saved() override { a.reset(); }
};
}  // namespace

Tensor pow(const Tensor& a, double exponent) {
  ops::check_defined("pow", a);
  ops::check_float("pow", a);
  Tensor out = ops::unary_forward(kernels::UnaryOp::Pow, a, "pow", exponent);
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<PowBackward>();
    node->a = ops::SavedTensor(a);
    node->p = exponent;
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
