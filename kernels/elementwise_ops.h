// ember/kernels/elementwise_ops.h — the names of the elementwise ops, shared by the CPU
// (kernels/cpu/elementwise.h) and CUDA (kernels/cuda/elementwise.h) kernels so an op card
// picks one op and hands it to whichever device its tensors live on.
#pragma once

namespace ember::kernels {

// out = op(in); `param` is the exponent for Pow.
enum class UnaryOp { Neg, Exp, Log, Sqrt, Abs, Sign, Relu, Sigmoid, Tanh, Pow, Square };

// out = a (op) b. Add and Sub compute a + alpha*b and a - alpha*b.
// Div is IEEE division for floats; integers are never sent to it (the op card divides them as
// floats) and get DivTrunc's answer if they are. DivTrunc and DivFloor round the quotient toward
// zero and toward -inf (kernels/base/scalar_math.h: no integer input traps).
// The *Backward ops take (grad, saved output y): ReluBackward = (y <= 0 ? 0 : g) (a NaN y passes
// g on, as in PyTorch),
// SigmoidBackward = g*y*(1-y), TanhBackward = g*(1-y*y).
enum class BinaryOp {
  Add, Sub, Mul, Div, DivTrunc, DivFloor, ReluBackward, SigmoidBackward, TanhBackward
};

// out (bool) = a (cmp) b.
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge };

// Which extreme a max/min reduction keeps.
enum class MaxMin { Max, Min };

}  // namespace ember::kernels
