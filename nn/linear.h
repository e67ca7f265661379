// ember/nn/linear.h — the fully connected layer, y = x W^T + b (torch.nn.Linear).
#pragma once

#include <cstdint>
#include <string>

#include "nn/module.h"

namespace ember::nn {

class Linear : public Layer {
 public:
  // weight [out_features, in_features] and bias [out_features] start with PyTorch's default
  // initialisation (see reset_parameters), drawn from ember's global generator: after the same
  // ember::manual_seed, the same layers get the same weights.
  Linear(int64_t in_features, int64_t out_features, bool bias = true);

  // x [*, in_features] -> [*, out_features]: a batch [N, 784] or any leading dims.
  Tensor forward(const Tensor& x) override;

  // Re-draws the parameters in place. weight: kaiming_uniform_(a = sqrt(5)), i.e.
  // U(-bound, bound) with gain = sqrt(2 / (1 + a^2)) and bound = gain * sqrt(3 / fan_in),
  // which for a = sqrt(5) is 1 / sqrt(fan_in); bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters();

  std::string name() const override { return "Linear"; }
  std::string extra_repr() const override;

  const int64_t in_features;
  const int64_t out_features;
  // Registered as parameters "weight" and "bias" (undefined when built with bias = false).
  // They are handles to the registered tensors: change their values in place (or with
  // set_data), do not assign another tensor to them.
  Tensor weight;
  Tensor bias;
};

}  // namespace ember::nn
