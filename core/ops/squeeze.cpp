// Op card: squeeze, unsqueeze — remove or insert a dimension of size 1 (a view).
//
// Math      the same elements; squeeze(a, d) drops dim d if its size is 1 (otherwise returns a
//           view of a unchanged, as PyTorch does); unsqueeze(a, d) inserts a size-1 dim at d.
// Backward  dL/da = reshape(dL/dout, a.shape).
// Shapes    see Math; unsqueeze accepts d in [-(ndim+1), ndim].
// Dtypes    a's dtype.
// Saved     nothing.
// Kernels   none (views).
#include "core/ops/common.h"

namespace ember {

namespace {
struct SqueezeBackward final : ops::Node {
  bool unsqueeze = false;
  std::string name() const override { return unsqueeze ? "UnsqueezeBackward" : "SqueezeBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {reshape(g, input_shapes[0])}; }
};

Tensor finish(const Tensor& a, Tensor out, bool is_unsqueeze) {
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<SqueezeBackward>();
    node->unsqueeze = is_unsqueeze;
    autograd::connect(node, out, {&a});
  }
  return out;
}
}  // namespace

Tensor squeeze(const Tensor& a, int64_t dim) {
  ops::check_defined("squeeze", a);
  dim = wrap_dim(dim, a.dim(), "squeeze");  // a 0-d tensor accepts dim 0 or -1, as in PyTorch
  if (a.dim() == 0) return finish(a, make_view(a, {}, {}, a.offset()), false);
  Shape shape = a.shape(), strides = a.strides();
  if (shape[dim] == 1) {
    shape.erase(shape.begin() + dim);
    strides.erase(strides.begin() + dim);
  }
  return finish(a, make_view(a, shape, strides, a.offset()), false);
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  ops::check_defined("unsqueeze", a);
  dim = wrap_insert_dim(dim, a.dim(), "unsqueeze");
  Shape shape = a.shape(), strides = a.strides();
  const int64_t stride = dim < a.dim() ? strides[dim] * shape[dim] : 1;
  shape.insert(shape.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return finish(a, make_view(a, shape, strides, a.offset()), true);
}

}  // namespace ember
