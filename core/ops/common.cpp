#include "core/ops/common.h"

#include "core/backend.h"
#include "kernels/index.h"

namespace ember::ops {

Tensor unary_forward(kernels::UnaryOp op, const Tensor& a, const char* name, double param) {
  check_defined(name, a);
  return unary_forward(op, a, name, param, a.dtype());
}

Tensor unary_forward(kernels::UnaryOp op, const Tensor& a, const char* name, double param,
                     DType dtype) {
  check_defined(name, a);
  const Tensor x = cast_for_compute(a, dtype);
  Tensor out = new_output(x.shape(), x);
  const auto L = make_loop<2>(x.shape(), {&out, &x}, name);
  KernelsOn(x)->elementwise.unary(op, dtype, L, out.raw_data(), x.raw_data(), param);
  return out;
}

Tensor binary_forward(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double alpha) {
  check_defined(name, a, "first operand");
  check_defined(name, b, "second operand");
  return binary_forward(op, a, b, name, alpha, result_type(a, b));
}

Tensor binary_forward(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double alpha, DType dtype) {
  check_defined(name, a, "first operand");
  check_defined(name, b, "second operand");
  check_same_device(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  const Tensor x = cast_for_compute(a, dtype), y = cast_for_compute(b, dtype);
  Tensor out = new_output(shape, x, dtype);
  const auto L = make_loop<3>(shape, {&out, &x, &y}, name);
  KernelsOn(x)->elementwise.binary(op, dtype, L, out.raw_data(), x.raw_data(), y.raw_data(), alpha);
  return out;
}

void check_no_zero_divisor(const char* op, const Tensor& divisor) {
  if (is_floating(divisor.dtype()) || divisor.numel() == 0) return;
  // eq(divisor, 0) is a bool tensor; its sum counts the zeros (one device round trip on a GPU).
  const Tensor zeros_found = sum(eq(divisor.detach(), Scalar(0)));
  const auto n = static_cast<int64_t>(zeros_found.item());
  if (n == 0) return;
  throw ValueError(detail::concat(
      op, ": integer division by zero (the ", divisor.dtype(), " divisor of shape ",
      shape_str(divisor.shape()), " holds ", n, " zero", n == 1 ? "" : "s",
      "). Integers have no value for x / 0: divide as floats (true division, or convert with "
      ".to(ember::kFloat32)), or keep zeros out of the divisor"));
}

void copy_values(const Tensor& dst, const Tensor& src, const char* op) {
  const auto L = make_loop<2>(dst.shape(), {&dst, &src}, op);
  KernelsOn(dst)->elementwise.copy(dst.dtype(), src.dtype(), L, dst.raw_data(), src.raw_data());
}

int64_t first_out_of_range(const Tensor& index, int64_t size) {
  return KernelsOn(index)->index.first_out_of_range(index.data_ptr<int64_t>(), index.numel(), size,
                                                    false, 0);
}

}  // namespace ember::ops
