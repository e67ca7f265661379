#include "optim/sgd.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/backend.h"
#include "kernels/base/error.h"
#include "kernels/optim.h"

namespace ember::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : Optimizer(std::move(params), options.lr, "SGD"), options_(options) {
  const SGDOptions& o = options_;
  detail::check_option(std::isfinite(o.momentum) && o.momentum >= 0.0, name_,
                       "momentum must be >= 0", o.momentum);
  detail::check_option(std::isfinite(o.dampening), name_, "dampening must be a finite number",
                       o.dampening);
  detail::check_option(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, name_,
                       "weight_decay must be >= 0", o.weight_decay);
  EMBER_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0), name_,
              ": nesterov momentum needs momentum > 0 and dampening == 0, got momentum ",
              o.momentum, " and dampening ", o.dampening, " (set nesterov = false, or give a "
              "momentum and no dampening)");
  momentum_buffers_.resize(params_.size());
}

SGDOptions SGD::options() const {
  SGDOptions o = options_;
  o.lr = lr_;
  return o;
}

namespace {
// Contiguous parameters of one dtype and device, all on their first momentum step or all past
// it, go to the optim kernels (kernels/optim.h) as one list: one multi-tensor launch on a GPU
// (kernels/cuda/optim.cu), one pass over each parameter on the CPU (kernels/cpu/optim.cpp).
struct FusedGroup {
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
    follow_param(buf, i);
    const bool fusable = options_.fused && p.is_contiguous() && g.is_contiguous() &&
                         (!buf.defined() || buf.is_contiguous());
    if (fusable) {
      const bool first = options_.momentum != 0.0 && !buf.defined();
      if (first) buf = empty(p.shape(), p.options());  // written, not read, by the kernel
      FusedGroup* grp = nullptr;
      for (FusedGroup& c : groups)
        if (c.dtype == p.dtype() && c.device == p.device() && c.first_step == first) grp = &c;
      if (!grp) {
        groups.push_back(FusedGroup{p.dtype(), p.device(), first, {}, {}, {}});
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
      update_with_tensor_ops(p, g, buf);
    }
  }
  for (FusedGroup& grp : groups) {
    const kernels::SGDStep s = kernel_step(options_, lr_, grp.first_step);
    KernelsOn(grp.device)->optim.sgd_step(grp.dtype, grp.list, grp.momentum_bufs, s);
    for (Tensor& x : grp.touched) x.bump_version();
  }
}

// The same update as the kernel, as PyTorch's _single_tensor_sgd writes it; d is a fresh
// tensor whenever it is changed, so the gradient itself is never modified.
void SGD::update_with_tensor_ops(Tensor& p, const Tensor& g, Tensor& buf) {
  const SGDOptions& o = options_;
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
  p.add_(d, -lr_);
}

}  // namespace ember::optim
