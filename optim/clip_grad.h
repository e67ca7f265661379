// ember/optim/clip_grad.h — gradient clipping by total norm (torch.nn.utils.clip_grad_norm_).
//
// All gradients are treated as one long vector. Its norm is
//   total = (sum over every element g of every gradient |g|^norm_type)^(1 / norm_type)
// (for norm_type = infinity: the largest |g|), and when total exceeds max_norm every gradient
// is scaled in place by max_norm / (total + 1e-6), which brings the total just under max_norm.
// The direction of the update is kept; only its length is capped. Call it between
// loss.backward() and optimizer.step():
//
//   loss.backward();
//   double norm = optim::clip_grad_norm_(model.parameters(), /*max_norm=*/1.0);
//   opt.step();
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ember::optim {

// Returns the total norm before clipping (0 when no parameter has a gradient). Parameters
// without a gradient are skipped. norm_type is > 0, or infinity
// (std::numeric_limits<double>::infinity()). As in PyTorch, a non-finite total (an inf or NaN
// gradient) still scales the gradients — making them NaN, which is easy to spot — unless
// error_if_nonfinite, which throws instead.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

}  // namespace ember::optim
