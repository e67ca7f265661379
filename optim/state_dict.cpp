// ember/optim/state_dict.cpp — saving and restoring optimizers and LR schedulers.
//
// The layout is PyTorch's optimizer.state_dict() flattened into names, so that it fits a
// safetensors file (tensors only) next to the model's weights:
//
//   PyTorch                                      ember
//   {"param_groups": [{"lr": 0.1,                param_groups.0.lr            float64 []
//                      "params": [0, 1]}, ...],  param_groups.0.params        int64 [2]
//    "state": {3: {"momentum_buffer": t}}}       state.3.momentum_buffer      like params()[3]
//
// For each parameter group K (parameters numbered across the groups, as PyTorch numbers them):
// SGD:  param_groups.K.{lr, momentum, dampening, weight_decay} float64, .nesterov bool;
//       state.I.momentum_buffer (only for parameters that were updated with momentum).
// Adam: param_groups.K.{lr, eps, weight_decay} float64, .betas float64 [2], .amsgrad bool;
//       state.I.step int64 [], state.I.exp_avg, state.I.exp_avg_sq, state.I.max_exp_avg_sq
//       (amsgrad only) — for parameters updated at least once.
// Both: param_groups.K.params int64 [n], the numbers of the group's parameters, and
//       param_groups.K.initial_lr float64 once an LR scheduler has set it. States written before
//       ember had parameter groups have neither; they load into a one-group optimizer.
//
// Loading checks everything first and collects every problem into one ValueError, so a bad
// state leaves the optimizer as it was. The hyper-parameters are checked by building a
// throw-away optimizer with them: the constructor's checks, with the constructor's messages.
//
// LR schedulers (the end of this file) save their fields by name through one visitor, which
// reads them back too.
#include <cmath>
#include <map>
#include <optional>
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

bool all_digits(const std::string& s) {
  bool ok = !s.empty() && s.size() < 10;
  for (char c : s) ok = ok && c >= '0' && c <= '9';
  return ok;
}

