// ember/kernels/reduce.h — the reduce family: reductions over the middle axis of a contiguous
// [outer, r, inner] block.
//   CPU:  kernels/cpu/reduce.cpp.   CUDA: kernels/cuda/reduce.cu (warp-shuffle reductions).
//
// Any reduction over a contiguous run of dimensions of a row-major tensor has this form:
// outer = product of the dims before the run, r = product of the reduced dims, inner = product
// of the dims after it. Reducing the last dim is inner == 1 (each output is one contiguous row);
// reducing dim 0 of a matrix is outer == 1 (column sums, read row by row so loads stay
// contiguous). The op cards (core/ops/sum.cpp, max_min.cpp) bring every other case to this form.
#pragma once

#include <cstdint>
#include "kernels/base/dtype.h"

namespace ember::kernels {

// Which extreme a max/min reduction keeps.
enum class MaxMin { Max, Min };

struct ReduceKernels {
  // out[o, k] = scale * sum_j in[o, j, k]   (accumulated in double)
  void (*sum)(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out,
              double scale);
  // out[o, k] = prod_j in[o, j, k], accumulated in double for float dtypes (then rounded once)
  // and in int64 with wrap-around for integer ones (the op card sends integers as int64).
  void (*prod)(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out);
  // The backward of prod: each element's gradient is the product of the OTHER elements of its
  // slice times the output's gradient,
  //   grad_in[o, j, k] = grad[o, k] * prod_{i != j} in[o, i, k],
  // computed without dividing (prefix products forward, suffix products backward), so a slice
  // with zeros gets the exact answer (one zero: only its own position has a nonzero gradient).
  // Float dtypes; every element of grad_in written.
  void (*prod_backward)(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in,
                        const void* grad, void* grad_in);
  // values[o, k] = max_j in[o, j, k] (or min_j), indices[o, k] = the j where it sits.
  // Ties go to the first j (the smallest index), as torch.argmax does. NaN wins against every
  // number, for max and for min alike, so a NaN anywhere in a row makes the result NaN and its
  // index the first NaN's (PyTorch's rule: a NaN must not silently vanish in a reduction).
  // r must be >= 1 (the op card rejects an empty reduced dim before calling).
  void (*max_min)(MaxMin which, DType dtype, int64_t outer, int64_t r, int64_t inner,
                  const void* in, void* values, int64_t* indices);
  // The backward of max_min: only the element that was picked received the output, so
  //   grad_in[o, j, k] = (j == indices[o, k]) ? grad[o, k] : 0.
  // grad_in is fully written (zeros included); grad and grad_in are contiguous, float dtypes.
  void (*max_min_backward)(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* grad,
                           const int64_t* indices, void* grad_in);
  // The running sum along the middle axis (a scan, not a reduction: the output has the input's
  // [outer, r, inner] shape):
  //   out[o, j, k] = sum_{i <= j} in[o, i, k]         (reverse: sum_{i >= j}, cumsum's backward)
  // Accumulated in double for float dtypes (each output rounded once, as PyTorch's CPU cumsum
  // does) and in int64 with wrap-around for integers (the op card sends integers as int64).
  void (*cumsum)(DType dtype, int64_t outer, int64_t r, int64_t inner, bool reverse, const void* in,
                 void* out);
};

// The CPU tables, one per instruction set the kernel file is compiled for
// (kernels/cpu/isa_variant.h: avx2 and avx512 exist in portable x86-64 builds only).
namespace cpu::baseline {
extern const ReduceKernels reduce_kernels;
}
namespace cpu::avx2 {
extern const ReduceKernels reduce_kernels;
}
namespace cpu::avx512 {
extern const ReduceKernels reduce_kernels;
}
namespace cuda {
extern const ReduceKernels reduce_kernels;
}

}  // namespace ember::kernels
