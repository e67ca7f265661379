// Op card: add_, sub_, mul_, div_, copy_, fill_, zero_ — in-place updates of a tensor.
//
// Math      x.add_(y, alpha): x = x + alpha * y     x.sub_(y, alpha): x = x - alpha * y
//           x.mul_(y): x = x * y     x.div_(y[, mode]): x = x / y (true, "trunc" or "floor",
//           as div)     x.copy_(src): x = src     x.fill_(v): x = v     x.zero_(): x = 0.
//           y (src) is broadcast to x's shape; a Scalar y is a number. x keeps its identity:
//           every view of its storage sees the new values, and its version counter goes up.
// Backward  none: an in-place update of a tensor that requires grad is refused while the tape
//           records (the values a backward formula saved would change under it: the saved
//           tensor's version check, core/autograd/node.h, would catch it later). Run updates
//           under NoGradGuard (optimizer steps do) or write x = x + y.
// Shapes    y must broadcast to x.shape (x itself cannot grow).
// Dtypes    the op's result_type(x, y) (div_ without a mode: float for integers), which must fit
//           x's dtype (can_cast, core/promotion.h): a float32 x takes a float64 y (computed in
//           float64, stored rounded), an int64 x refuses add_(0.5) and div_(2) — use
//           div_(2, "floor") — and a bool x refuses every number. copy_ and fill_ convert to
//           x's dtype whatever it is.
// Memory    core/overlap.h: x may not have elements that share memory (an expand()ed view; not
//           checked for fill_/zero_, which write one value), and y may not overlap x in part
//           (x.add_(x.t()), x.slice(0, 1, 6).add_(x.slice(0, 0, 5))); y == x is fine. Where
//           the layouts are too irregular to decide, y is copied first.
// Saved     nothing.
// Kernels   CPU: kernels/cpu/elementwise.cpp binary, copy, fill (x is operand 0 and 1 of the loop).
//           CUDA: the same functions in kernels/cuda/elementwise.cu; copies between devices
//           through cuda::copy_bytes (kernels/cuda/runtime.cu).
#include "core/cuda.h"
#include "core/ops/common.h"
#include "core/overlap.h"
#include "kernels/elementwise.h"

