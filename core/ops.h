// ember/core/ops.h — every op ember has, as free functions (the Tensor methods forward here).
//
// Each op is defined once, in an op card under core/ops/ that holds its math, its backward,
// and the kernels it calls. The registry (core/registry.cpp) lists them all.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "core/promotion.h"
#include "core/scalar.h"
#include "core/tensor.h"

namespace ember {

enum class Reduction { None, Mean, Sum };

// ---- elementwise arithmetic with NumPy broadcasting (core/ops/add.cpp ... div.cpp) ----------
// Operands of different dtypes are promoted as in PyTorch (core/promotion.h); a Scalar operand
// (x * 2, x + 0.5) counts as a number. Integer and bool operands of div are divided as floats
// (true division, float32 result) unless a rounding mode asks for an integer quotient.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// rounding_mode "trunc" (toward zero, C's `/` on integers) or "floor" (toward -inf, Python's
// `//`); "" is true division. Integers keep their dtype; an integer division by zero raises a
// ValueError. No gradient flows through a rounded quotient (it is zero, as in PyTorch).
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode);
// div(a, b, "floor"): torch.floor_divide (Python's `//`). Not differentiable.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Scalar& b, const std::string& rounding_mode = "");
Tensor floor_divide(const Tensor& a, const Scalar& b);
Tensor neg(const Tensor& a);
// a ^ exponent. An integer tensor with an integer exponent stays integer (exact, wrapping like
// repeated multiplication; a negative exponent is an error); a floating exponent gives floats.
Tensor pow(const Tensor& a, const Scalar& exponent);
// a ^ b elementwise with broadcasting, in result_type(a, b); differentiable in both (d/db =
// out * log(a), 0 where a == 0 and b >= 0, as PyTorch's). Integer tensors stay integer, and an
// integer negative exponent gives 0 (+-1 for a base of +-1) instead of an error. bool ^ bool is
// refused, as in PyTorch. pow(2.0, b): a number raised to each element (pow(1, b) is all ones).
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
// The remainders of a / b (core/ops/fmod.cpp), broadcast and promoted as a - b: fmod rounds the
// quotient toward zero (C's fmod: the sign of a), remainder toward -inf (Python's %: the sign of
// b). Integer dtypes stay integer; an integer division by zero raises a ValueError (PyTorch:
// "ZeroDivisionError"). Gradients: 1 for a, -trunc(a / b) (fmod) or -floor(a / b) (remainder)
// for b.
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& s);
Tensor operator-(const Tensor& a, const Scalar& s);
Tensor operator*(const Tensor& a, const Scalar& s);
Tensor operator/(const Tensor& a, const Scalar& s);
Tensor operator+(const Scalar& s, const Tensor& a);
Tensor operator-(const Scalar& s, const Tensor& a);
Tensor operator*(const Scalar& s, const Tensor& a);
Tensor operator/(const Scalar& s, const Tensor& a);
Tensor operator-(const Tensor& a);

// ---- elementwise math (core/ops/exp.cpp ... tanh.cpp) ----------------------------------------
// exp, log, sqrt, sigmoid and tanh of an integer or bool tensor are float32.
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor tanh(const Tensor& a);

