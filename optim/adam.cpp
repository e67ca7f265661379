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
}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::move(params), options, /*decoupled_weight_decay=*/false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options, bool decoupled_weight_decay,
           std::string name)
    : Optimizer(std::move(params), options.lr, std::move(name)),
      options_(options),
      decoupled_(decoupled_weight_decay) {
  const AdamOptions& o = options_;
  detail::check_option(o.beta1 >= 0.0 && o.beta1 < 1.0, name_, "beta1 must be in [0, 1)",
                       o.beta1);
  detail::check_option(o.beta2 >= 0.0 && o.beta2 < 1.0, name_, "beta2 must be in [0, 1)",
                       o.beta2);
  detail::check_option(std::isfinite(o.eps) && o.eps >= 0.0, name_, "eps must be >= 0", o.eps);
  detail::check_option(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, name_,
                       "weight_decay must be >= 0", o.weight_decay);
  state_.resize(params_.size());
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : Adam(std::move(params), as_adam_options(options), /*decoupled_weight_decay=*/true,
           "AdamW") {}

AdamOptions Adam::options() const {
  AdamOptions o = options_;
  o.lr = lr_;
  return o;
}

namespace {
// Contiguous parameters that share dtype, device and step count go to the optim kernels
// (kernels/optim.h) as one list: one multi-tensor launch on a GPU (kernels/cuda/optim.cu: the
// per-parameter launches would dominate a small model's step), one pass over each parameter on
// the CPU (kernels/cpu/optim.cpp).
struct FusedGroup {
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
    if (st.step == 0) {
      st.exp_avg = zeros(p.shape(), p.options());
      st.exp_avg_sq = zeros(p.shape(), p.options());
      if (options_.amsgrad) st.max_exp_avg_sq = zeros(p.shape(), p.options());
    } else {
      follow_param(st.exp_avg, i);
      follow_param(st.exp_avg_sq, i);
      follow_param(st.max_exp_avg_sq, i);
    }
    st.step += 1;
    const double t = static_cast<double>(st.step);
    const double bias_correction1 = 1.0 - std::pow(options_.beta1, t);
    const double bias_correction2 = 1.0 - std::pow(options_.beta2, t);
    const double step_size = lr_ / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);

    const bool fusable = options_.fused && p.is_contiguous() &&
                         g.is_contiguous() && st.exp_avg.is_contiguous() &&
                         st.exp_avg_sq.is_contiguous() &&
                         (!options_.amsgrad || st.max_exp_avg_sq.is_contiguous());
    if (fusable) {
      FusedGroup* grp = nullptr;
      for (FusedGroup& c : groups)
        if (c.dtype == p.dtype() && c.device == p.device() && c.step == st.step) grp = &c;
      if (!grp) {
        groups.push_back(FusedGroup{p.dtype(), p.device(), st.step, {}, {}, {}, {}, {}});
        grp = &groups.back();
      }
      grp->list.params.push_back(p.raw_data());
      grp->list.grads.push_back(g.raw_data());
      grp->list.sizes.push_back(p.numel());
      grp->exp_avgs.push_back(st.exp_avg.raw_data());
      grp->exp_avg_sqs.push_back(st.exp_avg_sq.raw_data());
      if (options_.amsgrad) grp->max_exp_avg_sqs.push_back(st.max_exp_avg_sq.raw_data());
      grp->touched.insert(grp->touched.end(), {p, st.exp_avg, st.exp_avg_sq});
      if (options_.amsgrad) grp->touched.push_back(st.max_exp_avg_sq);
    } else {
      update_with_tensor_ops(p, g, st, step_size, bias_correction2_sqrt);
    }
  }
  for (FusedGroup& grp : groups) {
    const double t = static_cast<double>(grp.step);
    kernels::AdamStep s;
    s.lr = lr_;
    s.beta1 = options_.beta1;
    s.beta2 = options_.beta2;
    s.eps = options_.eps;
    s.weight_decay = options_.weight_decay;
    s.decoupled_weight_decay = decoupled_;
    s.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(options_.beta2, t));
    s.step_size = lr_ / (1.0 - std::pow(options_.beta1, t));
    KernelsOn(grp.device)
        ->optim.adam_step(grp.dtype, grp.list, grp.exp_avgs, grp.exp_avg_sqs, grp.max_exp_avg_sqs,
                          s);
    for (Tensor& x : grp.touched) x.bump_version();
  }
}

// The same update as the kernel, as PyTorch's _single_tensor_adam(w) writes it.
void Adam::update_with_tensor_ops(Tensor& p, const Tensor& g, AdamState& st, double step_size,
                                  double bias_correction2_sqrt) {
  const AdamOptions& o = options_;
  Tensor grad = g;
  if (o.weight_decay != 0.0) {
    if (decoupled_) {
      p.mul_(1.0 - lr_ * o.weight_decay);
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
