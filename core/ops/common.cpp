#include "core/ops/common.h"

namespace ember::ops {

Tensor unary_forward(kernels::cpu::UnaryOp op, const Tensor& a, const char* name, double param) {
  check_defined(name, a);
  check_cpu(name, a);
  Tensor out = new_output(a.shape(), a);
  const auto L = make_loop<2>(a.shape(), {&out, &a}, name);
  kernels::cpu::unary(op, a.dtype(), L, out.raw_data(), a.raw_data(), param);
  return out;
}

Tensor binary_forward(kernels::cpu::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double alpha) {
  check_defined(name, a, "first operand");
  check_defined(name, b, "second operand");
  check_same_device(name, a, b);
  check_same_dtype(name, a, b);
  check_cpu(name, a);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = new_output(shape, a);
  const auto L = make_loop<3>(shape, {&out, &a, &b}, name);
  kernels::cpu::binary(op, a.dtype(), L, out.raw_data(), a.raw_data(), b.raw_data(), alpha);
  return out;
}

}  // namespace ember::ops
