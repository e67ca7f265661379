// ember/optim/lr_scheduler.h — learning-rate schedules (torch.optim.lr_scheduler).
//
// A scheduler sets the lr of every parameter group of its optimizer. As in PyTorch, constructing
// one counts as epoch 0, and each step() — called once per epoch (or per batch, for OneCycleLR),
// after that epoch's optimizer.step() calls — moves to the next epoch and sets the lrs for it:
//
//   optim::SGD opt(model.parameters(), {0.1});
//   optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 90; ++epoch) {
//     train_one_epoch(model, opt);      // lr 0.1 for epochs 0-29, 0.01 for 30-59, ...
//     sched.step();
//   }
//
// Schedulers step from the optimizer's current lr, as PyTorch's ("chainable") schedulers do:
// StepLR multiplies each group's lr by gamma at every step_size-th epoch, CosineAnnealingLR moves
// it along the cosine by the ratio of two consecutive points of the curve. So an lr set by hand
// (opt.set_lr) carries on from where it was set, and two schedulers on one optimizer compose:
// each applies its factor to what the other left. When nothing else touches the lr, the result is
// the closed form (base_lr * gamma^(epoch / step_size), ...) up to rounding.
//
// The first scheduler attached to an optimizer records each group's lr as its initial_lr
// (Optimizer::initial_lr, PyTorch's group["initial_lr"]); every scheduler of that optimizer takes
// it as its base_lrs(). A scheduler keeps a reference to its optimizer, which must outlive it.
//
// Schedulers: StepLR, MultiStepLR, ExponentialLR, LinearLR, ConstantLR, PolynomialLR,
// CosineAnnealingLR, CosineAnnealingWarmRestarts (SGDR), LambdaLR, MultiplicativeLR, OneCycleLR
// and CyclicLR (per batch; both also cycle the momentum),
// ReduceLROnPlateau (steps on a metric), SequentialLR (one scheduler after another, e.g. warm-up
// then decay) and ChainedScheduler (several at once). Each computes what PyTorch 1.13 computes, in
// the same order of double operations (tests/fixtures/optim/schedulers.txt holds PyTorch's lrs;
// tests/optim/schedulers.cpp replays them).
//
// state_dict() names the fields as PyTorch's scheduler.state_dict() does (last_epoch, base_lrs,
// _last_lr, step_size, gamma, ..., _schedulers.K.* for the schedulers inside SequentialLR and
// ChainedScheduler); load_state_dict restores them, settings included, as PyTorch does. The state
// ember wrote before schedulers stepped from the current lr ({last_epoch, base_lr}) still loads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

class LRScheduler;

namespace detail {
// Saves or loads a scheduler's fields by name (optim/state_dict.cpp implements both).
class SchedulerFields {
 public:
  virtual ~SchedulerFields() = default;
  virtual void integer(const std::string& key, int64_t& v) = 0;
  virtual void number(const std::string& key, double& v) = 0;
  virtual void flag(const std::string& key, bool& v) = 0;
  virtual void numbers(const std::string& key, std::vector<double>& v) = 0;
  virtual void integers(const std::string& key, std::vector<int64_t>& v) = 0;
  virtual void nested(const std::string& prefix, LRScheduler& s) = 0;

 protected:
  static void visit(LRScheduler& s, SchedulerFields& f);  // s.fields(f)
};
}  // namespace detail

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Next epoch: last_epoch() += 1, and each group's lr set from the schedule.
  virtual void step();
  // The lr of each group that the last step (or the constructor) left.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return optimizer_; }
  const std::string& name() const { return name_; }  // "StepLR", ...

  // The fields as named tensors (optim/state_dict.cpp). Loading checks every entry first, then
  // sets them all; a ValueError names every problem and leaves the scheduler as it was. The
  // optimizer's lrs come back with the optimizer's state.
  NamedTensors state_dict() const;
  void load_state_dict(const NamedTensors& state);

 protected:
  // Records initial_lr on the optimizer's groups that have none (record_initial_lr), and takes
  // base_lrs from them.
  LRScheduler(Optimizer& optimizer, std::string name, bool record_initial_lr = true);
  // Epoch 0. Derived constructors call it last (get_lr is virtual: the base constructor can't).
  void initial_step() { step(); }
  // The lr of each group for last_epoch_ (already advanced), from the optimizer's current lrs.
  virtual std::vector<double> get_lr() const = 0;
  // The closed form at last_epoch_, for the schedulers that have one. SequentialLR uses it at a
  // milestone, as PyTorch 1.13's step(0) does.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // Moves to `epoch` and sets the closed form there (get_lr() when there is none).
  // CosineAnnealingWarmRestarts overrides it with its own step(epoch), as PyTorch's step(0) does.
  virtual void step_to(int64_t epoch);
  // Throws unless the optimizer still has the groups this scheduler was made for (a group added
  // by add_param_group afterwards has no base lr here: make the scheduler after adding it).
  void check_groups() const;
  // Sets the optimizer's lrs (each checked first) and get_last_lr().
  void apply(const std::vector<double>& lrs);
  // The optimizer's lrs now.
  std::vector<double> current_lrs() const;
  // Every field of the state, by name; derived classes add theirs after the base's.
  virtual void fields(detail::SchedulerFields& f);
  // Throws if a loaded setting is out of range (the constructors' checks).
  virtual void check_settings() const {}
  // A per-group setting: one value for every group, or one per group.
  std::vector<double> per_group(const std::vector<double>& values, const char* what) const;

  Optimizer& optimizer_;
  std::string name_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  std::vector<double> last_lr_;

  friend class SequentialLR;
  friend class ChainedScheduler;
  friend class detail::SchedulerFields;
};