// Reads a flattened optimizer state and remembers every problem it meets.
class StateReader {
 public:
  StateReader(std::string who, const NamedTensors& state, const Optimizer& opt)
      : who_(std::move(who)), num_params_(opt.params().size()) {
    for (const auto& [key, t] : state) {
      if (!t.defined()) {
        problems_.push_back("'" + key + "' is an undefined tensor");
      } else if (!all_.emplace(key, t).second) {
        problems_.push_back("'" + key + "' appears twice");
      }
    }
    std::set<size_t> groups;
    for (const auto& [key, t] : all_) {
      const bool is_state = key.rfind("state.", 0) == 0;
      const bool is_group = key.rfind("param_groups.", 0) == 0;
      if (!is_state && !is_group) continue;
      const size_t start = is_state ? 6 : 13;
      const size_t dot = key.find('.', start);
      const std::string index =
          key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!all_digits(index) || dot == std::string::npos) {
        problems_.push_back(
            "'" + key + "' is not of the form " +
            (is_state ? "state.<parameter number>.<name>" : "param_groups.<group number>.<name>"));
        used_.insert(key);
      } else if (is_group) {
        groups.insert(std::stoul(index));  // read by number() etc.
      } else if (static_cast<size_t>(std::stoul(index)) >= num_params_) {
        problems_.push_back("'" + key + "' is for parameter " + index + " but the optimizer has " +
                            std::to_string(num_params_) + " parameters (a state of another model?)");
        used_.insert(key);
      } else {
        per_param_[std::stoul(index)][key.substr(dot + 1)] = t;
        used_.insert(key);
      }
    }
    // The groups: as many as the optimizer has, each as large.
    const size_t want = opt.num_param_groups();
    const size_t have = groups.empty() ? 0 : *groups.rbegin() + 1;
    groups_ok_ = have == want && groups.size() == want;
    if (!groups_ok_) {
      problems_.push_back("the state has " + std::to_string(groups.size()) +
                          " parameter groups (numbered " + numbers_str(groups) + "), this " + who_ +
                          " has " + std::to_string(want) +
                          ": build the optimizer with "
                          "the same parameter groups, in the same order, as the one that saved it");
      for (const auto& kv : all_)
        if (kv.first.rfind("param_groups.", 0) == 0) used_.insert(kv.first);  // not read
    }
    for (size_t g = 0; groups_ok_ && g < want; ++g) {
      const std::string key = "param_groups." + std::to_string(g) + ".params";
      auto it = all_.find(key);
      if (it == all_.end()) {
        // Written before ember had groups: one group of all parameters.
        if (want != 1) problems_.push_back("missing key '" + key + "'");
        continue;
      }
      used_.insert(key);
      const Tensor& t = it->second;
      size_t first = 0;
      while (first < num_params_ && opt.group_of(first) != g) ++first;
      const size_t size = opt.param_group(g).size();
      std::vector<int64_t> expect(size);
      for (size_t k = 0; k < size; ++k) expect[k] = static_cast<int64_t>(first + k);
      std::vector<int64_t> got;
      if (t.dtype() == kInt64 && t.dim() == 1) got = t.to_vector<int64_t>();
      if (got != expect) {
        problems_.push_back(key + " lists " + (t.dim() == 1 ? std::to_string(t.numel()) : "?") +
                            " parameters, this optimizer's group " + std::to_string(g) + " has " +
                            std::to_string(size) + " (parameters " + std::to_string(first) +
                            " to " + std::to_string(first + size) + " exclusive, as int64 [" +
                            std::to_string(size) + "]): build the groups as the saving run did");
      }
    }
  }

  bool groups_ok() const { return groups_ok_; }

  // A 0-d hyper-parameter param_groups.<g>.<name>, as a double.
  double number(size_t g, const std::string& name, double fallback) {
    const std::string key = group_key(g, name);
    const Tensor t = take(key);
    if (!t.defined()) return fallback;
    if (t.dim() != 0) {
      problems_.push_back(key + " has shape " + shape_str(t.shape()) + ", expected a 0-d tensor");
      return fallback;
    }
    return t.item();
  }
  // An optional 0-d hyper-parameter (initial_lr).
  std::optional<double> optional_number(size_t g, const std::string& name) {
    if (!all_.count(group_key(g, name))) return std::nullopt;
    return number(g, name, 0.0);
  }
  // A float64 [n] hyper-parameter (Adam's betas).
  std::vector<double> numbers(size_t g, const std::string& name, size_t n,
                              std::vector<double> fallback) {
    const std::string key = group_key(g, name);
    const Tensor t = take(key);
    if (!t.defined()) return fallback;
    if (t.shape() != Shape{static_cast<int64_t>(n)}) {
      problems_.push_back(key + " has shape " + shape_str(t.shape()) + ", expected [" +
                          std::to_string(n) + "]");
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
  static std::string group_key(size_t g, const std::string& name) {
    return "param_groups." + std::to_string(g) + "." + name;
  }
  static std::string numbers_str(const std::set<size_t>& s) {
    if (s.empty()) return "none";
    std::string out;
    for (size_t v : s) out += (out.empty() ? "" : ", ") + std::to_string(v);
    return out;
  }
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
  bool groups_ok_ = false;
  std::map<std::string, Tensor> all_;
  std::set<std::string> used_;
  std::map<size_t, std::map<std::string, Tensor>> per_param_;
  std::vector<std::string> problems_;
};

// param_groups.<g>.params and .initial_lr, which every optimizer writes.
void add_group_common(NamedTensors& out, const Optimizer& opt, size_t g) {
  const std::string k = "param_groups." + std::to_string(g) + ".";
  std::vector<int64_t> numbers;
  for (size_t i = 0; i < opt.params().size(); ++i)
    if (opt.group_of(i) == g) numbers.push_back(static_cast<int64_t>(i));
  out.emplace_back(k + "params",
                   from_vector<int64_t>(numbers, {static_cast<int64_t>(numbers.size())},
                                        TensorOptions(kInt64).device(Device::cpu())));
  if (opt.initial_lr(g)) out.emplace_back(k + "initial_lr", scalar(*opt.initial_lr(g)));
}

// A fresh copy of `src` with the parameter's dtype and device (the state must not alias the
// tensors it was loaded from).
Tensor copy_like(const Tensor& src, const Tensor& param) {
  Tensor out = empty(param.shape(), param.options());
  out.copy_(src.detach());
  return out;
}

}  // namespace

// ---- the base: only the learning rates ---------------------------------------------------------

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    out.emplace_back("param_groups." + std::to_string(g) + ".lr", scalar(lrs_[g]));
    add_group_common(out, *this, g);
  }
  return out;
}

