// ember/nn/dropout.h — Dropout (torch.nn.Dropout).
#pragma once

#include <string>

#include "nn/module.h"

namespace ember::nn {

// In training mode, zeroes each element with probability p and scales the rest by 1 / (1 - p)
// (see F::dropout); after eval() it passes its input through unchanged. The masks come from
// ember's global generator, so a seeded run drops the same elements again.
class Dropout : public Layer {
 public:
  explicit Dropout(double p = 0.5);  // p in [0, 1)
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override;

  const double p;
};

}  // namespace ember::nn
