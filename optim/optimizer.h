// ember/optim/optimizer.h — what every optimizer shares: the parameter list and its parameter
// groups, the learning rate of each group, zero_grad, and step().
//
// The PyTorch training loop reads the same in ember:
//
//   optim::SGD opt(model.parameters(), {/*lr=*/0.1, /*momentum=*/0.5});
//   for (auto& [x, y] : loader) {
//     opt.zero_grad();                  // grads set to none (PyTorch 2.x default)
//     Tensor loss = cross_entropy(model(x), y);
//     loss.backward();
//     opt.step();
//   }
//
// An optimizer keeps handles to the parameters, not copies: Module::to(device) replaces their
// data in place (Tensor::set_data) and the optimizer sees the moved tensors. Per-parameter state
// (momentum buffers, Adam's moments) is created at the first step that updates the parameter,
// with the parameter's dtype and device at that moment; if the parameter moves afterwards, the
// state is moved along at the next step (as load_state_dict casts state in PyTorch).
//
// Parameter groups (PyTorch's param_groups): the parameters can be split into groups, each with
// its own hyper-parameters — a different lr, or no weight decay for biases:
//
//   # PyTorch: optim.SGD([{"params": weights}, {"params": biases, "weight_decay": 0}],
//   #                    lr=0.1, momentum=0.9, weight_decay=5e-4)
//   optim::SGDOptions o{/*lr=*/0.1, /*momentum=*/0.9, /*dampening=*/0, /*weight_decay=*/5e-4};
//   optim::SGDOptions no_decay = o;
//   no_decay.weight_decay = 0.0;
//   optim::SGD opt({{weights, o}, {biases, no_decay}});
//
// The constructor that takes a parameter list and one options struct makes a single group.
// add_param_group() adds one later (PyTorch's optimizer.add_param_group), e.g. to train layers
// unfrozen halfway through: with its own options, or with the optimizer's defaults (the options
// it was constructed with; group 0's when it was constructed from groups). Schedulers made after
// it see the new group; one made before refuses to step (it has no base lr for the group).
// params() lists the parameters of all groups, group 0's first; a parameter's number is its place
// there, as PyTorch numbers them in state_dict(). LR schedulers set each group's lr. Parameters
// whose .grad is undefined (never reached by backward, or set to none) are skipped by step(), as
// in PyTorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/serialize.h"
#include "core/tensor.h"

namespace ember::optim {

// One group of parameters and its hyper-parameters (Options: SGDOptions, AdamOptions, ...).
template <typename Options>
struct ParamGroup {
  std::vector<Tensor> params;
  Options options;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient. Runs under NoGradGuard.
  virtual void step() = 0;

  // Clears the gradients: set to none (undefined) by default, as PyTorch 2.x does; with
  // set_to_none = false they are filled with zeros instead (PyTorch 1.x's behaviour).
  void zero_grad(bool set_to_none = true);

  // ---- parameter groups ------------------------------------------------------------------------
  size_t num_param_groups() const { return lrs_.size(); }
  // The learning rate of group 0 (the only one unless the optimizer was built with groups), and
  // of any group. PyTorch: optimizer.param_groups[g]["lr"].
  double lr() const { return lrs_.front(); }
  double lr(size_t group) const;
  // Sets every group's lr, or one group's; lr must be a finite number >= 0.
  void set_lr(double lr);
  void set_lr(size_t group, double lr);
  // The lr a group had when the first LR scheduler was attached (PyTorch's group["initial_lr"]):
  // schedulers take their base_lrs from it, SequentialLR resets to it, OneCycleLR overwrites it.
  std::optional<double> initial_lr(size_t group) const;
  void set_initial_lr(size_t group, double lr);
  // The momentum that OneCycleLR cycles: SGD's momentum, Adam's beta1. has_momentum() is false
  // for an optimizer that has none (the others then throw).
  virtual bool has_momentum() const { return false; }
  virtual double momentum(size_t group) const;
  virtual void set_momentum(size_t group, double value);

  // All parameters, group by group; and the parameters of one group, and the group of params()[i].
  const std::vector<Tensor>& params() const { return params_; }
  std::vector<Tensor> param_group(size_t group) const;
  size_t group_of(size_t i) const { return group_of_.at(i); }
  const std::string& name() const { return name_; }  // "SGD", "Adam", "AdamW"

  // ---- saving and restoring (optim/state_dict.cpp) ----------------------------------------
  // The optimizer's state as named tensors, in PyTorch's layout flattened to dotted names:
  //   param_groups.K.lr, param_groups.K.momentum, ...   group K's hyper-parameters (0-d tensors)
  //   param_groups.K.params                            int64 [n]: the numbers of its parameters
  //   param_groups.K.initial_lr                        only once a scheduler has set it
  //   state.3.momentum_buffer, state.3.exp_avg, ...     per-parameter state of params()[3]
  // Parameters are numbered by their place in params(), as PyTorch numbers them.
  virtual NamedTensors state_dict() const;
  // Restores what state_dict() returned: hyper-parameters, and per-parameter state copied onto
  // each parameter's device. Everything is checked first (names, the number of groups and their
  // sizes, parameter numbers, shapes, dtypes); a ValueError names every problem and leaves the
  // optimizer as it was. A state without param_groups.K.params (written by ember before groups
  // existed: one group) loads into a one-group optimizer.
  virtual void load_state_dict(const NamedTensors& state);

 protected:
  // Checks the groups: at least one parameter in all, every entry a defined float leaf tensor,
  // no tensor twice, every lr finite and >= 0.
  Optimizer(std::vector<std::vector<Tensor>> groups, const std::vector<double>& lrs,
            std::string name);

  // add_param_group's common part: checks the new group's tensors as the constructor does, and
  // refuses one that is already in a group of this optimizer; then appends the group (its
  // parameters get the next numbers) and returns its index. Nothing changes when it throws.
  size_t append_group(std::vector<Tensor> params, double lr);
  void check_param(size_t i) const;  // params_[i] is a defined float leaf

  // The gradient of params()[i] ready for an update, or an undefined tensor to skip it. Checks
  // that the gradient matches its parameter (shape, dtype, device) and says what to do if not.
  Tensor grad_for_step(size_t i) const;

  // Makes a state buffer of params()[i] follow the parameter's dtype and device after a
  // set_data move (an undefined buffer is left alone).
  void follow_param(Tensor& state, size_t i) const;

  std::vector<Tensor> params_;
  std::vector<size_t> group_of_;     // params_[i] belongs to group group_of_[i]
  std::vector<size_t> group_begin_;  // group g is params_[group_begin_[g] .. group_begin_[g + 1])
  std::vector<double> lrs_;          // per group
  std::vector<std::optional<double>> initial_lrs_;
  std::string name_;
};

namespace detail {
// Throws ValueError "<optimizer>: <what>, got <value>" unless ok — e.g.
// "SGD: lr must be >= 0, got -0.1". Shared by the optimizers' option checks.
void check_option(bool ok, const std::string& optimizer, const char* what, double value);

// The parameter lists and the options of typed groups, for the constructors.
template <typename Options>
std::vector<std::vector<Tensor>> group_params(const std::vector<ParamGroup<Options>>& groups) {
  std::vector<std::vector<Tensor>> out;
  for (const auto& g : groups) out.push_back(g.params);
  return out;
}
template <typename Options>
std::vector<double> group_lrs(const std::vector<ParamGroup<Options>>& groups) {
  std::vector<double> out;
  for (const auto& g : groups) out.push_back(g.options.lr);
  return out;
}
}  // namespace detail

}  // namespace ember::optim
