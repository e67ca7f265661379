// Op card: pow — out = a ^ p for a scalar exponent p; a ^ b for a tensor exponent b (broadcast);
// s ^ b for a number base s.
//
// Math      out = a^p;  out = a^b elementwise (NumPy broadcasting);  out = s^b.
//           Floats: std::pow, with IEEE's special values (0^-1 = inf, (-8)^(1/3) = NaN,
//           1^NaN = 1). Integers (a ^ b, both integer): exact, wrapping like repeated `*`; a
//           negative element of b is no error (unlike a negative Scalar p): the truncated 1/a^|b|,
//           which is 1 for a == 1, +-1 for a == -1, 0 otherwise (PyTorch's powi).
//           s ^ b with s == 1 is 1 everywhere (NaN exponents included), as PyTorch fills it.
// Backward  scalar p: dL/da = dL/dout * p * a^(p-1)   (p == 0: zero; p == 1: dL/dout; p == 2:
//           2a dL/dout).
//           tensor b: d(a^b)/da = b * a^(b-1) and d(a^b)/db = a^b * log(a), with PyTorch 1.13's
//           two special cases:
//             dL/da = sum_to(where(b == 0, 0, dL/dout * b * a^(b-1)), a.shape)
//             dL/db = sum_to(where(a == 0 and b >= 0, 0, dL/dout * out * log(a)), b.shape)
//           (a^0 = 1 is flat in a even where a^-1 is infinite; 0^b is 0 or 1 for b >= 0, flat
//           in b, where log(0) = -inf would give 0 * -inf = NaN). A negative base has no real
//           logarithm: dL/db is NaN there, as in PyTorch. log(a) is taken in a's own float
//           dtype (float32 for a float32 or integer base, even with a float64 exponent), as
//           PyTorch 1.13 takes it.
//           number s: dL/db = dL/dout * out * log(s), 0 where s == 0 and b >= 0.
// Shapes    unchanged (scalar p); broadcast(a.shape, b.shape) (tensor b).
// Dtypes    result_type(a, p) with p a number: a float tensor keeps its dtype; an integer tensor
//           stays integer for an integer p (exact powers, wrapping as repeated multiplication
//           does; a negative p is an error, as in PyTorch) and becomes float32 for a floating p.
//           A bool tensor with an integer p is int64 (PyTorch's promotion of bool and a number).
//           Tensor b: result_type(a, b); bool ^ bool is refused (PyTorch has no bool pow).
//           Number s: result_type(s, b) (2 ^ int64 is int64, 2.5 ^ int64 float32). Each
//           gradient in its input's dtype.
// Saved     a, p (scalar p); a, b and the output (tensor b; the output only when b needs a
//           gradient); b and the output (number s).
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Pow) (x * x for p = 2, sqrt for 0.5, integer
//           powers by kernels/base/scalar_math.h int_pow); binary(Pow) for a tensor exponent
//           (std::pow, or scalar_math.h int_pow_any); the backward uses compare, where, log.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include <cmath>

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

// pow(a, b) with a tensor exponent, and pow(s, b) (base a number: input 0 is then absent).
struct PowTensorBackward final : ops::Node {
  ops::SavedTensor a, b, out;
  bool scalar_base = false;
  Scalar base = 0.0;  // when scalar_base
  std::string name() const override { return "PowTensorBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor e = b.unpack(*this, "exponent");
    const Tensor zero = ops::scalar_like(0.0, g);
    // In the forward's dtype (g's): a float32 base with a float64 exponent computes in float64.
    const Tensor ev = cast_for_compute(e, g.dtype());
    if (scalar_base) {
      const Tensor y = out.unpack(*this, "result");
      const Tensor gb = mul(g, mul(y, ops::scalar_like(std::log(base.to_double()), g)));
      if (base.to_double() == 0.0) return {where(ge(ev, 0.0), zero, gb)};
      return {gb};
    }
    Tensor ga, gb;
    const Tensor av = cast_for_compute(a.unpack(*this, "self"), g.dtype());
    if (needs_input_grad(0)) {
      // b * a^(b - 1), 0 where b == 0.
      const Tensor d = mul(ev, pow(av, sub(ev, 1.0)));
      ga = sum_to(where(eq(ev, 0.0), zero, mul(g, d)), input_shapes[0]);
    }
    if (needs_input_grad(1)) {
      const Tensor y = out.unpack(*this, "result");
      const Tensor flat = logical_and(eq(av, 0.0), ge(ev, 0.0));
      // log of the base in the base's own float dtype, as PyTorch 1.13 takes it (self.log()):
      // a float32 (or integer) base raised to a float64 exponent has its logarithm rounded to
      // float32 before the float64 product.
      const Tensor log_a = log(a.unpack(*this, "self"));
      gb = sum_to(mul(g, where(flat, zero, mul(y, log_a))), input_shapes[1]);
    }
    return {ga, gb};
  }
  void release_saved() override {
    a.reset();
    b.reset();
    out.reset();
  }
};
}  // namespace

Tensor pow(const Tensor& a, const Scalar& p) {
  ops::check_defined("pow", a);
  const DType dt = result_type(a, p);
  if (!is_floating(dt)) {
    EMBER_CHECK(p.to_int() >= 0, "pow: integers to negative integer powers are not allowed (as "
                "in PyTorch): convert the tensor with .to(ember::kFloat32) first, or use a "
                "floating exponent (", p.to_int(), ".0)");
    check_scalar_fits("pow", p, dt);  // uint8.pow(256), int32.pow(2**31): refused, as in PyTorch
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

Tensor pow(const Tensor& a, const Tensor& exponent) {
  ops::check_defined("pow", a, "base");
  ops::check_defined("pow", exponent, "exponent");
  ops::check_same_device("pow", a, exponent);
  const DType dt = result_type(a, exponent);
  EMBER_CHECK(dt != kBool, "pow: not defined for bool base and bool exponent (as in PyTorch): "
                           "convert one of them with .to(ember::kInt64) or .to(ember::kFloat32)");
  Tensor out = ops::binary_forward(kernels::BinaryOp::Pow, a, exponent, "pow", 1.0, dt);
  if (autograd::grad_needed({&a, &exponent})) {
    auto node = std::make_shared<PowTensorBackward>();
    node->a = ops::SavedTensor(a);
    node->b = ops::SavedTensor(exponent);
    if (exponent.requires_grad()) node->out = ops::SavedTensor(out);
    autograd::connect(node, out, {&a, &exponent});
  }
  return out;
}

Tensor pow(const Scalar& base, const Tensor& exponent) {
  ops::check_defined("pow", exponent, "exponent");
  const DType dt = result_type(base, exponent);
  EMBER_CHECK(dt != kBool, "pow: not defined for a bool base and a bool exponent (as in "
                           "PyTorch): convert the exponent with .to(ember::kInt64)");
  Tensor out;
  if (base.to_double() == 1.0 && !base.is_bool()) {
    // 1 ^ anything is 1, NaN included: PyTorch fills the output rather than calling pow.
    out = full(exponent.shape(), 1.0, TensorOptions(dt).device(exponent.device()));
  } else {
    out = ops::binary_forward(kernels::BinaryOp::Pow, wrapped_scalar(base, dt, exponent.device()),
                              exponent, "pow", 1.0, dt);
  }
  if (autograd::grad_needed({&exponent})) {
    auto node = std::make_shared<PowTensorBackward>();
    node->b = ops::SavedTensor(exponent);
    node->out = ops::SavedTensor(out);
    node->scalar_base = true;
    node->base = base;
    autograd::connect(node, out, {&exponent});
  }
  return out;
}

}  // namespace ember
