// Op card: clamp, clamp_min, clamp_max — limit every element to [min, max].
//
// Math      clamp(a, min, max) = minimum(maximum(a, min), max), either bound optional:
//           clamp_min(a, m) = clamp(a, m, none), clamp_max(a, m) = clamp(a, none, m).
//           A NaN element stays NaN. When min > max every element becomes max (the second
//           step wins), as in PyTorch. A NaN bound makes every element NaN (maximum and minimum
//           let a NaN win) — except in clamp() given a single bound, where PyTorch 1.13 skips
//           a NaN bound and returns a unchanged; ember follows it there too.
// Backward  The output is a itself (slope 1) where min <= a <= max and a constant elsewhere:
//             dL/da = where(min <= a <= max, dL/dout, 0).
//           At a == min or a == max the derivative does not exist; the gradient passes there
//           (the bounds are inclusive, PyTorch 1.13's rule). A NaN element, or any element
//           under a NaN bound, compares false and gets 0.
// Shapes    unchanged.
// Dtypes    a float tensor keeps its dtype. An integer or bool tensor computes in the dtype the
//           bounds promote it to (core/promotion.h, bounds count as numbers): int64 with 2.5 is
//           float32, bool with 0 is int64, uint8 with 7 stays uint8. A bound must fit that
//           dtype (300 does not fit uint8, 1e300 not float32; -1 fits uint8 as 255, as in
//           PyTorch). bool with bool bounds stays bool, which PyTorch refuses, and so does ember.
// Saved     a (the backward compares it with the bounds) and the bounds.
// Kernels   no kernel of its own: kernels/cpu/elementwise.cpp binary(Maximum), then
//           binary(Minimum), each against the bound as a 0-d tensor; the backward uses compare
//           and where.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include <cmath>

#include "core/ops/common.h"

namespace ember {

namespace {
using kernels::BinaryOp;

bool is_nan(const std::optional<Scalar>& s) {
  return s && s->is_floating() && std::isnan(s->to_double());
}

struct ClampBackward final : ops::Node {
  ops::SavedTensor input;
  std::optional<Scalar> lo, hi;
  const char* label = "ClampBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor a = input.unpack(*this, "self");
    const Tensor zero = ops::scalar_like(0.0, g);
    // Compared as PyTorch compares them: a against each bound as a number (a float32 a meets
    // the bound rounded to float32).
    Tensor ga = g;
    if (hi) ga = where(le(a, *hi), ga, zero);
    if (lo) ga = where(ge(a, *lo), ga, zero);
    return {ga};
  }
  void release_saved() override { input.reset(); }
};

Tensor clamp_impl(const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi,
                  const char* op, const char* node_label) {
  ops::check_defined(op, a);
  EMBER_CHECK(lo || hi, op, ": at least one of min and max must be given (pass std::nullopt ",
              "for the bound you leave out, not both)");
  // The dtype: a float tensor keeps its own; otherwise the bounds take part as numbers.
  DType dt = a.dtype();
  if (!is_floating(dt)) {
    if (lo) dt = promote_types(dt, result_type(a, *lo));
    if (hi) dt = promote_types(dt, result_type(a, *hi));
  }
  EMBER_CHECK(dt != kBool, op,
              ": not defined for a bool tensor with bool bounds (as in "
              "PyTorch): convert the tensor with .to(ember::kInt64) or give integer bounds");
  if (lo) check_scalar_fits(op, *lo, dt);
  if (hi) check_scalar_fits(op, *hi, dt);
  Tensor out = cast_for_compute(a, dt);
  if (lo)
    out = ops::binary_forward(BinaryOp::Maximum, out, wrapped_scalar(*lo, dt, a.device()), op, 1.0,
                              dt);
  if (hi)
    out = ops::binary_forward(BinaryOp::Minimum, out, wrapped_scalar(*hi, dt, a.device()), op, 1.0,
                              dt);
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<ClampBackward>();
    node->input = ops::SavedTensor(a);
    node->lo = lo;
    node->hi = hi;
    node->label = node_label;
    autograd::connect(node, out, {&a});
  }
  return out;
}
}  // namespace

Tensor clamp(const Tensor& a, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  std::optional<Scalar> lo = min, hi = max;
  // PyTorch 1.13's torch.clamp with one bound ignores that bound when it is NaN (with both, or
  // in clamp_min / clamp_max, a NaN bound fills the output with NaN): the same here. The
  // backward still compares against the NaN bound, so the gradient is 0, as PyTorch's.
  if (lo.has_value() != hi.has_value() && (is_nan(lo) || is_nan(hi))) {
    const Scalar bound = lo ? *lo : *hi;
    ops::check_defined("clamp", a);
    DType dt = is_floating(a.dtype()) ? a.dtype() : promote_types(a.dtype(), result_type(a, bound));
    Tensor y = clone(cast_for_compute(a.detach(), dt));
    if (autograd::grad_needed({&a})) {
      auto node = std::make_shared<ClampBackward>();
      node->input = ops::SavedTensor(a);
      node->lo = lo;
      node->hi = hi;
      autograd::connect(node, y, {&a});
    }
    return y;
  }
  return clamp_impl(a, lo, hi, "clamp", "ClampBackward");
}

Tensor clamp_min(const Tensor& a, const Scalar& min) {
  return clamp_impl(a, min, std::nullopt, "clamp_min", "ClampMinBackward");
}

Tensor clamp_max(const Tensor& a, const Scalar& max) {
  return clamp_impl(a, std::nullopt, max, "clamp_max", "ClampMaxBackward");
}

}  // namespace ember
