// Op card: where, masked_fill — pick each element from one of two tensors by a bool condition.
//
// Math      where(cond, a, b) = cond ? a : b, elementwise, cond, a and b broadcast together.
//           masked_fill(a, mask, v) = where(mask, v, a): a composite, its gradient is where's.
//           where(cond, s, b), where(cond, a, s), where(cond, s, t) with numbers s, t: each
//           number becomes a 0-d tensor that counts as a number (core/promotion.h
//           wrapped_scalar), and the tensor form runs.
// Backward  out depends on a (with slope 1) exactly where cond is true and on b where it is false:
//             dL/da = sum_to(where(cond, dL/dout, 0), a.shape)
//             dL/db = sum_to(where(cond, 0, dL/dout), b.shape)
//           (sum_to undoes the broadcast of a or b). cond is bool: no gradient.
// Shapes    broadcast(cond.shape, a.shape, b.shape); cond kBool; all three on one device.
//           masked_fill: broadcast(a.shape, mask.shape), as PyTorch's out-of-place masked_fill.
// Dtypes    where: result_type(a, b) (an int64 a and a float32 b give float32); each gradient
//           in its input's dtype. masked_fill: a's dtype; the value must fit it (scalar_fits:
//           300 does not fit uint8) and is converted to it.
//           With a number: result_type(tensor, number), as PyTorch 1.13 promotes it (int64
//           with 2.5 is float32, uint8 with 7 stays uint8, -1 fits uint8 as 255, 300 does not
//           fit); two numbers: bool with bool is bool, integers int64, a float among them the
//           default float32. The number must fit the result (scalar_fits).
// Saved     cond.
// Kernels   CPU: kernels/cpu/elementwise.cpp where.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/elementwise.h"

namespace ember {

namespace {
struct WhereBackward final : ops::Node {
  ops::SavedTensor cond;
  std::string name() const override { return "WhereBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor c = cond.unpack(*this, "condition");
    const Tensor zero = ops::scalar_like(0.0, g);
    Tensor ga, gb;
    if (needs_input_grad(1)) ga = sum_to(where(c, g, zero), input_shapes[1]);
    if (needs_input_grad(2)) gb = sum_to(where(c, zero, g), input_shapes[2]);
    return {Tensor(), ga, gb};
  }
  void release_saved() override { cond.reset(); }
};
}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  ops::check_defined("where", cond, "condition");
  ops::check_defined("where", a, "first value tensor");
  ops::check_defined("where", b, "second value tensor");
  EMBER_CHECK(cond.dtype() == kBool, "where: the condition must be a bool tensor, got ",
              cond.dtype(), " (build one with a comparison such as x.gt(y), or convert with "
              ".to(ember::kBool))");
  ops::check_same_device("where", cond, a);
  ops::check_same_device("where", a, b);
  const Shape shape =
      broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape(), "where"), "where");
  const DType dt = result_type(a, b);
  const Tensor x = cast_for_compute(a, dt), y = cast_for_compute(b, dt);
  Tensor out = ops::new_output(shape, a, dt);
  const auto L = make_loop<4>(shape, {&out, &cond, &x, &y}, "where");
  KernelsOn(a)->elementwise.where(dt, L, out.raw_data(), cond.data_ptr<bool>(), x.raw_data(),
                                  y.raw_data());
  if (autograd::grad_needed({&a, &b})) {
    auto node = std::make_shared<WhereBackward>();
    node->cond = ops::SavedTensor(cond);
    autograd::connect(node, out, {&cond, &a, &b});
  }
  return out;
}

// The scalar forms: the number as a 0-d tensor of the result's dtype that promotes as a number,
// so the tensor form above picks the same dtype and records the same WhereBackward (the number
// never requires grad, so only the tensor operand gets a gradient).
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  ops::check_defined("where", cond, "condition");
  ops::check_defined("where", b, "second value tensor");
  const DType dt = result_type(a, b);
  check_scalar_fits("where", a, dt);
  return where(cond, wrapped_scalar(a, dt, b.device()), b);
}

Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  ops::check_defined("where", cond, "condition");
  ops::check_defined("where", a, "first value tensor");
  const DType dt = result_type(a, b);
  check_scalar_fits("where", b, dt);
  return where(cond, a, wrapped_scalar(b, dt, a.device()));
}

Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b) {
  ops::check_defined("where", cond, "condition");
  // Two numbers: the higher kind wins, bool < integer < float, and a float is the default float
  // dtype (float32), as torch.where(c, 1, 2.5) is.
  const auto dtype_of = [](const Scalar& s) {
    return s.is_bool() ? kBool : s.is_integral() ? kInt64 : default_dtype();
  };
  const DType dt = promote_types(dtype_of(a), dtype_of(b));
  check_scalar_fits("where", a, dt);
  check_scalar_fits("where", b, dt);
  return where(cond, wrapped_scalar(a, dt, cond.device()), wrapped_scalar(b, dt, cond.device()));
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value) {
  ops::check_defined("masked_fill", a);
  ops::check_defined("masked_fill", mask, "mask");
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill: the mask must be a bool tensor, got ",
              mask.dtype(), " (build one with a comparison such as x.gt(y), or convert with "
              ".to(ember::kBool))");
  check_scalar_fits("masked_fill", value, a.dtype());
  // The value as a 0-d tensor of a's own dtype, converted from the number itself (not through
  // float32 first: 2147483647.0 into int32 is 2147483647): where() then keeps a's dtype.
  return where(mask, wrapped_scalar(value, a.dtype(), a.device()), a);
}

}  // namespace ember
