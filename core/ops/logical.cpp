// Op card: isnan, isinf, isfinite, logical_and, logical_or, logical_xor, logical_not — tests of
// each element and the logic of truth values, as bool tensors.
//
// Math      isnan(x) = x != x (only a NaN differs from itself); isinf(x) = |x| == inf;
//           isfinite(x) = |x| < inf (false for NaN and +-inf). Integers and bools are never NaN
//           or infinite.
//           The logical ops read each element as a truth value, x != 0 (NaN is true, -0.0
//           false): logical_and(a, b) = a && b, logical_or = a || b, logical_xor = a != b,
//           logical_not(a) = !a.
// Backward  none. Every output is a step function of its inputs and a bool tensor carries no
//           gradient, so the output never requires grad and no node is recorded.
// Shapes    the tests and logical_not keep a's shape; the two-operand ops broadcast
//           (broadcast(a.shape, b.shape)), a and b on one device.
// Dtypes    any input dtypes; the output is kBool. The two-operand ops convert both operands
//           to result_type(a, b) before reading their truth, as PyTorch does: a float64 0-d
//           1e-310 beside a float32 tensor becomes float32 0, which is false.
// Saved     nothing.
// Kernels   no kernel of their own: compare (Ne, Eq, Lt) from kernels/cpu/elementwise.cpp,
//           unary(Abs) for isinf / isfinite, where() to combine two truth tensors (and: a ? b :
//           false, or: a ? true : b) and fill for integer inputs of the tests.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include <limits>

#include "core/ops/common.h"

namespace ember {

namespace {
// x != 0 in x's own dtype: a 0-d zero of that dtype, so nothing is promoted.
Tensor truth(const Tensor& x) { return ne(x, zeros({}, x.options())); }

enum class Logic { And, Or, Xor };

Tensor logical_binary(const Tensor& a, const Tensor& b, Logic op, const char* name) {
  ops::check_defined(name, a, "first operand");
  ops::check_defined(name, b, "second operand");
  ops::check_same_device(name, a, b);
  broadcast_shapes(a.shape(), b.shape(), name);  // the op's own message for shapes that differ
  const DType dt = result_type(a, b);
  const Tensor x = truth(cast_for_compute(a.detach(), dt));
  const Tensor y = truth(cast_for_compute(b.detach(), dt));
  switch (op) {
    case Logic::And: return where(x, y, zeros({}, x.options()));
    case Logic::Or: return where(x, ones({}, x.options()), y);
    case Logic::Xor: return ne(x, y);
  }
  return Tensor();
}

Tensor constant_bool(const Tensor& a, bool value) {
  return full(a.shape(), value ? 1.0 : 0.0, TensorOptions(kBool).device(a.device()));
}
}  // namespace

Tensor isnan(const Tensor& a) {
  ops::check_defined("isnan", a);
  if (!is_floating(a.dtype())) return constant_bool(a, false);
  const Tensor x = a.detach();
  return ne(x, x);
}

Tensor isinf(const Tensor& a) {
  ops::check_defined("isinf", a);
  if (!is_floating(a.dtype())) return constant_bool(a, false);
  return eq(abs(a.detach()), std::numeric_limits<double>::infinity());
}

Tensor isfinite(const Tensor& a) {
  ops::check_defined("isfinite", a);
  if (!is_floating(a.dtype())) return constant_bool(a, true);
  return lt(abs(a.detach()), std::numeric_limits<double>::infinity());
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return logical_binary(a, b, Logic::And, "logical_and");
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  return logical_binary(a, b, Logic::Or, "logical_or");
}

Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return logical_binary(a, b, Logic::Xor, "logical_xor");
}

Tensor logical_not(const Tensor& a) {
  ops::check_defined("logical_not", a);
  return eq(a.detach(), zeros({}, a.options()));
}

}  // namespace ember
