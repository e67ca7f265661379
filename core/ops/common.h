// ember/core/ops/common.h — what every op card needs: argument checks with good messages,
// output allocation, and the forward helpers for elementwise ops.
#pragma once

#include <string>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/backend.h"
#include "core/iter.h"
#include "core/ops.h"
#include "core/promotion.h"
#include "kernels/elementwise.h"

namespace ember::ops {

using autograd::Node;
using autograd::SavedTensor;

inline void check_defined(const char* op, const Tensor& t, const char* what = "input") {
  EMBER_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

// "add: tensors on different devices (cuda:0 and cpu): move one with .to(cuda:0)".
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

// A fresh contiguous output with `like`'s dtype and device.
inline Tensor new_output(const Shape& shape, const Tensor& like) {
  return empty(shape, like.options());
}
inline Tensor new_output(const Shape& shape, const Tensor& like, DType dtype) {
  return empty(shape, TensorOptions(dtype).device(like.device()));
}

// out = op(a), elementwise, same shape, computed in a's dtype.
Tensor unary_forward(kernels::UnaryOp op, const Tensor& a, const char* name, double param = 0.0);
// The same computed in `dtype` (a converted first): the float ops on integer inputs.
Tensor unary_forward(kernels::UnaryOp op, const Tensor& a, const char* name, double param,
                     DType dtype);
// The dtype of a float-valued op on `t` (exp, log, true division...): t's own when it is
// floating, the default float dtype (float32) for integers and bools.
inline DType float_result(DType t) { return is_floating(t) ? t : default_dtype(); }

// out = a (op) b with broadcasting, computed in result_type(a, b) (core/promotion.h).
Tensor binary_forward(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double alpha = 1.0);
// The same computed in `dtype`: both operands converted to it first (no autograd record: the
// caller's node records the op, and the engine returns each gradient in its input's dtype).
Tensor binary_forward(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const char* name,
                      double alpha, DType dtype);

// dst = src elementwise (same shape, same device; src converted to dst's dtype) with the copy
// kernel of their device. Unlike Tensor::copy_ it does not refuse a src that requires grad:
// op cards use it inside their own forward, where the op's node is the record.
void copy_values(const Tensor& dst, const Tensor& src, const char* op);

// Position (row-major) of the first value of a contiguous int64 `index` outside [0, size), or
// -1. On a GPU this waits for the device: the host needs the answer to raise a clear error.
int64_t first_out_of_range(const Tensor& index, int64_t size);

// A value as a 0-d tensor of t's dtype and device, for backward formulas (2 * x in pow's).
inline Tensor scalar_like(double v, const Tensor& t) { return scalar_tensor(v, t.options()); }

// A user's Scalar operand (x * 2) as a 0-d tensor on t's device that promotes as a number, made
// in the dtype the op with t computes in.
inline Tensor wrap(const Scalar& s, const Tensor& t) { return wrapped_scalar_for(s, t); }

// Throws "<op>: integer division by zero ..." when the integer tensor `divisor` holds a zero.
// Integer division by zero has no answer (the CPU would trap and kill the process; a GPU
// returns garbage), so it is refused on every device, as PyTorch refuses it on the CPU. On a GPU
// this waits for the device: the host needs the answer to raise.
void check_no_zero_divisor(const char* op, const Tensor& divisor);

}  // namespace ember::ops