namespace {
// The initial_lr of each group in a state (absent: the optimizer's own is kept).
std::vector<std::optional<double>> read_initial_lrs(StateReader& r, const Optimizer& opt) {
  std::vector<std::optional<double>> out(opt.num_param_groups());
  for (size_t g = 0; r.groups_ok() && g < out.size(); ++g) {
    out[g] = r.optional_number(g, "initial_lr");
    if (!out[g]) out[g] = opt.initial_lr(g);
  }
  return out;
}
}  // namespace

void Optimizer::load_state_dict(const NamedTensors& state) {
  StateReader r(name_, state, *this);
  std::vector<double> lrs = lrs_;
  for (size_t g = 0; r.groups_ok() && g < lrs.size(); ++g) lrs[g] = r.number(g, "lr", lrs[g]);
  const auto initial = read_initial_lrs(r, *this);
  for (const auto& [i, fields] : r.per_param()) {
    for (const auto& f : fields) r.problem("state." + std::to_string(i) + "." + f.first +
                                           ": " + name_ + " keeps no per-parameter state");
  }
  r.finish();
  for (size_t g = 0; g < lrs.size(); ++g) {
    detail::check_option(std::isfinite(lrs[g]) && lrs[g] >= 0.0, name_, "lr must be >= 0", lrs[g]);
  }
  lrs_ = lrs;
  initial_lrs_ = initial;
}

// ---- SGD ---------------------------------------------------------------------------------------

NamedTensors SGD::state_dict() const {
  NamedTensors out;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    const std::string k = "param_groups." + std::to_string(g) + ".";
    const SGDOptions& o = options_[g];
    out.emplace_back(k + "lr", scalar(lrs_[g]));
    out.emplace_back(k + "momentum", scalar(o.momentum));
    out.emplace_back(k + "dampening", scalar(o.dampening));
    out.emplace_back(k + "weight_decay", scalar(o.weight_decay));
    out.emplace_back(k + "nesterov", scalar_bool(o.nesterov));
    add_group_common(out, *this, g);
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& b = momentum_buffers_[i];
    if (b.defined()) out.emplace_back("state." + std::to_string(i) + ".momentum_buffer", b.detach());
  }
  return out;
}

void SGD::load_state_dict(const NamedTensors& state) {
  StateReader r(name_, state, *this);
  std::vector<SGDParamGroup> groups;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    SGDOptions o = options(g);
    if (r.groups_ok()) {
      o.lr = r.number(g, "lr", o.lr);
      o.momentum = r.number(g, "momentum", o.momentum);
      o.dampening = r.number(g, "dampening", o.dampening);
      o.weight_decay = r.number(g, "weight_decay", o.weight_decay);
      o.nesterov = r.number(g, "nesterov", o.nesterov) != 0.0;
    }
    groups.push_back({param_group(g), o});
  }
  const auto initial = read_initial_lrs(r, *this);
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
  SGD check(groups);  // the constructor's checks of the hyper-parameters
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    momentum_buffers_[i] = buffers[i].defined() ? copy_like(buffers[i], params_[i]) : Tensor();
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    options_[g] = groups[g].options;
    lrs_[g] = groups[g].options.lr;
  }
  initial_lrs_ = initial;
}

// ---- Adam and AdamW ----------------------------------------------------------------------------

