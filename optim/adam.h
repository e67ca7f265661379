// ember/optim/adam.h — Adam and AdamW (torch.optim.Adam, torch.optim.AdamW).
//
// Adam keeps two running averages per parameter: m of the gradient (the direction) and v of
// its square (the scale), and moves each weight by about lr in the direction m / sqrt(v). At
// step t (counted from 1 for each parameter), with gradient g, PyTorch's rule exactly:
//
//   AdamW:  p = p * (1 - lr * weight_decay)       decoupled weight decay: shrink the weight
//   Adam:   g = g + weight_decay * p              an L2 penalty folded into the gradient
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   amsgrad: v_max = max(v_max, v), used in place of v below (the step never grows back)
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps     eps after the bias-corrected root
//   p = p - lr / (1 - beta1^t) * m / denom
//
// m and v start at zero, so early averages are biased towards zero; dividing by 1 - beta^t
// undoes that. With weight_decay == 0 Adam and AdamW are the same optimizer.
#pragma once

#include <cstdint>
#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2 penalty added to the gradient
  bool amsgrad = false;
  // Update contiguous parameters with the one-pass kernels: kernels/cpu/optim.cpp on the CPU,
  // one multi-tensor launch for all parameters on a GPU (kernels/cuda/optim.cu). false: always
  // tensor ops.
  bool fused = true;
};

// AdamW's options differ only in the default weight decay (1e-2, as in PyTorch), which here is
// decoupled from the gradient.
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool fused = true;
};

// What Adam remembers about one parameter; tensors are undefined until its first update.
struct AdamState {
  int64_t step = 0;        // updates so far (t of the last update)
  Tensor exp_avg;          // m
  Tensor exp_avg_sq;       // v
  Tensor max_exp_avg_sq;   // v_max, with amsgrad only
};

using AdamParamGroup = ParamGroup<AdamOptions>;
using AdamWParamGroup = ParamGroup<AdamWOptions>;

class Adam : public Optimizer {
 public:
  // Adam opt(model.parameters(), {/*lr=*/1e-3});
  Adam(std::vector<Tensor> params, const AdamOptions& options);
  // Parameter groups, each with its own options: Adam opt({{weights, o}, {biases, no_decay}});
  explicit Adam(std::vector<AdamParamGroup> groups);

  void step() override;
  NamedTensors state_dict() const override;
  void load_state_dict(const NamedTensors& state) override;

  // A new parameter group, appended after the others (PyTorch's add_param_group): with its own
  // options, or with defaults(). A tensor already in a group is refused.
  void add_param_group(const AdamParamGroup& group);
  void add_param_group(std::vector<Tensor> params);
  // The options a group made by add_param_group(params) gets: the constructor's (group 0's).
  const AdamOptions& defaults() const { return defaults_; }

  // A group's options, with its current lr.
  AdamOptions options(size_t group = 0) const;
  const AdamState& state(size_t i) const { return state_.at(i); }
  // beta1 is the momentum OneCycleLR cycles.
  bool has_momentum() const override { return true; }
  double momentum(size_t group) const override;
  void set_momentum(size_t group, double beta1) override;

 protected:
  Adam(std::vector<AdamParamGroup> groups, bool decoupled_weight_decay, std::string name);

 private:
  void update_with_tensor_ops(Tensor& p, const Tensor& g, AdamState& st, const AdamOptions& o,
                              double lr, double step_size, double bias_correction2_sqrt);

  std::vector<AdamOptions> options_;  // per group; their lr fields are unused (lrs_ holds them)
  AdamOptions defaults_;
  bool decoupled_;
  std::vector<AdamState> state_;
};

class AdamW final : public Adam {
 public:
  // AdamW opt(model.parameters(), {/*lr=*/1e-3, 0.9, 0.999, 1e-8, /*weight_decay=*/1e-2});
  AdamW(std::vector<Tensor> params, const AdamWOptions& options);
  explicit AdamW(std::vector<AdamWParamGroup> groups);
  // add_param_group with AdamW's options (Adam's overloads stay: params alone take defaults()).
  using Adam::add_param_group;
  void add_param_group(const AdamWParamGroup& group);
};

}  // namespace ember::optim
