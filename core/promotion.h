// ember/core/promotion.h — which dtype an op computes in when its operands differ: PyTorch's
// type promotion, spelled out once for every op that mixes dtypes.
//
// The rule, as torch.result_type applies it:
//   1. Dtypes fall into three categories: bool < integer (uint8, int32, int64) < floating
//      (float32, float64). Inside a category the wider dtype wins (uint8 + int32 -> int32,
//      int32 + int64 -> int64, float32 + float64 -> float64); across categories the higher
//      category wins (int64 + float32 -> float32, bool + uint8 -> uint8).
//   2. Operands are weighed in three tiers: tensors with dimensions, dimension-less (0-d)
//      tensors, and plain C++ numbers (ember::Scalar, PyTorch's "wrapped numbers"). A lower tier
//      changes the result only when its category is higher than every higher tier's:
//        float32 [3] * float64 0-d  -> float32   (same category: the tensor with dims decides)
//        int64 [3]   * float64 0-d  -> float64   (higher category: the 0-d tensor counts)
//        uint8 [3]   + 1000         -> uint8     (an integer number never widens an integer tensor)
//        int32 [3]   + int64 0-d    -> int32     (nor does a 0-d integer tensor)
//        int64 [3]   * 2.5          -> float32   (a floating number brings the default float
//                                                 dtype, float32, not float64)
//   3. Ops that only make sense on floats (true division, mean, exp, log, sqrt, sigmoid, tanh,
//      pow with a floating exponent) compute integer and bool operands in the default float
//      dtype, float32.
//
// An in-place op (x.add_(y)) computes in the promoted dtype of x and y and stores the result
// into x, which must be able to hold it (can_cast): an int64 tensor cannot take a float result
// (x.add_(0.5) on int64 is an error, as in PyTorch), a bool tensor no number at all.
//
// Gradients flow back in each input's own dtype: a float32 weight used in a float64 product gets
// a float32 gradient (the backward engine converts, core/autograd/engine.cpp).
#pragma once

#include <vector>

#include "core/scalar.h"
#include "core/tensor.h"

namespace ember {

// float32, the dtype of float factories and of float results from integer inputs.
inline DType default_dtype() { return kFloat32; }

// bool 0, integer 1, floating 2.
int dtype_category(DType t);

// The smaller dtype that holds both (the lattice of rule 1): bool < uint8 < int32 < int64 <
// float32 < float64, each a superset of the ones before it for ember's six dtypes.
DType promote_types(DType a, DType b);

// May a value computed in `from` be stored into a tensor of `to`? False from floating to an
// integer or bool dtype and from any number to bool; true otherwise (narrowing within a
// category, float64 -> float32 or int64 -> uint8, is allowed, as in PyTorch).
bool can_cast(DType from, DType to);

// Does the number fit a tensor of `dtype` (fill_, masked_fill)? PyTorch's range check: a float
// out of an integer dtype's range or NaN (uint8.fill_(-1.5), uint8.fill_(300)) or a finite
// float beyond float32's largest does not; an integer down to -255 still fits uint8 (it wraps,
// as in PyTorch), but int32 takes only -2^31 .. 2^31 - 1 (int32.fill_(2**31) is an error, as in
// PyTorch); inf fits a float dtype and anything fits bool.
bool scalar_fits(const Scalar& s, DType dtype);
// Throws "<op>: the value <v> does not fit a <dtype> tensor ..." unless scalar_fits.
void check_scalar_fits(const char* op, const Scalar& s, DType dtype);

// The dtype an op on these operands computes in (rules 1 and 2). Tensors made from a Scalar by
// the scalar overloads (x * 2) count as numbers, every other 0-d tensor as dimension-less.
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
DType result_type(const Scalar& a, const Tensor& b);
DType result_type(const std::vector<Tensor>& tensors);

// `t` in dtype `dtype` as a plain value: no autograd record (the op that calls it records its
// own node, and its backward hands gradients back in t's dtype). `t` itself when it already is.
Tensor cast_for_compute(const Tensor& t, DType dtype);

// A Scalar as a 0-d tensor of `dtype` on `device` that counts as a number (rule 2). An op makes
// it in the dtype it computes in, result_type(other, s), which leaves that result unchanged, so
// the value is converted once, where it is made. On a GPU it is filled by a kernel (no
// host-device copy, no wait), except for an int64 beyond 2^53, which a double cannot carry.
Tensor wrapped_scalar(const Scalar& s, DType dtype, Device device);
// wrapped_scalar(s, result_type(t, s), t.device()): the operand `s` of an op with `t`.
Tensor wrapped_scalar_for(const Scalar& s, const Tensor& t);

}  // namespace ember
