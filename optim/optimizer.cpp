#include "optim/optimizer.h"

#include <cmath>
#include <unordered_set>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "kernels/base/error.h"

namespace ember::optim {

namespace detail {
void check_option(bool ok, const std::string& optimizer, const char* what, double value) {
  EMBER_CHECK(ok, optimizer, ": ", what, ", got ", value);
}
}  // namespace detail

Optimizer::Optimizer(std::vector<std::vector<Tensor>> groups, const std::vector<double>& lrs,
                     std::string name)
    : lrs_(lrs), initial_lrs_(lrs.size()), name_(std::move(name)) {
  EMBER_CHECK(groups.size() == lrs.size(), name_, ": ", groups.size(), " parameter groups but ",
              lrs.size(), " learning rates");
  for (size_t g = 0; g < groups.size(); ++g) {
    group_begin_.push_back(params_.size());
    for (Tensor& p : groups[g]) {
      params_.push_back(std::move(p));
      group_of_.push_back(g);
    }
  }
  group_begin_.push_back(params_.size());
  EMBER_CHECK(!params_.empty(), name_, ": got an empty parameter list (pass model.parameters(), "
              "or the tensors to optimize)");
  for (size_t g = 0; g < lrs_.size(); ++g) {
    detail::check_option(std::isfinite(lrs_[g]) && lrs_[g] >= 0.0, name_, "lr must be >= 0",
                         lrs_[g]);
  }
  std::unordered_set<const TensorImpl*> seen;
  for (size_t i = 0; i < params_.size(); ++i) {
    check_param(i);
    EMBER_CHECK(seen.insert(params_[i].impl()).second, name_, ": parameter ", i,
                " appears twice in the "
                "list",
                (lrs_.size() > 1 ? " (or in two parameter groups)" : ""),
                "; it would be updated twice per step — pass each tensor once");
  }
}

void Optimizer::check_param(size_t i) const {
  const Tensor& p = params_[i];
  EMBER_CHECK(p.defined(), name_, ": parameter ", i, " is an undefined tensor");
  EMBER_CHECK(is_floating(p.dtype()), name_, ": parameter ", i, " is ", p.dtype(),
              ": only float32 and float64 tensors can be optimized");
  EMBER_CHECK_T(AutogradError, p.is_leaf(), name_, ": parameter ", i,
                " was computed by an op "
                "(grad_fn=",
                p.grad_fn()->name(),
                "); an optimizer updates leaf tensors "
                "only — optimize the leaves it was computed from, or detach() it and call "
                "requires_grad_()");
}

size_t Optimizer::append_group(std::vector<Tensor> params, double lr) {
  detail::check_option(std::isfinite(lr) && lr >= 0.0, name_, "lr must be >= 0", lr);
  // Check everything before changing anything: a refused group leaves the optimizer as it was.
  std::unordered_set<const TensorImpl*> existing, fresh;
  for (const Tensor& p : params_) existing.insert(p.impl());
  for (size_t k = 0; k < params.size(); ++k) {
    EMBER_CHECK(params[k].defined(), name_, ".add_param_group: parameter ", k,
                " is an undefined tensor");
    EMBER_CHECK(!existing.count(params[k].impl()), name_, ".add_param_group: parameter ", k,
                " of the new group is already in a parameter group of this optimizer (PyTorch: "
                "\"some parameters appear in more than one parameter group\"); pass each tensor "
                "to one group only");
    EMBER_CHECK(fresh.insert(params[k].impl()).second, name_, ".add_param_group: parameter ", k,
                " appears twice in the new group; pass each tensor once");
  }
  const size_t first = params_.size();
  const size_t group = lrs_.size();
  for (Tensor& p : params) params_.push_back(std::move(p));
  try {
    for (size_t i = first; i < params_.size(); ++i) check_param(i);
  } catch (...) {
    params_.resize(first);
    throw;
  }
  for (size_t i = first; i < params_.size(); ++i) group_of_.push_back(group);
  group_begin_.push_back(params_.size());  // group_begin_[group] was the old end: params_ grew
  lrs_.push_back(lr);
  initial_lrs_.emplace_back();  // none yet: the next scheduler records it
  return group;
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor& p : params_) p.zero_grad(set_to_none);
}