// ---- reductions (core/ops/sum.cpp, core/ops/prod.cpp, core/ops/max_min.cpp) -----------------
// `dims` empty means all dimensions. sum and prod of integers and bools accumulate and return
// int64; mean of integers and bools is float32.
Tensor sum(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& a);                                   // over all elements
Tensor prod(const Tensor& a, int64_t dim, bool keepdim = false);
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64, position along `dim` of the max/min
};
ValuesIndices max(const Tensor& a, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor max(const Tensor& a);  // over all elements
Tensor min(const Tensor& a);
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim = false);  // no grad
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& a);  // index into the flattened tensor
Tensor argmin(const Tensor& a);
// The largest / smallest value over `dims` (empty: every dim), values only (core/ops/amax.cpp).
// Unlike max(a, dim), the gradient is shared evenly among tied elements, as torch.amax's.
Tensor amax(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, const Shape& dims = {}, bool keepdim = false);
// Is any / is every element nonzero (NaN counts as nonzero)? Over every element, or along one
// dim. bool, except a uint8 input gives uint8 (as in PyTorch). No gradient (core/ops/any_all.cpp).
Tensor any(const Tensor& a);
Tensor any(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor all(const Tensor& a);
Tensor all(const Tensor& a, int64_t dim, bool keepdim = false);
// Sums a broadcast gradient back down to `shape` (the reverse of broadcasting).
Tensor sum_to(const Tensor& a, const Shape& shape);
// The running sum along `dim` (core/ops/cumsum.cpp): out[.., j, ..] = sum of a[.., i, ..] for
// i <= j. Integer and bool inputs give int64, as in PyTorch. Backward: the reversed running sum.
Tensor cumsum(const Tensor& a, int64_t dim);
// The elements along `dim` in order, with their positions (core/ops/sort.cpp), as torch.sort /
// torch.topk: NaN sorts above every number; ties keep their order (ember's sort is always stable,
// whatever `stable` says); topk keeps the first k of the descending order (ascending when
// largest = false) and always returns them sorted. The gradient goes back to the positions.
ValuesIndices sort(const Tensor& a, int64_t dim = -1, bool descending = false, bool stable = false);
ValuesIndices topk(const Tensor& a, int64_t k, int64_t dim = -1, bool largest = true,
                   bool sorted = true);

// ---- linear algebra (core/ops/matmul.cpp) ---------------------------------------------------
// 1-d and 2-d operands as in torch.matmul; 3-d and more: batched, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- softmax family and losses (core/ops/softmax.cpp, cross_entropy.cpp, mse_loss.cpp) -----
Tensor softmax(const Tensor& a, int64_t dim);
Tensor log_softmax(const Tensor& a, int64_t dim);
// logits [N, C], target int64 [N] with class indices, optional weight [C]; also logits
// [N, C, d1, ..., dk] with target [N, d1, ..., dk] (a class per position, as for segmentation),
// and logits [C] with a 0-d target.
// target: int64 class indices, or float class probabilities shaped like logits.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// ---- comparisons and selection (core/ops/compare.cpp, where.cpp) — no gradient ---------------
// The operands are compared in their promoted dtype (core/promotion.h).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);
// cond ? a : b elementwise (broadcast), in the promoted dtype of a and b; differentiable in a
// and b.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// A number on either side (or both): it counts as a number in the promotion (core/promotion.h),
// so where(c, int64 tensor, 2.5) is float32 and where(c, uint8 tensor, 7) stays uint8; it must
// fit that dtype. where(c, 1, 2.5) is float32, where(c, 1, 2) int64, where(c, true, false) bool.
// The gradient flows to the tensor operand (core/ops/where.cpp).
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value);

// ---- clamping and elementwise extremes (core/ops/clamp.cpp, core/ops/maximum.cpp) ----------
// clamp: each element limited to [min, max]; either bound may be left out (std::nullopt), not
// both. An integer tensor with a float bound gives float32, as in PyTorch. A NaN element stays
// NaN; a NaN bound makes every element NaN (but clamp with that one bound alone ignores it, as
// PyTorch 1.13 does). The gradient passes where min <= x <= max, bounds included.
Tensor clamp(const Tensor& a, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
Tensor clamp_min(const Tensor& a, const Scalar& min);
Tensor clamp_max(const Tensor& a, const Scalar& max);
// Elementwise max / min of two tensors (broadcast, promoted); NaN wins; a tie splits the
// gradient in halves.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

// ---- tests and logic (core/ops/logical.cpp) — bool results, no gradient ---------------------
Tensor isnan(const Tensor& a);
Tensor isinf(const Tensor& a);
Tensor isfinite(const Tensor& a);
// Each operand read as a truth value (nonzero, NaN included, is true), in result_type(a, b).
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);

