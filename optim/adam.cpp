#include "optim/adam.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/backend.h"
#include "core/cuda.h"
#include "core/ops.h"
#include "kernels/base/error.h"
#include "kernels/optim.h"

namespace ember::optim {

namespace {
AdamOptions as_adam_options(const AdamWOptions& w) {
  AdamOptions o;
  o.lr = w.lr;
  o.beta1 = w.beta1;
  o.beta2 = w.beta2;
  o.eps = w.eps;
  o.weight_decay = w.weight_decay;
  o.amsgrad = w.amsgrad;
  o.fused = w.fused;
  return o;
}

std::vector<AdamParamGroup> as_adam_groups(std::vector<AdamWParamGroup> groups) {
  std::vector<AdamParamGroup> out;
  for (AdamWParamGroup& g : groups)
    out.push_back({std::move(g.params), as_adam_options(g.options)});
  return out;
}

void check_adam_options(const AdamOptions& o, const std::string& name) {
  detail::check_option(o.beta1 >= 0.0 && o.beta1 < 1.0, name, "beta1 must be in [0, 1)", o.beta1);
  detail::check_option(o.beta2 >= 0.0 && o.beta2 < 1.0, name, "beta2 must be in [0, 1)", o.beta2);
  detail::check_option(std::isfinite(o.eps) && o.eps >= 0.0, name, "eps must be >= 0", o.eps);
  detail::check_option(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, name,
                       "weight_decay must be >= 0", o.weight_decay);
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<AdamParamGroup>{{std::move(params), options}}, false, "Adam") {}

Adam::Adam(std::vector<AdamParamGroup> groups) : Adam(std::move(groups), false, "Adam") {}

Adam::Adam(std::vector<AdamParamGroup> groups, bool decoupled_weight_decay, std::string name)
    : Optimizer(detail::group_params(groups), detail::group_lrs(groups), std::move(name)),
      decoupled_(decoupled_weight_decay) {
  for (const AdamParamGroup& g : groups) {
    check_adam_options(g.options, name_);
    options_.push_back(g.options);
  }
  defaults_ = groups.front().options;
  state_.resize(params_.size());
}

void Adam::add_param_group(const AdamParamGroup& group) {
  check_adam_options(group.options, name_);
  append_group(group.params, group.options.lr);
  options_.push_back(group.options);
  state_.resize(params_.size());
}

void Adam::add_param_group(std::vector<Tensor> params) {
  add_param_group(AdamParamGroup{std::move(params), defaults_});
}

void AdamW::add_param_group(const AdamWParamGroup& group) {
  Adam::add_param_group(AdamParamGroup{group.params, as_adam_options(group.options)});
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<AdamWParamGroup>{{std::move(params), options}}) {}

AdamW::AdamW(std::vector<AdamWParamGroup> groups)
    : Adam(as_adam_groups(std::move(groups)), /*decoupled_weight_decay=*/true, "AdamW") {}

AdamOptions Adam::options(size_t group) const {
  AdamOptions o = options_.at(group);
  o.lr = lr(group);
  return o;
}

double Adam::momentum(size_t group) const { return options(group).beta1; }

void Adam::set_momentum(size_t group, double beta1) {
  AdamOptions o = options(group);
  o.beta1 = beta1;
  check_adam_options(o, name_);
  options_[group].beta1 = beta1;
}

namespace {
// Contiguous parameters that share dtype, device and step count go to the optim kernels
// (kernels/optim.h) as one list: one multi-tensor launch on a GPU (kernels/cuda/optim.cu: the
// per-parameter launches would dominate a small model's step), one pass over each parameter on
// the CPU (kernels/cpu/optim.cpp).
struct FusedGroup {
  size_t group;  // the parameter group, whose options the launch uses
  DType dtype;
  Device device;
  int64_t step;
  kernels::ParamList list;
  std::vector<void*> exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
  std::vector<Tensor> touched;  // version counters to bump after the launch
};
}  // namespace

void Adam::step() {
  NoGradGuard no_grad;
  std::vector<FusedGroup> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = grad_for_step(i);
    if (!g.defined()) continue;  // not reached by backward: PyTorch skips it too
    Tensor& p = params_[i];
    AdamState& st = state_[i];
    const size_t group = group_of_[i];
    const AdamOptions& o = options_[group];
    const double lr = lrs_[group];
    if (st.step == 0) {
      st.exp_avg = zeros(p.shape(), p.options());
      st.exp_avg_sq = zeros(p.shape(), p.options());
      if (o.amsgrad) st.max_exp_avg_sq = zeros(p.shape(), p.options());
    } else {
      follow_param(st.exp_avg, i);
      follow_param(st.exp_avg_sq, i);
      follow_param(st.max_exp_avg_sq, i);
    }
    st.step += 1;
    const double t = static_cast<double>(st.step);
    const double bias_correction1 = 1.0 - std::pow(o.beta1, t);
    const double bias_correction2 = 1.0 - std::pow(o.beta2, t);
    const double step_size = lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);

