// ember/core/iter.h — turning tensors into a kernels::StridedLoop.
//
// make_loop(iter_shape, {&out, &a, &b}) lines every operand up against `iter_shape` with
// NumPy's rule (missing leading dims and size-1 dims get stride 0), then coalesces. The result
// is what every elementwise kernel, CPU or CUDA, iterates over.
#pragma once

#include <array>

#include "core/tensor.h"
#include "kernels/base/loop.h"

namespace ember {

template <int N>
kernels::StridedLoop<N> make_loop(const Shape& iter_shape, const std::array<const Tensor*, N>& ops,
                                  const char* op_name) {
  const int nd = static_cast<int>(iter_shape.size());
  EMBER_CHECK(nd <= kernels::kMaxDims, op_name, ": tensors with more than ", kernels::kMaxDims,
              " dimensions are not supported (got ", nd, ")");
  // Broadcast strides for each operand, outermost first.
  int64_t st[N][kernels::kMaxDims];
  for (int k = 0; k < N; ++k) {
    const Shape& s = ops[k]->shape();
    const Shape& str = ops[k]->strides();
    const int off = nd - static_cast<int>(s.size());
    for (int d = 0; d < nd; ++d) {
      const int sd = d - off;
      st[k][d] = (sd < 0 || s[sd] == 1) ? 0 : str[sd];
    }
  }
  kernels::StridedLoop<N> L;
  L.numel = shape_numel(iter_shape);
  int out_nd = 0;
  for (int d = 0; d < nd; ++d) {
    const int64_t size = iter_shape[d];
    if (size == 1) continue;
    bool merge = out_nd > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = L.strides[k][out_nd - 1] == st[k][d] * size;
    if (merge) {
      L.shape[out_nd - 1] *= size;
      for (int k = 0; k < N; ++k) L.strides[k][out_nd - 1] = st[k][d];
    } else {
      L.shape[out_nd] = size;
      for (int k = 0; k < N; ++k) L.strides[k][out_nd] = st[k][d];
      ++out_nd;
    }
  }
  if (out_nd == 0) {  // a scalar, or all dims of size 1
    L.shape[0] = 1;
    for (int k = 0; k < N; ++k) L.strides[k][0] = 1;
    out_nd = 1;
  }
  L.ndim = out_nd;
  return L;
}

}  // namespace ember
