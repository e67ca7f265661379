// Op card: cross_entropy — softmax + negative log-likelihood of the target class, fused.
//
// Math      for row i with target t_i (rows with t_i == ignore_index are left out):
//             loss_i = w[t_i] * -log softmax(logits_i)[t_i] = w[t_i] * (lse_i - logits[i, t_i])
//           with lse_i = log sum_c exp(logits[i, c]) and w = 1 without a weight.
//           Reduction::None -> loss [N] (0 for ignored rows); Sum -> sum_i loss_i;
//           Mean -> sum_i loss_i / sum_i w[t_i] over the rows not ignored (the weighted mean,
//           exactly as torch.nn.functional.cross_entropy; without a weight, divided by the number
//           of rows not ignored; nan when every row is ignored, as in PyTorch).
// Backward  d lse_i / d logits[i, c] = softmax[i, c] and d logits[i, t] / d logits[i, c] is
//           [c == t], so  dL/dlogits[i, c] = g_i * w[t_i] * (softmax[i, c] - [c == t_i])
//           where g_i = dL/dloss_i (None), dL/dout (Sum) or dL/dout / sum w (Mean); 0 for ignored
//           rows. softmax[i, c] = exp(logits[i, c] - lse_i) from the saved lse: one fused kernel.
//           No gradient for target (integers) or weight (PyTorch has none either).
// Shapes    logits [N, C] float, target int64 [N] with values in [0, C) or == ignore_index,
//           weight [C] (optional); also logits [C] with a 0-d target (one sample), as PyTorch.
// Saved     logits, target, weight (contiguous), lse [N], and the divisor of the mean.
// Kernels   CPU: kernels/cpu/cross_entropy.cpp cross_entropy_forward, cross_entropy_backward.
//           CUDA: kernels/cuda/cross_entropy.cu (the mean's divisor stays on the device).
#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/index.h"

