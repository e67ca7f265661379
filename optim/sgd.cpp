#include "optim/sgd.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "kernels/base/error.h"
#include "core/cuda.h"
#include "kernels/cpu/optim.h"
#include "kernels/cuda/optim.h"

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
// CUDA parameters of one dtype and device, all on their first momentum step or all past it, are
// updated by one multi-tensor launch (kernels/cuda/optim.h).
struct CudaSgdGroup {
  DType dtype;
  Device device;
  bool first_step;
  kernels::cuda::ParamList list;
  std::vector<void*> momentum_bufs;
  std::vector<Tensor> touched;
};
}  // namespace

void SGD::step() {
  NoGradGuard no_grad;
  std::vector<CudaSgdGroup> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = grad_for_step(i);
    if (!g.defined()) continue;  // not reached by backward: PyTorch skips it too
    Tensor& p = params_[i];
    Tensor& buf = momentum_buffers_[i];
    follow_param(buf, i);
    const bool fusable = options_.fused && p.is_contiguous() && g.is_contiguous() &&
                         (!buf.defined() || buf.is_contiguous());
    if (fusable && p.is_cuda()) {
      const bool first = options_.momentum != 0.0 && !buf.defined();
      if (first) buf = empty(p.shape(), p.options());  // written, not read, by the kernel
      CudaSgdGroup* grp = nullptr;
      for (CudaSgdGroup& c : groups)
        if (c.dtype == p.dtype() && c.device == p.device() && c.first_step == first) grp = &c;
      if (!grp) {
        groups.push_back(CudaSgdGroup{p.dtype(), p.device(), first, {}, {}, {}});
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
    } else if (fusable) {
      update_fused(p, g, buf);
    } else {
      update_with_tensor_ops(p, g, buf);
    }
  }
  for (CudaSgdGroup& grp : groups) {
    kernels::cuda::SGDStep s = kernel_step(grp.first_step);
    cuda::DeviceGuard guard(grp.device);
    kernels::cuda::sgd_step(grp.dtype, grp.list, grp.momentum_bufs, s);
    for (Tensor& x : grp.touched) x.bump_version();
  }
}

kernels::cpu::SGDStep SGD::kernel_step(bool first_step) const {
  kernels::cpu::SGDStep s;
  s.lr = lr_;
  s.momentum = options_.momentum;
  s.dampening = options_.dampening;
  s.weight_decay = options_.weight_decay;
  s.nesterov = options_.nesterov;
  s.first_step = first_step;
  return s;
}

void SGD::update_fused(Tensor& p, const Tensor& g, Tensor& buf) {
  const kernels::cpu::SGDStep s = kernel_step(options_.momentum != 0.0 && !buf.defined());
  if (s.first_step) buf = empty(p.shape(), p.options());  // written, not read, by the kernel
  kernels::cpu::sgd_step(p.dtype(), p.numel(), p.raw_data(), g.raw_data(),
                         buf.defined() ? buf.raw_data() : nullptr, s);
  p.bump_version();
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
