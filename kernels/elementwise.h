// ember/kernels/elementwise.h — the elementwise family: unary math, binary arithmetic,
// comparisons, where, casting copies, fills and arange.
//
// Signatures are plain: a dtype, a StridedLoop (operand 0 = output; offsets in elements, any
// layout, broadcasting through stride-0 dimensions) and raw pointers to the first element of
// each operand, in the memory of the backend's device. Every op has one per-element definition
// (kernels/base/scalar_math.h) that every path of both backends shares, so subnormals,
// infinities and NaN come out the same on contiguous and strided runs.
//   CPU:  kernels/cpu/elementwise.cpp (contiguous runs of plain arithmetic vectorize).
//   CUDA: kernels/cuda/elementwise.cu (a vectorized contiguous path, a row-broadcast path and a
//         general strided path; every launch goes on the current stream and returns at once).
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"
#include "kernels/base/loop.h"

namespace ember::kernels {

// out = op(in); `param` is the exponent for Pow.
enum class UnaryOp { Neg, Exp, Log, Sqrt, Abs, Sign, Relu, Sigmoid, Tanh, Pow, Square };

// out = a (op) b. Add and Sub compute a + alpha*b and a - alpha*b.
// Maximum and Minimum: NaN if either operand is NaN, else the larger (smaller) one; on a tie
// (also -0 against +0) the first operand a, as PyTorch's scalar loop answers.
// Div is IEEE division for floats; integers are never sent to it (the op card divides them as
// floats) and get DivTrunc's answer if they are. DivTrunc and DivFloor round the quotient toward
// zero and toward -inf (kernels/base/scalar_math.h: no integer input traps).
// Pow is a ^ b elementwise (pow(tensor, tensor)): std::pow for floats, kernels/base/scalar_math.h
// int_pow_any for integers (a negative exponent gives 0, or +-1 for a base of +-1).
// Fmod and Remainder are the remainders of the truncated and of the floored quotient (C's fmod,
// Python's %; scalar_math.h fmod_any / remainder_any); an integer b == 0 gives 0 (the op card
// refuses it first).
// The *Backward ops take (grad, saved output y): ReluBackward = (y <= 0 ? 0 : g) (a NaN y passes
// g on, as in PyTorch),
// SigmoidBackward = g*y*(1-y), TanhBackward = g*(1-y*y).
// clang-format off
enum class BinaryOp {
  Add, Sub, Mul, Div, DivTrunc, DivFloor, ReluBackward, SigmoidBackward, TanhBackward,
  Maximum, Minimum, Pow, Fmod, Remainder
};
// clang-format on

// out (bool) = a (cmp) b.
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge };

struct ElementwiseKernels {
  // out = op(in); `param` is the exponent for Pow (0 otherwise).
  void (*unary)(UnaryOp op, DType dtype, const StridedLoop<2>& L, void* out, const void* in,
                double param);
  // out = a (op) b; `alpha` scales b for Add and Sub (1 otherwise).
  void (*binary)(BinaryOp op, DType dtype, const StridedLoop<3>& L, void* out, const void* a,
                 const void* b, double alpha);
  // out (bool) = a (cmp) b, both inputs of `dtype`.
  void (*compare)(CompareOp op, DType dtype, const StridedLoop<3>& L, bool* out, const void* a,
                  const void* b);
  // out = cond ? a : b; operands: out, cond (bool), a, b.
  void (*where)(DType dtype, const StridedLoop<4>& L, void* out, const bool* cond, const void* a,
                const void* b);
  // dst = src converted to dst_dtype (operand 0 = dst).
  void (*copy)(DType dst_dtype, DType src_dtype, const StridedLoop<2>& L, void* dst,
               const void* src);
  // Every element of a (possibly strided) tensor set to value.
  void (*fill)(DType dtype, const StridedLoop<1>& L, void* out, double value);
  // out[i] = start + i * step for i in [0, n), contiguous; computed in double and converted as
  // copy() converts.
  void (*arange)(DType dtype, void* out, int64_t n, double start, double step);
};

// The CPU tables, one per instruction set the kernel file is compiled for
// (kernels/cpu/isa_variant.h: avx2 and avx512 exist in portable x86-64 builds only).
namespace cpu::baseline {
extern const ElementwiseKernels elementwise_kernels;
}
namespace cpu::avx2 {
extern const ElementwiseKernels elementwise_kernels;
}
namespace cpu::avx512 {
extern const ElementwiseKernels elementwise_kernels;
}
namespace cuda {
extern const ElementwiseKernels elementwise_kernels;
}

}  // namespace ember::kernels
