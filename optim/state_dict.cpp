// ember/optim/state_dict.cpp — saving and restoring optimizers and LR schedulers.
//
// The layout is PyTorch's optimizer.state_dict() flattened into names, so that it fits a
// safetensors file (tensors only) next to the model's weights:
//
//   PyTorch                                      ember
//   {"param_groups": [{"lr": 0.1, ...}],         param_groups.0.lr            float64 []
//    "state": {3: {"momentum_buffer": t}}}       state.3.momentum_buffer      like params()[3]
//
// SGD:  param_groups.0.{lr, momentum, dampening, weight_decay} float64, .nesterov bool;
//       state.I.momentum_buffer (only for parameters that were updated with momentum).
// Adam: param_groups.0.{lr, eps, weight_decay} float64, .betas float64 [2], .amsgrad bool;
//       state.I.step int64 [], state.I.exp_avg, state.I.exp_avg_sq, state.I.max_exp_avg_sq
//       (amsgrad only) — for parameters updated at least once.
//
// Loading checks everything first and collects every problem into one ValueError, so a bad
// state leaves the optimizer as it was. The hyper-parameters are checked by building a
// throw-away optimizer with them: the constructor's checks, with the constructor's messages.
#include <map>
#include <set>
#include <string>

#include "core/autograd/grad_mode.h"
#include "kernels/base/error.h"
#include "optim/adam.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"

namespace ember::optim {

namespace {

Tensor scalar(double v) { return full({}, v, TensorOptions(kFloat64).device(Device::cpu())); }
Tensor scalar_int(int64_t v) { return full({}, static_cast<double>(v), TensorOptions(kInt64).device(Device::cpu())); }
Tensor scalar_bool(bool v) { return full({}, v ? 1.0 : 0.0, TensorOptions(kBool).device(Device::cpu())); }

// Reads a flattened optimizer state and remembers every problem it meets.
class StateReader {
 public:
  StateReader(std::string who, const NamedTensors& state, size_t num_params)
      : who_(std::move(who)), num_params_(num_params) {
    for (const auto& [key, t] : state) {
      if (!t.defined()) {
        problems_.push_back("'" + key + "' is an undefined tensor");
      } else if (!all_.emplace(key, t).second) {
        problems_.push_back("'" + key + "' appears twice");
      }
    }
    // Sort the per-parameter entries by parameter number.
    for (const auto& [key, t] : all_) {
      if (key.rfind("state.", 0) != 0) continue;
      const size_t dot = key.find('.', 6);
      const std::string index = key.substr(6, dot == std::string::npos ? std::string::npos : dot - 6);
      bool digits = !index.empty() && index.size() < 10;
      for (char c : index) digits = digits && c >= '0' && c <= '9';
      if (!digits || dot == std::string::npos) {
        problems_.push_back("'" + key + "' is not of the form state.<parameter number>.<name>");
      } else if (static_cast<size_t>(std::stoul(index)) >= num_params_) {
        problems_.push_back("'" + key + "' is for parameter " + index + " but the optimizer has " +
                            std::to_string(num_params_) + " parameters (a state of another model?)");
      } else {
        per_param_[std::stoul(index)][key.substr(dot + 1)] = t;
      }
      used_.insert(key);
    }
  }

  // A 0-d hyper-parameter param_groups.0.<name>, as a double.
  double number(const std::string& name, double fallback) {
    const Tensor t = take("param_groups.0." + name);
    if (!t.defined()) return fallback;
    if (t.dim() != 0) {
      problems_.push_back("param_groups.0." + name + " has shape " + shape_str(t.shape()) +
                          ", expected a 0-d tensor");
      return fallback;
    }
    return t.item();
  }
  // A float64 [n] hyper-parameter (Adam's betas).
  std::vector<double> numbers(const std::string& name, size_t n, std::vector<double> fallback) {
    const Tensor t = take("param_groups.0." + name);
    if (!t.defined()) return fallback;
    if (t.shape() != Shape{static_cast<int64_t>(n)}) {
      problems_.push_back("param_groups.0." + name + " has shape " + shape_str(t.shape()) +
                          ", expected [" + std::to_string(n) + "]");
      return fallback;
    }
    return t.to(kFloat64).to_vector<double>();
  }

  // The per-parameter tensors: index -> (field -> tensor).
  const std::map<size_t, std::map<std::string, Tensor>>& per_param() const { return per_param_; }
  void problem(const std::string& p) { problems_.push_back(p); }

