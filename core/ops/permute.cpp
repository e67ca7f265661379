// Op card: permute, transpose — reorder dimensions (a view: only strides move).
//
// Math      out[i_p0, i_p1, ...] = a[i_0, i_1, ...] for permutation p.
// Backward  dL/da = permute(dL/dout, inverse(p)).
// Shapes    out.shape[k] = a.shape[p[k]].
// Dtypes    a's dtype.
// Saved     the permutation.
// Kernels   none (a view).
#include <algorithm>

#include "core/ops/common.h"

namespace ember {

namespace {
struct PermuteBackward final : ops::Node {
  Shape inverse;
  std::string name() const override { return "PermuteBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {permute(g, inverse)}; }
};
}  // namespace

Tensor permute(const Tensor& a, const Shape& dims) {
  ops::check_defined("permute", a);
  const int64_t nd = a.dim();
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == nd, "permute: got ", dims.size(),
              " dims ", shape_str(dims), " for a ", nd, "-d tensor of shape ", shape_str(a.shape()));
  Shape shape(nd), strides(nd), inverse(nd);
  std::vector<bool> seen(nd, false);
  for (int64_t k = 0; k < nd; ++k) {
    const int64_t d = wrap_dim(dims[k], nd, "permute");
    EMBER_CHECK(!seen[d], "permute: dim ", d, " appears twice in ", shape_str(dims));
    seen[d] = true;
    shape[k] = a.shape()[d];
    strides[k] = a.strides()[d];
    inverse[d] = k;
  }
  Tensor out = make_view(a, shape, strides, a.offset());
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<PermuteBackward>();
    node->inverse = inverse;
    autograd::connect(node, out, {&a});
  }
  return out;
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  ops::check_defined("transpose", a);
  const int64_t nd = a.dim();
  if (nd == 0) return permute(a, {});
  dim0 = wrap_dim(dim0, nd, "transpose");
  dim1 = wrap_dim(dim1, nd, "transpose");
  Shape p(nd);
  for (int64_t k = 0; k < nd; ++k) p[k] = k;
  std::swap(p[dim0], p[dim1]);
  return permute(a, p);
}

}  // namespace ember
