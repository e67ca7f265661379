// ember/nn/loss.cpp — the loss modules: checks phrased for the module, then nn::functional.
#include "nn/loss.h"

#include "kernels/base/error.h"
#include "nn/functional.h"

namespace ember::nn {

CrossEntropyLoss::CrossEntropyLoss(Tensor w, Reduction reduction, int64_t ignore_index,
                                   double label_smoothing)
    : Loss(reduction), ignore_index(ignore_index), label_smoothing(label_smoothing) {
  EMBER_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
              "CrossEntropyLoss: "
              "label_smoothing must be between 0.0 and 1.0, got ",
              label_smoothing);
  if (w.defined()) {
    EMBER_CHECK(w.dim() == 1 && is_floating(w.dtype()), "CrossEntropyLoss: the class weight must "
                "be a 1-d float tensor with one entry per class, got ", w.dtype(), " of shape ",
                shape_str(w.shape()));
  }
  // A buffer, not a parameter: it moves with criterion->to()/cuda() but is never trained.
  weight = register_buffer("weight", w);
}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  // Seed 004's mistake, named: the inputs were moved to the GPU but the criterion was not.
  EMBER_CHECK_T(DeviceError, !weight.defined() || weight.device() == input.device(),
                "CrossEntropyLoss: the class weight is on ", weight.device(), " but the input is "
                "on ", input.device(), ": move the loss with criterion->to(device) (or "
                "criterion->cuda()); its weight is a buffer and moves with it");
  return F::cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing);
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return F::mse_loss(input, target, reduction);
}

}  // namespace ember::nn
