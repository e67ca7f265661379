// Op card: div, floor_divide — out = a / b, NumPy broadcasting; true or rounded quotients.
//
// Math      div(a, b)           out = a / b, the IEEE quotient (x / 0 = +-inf, 0 / 0 = nan).
//           div(a, b, "trunc")  out = trunc(a / b): rounded toward zero (C's integer `/`).
//           div(a, b, "floor")  out = floor(a / b): rounded toward -inf (Python's `//`);
//           floor_divide(a, b) is the same. Integer quotients are exact, never through floats;
//           an integer division by zero raises a ValueError (it has no answer; C++ would kill
//           the process with SIGFPE), and INT64_MIN / -1 wraps to INT64_MIN (PyTorch itself
//           dies there). Float division by zero stays IEEE in every mode (+-inf, nan).
// Backward  true division: dL/da = sum_to(dL/dout / b, a.shape)
//                          dL/db = sum_to(-dL/dout * a / b^2, b.shape)
//           rounded: the quotient is a step function of a and b, so its derivative is zero
//           wherever it exists; div(a, b, mode) sends zero gradients back, as PyTorch does.
//           floor_divide records nothing (PyTorch has no derivative for it either).
// Shapes    broadcast(a.shape, b.shape); a, b on one device.
// Dtypes    true division: result_type(a, b), and integers and bools divide as floats in the
//           default float dtype: int64 [3] / int64 [3] is float32 (PyTorch's true division).
//           Rounded: result_type(a, b) itself, so integers stay integers. Each gradient in its
//           input's dtype.
// Saved     true division: b, and a (only if b needs a gradient). Rounded: nothing.
// Kernels   CPU: kernels/cpu/elementwise.cpp binary(Div, DivTrunc, DivFloor); the quotients are
//           defined once in kernels/base/scalar_math.h for both devices.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct DivBackward final : ops::Node {
  ops::SavedTensor a, b;
  std::string name() const override { return "DivBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor bv = b.unpack(*this, "other");
    Tensor ga, gb;
    if (needs_input_grad(0)) ga = sum_to(div(g, bv), input_shapes[0]);
    if (needs_input_grad(1)) {
      const Tensor av = a.unpack(*this, "self");
      gb = sum_to(neg(div(mul(g, av), mul(bv, bv))), input_shapes[1]);
    }
    return {ga, gb};
  }
  void release_saved() override { a.reset(); b.reset(); }
};

// The gradient of a rounded quotient: zero for every input that asks.
struct DivRoundedBackward final : ops::Node {
  std::string name() const override { return "DivRoundedBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    std::vector<Tensor> grads(2);
    for (size_t i = 0; i < 2; ++i)
      if (needs_input_grad(i)) grads[i] = zeros(input_shapes[i], g.options());
    return grads;
  }
};

Tensor rounded_div(const Tensor& a, const Tensor& b, const std::string& mode, const char* op,
                   bool differentiable) {
  ops::check_defined(op, a, "first operand");
  ops::check_defined(op, b, "second operand");
  EMBER_CHECK(mode == "trunc" || mode == "floor", op, ": rounding_mode must be \"trunc\" or "
              "\"floor\" (or left out for true division), got \"", mode, "\"");
  const DType dt = result_type(a, b);
  EMBER_CHECK(dt != kBool, op, ": a rounded division of bool tensors is not defined: convert "
              "them with .to(ember::kInt64) first");
  // The divisor as the kernel will see it (a wrapped 256 is 0 in uint8).
  if (!is_floating(dt)) ops::check_no_zero_divisor(op, cast_for_compute(b, dt));
  const auto kop = mode == "trunc" ? kernels::BinaryOp::DivTrunc : kernels::BinaryOp::DivFloor;
  Tensor out = ops::binary_forward(kop, a, b, op, 1.0, dt);
  if (differentiable && autograd::grad_needed({&a, &b}))
    autograd::connect(std::make_shared<DivRoundedBackward>(), out, {&a, &b});
  return out;
}
}  // namespace

Tensor div(const Tensor& a, const Tensor& b) {
  ops::check_defined("div", a, "first operand");
  ops::check_defined("div", b, "second operand");
  const DType dt = ops::float_result(result_type(a, b));
  Tensor out = ops::binary_forward(kernels::BinaryOp::Div, a, b, "div", 1.0, dt);
  if (autograd::grad_needed({&a, &b})) {
    auto node = std::make_shared<DivBackward>();
    node->b = ops::SavedTensor(b);
    if (b.requires_grad()) node->a = ops::SavedTensor(a);
    autograd::connect(node, out, {&a, &b});
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  if (rounding_mode.empty()) return div(a, b);
  return rounded_div(a, b, rounding_mode, "div", true);
}

Tensor div(const Tensor& a, const Scalar& b, const std::string& rounding_mode) {
  ops::check_defined("div", a, "first operand");
  // The number in the dtype the division runs in: true division of uint8 by -2 divides by -2.0,
  // not by -2 wrapped to uint8's 254 first.
  const DType dt = rounding_mode.empty() ? ops::float_result(result_type(a, b)) : result_type(a, b);
  return div(a, wrapped_scalar(b, dt, a.device()), rounding_mode);
}

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  return rounded_div(a, b, "floor", "floor_divide", false);
}

Tensor floor_divide(const Tensor& a, const Scalar& b) {
  ops::check_defined("floor_divide", a, "first operand");
  return floor_divide(a, ops::wrap(b, a));
}

}  // namespace ember
