// ember/core/ops/common.h — what every op card needs: argument checks with good messages,
// output allocation, and the forward helpers for elementwise ops.
#pragma once

#include <string>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/iter.h"
#include "core/ops.h"
#include "kernels/cpu/elementwise.h"

namespace ember::ops {

using autograd::Node;
using autograd::SavedTensor;

inline void check_defined(const char* op, const Tensor& t, const char* what = "input") {
  EMBER_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

// "add: tensor a is on cuda:0 but b is on cpu: move one with .to()".
inline void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  EMBER_CHECK_T(DeviceError, a.device() == b.device(), op, ": tensors on different devices (",
                a.device(), " and ", b.device(), "): move one with .to(", a.device(), ")");
}

inline void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ (", a.dtype(), " and ", b.dtype(),
              "): convert one with .to(ember::k", a.dtype() == kFloat64 ? "Float64" : "Float32",
              ")");
}

inline void check_float(const char* op, const Tensor& t) {
  EMBER_CHECK(is_floating(t.dtype()), op, ": expected a float32 or float64 tensor, got ",
              t.dtype(), " (convert with .to(ember::kFloat32))");
}

// The CUDA kernels arrive with the CUDA backend; until then a CUDA tensor cannot reach an op
// (no CUDA allocator is registered), but keep the error explicit.
inline void check_cpu(const char* op, const Tensor& t) {
  EMBER_CHECK_T(DeviceError, t.device().is_cpu(), op, ": no ", t.device(),
                " kernel in this build: move the tensor with .cpu()");
}

// A fresh contiguous output with `like`'s dtype and device.
inline Tensor new_output(const Shape& shape, const Tensor& like) {
  return empty(shape, like.options());
}
inline Tensor new_output(const Shape& shape, const Tensor& like, DType dtype) {
  return empty(shape, TensorOptions(dtype).device(like.device()));
}

// out = op(a), elementwise, same shape.
Tensor unary_forward(kernels::cpu::UnaryOp op, const Tensor& a, const char* name, double param = 0.0);
// out = a (op) b with broadcasting; a and b must share dtype and device.
Tensor binary_forward(kernels::cpu::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double alpha = 1.0);

// A scalar as a 0-d tensor of t's dtype and device (so `x * 2.0` broadcasts).
inline Tensor scalar_like(double v, const Tensor& t) { return scalar_tensor(v, t.options()); }

}  // namespace ember::ops
