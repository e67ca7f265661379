// Op card: slice, narrow, select — a window along one dimension (a view).
//
// Math      slice(a, d, start, end, step)[.., i, ..] = a[.., start + i*step, ..]
//           narrow(a, d, start, len) = slice(a, d, start, start+len, 1)
//           select(a, d, i) = slice(a, d, i, i+1) with dimension d removed.
// Backward  dL/da is zero outside the window and dL/dout inside it: a zero tensor of a's shape
//           whose same window receives dL/dout (copy_ into the matching view).
// Shapes    see Math; start/end are clamped like Python slices, negative values count from the end.
// Dtypes    a's dtype.
// Saved     dim, start, step (and whether the dim was removed).
// Kernels   none forward (a view); backward: fill + copy of kernels/cpu/elementwise.cpp, or
//           of kernels/cuda/elementwise.cu on the GPU.
#include <algorithm>

#include "core/ops/common.h"

namespace ember {

namespace {
struct SliceBackward final : ops::Node {
  int64_t dim = 0, start = 0, end = 0, step = 1;
  bool squeezed = false;
  std::string name() const override { return squeezed ? "SelectBackward" : "SliceBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    if (is_grad_enabled()) {  // create_graph: the same scatter with index_add, which records
      const Tensor idx =
          arange(static_cast<double>(start), static_cast<double>(std::max(start, end)),
                 static_cast<double>(step), TensorOptions(kInt64).device(g.device()));
      return {index_add(zeros(input_shapes[0], g.options()), dim, idx,
                        squeezed ? g.unsqueeze(dim) : g)};
    }
    Tensor ga = zeros(input_shapes[0], g.options());
    Tensor window = slice(ga, dim, start, end, step);
    window.copy_(squeezed ? g.unsqueeze(dim) : g);
    return {ga};
  }
};

Tensor slice_impl(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step,
                  bool squeeze_dim, const char* op) {
  ops::check_defined(op, a);
  EMBER_CHECK(a.dim() > 0, op, ": cannot slice a 0-d tensor");
  EMBER_CHECK(step > 0, op, ": step must be positive, got ", step);
  dim = wrap_dim(dim, a.dim(), op);
  Shape shape = a.shape(), strides = a.strides();
  const int64_t length = end > start ? (end - start + step - 1) / step : 0;
  shape[dim] = length;
  strides[dim] *= step;
  const int64_t offset = a.offset() + start * a.strides()[dim];
  if (squeeze_dim) {
    shape.erase(shape.begin() + dim);
    strides.erase(strides.begin() + dim);
  }
  Tensor out = make_view(a, shape, strides, offset);
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<SliceBackward>();
    node->dim = dim;
    node->start = start;
    node->end = end;
    node->step = step;
    node->squeezed = squeeze_dim;
    autograd::connect(node, out, {&a});
  }
  return out;
}
}  // namespace

Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step) {
  ops::check_defined("slice", a);
  const int64_t d = wrap_dim(dim, a.dim() == 0 ? 1 : a.dim(), "slice");
  const int64_t size = a.dim() == 0 ? 1 : a.shape()[d];
  // Python slice semantics: negative bounds count from the end, out-of-range bounds clamp.
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  return slice_impl(a, d, start, end, step, false, "slice");
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  ops::check_defined("narrow", a);
  EMBER_CHECK(a.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  const int64_t d = wrap_dim(dim, a.dim(), "narrow");
  const int64_t size = a.shape()[d];
  if (start < 0) start += size;
  EMBER_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow: window [", start, ", ",
              start + length, ") does not fit in dim ", d, " of size ", size, " (shape ",
              shape_str(a.shape()), ")");
  return slice_impl(a, d, start, start + length, 1, false, "narrow");
}

Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  ops::check_defined("select", a);
  EMBER_CHECK(a.dim() > 0, "select: cannot index a 0-d tensor");
  const int64_t d = wrap_dim(dim, a.dim(), "select");
  const int64_t size = a.shape()[d];
  EMBER_CHECK(index >= -size && index < size, "select: index ", index, " is out of range for dim ",
              d, " of size ", size, " (shape ", shape_str(a.shape()), ")");
  if (index < 0) index += size;
  return slice_impl(a, d, index, index + 1, 1, true, "select");
}

}  // namespace ember
