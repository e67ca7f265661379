// ember/nn/loss.h — loss modules (torch.nn.CrossEntropyLoss, torch.nn.MSELoss).
//
// A loss is a Module because it can own state that must follow the model across devices: the
// class weights of CrossEntropyLoss are a buffer, so `criterion->cuda()` moves them (seed 004:
// forgetting to move the criterion is an error).
#pragma once

#include <cstdint>
#include <string>

#include "core/ops.h"
#include "nn/module.h"

namespace ember::nn {

// Two tensors in (prediction, target), one scalar (or per-element tensor) out.
class Loss : public Module {
 public:
  explicit Loss(Reduction reduction) : reduction(reduction) {}
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

  // Mean (the default) averages over the batch, Sum adds, None returns one value per sample.
  const Reduction reduction;
};

// -log softmax(input)[target], per sample, from raw scores (logits): the model's last layer
// should not apply softmax. input [N, C], target int64 [N] with values in [0, C), or a float
// target [N, C] of class probabilities (soft labels, e.g. from mixup).
// weight, if given, is a float [C] rescaling each class's loss; with Mean reduction the sum is
// divided by the total weight of the counted samples. Samples whose target is ignore_index
// count for nothing. label_smoothing in [0, 1] moves that share of the target evenly onto all
// classes (torch.nn.CrossEntropyLoss(label_smoothing=0.1)).
class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(Tensor weight = Tensor(), Reduction reduction = Reduction::Mean,
                            int64_t ignore_index = -100, double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "CrossEntropyLoss"; }

  // The registered buffer "weight" (undefined without class weights); it moves with to().
  Tensor weight;
  const int64_t ignore_index;
  const double label_smoothing;
};

// (input - target)^2, elementwise, then reduced. input and target have the same shape.
class MSELoss : public Loss {
 public:
  explicit MSELoss(Reduction reduction = Reduction::Mean) : Loss(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "MSELoss"; }
};

}  // namespace ember::nn