// Multiplies each group's lr by gamma every step_size epochs:
// lr = base_lr * gamma^floor(epoch / step_size) when nothing else changes it.
class StepLR final : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() const override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// Multiplies each group's lr by gamma at each milestone epoch (by gamma^k where a milestone is
// listed k times).
class MultiStepLR final : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() const override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// Multiplies each group's lr by gamma every epoch.
class ExponentialLR final : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lr() const override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  double gamma_;
};

// Scales each group's lr by a factor that goes linearly from start_factor (epoch 0) to
// end_factor (epoch total_iters and after): the usual warm-up. start_factor must be > 0 (in
// PyTorch 1.13, 0 divides by zero at the first step).
class LinearLR final : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() const override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// Half a cosine from base_lr down to eta_min over T_max epochs (SGDR without restarts), in
// PyTorch's recursive form: lr_e = eta_min + (lr_{e-1} - eta_min) * (1 + cos(pi e / T_max)) /
// (1 + cos(pi (e - 1) / T_max)). Untouched, that is eta_min + (base_lr - eta_min) *
// (1 + cos(pi * epoch / T_max)) / 2; past T_max it climbs back to base_lr at 2 T_max.
class CosineAnnealingLR final : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lr() const override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// Multiplies each group's lr by `factor` until epoch total_iters, where it returns to the lr it
// had (a constant warm-up). factor must be in (0, 1].
class ConstantLR final : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() const override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  double factor_;
  int64_t total_iters_;
};

// Decays each group's lr to 0 at epoch total_iters along (1 - epoch / total_iters)^power.
class PolynomialLR final : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);

 protected:
  std::vector<double> get_lr() const override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  int64_t total_iters_;
  double power_;
};

// Multiplies each group's lr by lr_lambda(epoch) at every step (not at the constructor's epoch 0).
class MultiplicativeLR final : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t epoch)>;
  MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda);
  MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() const override;

 private:
  std::vector<Lambda> lambdas_;
};

// lr = base_lr * lr_lambda(epoch), with one function for all groups or one per group. The
// functions are code: state_dict() does not hold them (PyTorch saves none of a plain function).
class LambdaLR final : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t epoch)>;
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() const override;

 private:
  std::vector<Lambda> lambdas_;
};

// The 1cycle policy (Smith & Topin), stepped after every batch: the lr rises from
// max_lr / div_factor to max_lr over the first pct_start of total_steps, then anneals to
// max_lr / div_factor / final_div_factor (three_phase: back to the start first, then down). With
// cycle_momentum the optimizer's momentum (SGD) or beta1 (Adam) moves the other way, between
// max_momentum and base_momentum. It sets the groups' initial_lr to max_lr / div_factor.
struct OneCycleLROptions {
  int64_t total_steps = 0;  // or 0, and epochs * steps_per_epoch
  int64_t epochs = 0;
  int64_t steps_per_epoch = 0;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // or "linear"
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

class OneCycleLR final : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleLROptions& options);
  // One max_lr per parameter group.
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, const OneCycleLROptions& options);

 protected:
  std::vector<double> get_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_ = 0;
  std::vector<double> phase_end_;  // the last step of each phase (a real number, as PyTorch's)
  bool three_phase_ = false;
  bool anneal_cos_ = true;
  bool cycle_momentum_ = true;
  std::vector<double> max_lrs_, min_lrs_, max_momentums_, base_momentums_;
};

