// Op card: mse_loss — mean squared error (a composite: no backward of its own).
//
// Math      d = input - target;  Reduction::None -> d * d;  Sum -> sum(d * d);
//           Mean -> mean(d * d), the sum divided by the number of elements.
// Backward  through sub, mul and sum/mean: dL/dinput = 2 d g (/ numel for Mean), and
//           dL/dtarget = -2 d g. Both inputs may require grad.
// Shapes    input and target of exactly the same shape (PyTorch broadcasts with a warning, which
//           usually hides a bug such as [N] vs [N, 1]; ember refuses). Same dtype and device.
// Dtypes    result_type(input, target) through sub, mul and mean (float32 with float64 is float64);
//           float inputs.
// Saved     what sub and mul save.
// Kernels   CPU: kernels/cpu/elementwise.cpp (sub, mul), kernels/cpu/reduce.cpp (sum, mean).
//           CUDA: kernels/cuda/elementwise.cu and kernels/cuda/reduce.cu, the same ops.
#include "core/ops/common.h"

namespace ember {

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  ops::check_defined("mse_loss", input, "input");
  ops::check_defined("mse_loss", target, "target");
  EMBER_CHECK(input.shape() == target.shape(), "mse_loss: input ", shape_str(input.shape()),
              " and target ", shape_str(target.shape()), " differ in shape: reshape one to match "
              "(ember does not broadcast here; an [N] vs [N, 1] mix-up would silently compare "
              "every pair)");
  ops::check_float("mse_loss", input);
  const Tensor d = sub(input, target);
  const Tensor sq = mul(d, d);
  switch (reduction) {
    case Reduction::None: return sq;
    case Reduction::Sum: return sum(sq);
    case Reduction::Mean: break;
  }
  return mean(sq);
}

}  // namespace ember