namespace {
void check_group(size_t group, size_t count, const std::string& name) {
  EMBER_CHECK(group < count, name, ": there is no parameter group ", group, "; the optimizer has ",
              count,
              count == 1 ? " group (0)" : " groups (0 to " + std::to_string(count - 1) + ")");
}
}  // namespace

double Optimizer::lr(size_t group) const {
  check_group(group, lrs_.size(), name_);
  return lrs_[group];
}

void Optimizer::set_lr(double lr) {
  detail::check_option(std::isfinite(lr) && lr >= 0.0, name_, "lr must be >= 0", lr);
  for (double& l : lrs_) l = lr;
}

void Optimizer::set_lr(size_t group, double lr) {
  check_group(group, lrs_.size(), name_);
  detail::check_option(std::isfinite(lr) && lr >= 0.0, name_, "lr must be >= 0", lr);
  lrs_[group] = lr;
}

std::optional<double> Optimizer::initial_lr(size_t group) const {
  check_group(group, lrs_.size(), name_);
  return initial_lrs_[group];
}

void Optimizer::set_initial_lr(size_t group, double lr) {
  check_group(group, lrs_.size(), name_);
  detail::check_option(std::isfinite(lr) && lr >= 0.0, name_, "initial_lr must be >= 0", lr);
  initial_lrs_[group] = lr;
}

double Optimizer::momentum(size_t group) const {
  check_group(group, lrs_.size(), name_);
  throw ValueError(name_ + " has no momentum to read or cycle (OneCycleLR: set "
                           "cycle_momentum = false)");
}

void Optimizer::set_momentum(size_t group, double value) {
  (void)value;
  check_group(group, lrs_.size(), name_);
  throw ValueError(name_ + " has no momentum to set (OneCycleLR: set cycle_momentum = false)");
}

std::vector<Tensor> Optimizer::param_group(size_t group) const {
  check_group(group, lrs_.size(), name_);
  return std::vector<Tensor>(params_.begin() + static_cast<std::ptrdiff_t>(group_begin_[group]),
                             params_.begin() +
                                 static_cast<std::ptrdiff_t>(group_begin_[group + 1]));
}

Tensor Optimizer::grad_for_step(size_t i) const {
  const Tensor& p = params_[i];
  Tensor g = p.grad();
  if (!g.defined()) return g;
  EMBER_CHECK(g.shape() == p.shape(), name_, ": parameter ", i, " has shape ",
              shape_str(p.shape()), " but its gradient has shape ", shape_str(g.shape()));
  EMBER_CHECK_T(DeviceError, g.device() == p.device(), name_, ": parameter ", i, " is on ",
                p.device(), " but its gradient is on ", g.device(), ": move the gradient with "
                "set_grad(grad.to(", p.device(), ")), or the parameter with set_data");
  // A gradient of another float dtype is converted, as an in-place op would convert it anyway.
  if (g.dtype() != p.dtype()) g = g.to(p.dtype());
  return g;
}

void Optimizer::follow_param(Tensor& state, size_t i) const {
  if (!state.defined()) return;
  const Tensor& p = params_[i];
  EMBER_CHECK(state.shape() == p.shape(), name_, ": parameter ", i, " changed shape from ",
              shape_str(state.shape()), " to ", shape_str(p.shape()), " after its state was "
              "created; build a new optimizer for the new parameters");
  if (state.dtype() != p.dtype()) state = state.to(p.dtype());
  if (state.device() != p.device()) state = state.to(p.device());
}

}  // namespace ember::optim