// ---- indexing and joining (core/ops/gather.cpp, index_select.cpp, cat.cpp) -----------------
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
// cat and stack join tensors of different dtypes in their promoted dtype.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// ---- convolution and pooling, NCHW (core/ops/conv2d.cpp, core/ops/pool2d.cpp) -------------
struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1};    // (height, width)
  std::array<int64_t, 2> padding{0, 0};   // zeros added on both sides
  std::array<int64_t, 2> dilation{1, 1};  // spacing between kernel taps
  int64_t groups = 1;  // channel blocks: C and K multiples of it; groups == C is depthwise
};
// input [N, C, H, W], weight [K, C/groups, R, S], bias [K] or undefined -> [N, K, P, Q] with
// P = (H + 2*pad_h - dil_h*(R-1) - 1) / stride_h + 1 (and Q likewise).
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dOptions& options = {});

struct Pool2dOptions {
  std::array<int64_t, 2> kernel_size{2, 2};
  std::array<int64_t, 2> stride{0, 0};   // 0: the kernel size (PyTorch's default)
  std::array<int64_t, 2> padding{0, 0};  // at most half the kernel; max pads with -inf,
                                         // avg counts the padding as zeros (PyTorch's default)
  std::array<int64_t, 2> dilation{1, 1};  // spacing between window taps (max_pool2d only)
  bool ceil_mode = false;                 // round the output size up (the last window may overhang)
  bool count_include_pad = true;          // avg_pool2d: false divides by the taps inside the input
};
// input [N, C, H, W] (or [C, H, W]) -> [N, C, P, Q], as F.max_pool2d / avg_pool2d.
Tensor max_pool2d(const Tensor& input, const Pool2dOptions& options = {});
Tensor avg_pool2d(const Tensor& input, const Pool2dOptions& options = {});
// F.max_pool2d(..., return_indices=True): values and, per output, the int64 flat index
// h * W + w of the chosen input within its H x W plane.
ValuesIndices max_pool2d_with_indices(const Tensor& input, const Pool2dOptions& options = {});

// Which CUDA convolution runs (the CPU always uses im2col + GEMM): ember's own kernels
// (default) or cuDNN, when this build has it. Like torch.backends.cudnn.enabled.
enum class ConvBackend { Native, Cudnn };
void set_conv_backend(ConvBackend backend);  // Cudnn without cuDNN in the build: DeviceError
ConvBackend conv_backend();
bool cudnn_available();  // built with cuDNN (a GPU is still needed to use it)

// ---- layout ops (core/ops/view_ops.cpp, copy.cpp) — differentiable views and copies ---------
// view: the same storage under a new shape, wherever strides exist that keep every element in
// place (PyTorch's rule, core/shape.h view_strides: a transposed matrix can have a dim split but
// not be flattened); reshape: a view where view can, else a copy.
Tensor view(const Tensor& a, const Shape& shape);
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor permute(const Tensor& a, const Shape& dims);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& a, int64_t dim, int64_t index);
Tensor squeeze(const Tensor& a, int64_t dim);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor expand(const Tensor& a, const Shape& shape);
// Pieces of `a` along `dim`, as views (narrow): split into pieces of split_size (the last one
// smaller when split_size does not divide the size), or of the given sizes (which must add up
// to the size); chunk into `chunks` pieces of ceil(size / chunks) (so fewer pieces when the size
// runs out first, as in PyTorch). Each piece's gradient flows back into its part of `a`
// (core/ops/split.cpp).
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& split_sizes,
                          int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);
Tensor contiguous(const Tensor& a);
Tensor clone(const Tensor& a);
Tensor to_dtype(const Tensor& a, DType dtype);
// A copy on another device (`a` itself when already there); the gradient goes back to a's device.
Tensor to_device(const Tensor& a, Device device, bool non_blocking = false);

}  // namespace ember
