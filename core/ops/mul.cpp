// Op card: mul — out = a * b, NumPy broadcasting.
//
// Math      out = a * b
// Backward  dL/da = sum_to(dL/dout * b, a.shape), dL/db = sum_to(dL/dout * a, b.shape)
//           (product rule: d(ab)/da = b).
// Shapes    broadcast(a.shape, b.shape); a, b on one device.
// Dtypes    result_type(a, b) (core/promotion.h): int64 [3] * 2.5 is float32, uint8 * 0.5 float32.
//           bool * bool is bool (logical and). Each gradient in its input's dtype.
// Saved     a (only if b needs a gradient) and b (only if a needs one).
// Kernels   CPU: kernels/cpu/elementwise.cpp binary(Mul).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct MulBackward final : ops::Node {
  ops::SavedTensor a, b;
  std::string name() const override { return "MulBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    if (needs_input_grad(0)) ga = sum_to(mul(g, b.unpack(*this, "other")), input_shapes[0]);
    if (needs_input_grad(1)) gb = sum_to(mul(g, a.unpack(*this, "self")), input_shapes[1]);
    return {ga, gb};
  }
  void release_saved() override { a.reset(); b.reset(); }
};
}  // namespace

Tensor mul(const Tensor& a, const Tensor& b) {
  ops::check_defined("mul", a, "first operand");
  ops::check_defined("mul", b, "second operand");
  const DType dt = result_type(a, b);
  // bool * bool: 0/1 multiplied as uint8 is already the logical and.
  Tensor out = dt == kBool ? ops::binary_forward(kernels::BinaryOp::Mul, a, b, "mul", 1.0, kUInt8).to(kBool)
                           : ops::binary_forward(kernels::BinaryOp::Mul, a, b, "mul", 1.0, dt);
  if (autograd::grad_needed({&a, &b})) {
    auto node = std::make_shared<MulBackward>();
    if (b.requires_grad()) node->a = ops::SavedTensor(a);
    if (a.requires_grad()) node->b = ops::SavedTensor(b);
    autograd::connect(node, out, {&a, &b});
  }
  return out;
}

Tensor mul(const Tensor& a, const Scalar& b) {
  ops::check_defined("mul", a, "first operand");
  return mul(a, ops::wrap(b, a));
}

}  // namespace ember