// CyclicLR (Smith, "Cyclical Learning Rates"), stepped after every batch: each group's lr goes
// from base_lr up to max_lr in step_size_up steps and back down in step_size_down, again and
// again. The amplitude is kept ("triangular"), halved every cycle ("triangular2"), or multiplied
// by gamma^step ("exp_range"). With cycle_momentum the optimizer's momentum (SGD) or beta1 (Adam,
// AdamW) moves the other way, from max_momentum down to base_momentum and back. The constructor
// sets each group's lr to base_lr and, with cycle_momentum, its momentum to base_momentum, as
// PyTorch's does. (PyTorch 1.13 refuses cycle_momentum for Adam, which has no "momentum"; ember
// cycles beta1 as PyTorch 2.x and OneCycleLR do.)
struct CyclicLROptions {
  double step_size_up = 2000;
  std::optional<double> step_size_down;  // default: step_size_up
  std::string mode = "triangular";       // or "triangular2", "exp_range"
  double gamma = 1.0;                    // exp_range's factor per step
  bool cycle_momentum = true;
  double base_momentum = 0.8;  // for every group, unless base_momentums has one per group
  double max_momentum = 0.9;
  std::vector<double> base_momentums, max_momentums;
};

class CyclicLR final : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, double base_lr, double max_lr,
           const CyclicLROptions& options = {});
  // One base_lr and max_lr per parameter group (or one value for all).
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lrs, std::vector<double> max_lrs,
           const CyclicLROptions& options = {});

 protected:
  std::vector<double> get_lr() const override;
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  double scale(double cycle) const;  // the amplitude's factor: scale_fn of PyTorch

  std::vector<double> max_lrs_;
  double total_size_ = 0.0, step_ratio_ = 0.0;
  int64_t mode_ = 0;  // 0 triangular, 1 triangular2, 2 exp_range (state: "mode_index")
  double gamma_ = 1.0;
  bool cycle_momentum_ = true;
  std::vector<double> base_momentums_, max_momentums_;
};

// SGDR (Loshchilov & Hutter): cosine annealing from base_lr to eta_min over T_0 epochs, then a
// warm restart at base_lr, the next period T_mult times longer:
//   lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2
// step() advances one epoch; step(epoch) jumps to any epoch, fractional ones included — call it
// per batch with epoch + batch / batches_per_epoch, as in PyTorch's example. last_epoch() is then
// floor(epoch).
class CosineAnnealingWarmRestarts final : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1,
                              double eta_min = 0.0);
  void step() override;
  void step(double epoch);

  double T_cur() const { return t_cur_; }  // epochs since the last restart (may be fractional)
  int64_t T_i() const { return t_i_; }     // the length of the current period

 protected:
  std::vector<double> get_lr() const override;
  void step_to(int64_t epoch) override { step(static_cast<double>(epoch)); }
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  void set_lrs();  // get_lr() into the optimizer

  int64_t t_0_, t_i_, t_mult_;
  double eta_min_;
  double t_cur_ = -1.0;
};

// Divides the lr by 1 / factor when a metric (e.g. the validation loss) has stopped improving for
// more than `patience` epochs. It steps on the metric: step(metric); step() alone is an error.
// It records no initial_lr, as in PyTorch.
struct ReduceLROnPlateauOptions {
  std::string mode = "min";  // "min": lower is better; "max": higher is better
  double factor = 0.1;       // new lr = lr * factor, in [0, 1)
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // "rel": best * (1 -/+ threshold); "abs": best -/+ it
  int64_t cooldown = 0;                // epochs to wait after a reduction
  double min_lr = 0.0;                 // for every group, unless min_lrs has one per group
  std::vector<double> min_lrs;
  double eps = 1e-8;  // a reduction smaller than this is skipped
};

class ReduceLROnPlateau final : public LRScheduler {
 public:
  ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});

  void step() override;  // throws: call step(metric)
  void step(double metric);

  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }

 protected:
  std::vector<double> get_lr() const override { return current_lrs(); }
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  bool is_better(double a, double best) const;

  bool mode_max_ = false;
  double factor_;
  int64_t patience_;
  double threshold_;
  bool threshold_abs_ = false;
  int64_t cooldown_;
  int64_t cooldown_counter_ = 0;
  std::vector<double> min_lrs_;
  double eps_;
  double best_;
  int64_t num_bad_epochs_ = 0;
};

// Runs schedulers one after another: schedulers[0] until milestones[0], schedulers[1] from there
// until milestones[1], ... — e.g. LinearLR warm-up, then CosineAnnealingLR. At a milestone the
// next scheduler starts at its epoch 0 with its closed form, as PyTorch 1.13 does (step(0));
// for CosineAnnealingLR, StepLR and ExponentialLR that is base_lr. All must belong to
// `optimizer`; ReduceLROnPlateau, SequentialLR and ChainedScheduler cannot be inside one.
class SequentialLR final : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;

 protected:
  std::vector<double> get_lr() const override { return current_lrs(); }
  void fields(detail::SchedulerFields& f) override;
  void check_settings() const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Steps several schedulers of one optimizer at once; their factors multiply. ReduceLROnPlateau
// cannot be inside one (it steps on a metric).
class ChainedScheduler final : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;

 protected:
  std::vector<double> get_lr() const override { return current_lrs(); }
  void fields(detail::SchedulerFields& f) override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace ember::optim