namespace ember {

namespace {
struct CrossEntropyBackward final : ops::Node {
  ops::SavedTensor logits, target, weight, lse;
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double scale = 1.0;  // 1 / sum of weights for Mean, else 1 (CPU)
  Tensor divisor;      // CUDA, Mean: the 0-d sum of weights, left on the device
  std::string name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor x = logits.unpack(*this, "logits");
    const Tensor t = target.unpack(*this, "target");
    const Tensor w = weight.defined() ? weight.unpack(*this, "weight") : Tensor();
    const Tensor l = lse.unpack(*this, "lse");
    const Tensor gc = g.contiguous();
    Tensor gx = ops::new_output(x.shape(), x);
    // Reduction::None sends one gradient per row; Sum and Mean one for all rows (stride 0).
    const int64_t grad_stride = reduction == Reduction::None ? 1 : 0;
    const void* wp = w.defined() ? w.raw_data() : nullptr;
    if (x.is_cuda()) {
      cuda::DeviceGuard guard(x.device());
      kernels::cuda::cross_entropy_backward(x.dtype(), x.size(0), x.size(1), x.raw_data(),
                                            t.data_ptr<int64_t>(), wp, ignore_index, l.raw_data(),
                                            gc.raw_data(), grad_stride,
                                            divisor.defined() ? divisor.raw_data() : nullptr,
                                            gx.raw_data());
    } else {
      kernels::cpu::cross_entropy_backward(x.dtype(), x.size(0), x.size(1), x.raw_data(),
                                           t.data_ptr<int64_t>(), wp, ignore_index, l.raw_data(),
                                           gc.raw_data(), grad_stride, scale, gx.raw_data());
    }
    return {gx};
  }
  void release_saved() override {
    logits.reset();
    target.reset();
    weight.reset();
    lse.reset();
    divisor = Tensor();
  }
};
}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                     Reduction reduction, int64_t ignore_index) {
  const char* op = "cross_entropy";
  ops::check_defined(op, logits, "logits");
  ops::check_defined(op, target, "target");
  if (logits.dim() == 1) {
    // One sample: logits [C] and a 0-d class index, as PyTorch accepts.
    EMBER_CHECK(target.dim() == 0, "cross_entropy: logits of shape ", shape_str(logits.shape()),
                " are one sample and need a 0-d target (one class index), got target shape ",
                shape_str(target.shape()));
    Tensor out = cross_entropy(logits.unsqueeze(0), target.reshape({1}), weight, reduction,
                               ignore_index);
    return reduction == Reduction::None ? out.reshape({}) : out;
  }
  EMBER_CHECK(logits.dim() == 2, "cross_entropy: logits must be [N, C] (or [C] with a 0-d "
              "target), got shape ", shape_str(logits.shape()), ": flatten the extra dims first");
  ops::check_float(op, logits);
  ops::check_same_device(op, logits, target);
  EMBER_CHECK(target.dtype() == kInt64, "cross_entropy: target must hold int64 class indices, "
              "got ", target.dtype(), " (convert with .to(ember::kInt64))");
  const int64_t N = logits.size(0), C = logits.size(1);
  EMBER_CHECK(target.dim() == 1 && target.size(0) == N, "cross_entropy: logits ",
              shape_str(logits.shape()), " need a target of shape [", N, "], got ",
              shape_str(target.shape()));
  if (weight.defined()) {
    ops::check_same_device(op, logits, weight);
    ops::check_same_dtype(op, logits, weight);
    EMBER_CHECK(weight.shape() == Shape{C}, "cross_entropy: weight must have shape [", C,
                "] (one per class of logits ", shape_str(logits.shape()), "), got ",
                shape_str(weight.shape()));
    EMBER_CHECK(!(is_grad_enabled() && weight.requires_grad()), "cross_entropy: no gradient "
                "with respect to the class weights (PyTorch has none either): pass "
                "weight.detach()");
  }

  const Tensor t = target.detach().contiguous();
  // Checked here, before the multi-threaded kernel, so the message can name the bad entry.
  // (On a GPU this waits for the device; a kernel must not read out of bounds.)
  int64_t bad = -1;
  if (t.is_cuda()) {
    cuda::DeviceGuard guard(t.device());
    bad = kernels::cuda::first_out_of_range(t.data_ptr<int64_t>(), N, C, true, ignore_index);
  } else {
    const int64_t* tv = t.data_ptr<int64_t>();
    for (int64_t i = 0; i < N && bad < 0; ++i)
      if (tv[i] != ignore_index && (tv[i] < 0 || tv[i] >= C)) bad = i;
  }
  if (bad >= 0) {
    throw ValueError(detail::concat("cross_entropy: target[", bad, "] = ", t[bad].item<int64_t>(),
                                    " is out of range for ", C, " classes (valid: 0 to ", C - 1,
                                    ", or ignore_index ", ignore_index, ")"));
  }
  const Tensor x = logits.detach().contiguous();
  const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  const void* wp = w.defined() ? w.raw_data() : nullptr;
  Tensor loss = ops::new_output({N}, logits);
  Tensor lse = ops::new_output({N}, logits);

  Tensor out;
  double scale = 1.0;
  Tensor divisor;
  if (x.is_cuda()) {
    // The reduction stays on the GPU: the host never waits for the loss value.
    cuda::DeviceGuard guard(x.device());
    // kernels/cuda/cross_entropy.h numbers the reductions 0 none, 1 sum, 2 mean.
    const int red = reduction == Reduction::None ? 0 : reduction == Reduction::Sum ? 1 : 2;
    Tensor weight_sum;
    if (reduction != Reduction::None) {
      out = ops::new_output({}, logits);
      weight_sum = ops::new_output({}, logits);
    }
    kernels::cuda::cross_entropy_forward(
        x.dtype(), N, C, x.raw_data(), t.data_ptr<int64_t>(), wp, ignore_index, loss.raw_data(),
        lse.raw_data(), red, out.defined() ? out.raw_data() : nullptr,
        weight_sum.defined() ? weight_sum.raw_data() : nullptr);
    if (reduction == Reduction::None) out = loss;
    if (reduction == Reduction::Mean) divisor = weight_sum;
  } else {
    const kernels::cpu::CrossEntropySums sums = kernels::cpu::cross_entropy_forward(
        x.dtype(), N, C, x.raw_data(), t.data_ptr<int64_t>(), wp, ignore_index, loss.raw_data(),
        lse.raw_data());
    switch (reduction) {
      case Reduction::None: out = loss; break;
      case Reduction::Sum: out = ops::scalar_like(sums.loss, logits); break;
      case Reduction::Mean:
        scale = 1.0 / sums.weight;
        out = ops::scalar_like(sums.loss / sums.weight, logits);
        break;
    }
  }
  if (autograd::grad_needed({&logits})) {
    auto node = std::make_shared<CrossEntropyBackward>();
    node->logits = ops::SavedTensor(x);
    node->target = ops::SavedTensor(t);
    if (w.defined()) node->weight = ops::SavedTensor(w);
    node->lse = ops::SavedTensor(lse);
    node->reduction = reduction;
    node->ignore_index = ignore_index;
    node->scale = scale;
    node->divisor = divisor;
    autograd::connect(node, out, {&logits});
  }
  return out;
}

}  // namespace ember
