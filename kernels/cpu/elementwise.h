// ember/kernels/cpu/elementwise.h — CPU elementwise kernels: unary math, binary arithmetic,
// comparisons, where, casting copies and fills.
//
// Signatures are plain: a dtype, a StridedLoop (operand 0 = output) and raw pointers to the
// first element of each operand. Every op has one per-element definition that contiguous and
// strided runs of any length share (so subnormals, infinities and NaN come out the same on
// every path); contiguous runs of plain arithmetic vectorize.
#pragma once

#include "kernels/base/dtype.h"
#include "kernels/elementwise_ops.h"
#include "kernels/base/loop.h"

namespace ember::kernels::cpu {

using kernels::BinaryOp;
using kernels::CompareOp;
using kernels::UnaryOp;

// out = op(in); `param` is the exponent for Pow.
void unary(UnaryOp op, DType dtype, const StridedLoop<2>& L, void* out, const void* in,
           double param = 0.0);

// out = a (op) b (see kernels/elementwise_ops.h for each op's definition).
void binary(BinaryOp op, DType dtype, const StridedLoop<3>& L, void* out, const void* a,
            const void* b, double alpha = 1.0);

// out (bool) = a (cmp) b, both inputs of `dtype`.
void compare(CompareOp op, DType dtype, const StridedLoop<3>& L, bool* out, const void* a,
             const void* b);

// out = cond ? a : b; operands: out, cond (bool), a, b.
void where(DType dtype, const StridedLoop<4>& L, void* out, const bool* cond, const void* a,
           const void* b);

// dst = src converted to dst_dtype (operand 0 = dst).
void copy(DType dst_dtype, DType src_dtype, const StridedLoop<2>& L, void* dst, const void* src);

// Every element of a (possibly strided) tensor set to value.
void fill(DType dtype, const StridedLoop<1>& L, void* out, double value);

}  // namespace ember::kernels::cpu
