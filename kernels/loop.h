// ember/kernels/loop.h — the iteration space of an elementwise kernel, as plain data.
//
// An elementwise op over tensors of any layout is described by one shape (the broadcast
// output shape) and, for each operand, a stride per dimension in elements. A broadcast
// operand simply has stride 0 along the dimensions it is repeated over. Before a kernel sees
// it, the loop is "coalesced": size-1 dimensions are dropped and neighbouring dimensions that
// are contiguous with each other in every operand are merged, so a fully contiguous op of any
// rank becomes a single 1-d run — the fast path.
//
// Operand 0 is always the output. The same struct is passed by value to CUDA kernels.
#pragma once

#include <cstdint>

namespace ember::kernels {

constexpr int kMaxDims = 12;

template <int N>
struct StridedLoop {
  int ndim = 0;       // >= 1 after coalescing (a scalar is one dimension of size 1)
  int64_t numel = 0;  // product of shape; 0 means nothing to do
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  bool is_contiguous() const {
    if (ndim != 1) return false;
    for (int k = 0; k < N; ++k)
      if (strides[k][0] != 1) return false;
    return true;
  }
};

}  // namespace ember::kernels
