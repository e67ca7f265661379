// ember/kernels/sort.h — the sort family: each line of a contiguous [outer, n, inner] block put
// in order, values and their positions (sort, and topk, which keeps the first k).
//   CPU:  kernels/cpu/sort.cpp.   CUDA: kernels/cuda/sort.cu (bitonic sorts).
//
// A line is the n elements (o, 0, k), (o, 1, k), ..., (o, n - 1, k): element (o, j, k) sits at
// (o * n + j) * inner + k, so sorting along the last dim is inner == 1 (each line a contiguous
// row) and any other dim d has outer = the product of the dims before d, inner = those after it.
//
// One order, on every device. Elements are compared by value with NaN as the largest value (so
// it comes last ascending and first descending, as in PyTorch); equal values (-0.0 and 0.0 are
// equal, and so are two NaNs) are ordered by their position j. That makes the order total, so
// any sorting algorithm, stable or not, gives the one answer a stable sort gives: ties keep
// their original order, on the CPU and on the GPU, for sort and for topk alike.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/base/dtype.h"
#include "kernels/base/host_device.h"

namespace ember::kernels {

// NaN is the only value that is not equal to itself (ember never builds with fast-math).
template <typename T>
EMBER_HOST_DEVICE inline bool sort_is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// Does (a, its position ia) come before (b, ib) in the order above? Ascending: smaller values
// first, NaN after every number; descending: the reverse, NaN first; ties by position.
template <typename T>
EMBER_HOST_DEVICE inline bool sort_before(T a, int64_t ia, T b, int64_t ib, bool descending) {
  const bool nan_a = sort_is_nan(a), nan_b = sort_is_nan(b);
  if (nan_a != nan_b) return descending ? nan_a : nan_b;  // the NaN goes last (first descending)
  if (!nan_a) {
    if (a < b) return !descending;
    if (b < a) return descending;
  }
  return ia < ib;  // equal values (or two NaNs): the earlier position first
}

struct SortKernels {
  // For every line (o, k) of the contiguous [outer, n, inner] block `in`, the first `keep` of its
  // elements in the order above (keep == n: the whole line sorted; keep < n: topk):
  //   values[o, i, k]  = the i-th element of the line in that order
  //   indices[o, i, k] = its position j in the line
  // values and indices are contiguous [outer, keep, inner]. 1 <= keep <= n (the op card returns
  // early for empty outputs). Every dtype, bool included (false < true).
  void (*sort)(DType dtype, int64_t outer, int64_t n, int64_t inner, int64_t keep, bool descending,
               const void* in, void* values, int64_t* indices);
};

namespace cpu {
extern const SortKernels sort_kernels;
}
namespace cuda {
extern const SortKernels sort_kernels;
}

}  // namespace ember::kernels