  // A buffer of params[i]: same shape, a float dtype.
  bool check_buffer(const Tensor& t, const Tensor& param, size_t i, const std::string& field) {
    const std::string key = "state." + std::to_string(i) + "." + field;
    if (t.shape() != param.shape()) {
      problems_.push_back(key + " has shape " + shape_str(t.shape()) + " but parameter " +
                          std::to_string(i) + " has shape " + shape_str(param.shape()));
      return false;
    }
    if (!is_floating(t.dtype())) {
      problems_.push_back(key + " is " + dtype_name(t.dtype()) + ", expected float32 or float64");
      return false;
    }
    return true;
  }

  // Throws if anything was wrong, or if a key was never read.
  void finish() {
    for (const auto& [key, t] : all_) {
      if (!used_.count(key)) problems_.push_back("unexpected key '" + key + "'");
    }
    if (problems_.empty()) return;
    std::string msg = who_ + ".load_state_dict: nothing was loaded; " +
                      std::to_string(problems_.size()) +
                      (problems_.size() == 1 ? " problem:" : " problems:");
    for (const std::string& p : problems_) msg += "\n  " + p;
    throw ValueError(msg);
  }

 private:
  Tensor take(const std::string& key) {
    auto it = all_.find(key);
    if (it == all_.end()) {
      problems_.push_back("missing key '" + key + "'");
      return Tensor();
    }
    used_.insert(key);
    return it->second;
  }

  std::string who_;
  size_t num_params_;
  std::map<std::string, Tensor> all_;
  std::set<std::string> used_;
  std::map<size_t, std::map<std::string, Tensor>> per_param_;
  std::vector<std::string> problems_;
};

// A fresh copy of `src` with the parameter's dtype and device (the state must not alias the
// tensors it was loaded from).
Tensor copy_like(const Tensor& src, const Tensor& param) {
  Tensor out = empty(param.shape(), param.options());
  out.copy_(src.detach());
  return out;
}

}  // namespace

// ---- the base: only the learning rate ------------------------------------------------------------

NamedTensors Optimizer::state_dict() const { return {{"param_groups.0.lr", scalar(lr_)}}; }

void Optimizer::load_state_dict(const NamedTensors& state) {
  StateReader r(name_, state, params_.size());
  const double lr = r.number("lr", lr_);
  for (const auto& [i, fields] : r.per_param()) {
    for (const auto& f : fields) r.problem("state." + std::to_string(i) + "." + f.first +
                                           ": " + name_ + " keeps no per-parameter state");
  }
  r.finish();
  set_lr(lr);
}

// ---- SGD ---------------------------------------------------------------------------------------

NamedTensors SGD::state_dict() const {
  NamedTensors out = {{"param_groups.0.lr", scalar(lr_)},
                      {"param_groups.0.momentum", scalar(options_.momentum)},
                      {"param_groups.0.dampening", scalar(options_.dampening)},
                      {"param_groups.0.weight_decay", scalar(options_.weight_decay)},
                      {"param_groups.0.nesterov", scalar_bool(options_.nesterov)}};
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& b = momentum_buffers_[i];
    if (b.defined()) out.emplace_back("state." + std::to_string(i) + ".momentum_buffer", b.detach());
  }
  return out;
}

void SGD::load_state_dict(const NamedTensors& state) {
  StateReader r(name_, state, params_.size());
  SGDOptions o = options_;
  o.lr = r.number("lr", lr_);
  o.momentum = r.number("momentum", o.momentum);
  o.dampening = r.number("dampening", o.dampening);
  o.weight_decay = r.number("weight_decay", o.weight_decay);
  o.nesterov = r.number("nesterov", o.nesterov) != 0.0;
  std::vector<Tensor> buffers(params_.size());
  for (const auto& [i, fields] : r.per_param()) {
    for (const auto& [field, t] : fields) {
      if (field != "momentum_buffer") {
        r.problem("state." + std::to_string(i) + "." + field + ": SGD keeps only a "
                  "momentum_buffer per parameter");
      } else if (r.check_buffer(t, params_[i], i, field)) {
        buffers[i] = t;
      }
    }
  }
  r.finish();
  SGD check(params_, o);  // the constructor's checks of the hyper-parameters
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    momentum_buffers_[i] = buffers[i].defined() ? copy_like(buffers[i], params_[i]) : Tensor();
  }
  options_ = o;
  lr_ = o.lr;
}

// ---- Adam and AdamW ----------------------------------------------------------------------------

NamedTensors Adam::state_dict() const {
  NamedTensors out = {
      {"param_groups.0.lr", scalar(lr_)},
      {"param_groups.0.betas",
       from_vector<double>({options_.beta1, options_.beta2}, {2},
                           TensorOptions(kFloat64).device(Device::cpu()))},
      {"param_groups.0.eps", scalar(options_.eps)},
      {"param_groups.0.weight_decay", scalar(options_.weight_decay)},
      {"param_groups.0.amsgrad", scalar_bool(options_.amsgrad)}};
  for (size_t i = 0; i < params_.size(); ++i) {
    const AdamState& st = state_[i];
    if (st.step == 0) continue;
    const std::string k = "state." + std::to_string(i) + ".";
    out.emplace_back(k + "step", scalar_int(st.step));
    out.emplace_back(k + "exp_avg", st.exp_avg.detach());
    out.emplace_back(k + "exp_avg_sq", st.exp_avg_sq.detach());
    if (st.max_exp_avg_sq.defined()) out.emplace_back(k + "max_exp_avg_sq", st.max_exp_avg_sq.detach());
  }
  return out;
}

