// Op card: expand — repeat size-1 dimensions without copying (stride 0).
//
// Math      out[.., i, ..] = a[.., 0, ..] along every expanded dimension; new leading dims
//           are added as needed. -1 keeps a dimension's size.
// Backward  dL/da = sum_to(dL/dout, a.shape): each element of a was read by every position it
//           was repeated to, so their gradients add up.
// Shapes    a's shape, right-aligned, must be 1 or equal to the target in every dimension.
// Dtypes    a's dtype.
// Saved     nothing.
// Kernels   none forward (a view); backward: sum_to (core/ops/sum.cpp).
#include "core/ops/common.h"

namespace ember {

namespace {
struct ExpandBackward final : ops::Node {
  std::string name() const override { return "ExpandBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {sum_to(g, input_shapes[0])}; }
};
}  // namespace

Tensor expand(const Tensor& a, const Shape& shape) {
  ops::check_defined("expand", a);
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t ad = a.dim();
  EMBER_CHECK(nd >= ad, "expand: target ", shape_str(shape), " has fewer dimensions than the tensor ",
              shape_str(a.shape()));
  Shape out_shape(nd), out_strides(nd);
  for (int64_t d = nd - 1; d >= 0; --d) {
    const int64_t src = d - (nd - ad);
    const int64_t want = shape[d];
    EMBER_CHECK(want >= -1, "expand: invalid size ", want, " at dim ", d, " of ", shape_str(shape),
                " (sizes are >= 0, or -1 to keep a dimension's size)");
    if (src < 0) {
      EMBER_CHECK(want >= 0, "expand: size -1 is not allowed for a new leading dimension in ",
                  shape_str(shape));
      out_shape[d] = want;
      out_strides[d] = 0;
      continue;
    }
    const int64_t have = a.shape()[src];
    if (want == -1 || want == have) {
      out_shape[d] = have;
      out_strides[d] = a.strides()[src];
    } else {
      EMBER_CHECK(have == 1, "expand: the tensor of shape ", shape_str(a.shape()),
                  " cannot be expanded to ", shape_str(shape), " (dim ", d, ": size ", have,
                  " is neither 1 nor ", want, ")");
      out_shape[d] = want;
      out_strides[d] = 0;
    }
  }
  Tensor out = make_view(a, out_shape, out_strides, a.offset());
  if (autograd::grad_needed({&a})) autograd::connect(std::make_shared<ExpandBackward>(), out, {&a});
  return out;
}

}  // namespace ember
