// ember/optim/optimizer.h — what every optimizer shares: the parameter list, the learning rate,
// zero_grad, and step().
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
// A single parameter group: one learning rate for all parameters. Parameters whose .grad is
// undefined (never reached by backward, or set to none) are skipped by step(), as in PyTorch.
#pragma once

#include <string>
#include <vector>

#include "core/serialize.h"
#include "core/tensor.h"

namespace ember::optim {

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

  double lr() const { return lr_; }
  void set_lr(double lr);  // schedulers call this; lr must be >= 0

  const std::vector<Tensor>& params() const { return params_; }
  const std::string& name() const { return name_; }  // "SGD", "Adam", "AdamW"

  // ---- saving and restoring (optim/state_dict.cpp) ----------------------------------------
  // The optimizer's state as named tensors, in PyTorch's layout flattened to dotted names:
  //   param_groups.0.lr, param_groups.0.momentum, ...   the hyper-parameters (0-d tensors)
  //   state.3.momentum_buffer, state.3.exp_avg, ...     per-parameter state of params()[3]
  // Parameters are numbered by their place in params(), as PyTorch numbers them.
  virtual NamedTensors state_dict() const;
  // Restores what state_dict() returned: hyper-parameters, and per-parameter state copied onto
  // each parameter's device. Everything is checked first (names, parameter numbers, shapes,
  // dtypes); a ValueError names every problem and leaves the optimizer as it was.
  virtual void load_state_dict(const NamedTensors& state);

 protected:
  // Checks the list: not empty, every entry a defined float leaf tensor, no duplicates.
  Optimizer(std::vector<Tensor> params, double lr, std::string name);

  // The gradient of params()[i] ready for an update, or an undefined tensor to skip it. Checks
  // that the gradient matches its parameter (shape, dtype, device) and says what to do if not.
  Tensor grad_for_step(size_t i) const;

  // Makes a state buffer of params()[i] follow the parameter's dtype and device after a
  // set_data move (an undefined buffer is left alone).
  void follow_param(Tensor& state, size_t i) const;

  std::vector<Tensor> params_;
  double lr_;
  std::string name_;
};

namespace detail {
// Throws ValueError "<optimizer>: <what>, got <value>" unless ok — e.g.
// "SGD: lr must be >= 0, got -0.1". Shared by the optimizers' option checks.
void check_option(bool ok, const std::string& optimizer, const char* what, double value);
}  // namespace detail

}  // namespace ember::optim
