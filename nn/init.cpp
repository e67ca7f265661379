// ember/nn/init.cpp — in-place initialisation, computed the way torch.nn.init computes it.
#include "nn/init.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "kernels/base/error.h"
#include "core/ops.h"

namespace ember::nn::init {

Tensor& uniform_(Tensor& t, double low, double high) {
  EMBER_CHECK(t.defined(), "init::uniform_: the tensor is undefined");
  EMBER_CHECK(low <= high, "init::uniform_: low (", low, ") must not exceed high (", high, ")");
  NoGradGuard no_grad;  // a parameter requires grad: an in-place fill must not be recorded
  t.copy_(rand(t.shape(), t.options()) * (high - low) + low);
  return t;
}

int64_t fan_in(const Tensor& weight) {
  EMBER_CHECK(weight.dim() >= 2, "init::fan_in: needs a weight with at least 2 dimensions "
              "([out, in] or [out, in, kh, kw]), got shape ", shape_str(weight.shape()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < weight.dim(); ++d) receptive *= weight.size(d);
  return weight.size(1) * receptive;
}

Tensor& kaiming_uniform_(Tensor& t, double a) {
  const double fan = static_cast<double>(fan_in(t));
  if (fan == 0) return t;  // nothing to fill
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / fan);
  return uniform_(t, -bound, bound);
}

void default_layer_init_(Tensor& weight, Tensor& bias) {
  kaiming_uniform_(weight, std::sqrt(5.0));
  if (!bias.defined()) return;
  const double fan = static_cast<double>(fan_in(weight));
  // fan_in 0 (an empty weight) gives a zero bias, as U(-0, 0) would.
  const double bound = fan > 0 ? 1.0 / std::sqrt(fan) : 0.0;
  uniform_(bias, -bound, bound);
}

}  // namespace ember::nn::init
