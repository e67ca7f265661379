// Op card: view, reshape — the same elements under another shape.
//
// Math      out = a with shape `shape` (row-major order of elements unchanged).
// Backward  dL/da = reshape(dL/dout, a.shape): reshaping moves no element.
// Shapes    numel(shape) == numel(a); one entry may be -1 (inferred). view needs strides that
//           keep every element in place (core/shape.h view_strides, PyTorch's rule: a
//           non-contiguous tensor can be viewed as long as no new dim spans two of its
//           contiguous runs); reshape copies when there are none.
// Dtypes    a's dtype.
// Saved     nothing.
// Kernels   none for view (shares storage). reshape of a non-contiguous tensor copies first
//           (contiguous(): the copy of kernels/cpu/elementwise.cpp, or of
//           kernels/cuda/elementwise.cu on the GPU).
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
  const std::optional<Shape> strides = view_strides(a.shape(), a.strides(), s);
  EMBER_CHECK(strides.has_value(), "view: the tensor's layout (shape ", shape_str(a.shape()),
              ", strides ", shape_str(a.strides()), ") cannot be seen as ", shape_str(s),
              " without moving elements (a new dim would span two separate runs of memory): use "
              "reshape(), which copies when it must");
  Tensor out = make_view(a, s, *strides, a.offset());
  if (autograd::grad_needed({&a})) autograd::connect(std::make_shared<ReshapeBackward>(), out, {&a});
  return out;
}

Tensor reshape(const Tensor& a, const Shape& shape) {
  ops::check_defined("reshape", a);
  const Shape s = infer_size(shape, a.numel(), "reshape");
  if (view_strides(a.shape(), a.strides(), s)) return view(a, s);
  return view(contiguous(a), s);
}

}  // namespace ember
