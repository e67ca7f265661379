// Op card: eq, ne, lt, le, gt, ge — elementwise comparisons, NumPy broadcasting.
//
// Math      out = (a == b), (a != b), (a < b), (a <= b), (a > b), (a >= b), as bool. IEEE rules
//           for NaN: every comparison with a NaN is false except ne, which is true.
// Backward  none. The output is a step function of a and b (its derivative is zero wherever it
//           exists) and a bool tensor cannot carry a gradient, so the output never requires grad
//           and no node is recorded. To differentiate through a choice, use where(cond, a, b).
// Shapes    broadcast(a.shape, b.shape); a, b on one device; the output is kBool.
// Dtypes    a and b (any dtypes, bool included) are compared in result_type(a, b): int64 [3] vs
//           2.5 compares as float32 (2 < 2.5); uint8 [3] vs 300 compares as uint8, where 300 is
//           44 (as in PyTorch).
// Saved     nothing.
// Kernels   CPU: kernels/cpu/elementwise.cpp compare.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/elementwise.h"

namespace ember {

namespace {
Tensor compare_forward(kernels::CompareOp op, const Tensor& a, const Tensor& b,
                       const char* name) {
  ops::check_defined(name, a, "first operand");
  ops::check_defined(name, b, "second operand");
  ops::check_same_device(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  const DType dt = result_type(a, b);
  const Tensor x = cast_for_compute(a, dt), y = cast_for_compute(b, dt);
  Tensor out = ops::new_output(shape, a, kBool);
  const auto L = make_loop<3>(shape, {&out, &x, &y}, name);
  KernelsOn(a)->elementwise.compare(op, dt, L, out.data_ptr<bool>(), x.raw_data(), y.raw_data());
  return out;
}

Tensor compare_scalar(kernels::CompareOp op, const Tensor& a, const Scalar& b, const char* name) {
  ops::check_defined(name, a, "first operand");
  return compare_forward(op, a, ops::wrap(b, a), name);
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
  return compare_forward(kernels::CompareOp::Eq, a, b, "eq");
}

Tensor ne(const Tensor& a, const Tensor& b) {
  return compare_forward(kernels::CompareOp::Ne, a, b, "ne");
}

Tensor lt(const Tensor& a, const Tensor& b) {
  return compare_forward(kernels::CompareOp::Lt, a, b, "lt");
}

Tensor le(const Tensor& a, const Tensor& b) {
  return compare_forward(kernels::CompareOp::Le, a, b, "le");
}

Tensor gt(const Tensor& a, const Tensor& b) {
  return compare_forward(kernels::CompareOp::Gt, a, b, "gt");
}

Tensor ge(const Tensor& a, const Tensor& b) {
  return compare_forward(kernels::CompareOp::Ge, a, b, "ge");
}

Tensor eq(const Tensor& a, const Scalar& b) {
  return compare_scalar(kernels::CompareOp::Eq, a, b, "eq");
}
Tensor ne(const Tensor& a, const Scalar& b) {
  return compare_scalar(kernels::CompareOp::Ne, a, b, "ne");
}
Tensor lt(const Tensor& a, const Scalar& b) {
  return compare_scalar(kernels::CompareOp::Lt, a, b, "lt");
}
Tensor le(const Tensor& a, const Scalar& b) {
  return compare_scalar(kernels::CompareOp::Le, a, b, "le");
}
Tensor gt(const Tensor& a, const Scalar& b) {
  return compare_scalar(kernels::CompareOp::Gt, a, b, "gt");
}
Tensor ge(const Tensor& a, const Scalar& b) {
  return compare_scalar(kernels::CompareOp::Ge, a, b, "ge");
}

}  // namespace ember
