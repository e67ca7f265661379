// ember/optim/sgd.h — stochastic gradient descent with momentum (torch.optim.SGD).
//
// For each parameter p with gradient g, one step is PyTorch's rule exactly:
//
//   d = g + weight_decay * p                   (an L2 penalty; skipped when weight_decay == 0)
//   if momentum != 0:
//     b = d                                    on the parameter's first step (no dampening)
//     b = momentum * b + (1 - dampening) * d   on later steps
//     d = nesterov ? d + momentum * b : b
//   p = p - lr * d
//
// This is PyTorch's form of momentum, where lr scales the velocity b, not Sutskever's
// (v = momentum * v - lr * g; p = p + v). The two agree while lr is constant and differ when a
// scheduler changes it.
#pragma once

#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0
  // Update contiguous parameters with the one-pass kernels (same numbers, fewer passes over
  // memory): kernels/cpu/optim.cpp on the CPU, one multi-tensor launch for all parameters on a
  // GPU (kernels/cuda/optim.cu). false: always tensor ops.
  bool fused = true;
};

using SGDParamGroup = ParamGroup<SGDOptions>;

class SGD final : public Optimizer {
 public:
  // SGD opt(model.parameters(), {/*lr=*/0.1, /*momentum=*/0.5});
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  // Parameter groups, each with its own options: SGD opt({{weights, o}, {biases, no_decay}});
  explicit SGD(std::vector<SGDParamGroup> groups);

  void step() override;
  NamedTensors state_dict() const override;
  void load_state_dict(const NamedTensors& state) override;

  // A new parameter group, appended after the others (PyTorch's add_param_group): with its own
  // options, or with defaults(). A tensor already in a group is refused.
  void add_param_group(const SGDParamGroup& group);
  void add_param_group(std::vector<Tensor> params);
  // The options a group made by add_param_group(params) gets: the constructor's (group 0's).
  const SGDOptions& defaults() const { return defaults_; }

  // A group's options, with its current lr.
  SGDOptions options(size_t group = 0) const;
  bool has_momentum() const override { return true; }
  double momentum(size_t group) const override;
  void set_momentum(size_t group, double value) override;  // checked as the constructor does
  // The velocity of params()[i]: undefined until its first update, and always without momentum.
  const Tensor& momentum_buffer(size_t i) const { return momentum_buffers_.at(i); }

 private:
  void update_with_tensor_ops(Tensor& p, const Tensor& g, Tensor& buf, const SGDOptions& o,
                              double lr);

  std::vector<SGDOptions> options_;  // per group; their lr fields are unused (lrs_ holds them)
  SGDOptions defaults_;
  std::vector<Tensor> momentum_buffers_;
};

}  // namespace ember::optim
