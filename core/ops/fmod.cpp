// Op card: fmod, remainder — the remainder of a / b, NumPy broadcasting (or b a number).
//
// Math      fmod(a, b)      = a - trunc(a / b) * b: the quotient rounded toward zero, so the
//                             result has the sign of the dividend a (C's fmod and `%`):
//                             fmod(-5, 3) = -2, fmod(5, -3) = 2.
//           remainder(a, b) = a - floor(a / b) * b: the quotient rounded toward -inf, so the
//                             result has the sign of the divisor b (Python's `%`):
//                             remainder(-5, 3) = 1, remainder(5, -3) = -1.
//           Floats: fmod is std::fmod, which is exact (no rounding at all); remainder is
//           computed from it as PyTorch 1.13 does: m = fmod(a, b), plus b when m is nonzero and
//           its sign differs from b's (kernels/base/scalar_math.h remainder_any). b == 0, an
//           infinite a or a NaN give NaN; an infinite b gives a for fmod (and for remainder
//           when the signs agree; otherwise a + b = +-inf, PyTorch's answer too).
//           Integers are exact; an integer division by zero raises a ValueError, as PyTorch
//           raises "ZeroDivisionError" (C++ would kill the process with SIGFPE).
// Backward  Between the jumps of the rounded quotient q (trunc(a / b) or floor(a / b)), which
//           is constant there, out = a - q * b is linear:
//             dL/da = sum_to(dL/dout, a.shape)
//             dL/db = sum_to(-dL/dout * q, b.shape)
//           At the jumps the derivative does not exist; this is PyTorch 1.13's formula
//           everywhere (derivatives.yaml: other: -grad * self.div(other, rounding_mode=...)).
//           b a number: only dL/da = dL/dout.
// Shapes    broadcast(a.shape, b.shape); a, b on one device.
// Dtypes    result_type(a, b) (core/promotion.h), integers included: int64 fmod int64 is int64,
//           int64 fmod 2.5 is float32, uint8 fmod 3 stays uint8. bool with bool is refused, as
//           in PyTorch. Each gradient in its input's dtype.
// Saved     a and b, only when b needs a gradient (its formula divides them).
// Kernels   CPU: kernels/cpu/elementwise.cpp binary(Fmod / Remainder) (the per-element rules
//           are kernels/base/scalar_math.h fmod_any / remainder_any, shared by both devices);
//           the backward uses div(a, b, "trunc" / "floor") and mul.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct FmodBackward final : ops::Node {
  ops::SavedTensor a, b;
  bool floor = false;  // remainder: the quotient is floored; fmod: truncated
  std::string name() const override { return floor ? "RemainderBackward" : "FmodBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gb;
    if (needs_input_grad(0)) ga = sum_to(g, input_shapes[0]);
    if (needs_input_grad(1)) {
      // q in the forward's dtype (g's): a float32 a with a float64 b divides in float64.
      const Tensor x = cast_for_compute(a.unpack(*this, "self"), g.dtype());
      const Tensor y = cast_for_compute(b.unpack(*this, "other"), g.dtype());
      const Tensor q = div(x, y, floor ? "floor" : "trunc");
      gb = sum_to(neg(mul(g, q)), input_shapes[1]);
    }
    return {ga, gb};
  }
  void release_saved() override {
    a.reset();
    b.reset();
  }
};

Tensor remainder_op(const Tensor& a, const Tensor& b, bool floor) {
  const char* op = floor ? "remainder" : "fmod";
  ops::check_defined(op, a, "first operand");
  ops::check_defined(op, b, "second operand");
  ops::check_same_device(op, a, b);
  const DType dt = result_type(a, b);
  EMBER_CHECK(dt != kBool, op,
              ": not defined for bool tensors (as in PyTorch): convert them "
              "with .to(ember::kInt64) first");
  // The divisor as the kernel will see it (a wrapped 256 is 0 in uint8): PyTorch raises
  // "ZeroDivisionError" for an integer zero divisor, ember a ValueError that says so.
  if (!is_floating(dt)) ops::check_no_zero_divisor(op, cast_for_compute(b, dt));
  const auto kop = floor ? kernels::BinaryOp::Remainder : kernels::BinaryOp::Fmod;
  Tensor out = ops::binary_forward(kop, a, b, op, 1.0, dt);
  if (autograd::grad_needed({&a, &b})) {
    auto node = std::make_shared<FmodBackward>();
    node->floor = floor;
    if (b.requires_grad()) {
      node->a = ops::SavedTensor(a);
      node->b = ops::SavedTensor(b);
    }
    autograd::connect(node, out, {&a, &b});
  }
  return out;
}

// b a number: as a 0-d tensor of the dtype the op computes in (a number never requires grad,
// so only a's gradient, 1, flows).
Tensor remainder_scalar(const Tensor& a, const Scalar& b, bool floor) {
  ops::check_defined(floor ? "remainder" : "fmod", a, "first operand");
  return remainder_op(a, ops::wrap(b, a), floor);
}
}  // namespace

Tensor fmod(const Tensor& a, const Tensor& b) { return remainder_op(a, b, false); }
Tensor fmod(const Tensor& a, const Scalar& b) { return remainder_scalar(a, b, false); }
Tensor remainder(const Tensor& a, const Tensor& b) { return remainder_op(a, b, true); }
Tensor remainder(const Tensor& a, const Scalar& b) { return remainder_scalar(a, b, true); }

}  // namespace ember