void Adam::load_state_dict(const NamedTensors& state) {
  StateReader r(name_, state, params_.size());
  AdamOptions o = options_;
  o.lr = r.number("lr", lr_);
  const std::vector<double> betas = r.numbers("betas", 2, {o.beta1, o.beta2});
  o.beta1 = betas[0];
  o.beta2 = betas[1];
  o.eps = r.number("eps", o.eps);
  o.weight_decay = r.number("weight_decay", o.weight_decay);
  o.amsgrad = r.number("amsgrad", o.amsgrad) != 0.0;
  std::vector<AdamState> loaded(params_.size());
  for (const auto& [i, fields] : r.per_param()) {
    const std::string k = "state." + std::to_string(i) + ".";
    AdamState& st = loaded[i];
    for (const auto& [field, t] : fields) {
      if (field == "step") {
        const double step = t.dim() == 0 ? t.item() : -1.0;
        if (t.dim() != 0 || step < 1 || step != static_cast<double>(static_cast<int64_t>(step))) {
          r.problem(k + "step must be a 0-d tensor holding a whole number >= 1");
        } else {
          st.step = static_cast<int64_t>(step);
        }
      } else if (field == "exp_avg" || field == "exp_avg_sq" || field == "max_exp_avg_sq") {
        if (!r.check_buffer(t, params_[i], i, field)) continue;
        (field == "exp_avg" ? st.exp_avg : field == "exp_avg_sq" ? st.exp_avg_sq
                                                                 : st.max_exp_avg_sq) = t;
      } else {
        r.problem(k + field + ": " + name_ + " keeps step, exp_avg, exp_avg_sq and "
                  "max_exp_avg_sq per parameter");
      }
    }
    // The moments exist exactly when the parameter has been updated.
    const bool need_max = o.amsgrad;
    if (st.step == 0 || !st.exp_avg.defined() || !st.exp_avg_sq.defined() ||
        (need_max && !st.max_exp_avg_sq.defined())) {
      r.problem(k + "*: a parameter's state needs step, exp_avg and exp_avg_sq" +
                std::string(need_max ? " and max_exp_avg_sq (amsgrad)" : "") + " together");
    }
  }
  r.finish();
  Adam check(params_, o, decoupled_, name_);  // the constructor's checks
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    AdamState& st = loaded[i];
    if (st.step > 0) {
      st.exp_avg = copy_like(st.exp_avg, params_[i]);
      st.exp_avg_sq = copy_like(st.exp_avg_sq, params_[i]);
      if (o.amsgrad) st.max_exp_avg_sq = copy_like(st.max_exp_avg_sq, params_[i]);
      else st.max_exp_avg_sq = Tensor();
    }
    state_[i] = st;
  }
  options_ = o;
  lr_ = o.lr;
}

// ---- LR schedulers -------------------------------------------------------------------------------

NamedTensors LRScheduler::state_dict() const {
  return {{"last_epoch", scalar_int(last_epoch_)}, {"base_lr", scalar(base_lr_)}};
}

void LRScheduler::load_state_dict(const NamedTensors& state) {
  Tensor last_epoch, base_lr;
  std::vector<std::string> problems;
  for (const auto& [key, t] : state) {
    if (key == "last_epoch" && t.defined() && t.dim() == 0) last_epoch = t;
    else if (key == "base_lr" && t.defined() && t.dim() == 0) base_lr = t;
    else problems.push_back("unexpected or malformed entry '" + key + "'");
  }
  if (!last_epoch.defined()) problems.push_back("missing 0-d tensor 'last_epoch'");
  if (!base_lr.defined()) problems.push_back("missing 0-d tensor 'base_lr'");
  if (problems.empty() && last_epoch.item() < -1) problems.push_back("last_epoch is below -1");
  if (!problems.empty()) {
    std::string msg = "LRScheduler.load_state_dict: nothing was loaded;";
    for (const std::string& p : problems) msg += "\n  " + p;
    throw ValueError(msg);
  }
  last_epoch_ = static_cast<int64_t>(last_epoch.item());
  base_lr_ = base_lr.item();
  last_lr_ = last_epoch_ >= 0 ? lr_at(last_epoch_) : base_lr_;
}

}  // namespace ember::optim
