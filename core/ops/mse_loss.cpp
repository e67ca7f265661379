// Op card: mse_loss — mean squared error.
//
// Math      d = input - target;  Reduction::None -> d * d;  Sum -> sum(d * d);
//           Mean -> mean(d * d), the sum divided by the number of elements.
// Backward  dL/dinput = (2 d) g (2 / numel instead of 2 for Mean), dL/dtarget = -dL/dinput;
//           g broadcast from the 0-d gradient after Sum and Mean. Both inputs may require grad.
//           Built from ops (sub, mul, neg), so it can be differentiated again. The forward runs
//           the same ops as a composite would; the node exists for what it saves (below).
// Shapes    input and target of exactly the same shape (PyTorch broadcasts with a warning, which
//           usually hides a bug such as [N] vs [N, 1]; ember refuses). Same dtype and device.
// Dtypes    result_type(input, target) through sub, mul and mean (float32 with float64 is float64);
//           float inputs.
// Saved     input and target, as PyTorch saves them: changing either in place before the
//           backward is refused (a composite would save only its own difference d).
// Kernels   CPU: kernels/cpu/elementwise.cpp (sub, mul), kernels/cpu/reduce.cpp (sum, mean).
//           CUDA: kernels/cuda/elementwise.cu and kernels/cuda/reduce.cu, the same ops.
#include "core/ops/common.h"

namespace ember {

namespace {
struct MseLossBackward final : ops::Node {
  ops::SavedTensor input, target;
  Reduction reduction = Reduction::Mean;
  std::string name() const override { return "MseLossBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor a = input.unpack(*this, "self");
    const Tensor b = target.unpack(*this, "target");
    const double norm = reduction == Reduction::Mean ? 2.0 / static_cast<double>(a.numel()) : 2.0;
    const Tensor ga = mul(mul(sub(a, b), Scalar(norm)), g);
    return {needs_input_grad(0) ? ga : Tensor(), needs_input_grad(1) ? neg(ga) : Tensor()};
  }
  void release_saved() override {
    input.reset();
    target.reset();
  }
};

Tensor mse_values(const Tensor& input, const Tensor& target, Reduction reduction) {
  const Tensor d = sub(input, target);
  const Tensor sq = mul(d, d);
  switch (reduction) {
    case Reduction::None: return sq;
    case Reduction::Sum: return sum(sq);
    case Reduction::Mean: break;
  }
  return mean(sq);
}
}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  ops::check_defined("mse_loss", input, "input");
  ops::check_defined("mse_loss", target, "target");
  EMBER_CHECK(input.shape() == target.shape(), "mse_loss: input ", shape_str(input.shape()),
              " and target ", shape_str(target.shape()), " differ in shape: reshape one to match "
              "(ember does not broadcast here; an [N] vs [N, 1] mix-up would silently compare "
              "every pair)");
  ops::check_float("mse_loss", input);
  if (!autograd::grad_needed({&input, &target})) return mse_values(input, target, reduction);
  Tensor out;
  {
    NoGradGuard no_grad;  // the values only; MseLossBackward is the tape
    out = mse_values(input, target, reduction);
  }
  auto node = std::make_shared<MseLossBackward>();
  node->input = ops::SavedTensor(input);
  node->target = ops::SavedTensor(target);
  node->reduction = reduction;
  autograd::connect(node, out, {&input, &target});
  return out;
}

}  // namespace ember
