// ember/kernels/cuda/elementwise.h — CUDA elementwise kernels: unary math, binary arithmetic,
// comparisons, where, casting copies, fills and arange.
//
// The same plain signatures as kernels/cpu/elementwise.h: a dtype, a StridedLoop (operand 0 is
// the output; offsets in elements) and raw device pointers to each operand's first element.
// Every function launches on the current stream and returns without waiting for the GPU.
// Implemented in kernels/cuda/elementwise.cu (a contiguous, vectorized fast path and a general
// strided path that handles broadcasting through stride-0 dimensions).
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"
#include "kernels/elementwise_ops.h"
#include "kernels/base/loop.h"

namespace ember::kernels::cuda {

void unary(UnaryOp op, DType dtype, const StridedLoop<2>& L, void* out, const void* in,
           double param = 0.0);
void binary(BinaryOp op, DType dtype, const StridedLoop<3>& L, void* out, const void* a,
            const void* b, double alpha = 1.0);
void compare(CompareOp op, DType dtype, const StridedLoop<3>& L, bool* out, const void* a,
             const void* b);
// out = cond ? a : b; operands: out, cond (bool), a, b.
void where(DType dtype, const StridedLoop<4>& L, void* out, const bool* cond, const void* a,
           const void* b);
// dst = src converted to dst_dtype (operand 0 = dst), any layout on both sides.
void copy(DType dst_dtype, DType src_dtype, const StridedLoop<2>& L, void* dst, const void* src);
// Every element of a (possibly strided) tensor set to value.
void fill(DType dtype, const StridedLoop<1>& L, void* out, double value);
// out[i] = start + i * step for i in [0, n), contiguous.
void arange(DType dtype, void* out, int64_t n, double start, double step);

}  // namespace ember::kernels::cuda