NamedTensors Adam::state_dict() const {
  NamedTensors out;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    const std::string k = "param_groups." + std::to_string(g) + ".";
    const AdamOptions& o = options_[g];
    out.emplace_back(k + "lr", scalar(lrs_[g]));
    out.emplace_back(k + "betas",
                     from_vector<double>({o.beta1, o.beta2}, {2},
                                         TensorOptions(kFloat64).device(Device::cpu())));
    out.emplace_back(k + "eps", scalar(o.eps));
    out.emplace_back(k + "weight_decay", scalar(o.weight_decay));
    out.emplace_back(k + "amsgrad", scalar_bool(o.amsgrad));
    add_group_common(out, *this, g);
  }
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
  StateReader r(name_, state, *this);
  std::vector<AdamParamGroup> groups;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    AdamOptions o = options(g);
    if (r.groups_ok()) {
      o.lr = r.number(g, "lr", o.lr);
      const std::vector<double> betas = r.numbers(g, "betas", 2, {o.beta1, o.beta2});
      o.beta1 = betas[0];
      o.beta2 = betas[1];
      o.eps = r.number(g, "eps", o.eps);
      o.weight_decay = r.number(g, "weight_decay", o.weight_decay);
      o.amsgrad = r.number(g, "amsgrad", o.amsgrad) != 0.0;
    }
    groups.push_back({param_group(g), o});
  }
  const auto initial = read_initial_lrs(r, *this);
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
    const bool need_max = groups[group_of_[i]].options.amsgrad;
    if (st.step == 0 || !st.exp_avg.defined() || !st.exp_avg_sq.defined() ||
        (need_max && !st.max_exp_avg_sq.defined())) {
      r.problem(k + "*: a parameter's state needs step, exp_avg and exp_avg_sq" +
                std::string(need_max ? " and max_exp_avg_sq (amsgrad)" : "") + " together");
    }
  }
  r.finish();
  Adam check(groups, decoupled_, name_);  // the constructor's checks
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    AdamState& st = loaded[i];
    if (st.step > 0) {
      st.exp_avg = copy_like(st.exp_avg, params_[i]);
      st.exp_avg_sq = copy_like(st.exp_avg_sq, params_[i]);
      if (groups[group_of_[i]].options.amsgrad) {
        st.max_exp_avg_sq = copy_like(st.max_exp_avg_sq, params_[i]);
      } else {
        st.max_exp_avg_sq = Tensor();
      }
    }
    state_[i] = st;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    options_[g] = groups[g].options;
    lrs_[g] = groups[g].options.lr;
  }
  initial_lrs_ = initial;
}

// ---- LR schedulers -------------------------------------------------------------------------------

void detail::SchedulerFields::visit(LRScheduler& s, SchedulerFields& f) { s.fields(f); }

namespace {

// Writes each field as a tensor named prefix + key.
class FieldWriter : public detail::SchedulerFields {
 public:
  FieldWriter(NamedTensors& out, std::string prefix) : out_(out), prefix_(std::move(prefix)) {}
  void integer(const std::string& key, int64_t& v) override {
    out_.emplace_back(prefix_ + key, scalar_int(v));
  }
  void number(const std::string& key, double& v) override {
    out_.emplace_back(prefix_ + key, scalar(v));
  }
  void flag(const std::string& key, bool& v) override {
    out_.emplace_back(prefix_ + key, scalar_bool(v));
  }
  void numbers(const std::string& key, std::vector<double>& v) override {
    out_.emplace_back(prefix_ + key,
                      from_vector<double>(v, {static_cast<int64_t>(v.size())},
                                          TensorOptions(kFloat64).device(Device::cpu())));
  }
  void integers(const std::string& key, std::vector<int64_t>& v) override {
    out_.emplace_back(prefix_ + key,
                      from_vector<int64_t>(v, {static_cast<int64_t>(v.size())},
                                           TensorOptions(kInt64).device(Device::cpu())));
  }
  void nested(const std::string& prefix, LRScheduler& s) override {
    FieldWriter w(out_, prefix_ + prefix);
    visit(s, w);
  }

 private:
  NamedTensors& out_;
  std::string prefix_;
};

// Reads each field from prefix + key: first only checking (apply = false, every problem noted),
// then setting them.
class FieldReader : public detail::SchedulerFields {
 public:
  struct Shared {
    std::map<std::string, Tensor> all;
    std::set<std::string> used;
    std::vector<std::string> problems;
    std::vector<LRScheduler*> visited;
  };
  FieldReader(Shared& shared, std::string prefix, bool apply)
      : sh_(shared), prefix_(std::move(prefix)), apply_(apply) {}

  void integer(const std::string& key, int64_t& v) override {
    const Tensor t = take(key, 0);
    if (!t.defined()) return;
    const double x = t.item();
    if (!std::isfinite(x) || x != std::floor(x)) {
      sh_.problems.push_back(prefix_ + key + " is " + std::to_string(x) + ", not a whole number");
    } else if (apply_) {
      v = static_cast<int64_t>(x);
    }
  }
  void number(const std::string& key, double& v) override {
    const Tensor t = take(key, 0);
    if (t.defined() && apply_) v = t.item();
  }
  void flag(const std::string& key, bool& v) override {
    const Tensor t = take(key, 0);
    if (t.defined() && apply_) v = t.item() != 0.0;
  }
  void numbers(const std::string& key, std::vector<double>& v) override {
    const Tensor t = take(key, 1);
    if (!t.defined()) return;
    if (!v.empty() && static_cast<size_t>(t.numel()) != v.size()) {
      sh_.problems.push_back(prefix_ + key + " has " + std::to_string(t.numel()) +
                             " values, expected " + std::to_string(v.size()) +
                             " (one per parameter group: a state of another optimizer?)");
    } else if (apply_) {
      v = t.to(kFloat64).to_vector<double>();
    }
  }
  void integers(const std::string& key, std::vector<int64_t>& v) override {
    const Tensor t = take(key, 1);
    if (!t.defined()) return;
    if (is_floating(t.dtype())) {
      sh_.problems.push_back(prefix_ + key + " is " + dtype_name(t.dtype()) + ", expected int64");
    } else if (apply_) {
      v = t.to(kInt64).to_vector<int64_t>();
    }
  }
  void nested(const std::string& prefix, LRScheduler& s) override {
    FieldReader r(sh_, prefix_ + prefix, apply_);
    if (apply_) sh_.visited.push_back(&s);
    visit(s, r);
  }

