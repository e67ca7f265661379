// Op card: view, reshape — the same elements under another shape.
//
// Math      out = a with shape `shape` (row-major order of elements unchanged).
// Backward  dL/da = reshape(dL/dout, a.shape): reshaping moves no element.
// Shapes    numel(shape) == numel(a); one entry may be -1 (inferred).
// Saved     nothing.
// Kernels   none for view (shares storage). reshape of a non-contiguous tensor copies first
//           (contiguous(), kernels/cpu/elementwise.cpp copy).
#include "core/ops/common.h"

namespace ember {

namespace {
struct ReshapeBackward final : ops::Node {
  std::string name() const override { return "ReshapeBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {reshape(g, input_shapes[0])}; }
};
}  // namespace

Tensor view(const Tensor& a, const Shape& shape) {
  ops::check_defined("view", a);
  const Shape s = infer_size(shape, a.numel(), "view");
  EMBER_CHECK(a.is_contiguous(), "view: the tensor (shape ", shape_str(a.shape()), ", strides ",
              shape_str(a.strides()), ") is not contiguous, so its elements cannot be viewed as ",
              shape_str(s), ": use reshape(), which copies when it must");
  Tensor out = make_view(a, s, contiguous_strides(s), a.offset());
  if (autograd::grad_needed({&a})) autograd::connect(std::make_shared<ReshapeBackward>(), out, {&a});
  return out;
}

Tensor reshape(const Tensor& a, const Shape& shape) {
  ops::check_defined("reshape", a);
  if (a.is_contiguous()) return view(a, shape);
  return view(contiguous(a), shape);
}

}  // namespace ember
