#include "optim/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "kernels/base/error.h"
#include "core/ops.h"

namespace ember::optim {

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK(max_norm >= 0.0, "clip_grad_norm_: max_norm must be >= 0, got ", max_norm);
  EMBER_CHECK(norm_type > 0.0, "clip_grad_norm_: norm_type must be > 0 (2 for the Euclidean "
              "norm, infinity for the largest element), got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (p.defined() && p.grad().defined() && p.grad().numel() > 0) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0.0;

  // Each gradient contributes one number (its largest |g|, or its sum of |g|^p, summed in
  // double by the reduction), so nothing parameter-sized is kept beyond one temporary.
  double total = 0.0;
  if (std::isinf(norm_type)) {
    for (const Tensor& g : grads) {
      const double m = max(abs(g)).item();
      total = std::isnan(m) || std::isnan(total) ? NAN : std::max(total, m);
    }
  } else {
    double acc = 0.0;
    for (const Tensor& g : grads) {
      if (norm_type == 2.0) {
        acc += sum(g * g).item();
      } else if (norm_type == 1.0) {
        acc += sum(abs(g)).item();
      } else {
        acc += sum(pow(abs(g), norm_type)).item();
      }
    }
    total = norm_type == 1.0 ? acc : std::pow(acc, 1.0 / norm_type);
  }

  EMBER_CHECK(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_: the total norm of "
              "order ", norm_type, " of the gradients is ", total, ", so they cannot be "
              "clipped; look for the inf/NaN gradient, or pass error_if_nonfinite = false to "
              "scale by the non-finite norm anyway");
  const double clip_coef = max_norm / (total + 1e-6);
  // Written so that a NaN coefficient scales too (PyTorch's clamp keeps the NaN).
  if (!(clip_coef >= 1.0)) {
    for (Tensor& g : grads) g.mul_(clip_coef);
  }
  return total;
}

}  // namespace ember::optim