 private:
  Tensor take(const std::string& key, int64_t dim) {
    const std::string name = prefix_ + key;
    auto it = sh_.all.find(name);
    if (it == sh_.all.end()) {
      sh_.problems.push_back("missing key '" + name + "'");
      return Tensor();
    }
    sh_.used.insert(name);
    if (it->second.dim() != dim) {
      sh_.problems.push_back(name + " has shape " + shape_str(it->second.shape()) + ", expected " +
                             (dim == 0 ? "a 0-d tensor" : "a 1-d tensor"));
      return Tensor();
    }
    return it->second;
  }

  Shared& sh_;
  std::string prefix_;
  bool apply_;
};

[[noreturn]] void refuse(const std::string& who, const std::vector<std::string>& problems) {
  std::string msg = who + ".load_state_dict: nothing was loaded; " +
                    std::to_string(problems.size()) +
                    (problems.size() == 1 ? " problem:" : " problems:");
  for (const std::string& p : problems) msg += "\n  " + p;
  throw ValueError(msg);
}

}  // namespace

void LRScheduler::fields(detail::SchedulerFields& f) {
  f.integer("last_epoch", last_epoch_);
  f.numbers("base_lrs", base_lrs_);
  f.numbers("_last_lr", last_lr_);
}

void StepLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.integer("step_size", step_size_);
  f.number("gamma", gamma_);
}

void MultiStepLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.integers("milestones", milestones_);
  f.number("gamma", gamma_);
}

void ExponentialLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.number("gamma", gamma_);
}

void LinearLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.number("start_factor", start_factor_);
  f.number("end_factor", end_factor_);
  f.integer("total_iters", total_iters_);
}

void ConstantLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.number("factor", factor_);
  f.integer("total_iters", total_iters_);
}

void PolynomialLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.integer("total_iters", total_iters_);
  f.number("power", power_);
}

void CosineAnnealingLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.integer("T_max", t_max_);
  f.number("eta_min", eta_min_);
}

void CyclicLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.numbers("max_lrs", max_lrs_);
  f.number("total_size", total_size_);
  f.number("step_ratio", step_ratio_);
  // PyTorch's "mode" string, as a number: 0 triangular, 1 triangular2, 2 exp_range.
  f.integer("mode_index", mode_);
  f.number("gamma", gamma_);
  f.flag("cycle_momentum", cycle_momentum_);
  f.numbers("base_momentums", base_momentums_);
  f.numbers("max_momentums", max_momentums_);
}

void CosineAnnealingWarmRestarts::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.integer("T_0", t_0_);
  f.integer("T_i", t_i_);
  f.integer("T_mult", t_mult_);
  f.number("eta_min", eta_min_);
  f.number("T_cur", t_cur_);
}

void OneCycleLR::fields(detail::SchedulerFields& f) {
  LRScheduler::fields(f);
  f.integer("total_steps", total_steps_);
  f.numbers("phase_end_steps", phase_end_);
  f.flag("three_phase", three_phase_);
  f.flag("anneal_cos", anneal_cos_);
  f.flag("cycle_momentum", cycle_momentum_);
  f.numbers("max_lrs", max_lrs_);
  f.numbers("min_lrs", min_lrs_);
  f.numbers("max_momentums", max_momentums_);
  f.numbers("base_momentums", base_momentums_);
}

