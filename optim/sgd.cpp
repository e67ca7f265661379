#include "optim/sgd.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/backend.h"
#include "kernels/base/error.h"
#include "kernels/optim.h"

namespace ember::optim {

namespace {
void check_sgd_options(const SGDOptions& o, const std::string& name) {
  detail::check_option(std::isfinite(o.momentum) && o.momentum >= 0.0, name,
                       "momentum must be >= 0", o.momentum);
  detail::check_option(std::isfinite(o.dampening), name, "dampening must be a finite number",
                       o.dampening);
  detail::check_option(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, name,
                       "weight_decay must be >= 0", o.weight_decay);
  EMBER_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0), name,
              ": nesterov momentum needs momentum > 0 and dampening == 0, got momentum ",
              o.momentum, " and dampening ", o.dampening,
              " (set nesterov = false, or give a "
              "momentum and no dampening)");
}
}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<SGDParamGroup>{{std::move(params), options}}) {}

SGD::SGD(std::vector<SGDParamGroup> groups)
    : Optimizer(detail::group_params(groups), detail::group_lrs(groups), "SGD") {
  for (const SGDParamGroup& g : groups) {
    check_sgd_options(g.options, name_);
    options_.push_back(g.options);
  }
  defaults_ = groups.front().options;
  momentum_buffers_.resize(params_.size());
}

void SGD::add_param_group(const SGDParamGroup& group) {
  check_sgd_options(group.options, name_);
  append_group(group.params, group.options.lr);
  options_.push_back(group.options);
  momentum_buffers_.resize(params_.size());
}

void SGD::add_param_group(std::vector<Tensor> params) {
  add_param_group(SGDParamGroup{std::move(params), defaults_});
}

SGDOptions SGD::options(size_t group) const {
  SGDOptions o = options_.at(group);
  o.lr = lr(group);
  return o;
}

double SGD::momentum(size_t group) const { return options(group).momentum; }

void SGD::set_momentum(size_t group, double value) {
  SGDOptions o = options(group);
  o.momentum = value;
  check_sgd_options(o, name_);
  options_[group].momentum = value;
}

namespace {
// Contiguous parameters of one dtype and device, all on their first momentum step or all past
// it, go to the optim kernels (kernels/optim.h) as one list: one multi-tensor launch on a GPU
// (kernels/cuda/optim.cu), one pass over each parameter on the CPU (kernels/cpu/optim.cpp).
struct FusedGroup {
  size_t group;  // the parameter group, whose options the launch uses
  DType dtype;
  Device device;
  bool first_step;
  kernels::ParamList list;
  std::vector<void*> momentum_bufs;
  std::vector<Tensor> touched;
};

kernels::SGDStep kernel_step(const SGDOptions& o, double lr, bool first_step) {
  kernels::SGDStep s;
  s.lr = lr;
  s.momentum = o.momentum;
  s.dampening = o.dampening;
  s.weight_decay = o.weight_decay;
  s.nesterov = o.nesterov;
  s.first_step = first_step;
  return s;
}
}  // namespace

void SGD::step() {
  NoGradGuard no_grad;
  std::vector<FusedGroup> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = grad_for_step(i);
    if (!g.defined()) continue;  // not reached by backward: PyTorch skips it too
    Tensor& p = params_[i];
    Tensor& buf = momentum_buffers_[i];
    const size_t group = group_of_[i];
    const SGDOptions& o = options_[group];
    follow_param(buf, i);
    const bool fusable = o.fused && p.is_contiguous() && g.is_contiguous() &&
                         (!buf.defined() || buf.is_contiguous());
    if (fusable) {
      const bool first = o.momentum != 0.0 && !buf.defined();
      if (first) buf = empty(p.shape(), p.options());  // written, not read, by the kernel
      FusedGroup* grp = nullptr;
      for (FusedGroup& c : groups)
        if (c.group == group && c.dtype == p.dtype() && c.device == p.device() &&
            c.first_step == first)
          grp = &c;
      if (!grp) {
        groups.push_back(FusedGroup{group, p.dtype(), p.device(), first, {}, {}, {}});
        grp = &groups.back();
      }
      grp->list.params.push_back(p.raw_data());
      grp->list.grads.push_back(g.raw_data());
      grp->list.sizes.push_back(p.numel());
      grp->touched.push_back(p);
      if (buf.defined()) {
        grp->momentum_bufs.push_back(buf.raw_data());
        grp->touched.push_back(buf);
      }
    } else {
      update_with_tensor_ops(p, g, buf, o, lrs_[group]);
    }
  }
  for (FusedGroup& grp : groups) {
    const kernels::SGDStep s = kernel_step(options_[grp.group], lrs_[grp.group], grp.first_step);
    KernelsOn(grp.device)->optim.sgd_step(grp.dtype, grp.list, grp.momentum_bufs, s);
    for (Tensor& x : grp.touched) x.bump_version();
  }
}

// The same update as the kernel, as PyTorch's _single_tensor_sgd writes it; d is a fresh
// tensor whenever it is changed, so the gradient itself is never modified.
void SGD::update_with_tensor_ops(Tensor& p, const Tensor& g, Tensor& buf, const SGDOptions& o,
                                 double lr) {
  Tensor d = g;
  if (o.weight_decay != 0.0) {
    d = g.clone();
    d.add_(p, o.weight_decay);
  }
  if (o.momentum != 0.0) {
    if (!buf.defined()) {
      buf = d.detach().clone();
    } else {
      buf.mul_(o.momentum).add_(d, 1.0 - o.dampening);
    }
    if (o.nesterov) {
      if (d.is_same(g)) d = g.clone();
      d.add_(buf, o.momentum);
    } else {
      d = buf;
    }
  }
  p.add_(d, -lr);
}

}  // namespace ember::optim