namespace ember {

namespace {
void check_inplace_allowed(const char* op, const Tensor& self, const Tensor* other = nullptr) {
  if (!is_grad_enabled()) return;
  if (self.requires_grad() || (other && other->defined() && other->requires_grad())) {
    throw AutogradError(
        std::string(op) + ": in-place update of a tensor that requires grad while the tape is "
        "recording. Do it under ember::NoGradGuard (as an optimizer step does), or use the "
        "out-of-place op (x = x + y)");
  }
}

// Lines `other` up with self for an in-place op: same device, broadcastable to self's shape.
void check_inplace_operand(const char* op, const Tensor& self, const Tensor& other) {
  ops::check_defined(op, self, "the tensor to update");
  ops::check_defined(op, other, "the operand");
  EMBER_CHECK_T(DeviceError, self.device() == other.device(), op, ": self is on ", self.device(),
                " but the other tensor is on ", other.device(), ": move one with .to()");
  const Shape b = broadcast_shapes(self.shape(), other.shape(), op);
  EMBER_CHECK(b == self.shape(), op, ": a tensor of shape ", shape_str(other.shape()),
              " cannot be broadcast into the in-place target of shape ", shape_str(self.shape()));
}

// The out-of-place op an in-place one computes: what x = x (op) y would give.
Tensor out_of_place(kernels::BinaryOp op, const Tensor& x, const Tensor& y, double alpha,
                    const std::string& mode) {
  switch (op) {
    case kernels::BinaryOp::Add: return alpha == 1.0 ? add(x, y) : add(x, mul(y, Scalar(alpha)));
    case kernels::BinaryOp::Sub: return alpha == 1.0 ? sub(x, y) : sub(x, mul(y, Scalar(alpha)));
    case kernels::BinaryOp::Mul: return mul(x, y);
    default: return div(x, y, mode);
  }
}

void inplace_binary(Tensor& self, const Tensor& other, kernels::BinaryOp op, double alpha,
                    const std::string& mode, const char* name) {
  check_inplace_allowed(name, self, &other);
  check_inplace_operand(name, self, other);
  EMBER_CHECK(op != kernels::BinaryOp::Sub || (self.dtype() != kBool && other.dtype() != kBool),
              name, ": subtraction with a bool tensor is not supported (as in PyTorch): convert "
              "it with .to(ember::kInt64) first");
  check_no_internal_overlap(name, self);
  const Tensor y = input_safe_to_read(name, self, other);
  const bool true_div = op == kernels::BinaryOp::Div && mode.empty();
  const DType dt = true_div ? ops::float_result(result_type(self, y)) : result_type(self, y);
  EMBER_CHECK(can_cast(dt, self.dtype()), name, ": the result is ", dt, " and cannot be stored "
              "in the ", self.dtype(), " tensor being updated (as in PyTorch)",
              op == kernels::BinaryOp::Div && !is_floating(self.dtype())
                  ? ": use a rounding mode (x.div_(y, \"floor\")) or the out-of-place x / y"
                  : ": use the out-of-place op, or convert the tensor first");
  EMBER_CHECK(is_floating(dt) || alpha == static_cast<double>(static_cast<int64_t>(alpha)), name,
              ": alpha = ", alpha, " is not an integer, but the ", dt, " result has no fraction");
  NoGradGuard no_grad;
  if (dt == self.dtype() && dt != kBool) {
    // The common case: one kernel that reads and writes self in place.
    kernels::BinaryOp kop = op;
    if (op == kernels::BinaryOp::Div && !mode.empty()) {
      EMBER_CHECK(mode == "trunc" || mode == "floor", name, ": rounding_mode must be \"trunc\" "
                  "or \"floor\" (or left out for true division), got \"", mode, "\"");
      kop = mode == "trunc" ? kernels::BinaryOp::DivTrunc : kernels::BinaryOp::DivFloor;
      if (!is_floating(dt)) ops::check_no_zero_divisor(name, cast_for_compute(y, dt));
    }
    const Tensor o = cast_for_compute(y, dt);
    const auto L = make_loop<3>(self.shape(), {&self, &self, &o}, name);
    KernelsOn(self)->elementwise.binary(kop, dt, L, self.raw_data(), self.raw_data(), o.raw_data(),
                                        alpha);
  } else {
    // Another dtype (float32 x, float64 y) or bool: the out-of-place op, stored converted.
    ops::copy_values(self, out_of_place(op, self.detach(), y.detach(), alpha, mode), name);
  }
  self.bump_version();
}

// dst = src for two tensors on different devices. Bytes can only move between contiguous
// buffers of one dtype, so: bring src to dst's dtype and a contiguous layout of dst's shape on
// src's own device (nothing to do in the common case), move the bytes, and if dst itself is a
// strided view, land them in a contiguous buffer on dst's device and copy from there.
void copy_across_devices(Tensor& dst, const Tensor& src, bool non_blocking) {
  NoGradGuard no_grad;
  Tensor s = src.shape() == dst.shape() ? src : src.expand(dst.shape());
  if (s.dtype() != dst.dtype() || !s.is_contiguous()) {
    Tensor staged = empty(dst.shape(), TensorOptions(dst.dtype()).device(s.device()));
    staged.copy_(s);
    s = staged;
  }
  Tensor target = dst.is_contiguous() ? dst : empty(dst.shape(), TensorOptions(dst.dtype()).device(dst.device()));
  // Asynchronous only from or to pinned host memory (PyTorch's rule): pageable memory could be
  // reused by the host before the GPU has read it.
  const bool host_pinned = (s.device().is_cpu() && s.storage()->pinned()) ||
                           (target.device().is_cpu() && target.storage()->pinned());
  cuda::copy_bytes(target.raw_data(), target.device(), s.raw_data(), s.device(),
                   static_cast<size_t>(s.numel()) * s.element_size(), non_blocking && host_pinned);
  if (!target.is_same(dst)) dst.copy_(target);
}
}  // namespace

Tensor& Tensor::fill_(const Scalar& value) {
  check_inplace_allowed("fill_", *this);
  check_scalar_fits("fill_", value, dtype());
  // A value the dtype cannot hold is converted as copy_ converts (PyTorch's fill_ does too).
  const auto L = make_loop<1>(shape(), {this}, "fill_");
  if (value.is_integral() && dtype() == kInt64) {
    // Copied from an int64 0-d tensor: through a double, values above 2^53 would be rounded.
    ops::copy_values(*this, wrapped_scalar(value, kInt64, device()), "fill_");
  } else {
    KernelsOn(*this)->elementwise.fill(dtype(), L, raw_data(), value.to_double());
  }
  bump_version();
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0.0); }

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  check_inplace_allowed("copy_", *this, &src);
  ops::check_defined("copy_", src, "source");
  const Shape b = broadcast_shapes(shape(), src.shape(), "copy_");
  EMBER_CHECK(b == shape(), "copy_: source of shape ", shape_str(src.shape()),
              " cannot be broadcast to the destination shape ", shape_str(shape()));
  if (device() != src.device()) {
    check_no_internal_overlap("copy_", *this);
    copy_across_devices(*this, src, non_blocking);
  } else {
    if (is_same(src)) return *this;  // x.copy_(x): nothing to do
    check_no_internal_overlap("copy_", *this);
    const Tensor from = input_safe_to_read("copy_", *this, src);
    const auto L = make_loop<2>(shape(), {this, &from}, "copy_");
    KernelsOn(*this)->elementwise.copy(dtype(), from.dtype(), L, raw_data(), from.raw_data());
  }
  bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& o, double alpha) {
  inplace_binary(*this, o, kernels::BinaryOp::Add, alpha, "", "add_");
  return *this;
}
Tensor& Tensor::add_(const Scalar& v) { return add_(wrapped_scalar_for(v, *this)); }
Tensor& Tensor::sub_(const Tensor& o, double alpha) {
  inplace_binary(*this, o, kernels::BinaryOp::Sub, alpha, "", "sub_");
  return *this;
}
Tensor& Tensor::sub_(const Scalar& v) {
  EMBER_CHECK(!v.is_bool(), "sub_: subtraction with a bool is not supported (as in PyTorch): "
              "subtract 1 or 0");
  return sub_(wrapped_scalar_for(v, *this));
}
Tensor& Tensor::mul_(const Tensor& o) {
  inplace_binary(*this, o, kernels::BinaryOp::Mul, 1.0, "", "mul_");
  return *this;
}
Tensor& Tensor::mul_(const Scalar& v) { return mul_(wrapped_scalar_for(v, *this)); }
Tensor& Tensor::div_(const Tensor& o, const std::string& rounding_mode) {
  inplace_binary(*this, o, kernels::BinaryOp::Div, 1.0, rounding_mode, "div_");
  return *this;
}
Tensor& Tensor::div_(const Scalar& v, const std::string& rounding_mode) {
  return div_(wrapped_scalar_for(v, *this), rounding_mode);
}

}  // namespace ember