void ReduceLROnPlateau::fields(detail::SchedulerFields& f) {
  f.integer("last_epoch", last_epoch_);
  f.numbers("_last_lr", last_lr_);
  f.flag("mode_max", mode_max_);
  f.number("factor", factor_);
  f.integer("patience", patience_);
  f.number("threshold", threshold_);
  f.flag("threshold_mode_abs", threshold_abs_);
  f.integer("cooldown", cooldown_);
  f.integer("cooldown_counter", cooldown_counter_);
  f.numbers("min_lrs", min_lrs_);
  f.number("eps", eps_);
  f.number("best", best_);
  f.integer("num_bad_epochs", num_bad_epochs_);
}

void SequentialLR::fields(detail::SchedulerFields& f) {
  f.integer("last_epoch", last_epoch_);
  f.integers("_milestones", milestones_);
  f.numbers("_last_lr", last_lr_);
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    f.nested("_schedulers." + std::to_string(i) + ".", *schedulers_[i]);
  }
}

void ChainedScheduler::fields(detail::SchedulerFields& f) {
  f.numbers("_last_lr", last_lr_);
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    f.nested("_schedulers." + std::to_string(i) + ".", *schedulers_[i]);
  }
}

NamedTensors LRScheduler::state_dict() const {
  NamedTensors out;
  FieldWriter w(out, "");
  const_cast<LRScheduler*>(this)->fields(w);  // the writer only reads the fields
  return out;
}

void LRScheduler::load_state_dict(const NamedTensors& state) {
  FieldReader::Shared sh;
  for (const auto& [key, t] : state) {
    if (!t.defined()) {
      sh.problems.push_back("'" + key + "' is an undefined tensor");
    } else if (!sh.all.emplace(key, t).second) {
      sh.problems.push_back("'" + key + "' appears twice");
    }
  }
  if (!sh.problems.empty()) refuse(name_, sh.problems);

  // The state ember wrote before schedulers stepped from the current lr (StepLR and
  // CosineAnnealingLR, one group): {last_epoch, base_lr}. The lr it had set is the closed form.
  if (sh.all.size() == 2 && sh.all.count("last_epoch") && sh.all.count("base_lr")) {
    const Tensor e = sh.all["last_epoch"], b = sh.all["base_lr"];
    const std::vector<int64_t> saved_epoch = {last_epoch_};
    const std::vector<double> saved_base = base_lrs_;
    if (e.dim() != 0 || b.dim() != 0 || e.item() < 0 || e.item() != std::floor(e.item())) {
      refuse(name_, {"last_epoch and base_lr must be 0-d tensors, last_epoch a whole number >= 0"});
    }
    if (optimizer_.num_param_groups() != 1) {
      refuse(name_, {"the state (last_epoch, base_lr) is of a one-group optimizer; this one has " +
                     std::to_string(optimizer_.num_param_groups()) + " parameter groups"});
    }
    last_epoch_ = static_cast<int64_t>(e.item());
    base_lrs_ = {b.item()};
    const std::optional<std::vector<double>> lrs = closed_form_lr();
    if (!lrs) {
      last_epoch_ = saved_epoch[0];
      base_lrs_ = saved_base;
      refuse(name_, {"the state (last_epoch, base_lr) is an old StepLR or CosineAnnealingLR "
                     "state; load it into the same scheduler"});
    }
    last_lr_ = *lrs;
    return;
  }

  FieldReader check(sh, "", /*apply=*/false);
  fields(check);
  for (const auto& kv : sh.all) {
    if (!sh.used.count(kv.first)) sh.problems.push_back("unexpected key '" + kv.first + "'");
  }
  if (!sh.problems.empty()) refuse(name_, sh.problems);

  const NamedTensors backup = state_dict();
  FieldReader apply(sh, "", /*apply=*/true);
  sh.visited.push_back(this);
  fields(apply);
  try {
    for (LRScheduler* s : sh.visited) {
      const size_t groups = s->optimizer_.num_param_groups();
      EMBER_CHECK(s->last_epoch_ >= -1, s->name_, ": last_epoch must be >= -1, got ",
                  s->last_epoch_);
      EMBER_CHECK(s->last_lr_.size() == groups &&
                      (s->base_lrs_.empty() || s->base_lrs_.size() == groups),
                  s->name_, ": the state is for ", s->last_lr_.size(),
                  " parameter groups, the "
                  "optimizer has ",
                  groups);
      s->check_settings();
    }
  } catch (const ValueError& e) {
    FieldReader::Shared back;
    for (const auto& [key, t] : backup) back.all.emplace(key, t);
    FieldReader restore(back, "", /*apply=*/true);
    fields(restore);
    refuse(name_, {e.what()});
  }
}

}  // namespace ember::optim
