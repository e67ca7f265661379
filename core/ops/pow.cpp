// Op card: pow — out = a ^ p for a scalar exponent p.
//
// Math      out = a^p
// Backward  dL/da = dL/dout * p * a^(p-1)   (p == 0: zero; p == 1: dL/dout; p == 2: 2a dL/dout)
// Shapes    unchanged.
// Dtypes    result_type(a, p) with p a number: a float tensor keeps its dtype; an integer tensor
//           stays integer for an integer p (exact powers, wrapping as repeated multiplication
//           does; a negative p is an error, as in PyTorch) and becomes float32 for a floating p.
//           A bool tensor with an integer p is int64 (PyTorch's promotion of bool and a number).
// Saved     a, p.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Pow) (x * x for p = 2, sqrt for 0.5, integer
//           powers by kernels/base/scalar_math.h int_pow).
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

Tensor pow(const Tensor& a, const Scalar& p) {
  ops::check_defined("pow", a);
  const DType dt = result_type(a, p);
  if (!is_floating(dt)) {
    EMBER_CHECK(p.to_int() >= 0, "pow: integers to negative integer powers are not allowed (as "
                "in PyTorch): convert the tensor with .to(ember::kFloat32) first, or use a "
                "floating exponent (", p.to_int(), ".0)");
  }
  const double exponent = p.to_double();
  Tensor out = ops::unary_forward(kernels::UnaryOp::Pow, a, "pow",
                                  is_floating(dt) ? exponent : static_cast<double>(p.to_int()), dt);
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<PowBackward>();
    node->a = ops::SavedTensor(a);
    node->p = exponent;
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
