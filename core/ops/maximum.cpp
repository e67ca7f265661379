// Op card: maximum, minimum — the elementwise larger / smaller of two tensors, NumPy broadcasting.
//
// Math      maximum(a, b)[i] = max(a[i'], b[i'']), minimum likewise (i', i'' are i mapped
//           through broadcasting). A NaN in either operand gives NaN, as in PyTorch (std::max
//           would drop it). On a tie the value is a's (for -0 against +0, a's sign).
// Backward  Where a > b the output is a (slope 1 for a, 0 for b), where a < b it is b. On a tie
//           the derivative does not exist; PyTorch 1.13 gives each operand half the gradient,
//           and so does ember:
//             dL/da = sum_to(where(a < b, 0, where(a == b, g / 2, g)), a.shape)   (maximum)
//             dL/db = sum_to(where(a > b, 0, where(a == b, g / 2, g)), b.shape)
//           minimum swaps < and >. Where either operand is NaN no comparison holds, so both
//           operands receive the whole gradient (PyTorch's formula gives the same).
// Shapes    broadcast(a.shape, b.shape); a, b on one device.
// Dtypes    result_type(a, b) (core/promotion.h): int64 with float32 is float32. bool with bool
//           is bool (maximum is logical or, minimum logical and), computed as uint8. Each
//           gradient in its input's dtype.
// Saved     a and b (the backward compares them).
// Kernels   CPU: kernels/cpu/elementwise.cpp binary(Maximum / Minimum) (the per-element rule
//           is kernels/base/scalar_math.h nan_max / nan_min); the backward reuses compare and
//           where.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
using kernels::BinaryOp;

struct MaximumBackward final : ops::Node {
  ops::SavedTensor a, b;
  bool is_max = true;
  std::string name() const override { return is_max ? "MaximumBackward" : "MinimumBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor x = a.unpack(*this, "self"), y = b.unpack(*this, "other");
    const Tensor zero = ops::scalar_like(0.0, g);
    // Both operands share the gradient on a tie; elsewhere the loser gets none.
    const Tensor shared = where(eq(x, y), g * 0.5, g);
    Tensor ga, gb;
    if (needs_input_grad(0))
      ga = sum_to(where(is_max ? lt(x, y) : gt(x, y), zero, shared), input_shapes[0]);
    if (needs_input_grad(1))
      gb = sum_to(where(is_max ? gt(x, y) : lt(x, y), zero, shared), input_shapes[1]);
    return {ga, gb};
  }
  void release_saved() override {
    a.reset();
    b.reset();
  }
};

Tensor extreme(const Tensor& a, const Tensor& b, bool is_max, const char* name) {
  ops::check_defined(name, a, "first operand");
  ops::check_defined(name, b, "second operand");
  ops::check_same_device(name, a, b);
  const BinaryOp op = is_max ? BinaryOp::Maximum : BinaryOp::Minimum;
  const DType dt = result_type(a, b);
  // bool: the larger of two 0/1 bytes is their logical or, the smaller their logical and.
  Tensor out = dt == kBool ? ops::binary_forward(op, a, b, name, 1.0, kUInt8).to(kBool)
                           : ops::binary_forward(op, a, b, name, 1.0, dt);
  if (autograd::grad_needed({&a, &b})) {
    auto node = std::make_shared<MaximumBackward>();
    node->a = ops::SavedTensor(a);
    node->b = ops::SavedTensor(b);
    node->is_max = is_max;
    autograd::connect(node, out, {&a, &b});
  }
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extreme(a, b, true, "maximum"); }

Tensor minimum(const Tensor& a, const Tensor& b) { return extreme(a, b, false, "minimum"); }

}  // namespace ember
