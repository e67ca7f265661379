// ember/nn/activation.h — activation layers (torch.nn.ReLU, torch.nn.Softmax).
//
// They hold no parameters; they exist so that a Sequential can list them between the Linear
// layers. Inside a hand-written forward, F::relu / F::softmax read just as well.
#pragma once

#include <cstdint>
#include <string>

#include "nn/module.h"

namespace ember::nn {

// max(x, 0), elementwise.
class ReLU : public Layer {
 public:
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "ReLU"; }
};

// exp(x) / sum(exp(x)) along `dim`: each slice along dim becomes a probability distribution.
// For training with CrossEntropyLoss do not add it: the loss applies log_softmax itself.
class Softmax : public Layer {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Softmax"; }
  std::string extra_repr() const override;

  const int64_t dim;
};

}  // namespace ember::nn
