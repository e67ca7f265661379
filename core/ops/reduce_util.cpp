#include "core/ops/reduce_util.h"

#include "core/ops.h"

namespace ember::ops {

ReducePlan plan_reduction(const Tensor& a, const Shape& dims, bool keepdim, const char* op) {
  ReducePlan p;
  const int64_t nd = a.dim();
  p.reduced.assign(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, op);
    if (nd == 0) continue;  // a 0-d tensor accepts dim 0 / -1 and has nothing to mark
    EMBER_CHECK(!p.reduced[w], op, ": dim ", w, " appears twice in ", shape_str(dims));
    p.reduced[w] = true;
  }
  for (int64_t d = 0; d < nd; ++d) {
    p.keepdim_shape.push_back(p.reduced[d] ? 1 : a.shape()[d]);
    if (!p.reduced[d]) p.out_shape.push_back(a.shape()[d]);
    else if (keepdim) p.out_shape.push_back(1);
  }
  // Is the reduced set one run [first, last] of dimensions?
  int64_t first = -1, last = -1;
  bool one_run = true;
  for (int64_t d = 0; d < nd; ++d) {
    if (!p.reduced[d]) continue;
    if (first < 0) first = d;
    else if (last != d - 1) one_run = false;
    last = d;
  }
  if (first < 0) {  // nothing reduced (0-d input, or no dims): r = 1
    p.input = a.contiguous();
    p.outer = a.numel();
    return p;
  }
  if (one_run) {
    p.input = a.contiguous();
    for (int64_t d = 0; d < first; ++d) p.outer *= a.shape()[d];
    for (int64_t d = first; d <= last; ++d) p.r *= a.shape()[d];
    for (int64_t d = last + 1; d < nd; ++d) p.inner *= a.shape()[d];
    return p;
  }
  // Scattered dims: move kept dims to the front, reduced to the back, and copy.
  Shape perm;
  for (int64_t d = 0; d < nd; ++d)
    if (!p.reduced[d]) perm.push_back(d), p.outer *= a.shape()[d];
  for (int64_t d = 0; d < nd; ++d)
    if (p.reduced[d]) perm.push_back(d), p.r *= a.shape()[d];
  p.input = a.detach().permute(perm).contiguous();
  return p;
}

}  // namespace ember::ops
