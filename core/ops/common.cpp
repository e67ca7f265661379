#include "core/ops/common.h"

#include "core/cuda.h"
#include "kernels/cpu/index.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/index.h"

namespace ember::ops {

Tensor unary_forward(kernels::UnaryOp op, const Tensor& a, const char* name, double param) {
  check_defined(name, a);
  Tensor out = new_output(a.shape(), a);
  const auto L = make_loop<2>(a.shape(), {&out, &a}, name);
  if (a.is_cuda()) {
    cuda::DeviceGuard guard(a.device());
    kernels::cuda::unary(op, a.dtype(), L, out.raw_data(), a.raw_data(), param);
  } else {
    kernels::cpu::unary(op, a.dtype(), L, out.raw_data(), a.raw_data(), param);
  }
  return out;
}

Tensor binary_forward(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double alpha) {
  check_defined(name, a, "first operand");
  check_defined(name, b, "second operand");
  check_same_device(name, a, b);
  check_same_dtype(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = new_output(shape, a);
  const auto L = make_loop<3>(shape, {&out, &a, &b}, name);
  if (a.is_cuda()) {
    cuda::DeviceGuard guard(a.device());
    kernels::cuda::binary(op, a.dtype(), L, out.raw_data(), a.raw_data(), b.raw_data(), alpha);
  } else {
    kernels::cpu::binary(op, a.dtype(), L, out.raw_data(), a.raw_data(), b.raw_data(), alpha);
  }
  return out;
}

void copy_values(const Tensor& dst, const Tensor& src, const char* op) {
  const auto L = make_loop<2>(dst.shape(), {&dst, &src}, op);
  if (dst.is_cuda()) {
    cuda::DeviceGuard guard(dst.device());
    kernels::cuda::copy(dst.dtype(), src.dtype(), L, dst.raw_data(), src.raw_data());
  } else {
    kernels::cpu::copy(dst.dtype(), src.dtype(), L, dst.raw_data(), src.raw_data());
  }
}

int64_t first_out_of_range(const Tensor& index, int64_t size) {
  if (index.is_cuda()) {
    cuda::DeviceGuard guard(index.device());
    return kernels::cuda::first_out_of_range(index.data_ptr<int64_t>(), index.numel(), size);
  }
  return kernels::cpu::first_out_of_range(index.data_ptr<int64_t>(), index.numel(), size);
}

}  // namespace ember::ops
