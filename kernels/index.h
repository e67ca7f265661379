// ember/kernels/index.h — the index family: kernels that move elements by an int64 index:
// gather, scatter_add, index_select, index_add, and the bounds check the op cards run first.
//   CPU:  kernels/cpu/index.cpp.   CUDA: kernels/cuda/index.cu (same layouts and semantics).
//
// Two shapes of indexing, two kernel layouts:
//
//  * gather / scatter_add take an index of the same rank as the data and pick along one dim
//    `d`, element by element. Fixing every coordinate except the one along d gives a "line"
//    (a 1-d fiber): out's line j-th element comes from in's line at position index_line[j].
//    The kernels walk every line with a StridedLoop over the index shape with d removed, and
//    walk each line with explicit per-operand strides along d.
//      gather       out[.., j, ..] = in[.., index[.., j, ..], ..]     (j along d)
//      scatter_add  out[.., index[.., j, ..], ..] += src[.., j, ..]
//
//  * index_select / index_add take a 1-d index that picks whole slabs. Viewing a contiguous
//    tensor as [outer, size, inner] (size = the indexed dim), one slab row is `inner`
//    contiguous elements, so selecting is a row copy (memcpy) and adding is a row add.
//      index_select out[o, i, :] = in[o, index[i], :]
//      index_add    out[o, index[i], :] += src[o, i, :]
//
// Scatter-style adds write where the index says, so two positions may hit one destination.
// On the CPU both add kernels split work by destination, never by source, so no two threads ever
// write the same element and the result does not depend on the thread count:
//  * scatter_add: lines are independent (a line only writes into its own line of out), so
//    lines are split across threads and each line is walked serially.
//  * index_add: each thread owns a range of destination rows and scans the whole index for
//    the rows it owns.
//
// Index values are validated by the op cards before these run (a kernel must not throw inside
// a parallel region); first_out_of_range is the helper they use.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"
#include "kernels/base/loop.h"

namespace ember::kernels {

struct IndexKernels {
  // Position (row-major, in [0, n)) of the first index value outside [0, size) — values equal
  // to `allowed` are accepted when has_allowed (cross_entropy's ignore_index) — or -1 if all
  // fit. On a GPU this WAITS for the device (the answer is needed on the host to raise a clear
  // error before a kernel reads out of bounds), except during a CUDA graph capture, where it
  // returns -1 and queues a kernel that stops the replay (__trap) at a value out of range.
  int64_t (*first_out_of_range)(const int64_t* index, int64_t n, int64_t size, bool has_allowed,
                                int64_t allowed);

  // gather along one dim. `lines` iterates the index shape without the gathered dim; operands:
  // 0 = out, 1 = index, 2 = in (offsets in elements from the pointers below). Each line has
  // `len` elements; dim_stride[k] is operand k's stride along the gathered dim.
  void (*gather)(DType dtype, const StridedLoop<3>& lines, int64_t len, const int64_t dim_stride[3],
                 void* out, const int64_t* index, const void* in);

  // scatter_add along one dim, in place into out (which already holds a copy of the base).
  // Same layout as gather: operands 0 = out, 1 = index, 2 = src.
  void (*scatter_add)(DType dtype, const StridedLoop<3>& lines, int64_t len,
                      const int64_t dim_stride[3], void* out, const int64_t* index,
                      const void* src);

  // in is contiguous [outer, size, inner]; out is contiguous [outer, n, inner].
  void (*index_select)(DType dtype, int64_t outer, int64_t size, int64_t inner, const void* in,
                       const int64_t* index, int64_t n, void* out);

  // out is contiguous [outer, size, inner] (already holding the base); src is contiguous
  // [outer, n, inner]. Adds src's rows into the rows of out that index names.
  void (*index_add)(DType dtype, int64_t outer, int64_t size, int64_t inner, void* out,
                    const int64_t* index, int64_t n, const void* src);
};

namespace cpu {
extern const IndexKernels index_kernels;
}
namespace cuda {
extern const IndexKernels index_kernels;
}

}  // namespace ember::kernels
