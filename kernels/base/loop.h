// ember/kernels/base/loop.h — the iteration space of an elementwise kernel, as plain data.
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

#include "kernels/base/host_device.h"

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

// The offsets (in elements, one per operand) of the i-th element of the loop in row-major
// order, i in [0, numel). This is how a CUDA thread that owns element i finds its operands:
// peel the coordinates off i from the innermost dimension outwards (i % size, i / size) and
// dot them with each operand's strides. The CPU tests check it against a nested-loop walk.
// One division per dimension but the outermost (what is left of i there is its coordinate).
// Index is the type the division runs in: a GPU divides 32-bit integers several times faster
// than 64-bit ones, so a caller that knows numel < 2^31 may pass uint32_t.
// (Index is never deduced from i: an int argument must not silently make the walk 32-bit.)
template <typename T>
struct NonDeduced {
  using type = T;
};
template <int N, typename Index = int64_t>
EMBER_HOST_DEVICE inline void loop_offsets(const StridedLoop<N>& L,
                                           typename NonDeduced<Index>::type i, int64_t off[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = L.ndim - 1; d > 0; --d) {
    const Index size = static_cast<Index>(L.shape[d]);
    const Index q = i / size;
    const int64_t c = static_cast<int64_t>(i - q * size);
    i = q;
    for (int k = 0; k < N; ++k) off[k] += c * L.strides[k][d];
  }
  if (L.ndim > 0)
    for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(i) * L.strides[k][0];
}

}  // namespace ember::kernels