    const bool fusable = o.fused && p.is_contiguous() && g.is_contiguous() &&
                         st.exp_avg.is_contiguous() && st.exp_avg_sq.is_contiguous() &&
                         (!o.amsgrad || st.max_exp_avg_sq.is_contiguous());
    if (fusable) {
      FusedGroup* grp = nullptr;
      for (FusedGroup& c : groups)
        if (c.group == group && c.dtype == p.dtype() && c.device == p.device() && c.step == st.step)
          grp = &c;
      if (!grp) {
        groups.push_back(FusedGroup{group, p.dtype(), p.device(), st.step, {}, {}, {}, {}, {}});
        grp = &groups.back();
      }
      grp->list.params.push_back(p.raw_data());
      grp->list.grads.push_back(g.raw_data());
      grp->list.sizes.push_back(p.numel());
      grp->exp_avgs.push_back(st.exp_avg.raw_data());
      grp->exp_avg_sqs.push_back(st.exp_avg_sq.raw_data());
      if (o.amsgrad) grp->max_exp_avg_sqs.push_back(st.max_exp_avg_sq.raw_data());
      grp->touched.insert(grp->touched.end(), {p, st.exp_avg, st.exp_avg_sq});
      if (o.amsgrad) grp->touched.push_back(st.max_exp_avg_sq);
    } else {
      update_with_tensor_ops(p, g, st, o, lr, step_size, bias_correction2_sqrt);
    }
  }
  for (FusedGroup& grp : groups) {
    const double t = static_cast<double>(grp.step);
    const AdamOptions& o = options_[grp.group];
    const double lr = lrs_[grp.group];
    kernels::AdamStep s;
    s.lr = lr;
    s.beta1 = o.beta1;
    s.beta2 = o.beta2;
    s.eps = o.eps;
    s.weight_decay = o.weight_decay;
    s.decoupled_weight_decay = decoupled_;
    s.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(o.beta2, t));
    s.step_size = lr / (1.0 - std::pow(o.beta1, t));
    KernelsOn(grp.device)
        ->optim.adam_step(grp.dtype, grp.list, grp.exp_avgs, grp.exp_avg_sqs, grp.max_exp_avg_sqs,
                          s);
    for (Tensor& x : grp.touched) x.bump_version();
  }
}

// The same update as the kernel, as PyTorch's _single_tensor_adam(w) writes it.
void Adam::update_with_tensor_ops(Tensor& p, const Tensor& g, AdamState& st, const AdamOptions& o,
                                  double lr, double step_size, double bias_correction2_sqrt) {
  Tensor grad = g;
  if (o.weight_decay != 0.0) {
    if (decoupled_) {
      p.mul_(1.0 - lr * o.weight_decay);
    } else {
      grad = g.clone();
      grad.add_(p, o.weight_decay);
    }
  }
  st.exp_avg.mul_(o.beta1).add_(grad, 1.0 - o.beta1);
  st.exp_avg_sq.mul_(o.beta2).add_(grad * grad, 1.0 - o.beta2);
  Tensor v = st.exp_avg_sq;
  if (o.amsgrad) {
    st.max_exp_avg_sq.copy_(where(ge(st.max_exp_avg_sq, v), st.max_exp_avg_sq, v));
    v = st.max_exp_avg_sq;
  }
  Tensor denom = v.sqrt();
  denom.div_(bias_correction2_sqrt).add_(o.eps);
  p.add_(st.exp_avg / denom, -step_size);
}

}  // namespace ember::optim
