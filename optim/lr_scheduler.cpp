// ember/optim/lr_scheduler.cpp — the schedules (lr_scheduler.h). Each formula is written in the
// order of operations PyTorch 1.13 uses, so that the doubles come out the same, bit for bit where
// the operations are the same (tests/fixtures/optim/schedulers.txt).
#include "optim/lr_scheduler.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/base/error.h"

// Every a * b + c below rounds twice, as Python's floats do: with -march=native the compiler
// would otherwise fuse some into one fused multiply-add and land an ulp or two off PyTorch.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace ember::optim {

namespace {
const double kPi = std::acos(-1.0);  // math.pi
}  // namespace

// ---- the base ------------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& optimizer, std::string name, bool record_initial_lr)
    : optimizer_(optimizer), name_(std::move(name)) {
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
    if (record_initial_lr && !optimizer_.initial_lr(g)) {
      optimizer_.set_initial_lr(g, optimizer_.lr(g));
    }
    base_lrs_.push_back(optimizer_.initial_lr(g).value_or(optimizer_.lr(g)));
  }
  last_lr_ = current_lrs();
}

std::vector<double> LRScheduler::current_lrs() const {
  std::vector<double> out;
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) out.push_back(optimizer_.lr(g));
  return out;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  EMBER_CHECK(lrs.size() == optimizer_.num_param_groups(), name_, ": ", lrs.size(),
              " lrs for an optimizer with ", optimizer_.num_param_groups(), " parameter groups");
  for (size_t g = 0; g < lrs.size(); ++g) {
    EMBER_CHECK(std::isfinite(lrs[g]) && lrs[g] >= 0.0, name_,
                ": the schedule gives parameter "
                "group ",
                g, " an lr of ", lrs[g], " at epoch ", last_epoch_,
                "; an lr must be a "
                "finite number >= 0 (check the scheduler's settings, or the lr set by hand)");
  }
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
  last_lr_ = current_lrs();
}

void LRScheduler::check_groups() const {
  EMBER_CHECK(base_lrs_.size() == optimizer_.num_param_groups(), name_, ": the optimizer has ",
              optimizer_.num_param_groups(), " parameter groups but this scheduler was made for ",
              base_lrs_.size(),
              "; a group added with add_param_group() after the scheduler has no "
              "base lr in it: create the scheduler after adding the group");
}

void LRScheduler::step() {
  check_groups();
  ++last_epoch_;
  std::vector<double> lrs;
  try {
    lrs = get_lr();
    apply(lrs);
  } catch (...) {
    --last_epoch_;  // a refused step leaves the scheduler where it was
    throw;
  }
}

void LRScheduler::step_to(int64_t epoch) {
  check_groups();
  const int64_t before = last_epoch_;
  last_epoch_ = epoch;
  try {
    std::optional<std::vector<double>> closed = closed_form_lr();
    apply(closed ? *closed : get_lr());
  } catch (...) {
    last_epoch_ = before;
    throw;
  }
}

std::vector<double> LRScheduler::per_group(const std::vector<double>& values,
                                           const char* what) const {
  const size_t groups = optimizer_.num_param_groups();
  if (values.size() == 1) return std::vector<double>(groups, values[0]);
  EMBER_CHECK(values.size() == groups, name_, ": expected one ", what,
              " for all parameter groups "
              "or one per group (",
              groups, "), got ", values.size());
  return values;
}

// ---- StepLR ----------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(gamma) {
  check_settings();
  initial_step();
}

void StepLR::check_settings() const {
  EMBER_CHECK(step_size_ >= 1, "StepLR: step_size must be >= 1 (epochs between decays), got ",
              step_size_);
  EMBER_CHECK(std::isfinite(gamma_) && gamma_ >= 0.0, "StepLR: gamma must be >= 0, got ", gamma_);
}

std::vector<double> StepLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_)));
  }
  return lrs;
}

// ---- MultiStepLR -----------------------------------------------------------------------------

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer, "MultiStepLR"), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  check_settings();
  initial_step();
}

void MultiStepLR::check_settings() const {
  EMBER_CHECK(milestones_.empty() || milestones_.front() >= 0,
              "MultiStepLR: milestones are epochs, each >= 0, got ", milestones_.front());
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()),
              "MultiStepLR: milestones must be in increasing order");
  EMBER_CHECK(std::isfinite(gamma_) && gamma_ >= 0.0, "MultiStepLR: gamma must be >= 0, got ",
              gamma_);
}

std::vector<double> MultiStepLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  const auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return lrs;
  for (double& lr : lrs) lr = lr * std::pow(gamma_, static_cast<double>(count));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  // gamma ^ (the number of milestones <= epoch), as bisect_right counts them.
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return lrs;
}

// ---- ExponentialLR ---------------------------------------------------------------------------

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer, "ExponentialLR"), gamma_(gamma) {
  check_settings();
  initial_step();
}

void ExponentialLR::check_settings() const {
  EMBER_CHECK(std::isfinite(gamma_) && gamma_ >= 0.0, "ExponentialLR: gamma must be >= 0, got ",
              gamma_);
}

std::vector<double> ExponentialLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  }
  return lrs;
}

// ---- LinearLR --------------------------------------------------------------------------------

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer, "LinearLR"),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  check_settings();
  initial_step();
}

void LinearLR::check_settings() const {
  EMBER_CHECK(start_factor_ > 0.0 && start_factor_ <= 1.0,
              "LinearLR: start_factor must be in "
              "(0, 1], got ",
              start_factor_, " (a factor of 0 would make every later lr 0)");
  EMBER_CHECK(end_factor_ >= 0.0 && end_factor_ <= 1.0,
              "LinearLR: end_factor must be in [0, 1], got ", end_factor_);
  EMBER_CHECK(total_iters_ >= 1,
              "LinearLR: total_iters must be >= 1 (epochs from start_factor "
              "to end_factor), got ",
              total_iters_);
}

std::vector<double> LinearLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  // The ratio of the factor at this epoch to the factor at the previous one.
  const double slope = end_factor_ - start_factor_;
  const double ratio = 1.0 + slope / (static_cast<double>(total_iters_) * start_factor_ +
                                      static_cast<double>(last_epoch_ - 1) * slope);
  for (double& lr : lrs) lr = lr * ratio;
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * done /
                                              static_cast<double>(total_iters_)));
  }
  return lrs;
}

// ---- CosineAnnealingLR -----------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingLR"), t_max_(T_max), eta_min_(eta_min) {
  check_settings();
  initial_step();
}

void CosineAnnealingLR::check_settings() const {
  EMBER_CHECK(t_max_ >= 1, "CosineAnnealingLR: T_max must be >= 1 (epochs to anneal over), got ",
              t_max_);
  EMBER_CHECK(std::isfinite(eta_min_) && eta_min_ >= 0.0,
              "CosineAnnealingLR: eta_min must be >= 0, got ", eta_min_);
}

std::vector<double> CosineAnnealingLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) return lrs;
  const double t_max = static_cast<double>(t_max_);
  if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
    // Just past the bottom (and every 2 T_max after): the recursive ratio would divide by zero;
    // PyTorch adds the first step of the climb back instead.
    for (size_t g = 0; g < lrs.size(); ++g) {
      lrs[g] = lrs[g] + (base_lrs_[g] - eta_min_) * (1.0 - std::cos(kPi / t_max)) / 2.0;
    }
    return lrs;
  }
  const double e = static_cast<double>(last_epoch_);
  const double ratio =
      (1.0 + std::cos(kPi * e / t_max)) / (1.0 + std::cos(kPi * (e - 1.0) / t_max));
  for (double& lr : lrs) lr = ratio * (lr - eta_min_) + eta_min_;
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  const double cos_term =
      1.0 + std::cos(kPi * static_cast<double>(last_epoch_) / static_cast<double>(t_max_));
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(eta_min_ + (base - eta_min_) * cos_term / 2.0);
  return lrs;
}

// ---- ConstantLR ------------------------------------------------------------------------------

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer, "ConstantLR"), factor_(factor), total_iters_(total_iters) {
  check_settings();
  initial_step();
}

void ConstantLR::check_settings() const {
  EMBER_CHECK(factor_ > 0.0 && factor_ <= 1.0, "ConstantLR: factor must be in (0, 1], got ",
              factor_, " (the lr is divided by it at total_iters)");
  EMBER_CHECK(total_iters_ >= 0, "ConstantLR: total_iters must be >= 0, got ", total_iters_);
}

std::vector<double> ConstantLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr = lr * (1.0 / factor_);
  }
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  const double rest = last_epoch_ >= total_iters_ ? 1.0 - factor_ : 0.0;
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * (factor_ + rest));
  return lrs;
}

// ---- PolynomialLR ----------------------------------------------------------------------------

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer, "PolynomialLR"), total_iters_(total_iters), power_(power) {
  check_settings();
  initial_step();
}

void PolynomialLR::check_settings() const {
  EMBER_CHECK(total_iters_ >= 1, "PolynomialLR: total_iters must be >= 1, got ", total_iters_);
  EMBER_CHECK(std::isfinite(power_) && power_ >= 0.0, "PolynomialLR: power must be >= 0, got ",
              power_);
}

std::vector<double> PolynomialLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0 || last_epoch_ > total_iters_) return lrs;
  const double total = static_cast<double>(total_iters_);
  const double decay = std::pow((1.0 - static_cast<double>(last_epoch_) / total) /
                                    (1.0 - static_cast<double>(last_epoch_ - 1) / total),
                                power_);
  for (double& lr : lrs) lr = lr * decay;
  return lrs;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  std::vector<double> lrs;
  for (double base : base_lrs_) {
    lrs.push_back(base * std::pow(1.0 - done / static_cast<double>(total_iters_), power_));
  }
  return lrs;
}

// ---- MultiplicativeLR ------------------------------------------------------------------------

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda)
    : MultiplicativeLR(optimizer, std::vector<Lambda>(optimizer.num_param_groups(), lr_lambda)) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(optimizer, "MultiplicativeLR"), lambdas_(std::move(lr_lambdas)) {
  EMBER_CHECK(lambdas_.size() == optimizer.num_param_groups(),
              "MultiplicativeLR: expected one "
              "lr_lambda per parameter group (",
              optimizer.num_param_groups(), "), got ", lambdas_.size(),
              "; pass a single function to use it for every group");
  for (size_t g = 0; g < lambdas_.size(); ++g) {
    EMBER_CHECK(static_cast<bool>(lambdas_[g]), "MultiplicativeLR: lr_lambda ", g, " is empty");
  }
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() const {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ > 0) {
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = lrs[g] * lambdas_[g](last_epoch_);
  }
  return lrs;
}

// ---- LambdaLR --------------------------------------------------------------------------------

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.num_param_groups(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(optimizer, "LambdaLR"), lambdas_(std::move(lr_lambdas)) {
  EMBER_CHECK(lambdas_.size() == optimizer.num_param_groups(),
              "LambdaLR: expected one lr_lambda "
              "per parameter group (",
              optimizer.num_param_groups(), "), got ", lambdas_.size(),
              "; pass a single function to use it for every group");
  for (size_t g = 0; g < lambdas_.size(); ++g) {
    EMBER_CHECK(static_cast<bool>(lambdas_[g]), "LambdaLR: lr_lambda ", g, " is empty");
  }
  initial_step();
}

std::vector<double> LambdaLR::get_lr() const {
  std::vector<double> lrs;
  for (size_t g = 0; g < lambdas_.size(); ++g) {
    lrs.push_back(base_lrs_[g] * lambdas_[g](last_epoch_));
  }
  return lrs;
}

// ---- CyclicLR --------------------------------------------------------------------------------

CyclicLR::CyclicLR(Optimizer& optimizer, double base_lr, double max_lr, const CyclicLROptions& o)
    : CyclicLR(optimizer, std::vector<double>{base_lr}, std::vector<double>{max_lr}, o) {}

CyclicLR::CyclicLR(Optimizer& optimizer, std::vector<double> base_lrs, std::vector<double> max_lrs,
                   const CyclicLROptions& o)
    : LRScheduler(optimizer, "CyclicLR", /*record_initial_lr=*/false) {
  // PyTorch's order: the groups start at base_lr (before the base class records initial_lr).
  const std::vector<double> bases = per_group(base_lrs, "base_lr");
  max_lrs_ = per_group(max_lrs, "max_lr");
  for (size_t g = 0; g < bases.size(); ++g) {
    EMBER_CHECK(std::isfinite(bases[g]) && bases[g] >= 0.0 && std::isfinite(max_lrs_[g]) &&
                    max_lrs_[g] >= 0.0,
                "CyclicLR: base_lr and max_lr must be >= 0, got ", bases[g], " and ", max_lrs_[g]);
    optimizer_.set_lr(g, bases[g]);
    if (!optimizer_.initial_lr(g)) optimizer_.set_initial_lr(g, bases[g]);
  }
  EMBER_CHECK(o.step_size_up > 0.0 && (!o.step_size_down || *o.step_size_down >= 0.0),
              "CyclicLR: step_size_up must be > 0 and step_size_down >= 0, got ", o.step_size_up,
              " and ", o.step_size_down.value_or(o.step_size_up));
  const double down = o.step_size_down.value_or(o.step_size_up);
  total_size_ = o.step_size_up + down;
  step_ratio_ = o.step_size_up / total_size_;
  EMBER_CHECK(o.mode == "triangular" || o.mode == "triangular2" || o.mode == "exp_range",
              "CyclicLR: mode must be \"triangular\", \"triangular2\" or \"exp_range\", got \"",
              o.mode, "\"");
  mode_ = o.mode == "triangular" ? 0 : o.mode == "triangular2" ? 1 : 2;
  gamma_ = o.gamma;
  cycle_momentum_ = o.cycle_momentum;
  if (cycle_momentum_) {
    EMBER_CHECK(optimizer_.has_momentum(), "CyclicLR: ", optimizer_.name(),
                " has no momentum to cycle; set cycle_momentum = false");
    const std::vector<double> base_m = per_group(
        o.base_momentums.empty() ? std::vector<double>{o.base_momentum} : o.base_momentums,
        "base_momentum");
    for (size_t g = 0; g < base_m.size(); ++g) optimizer_.set_momentum(g, base_m[g]);
    for (size_t g = 0; g < base_m.size(); ++g) base_momentums_.push_back(optimizer_.momentum(g));
    max_momentums_ =
        per_group(o.max_momentums.empty() ? std::vector<double>{o.max_momentum} : o.max_momentums,
                  "max_momentum");
  }
  // PyTorch's base constructor takes base_lrs from initial_lr and runs the first step with them
  // (an earlier scheduler's initial_lr wins at epoch 0); only then is self.base_lrs = base_lr.
  for (size_t g = 0; g < bases.size(); ++g) base_lrs_[g] = *optimizer_.initial_lr(g);
  last_lr_ = current_lrs();
  check_settings();
  initial_step();
  base_lrs_ = bases;
}

void CyclicLR::check_settings() const {
  const size_t groups = optimizer_.num_param_groups();
  EMBER_CHECK(total_size_ > 0.0 && step_ratio_ > 0.0 && step_ratio_ <= 1.0,
              "CyclicLR: the cycle has no steps (total_size ", total_size_, ")");
  EMBER_CHECK(mode_ >= 0 && mode_ <= 2, "CyclicLR: unknown mode_index ", mode_);
  EMBER_CHECK(max_lrs_.size() == groups && (!cycle_momentum_ || (base_momentums_.size() == groups &&
                                                                 max_momentums_.size() == groups)),
              "CyclicLR: the state has values for another number of parameter groups than the "
              "optimizer's ",
              groups);
}

double CyclicLR::scale(double x) const {
  if (mode_ == 0) return 1.0;                           // triangular
  if (mode_ == 1) return 1.0 / std::pow(2.0, x - 1.0);  // triangular2: 1 / (2. ** (cycle - 1))
  return std::pow(gamma_, x);                           // exp_range: gamma ** last_epoch
}

std::vector<double> CyclicLR::get_lr() const {
  // cycle = floor(1 + e / total); x = 1 + e / total - cycle: where we are in the cycle, [0, 1).
  const double e = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1.0 + e / total_size_);
  const double x = 1.0 + e / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1.0) / (step_ratio_ - 1.0);
  // triangular and triangular2 scale per cycle, exp_range per step (PyTorch's scale_mode).
  const double s = scale(mode_ == 2 ? e : cycle);
  std::vector<double> lrs;
  for (size_t g = 0; g < max_lrs_.size(); ++g) {
    const double base_height = (max_lrs_[g] - base_lrs_[g]) * scale_factor;
    lrs.push_back(base_lrs_[g] + base_height * s);
  }
  if (cycle_momentum_) {
    for (size_t g = 0; g < max_momentums_.size(); ++g) {
      const double base_height = (max_momentums_[g] - base_momentums_[g]) * scale_factor;
      optimizer_.set_momentum(g, max_momentums_[g] - base_height * s);
    }
  }
  return lrs;
}

// ---- CosineAnnealingWarmRestarts -------------------------------------------------------------

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0,
                                                         int64_t T_mult, double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingWarmRestarts"),
      t_0_(T_0),
      t_i_(T_0),
      t_mult_(T_mult),
      eta_min_(eta_min) {
  check_settings();
  initial_step();
}

void CosineAnnealingWarmRestarts::check_settings() const {
  EMBER_CHECK(t_0_ >= 1, "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got ", t_0_);
  EMBER_CHECK(t_mult_ >= 1, "CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got ",
              t_mult_);
  EMBER_CHECK(t_i_ >= 1, "CosineAnnealingWarmRestarts: T_i must be >= 1, got ", t_i_);
  EMBER_CHECK(std::isfinite(eta_min_) && eta_min_ >= 0.0,
              "CosineAnnealingWarmRestarts: eta_min must be >= 0, got ", eta_min_);
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() const {
  std::vector<double> lrs;
  const double t_i = static_cast<double>(t_i_);
  for (double base : base_lrs_)
    lrs.push_back(eta_min_ + (base - eta_min_) * (1.0 + std::cos(kPi * t_cur_ / t_i)) / 2.0);
  return lrs;
}

void CosineAnnealingWarmRestarts::set_lrs() { apply(get_lr()); }

void CosineAnnealingWarmRestarts::step() {
  check_groups();
  if (last_epoch_ < 0) {  // the constructor's step (and SequentialLR's restart): epoch 0
    step(0.0);
    return;
  }
  const double saved_cur = t_cur_;
  const int64_t saved_i = t_i_;
  ++last_epoch_;
  t_cur_ = t_cur_ + 1.0;
  if (t_cur_ >= static_cast<double>(t_i_)) {  // a warm restart
    t_cur_ = t_cur_ - static_cast<double>(t_i_);
    t_i_ = t_i_ * t_mult_;
  }
  try {
    set_lrs();
  } catch (...) {
    --last_epoch_;
    t_cur_ = saved_cur;
    t_i_ = saved_i;
    throw;
  }
}

void CosineAnnealingWarmRestarts::step(double epoch) {
  check_groups();
  EMBER_CHECK(std::isfinite(epoch) && epoch >= 0.0,
              "CosineAnnealingWarmRestarts: expected a non-negative epoch, got ", epoch);
  const double saved_cur = t_cur_;
  const int64_t saved_i = t_i_, saved_epoch = last_epoch_;
  const double t_0 = static_cast<double>(t_0_);
  if (epoch >= t_0) {
    if (t_mult_ == 1) {
      t_cur_ = std::fmod(epoch, t_0);
    } else {
      // The restart n that epoch falls in: T_0 (T_mult^n - 1) / (T_mult - 1) <= epoch, with
      // Python's math.log(x, base) = log(x) / log(base) and int() truncation.
      const double m = static_cast<double>(t_mult_);
      const auto n = static_cast<int64_t>(std::log(epoch / t_0 * (m - 1.0) + 1.0) / std::log(m));
      int64_t power = 1;
      for (int64_t k = 0; k < n; ++k) power *= t_mult_;
      t_cur_ = epoch - static_cast<double>(t_0_ * (power - 1)) / static_cast<double>(t_mult_ - 1);
      t_i_ = t_0_ * power;
    }
  } else {
    t_i_ = t_0_;
    t_cur_ = epoch;
  }
  last_epoch_ = static_cast<int64_t>(std::floor(epoch));
  try {
    set_lrs();
  } catch (...) {
    last_epoch_ = saved_epoch;
    t_cur_ = saved_cur;
    t_i_ = saved_i;
    throw;
  }
}

// ---- OneCycleLR ------------------------------------------------------------------------------

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleLROptions& options)
    : OneCycleLR(optimizer, std::vector<double>{max_lr}, options) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs,
                       const OneCycleLROptions& o)
    : LRScheduler(optimizer, "OneCycleLR") {
  if (o.total_steps != 0) {
    EMBER_CHECK(o.total_steps > 0, "OneCycleLR: total_steps must be >= 1, got ", o.total_steps);
    total_steps_ = o.total_steps;
  } else {
    EMBER_CHECK(o.epochs >= 1 && o.steps_per_epoch >= 1,
                "OneCycleLR: give total_steps, or "
                "epochs and steps_per_epoch (each >= 1); got epochs ",
                o.epochs, " and steps_per_epoch ", o.steps_per_epoch);
    total_steps_ = o.epochs * o.steps_per_epoch;
  }
  EMBER_CHECK(o.pct_start >= 0.0 && o.pct_start <= 1.0,
              "OneCycleLR: pct_start must be in [0, 1], got ", o.pct_start);
  EMBER_CHECK(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
              "OneCycleLR: anneal_strategy must be \"cos\" or \"linear\", got \"",
              o.anneal_strategy, "\"");
  EMBER_CHECK(std::isfinite(o.div_factor) && o.div_factor > 0.0 &&
                  std::isfinite(o.final_div_factor) && o.final_div_factor > 0.0,
              "OneCycleLR: div_factor and final_div_factor must be > 0, got ", o.div_factor,
              " and ", o.final_div_factor);
  const double total = static_cast<double>(total_steps_);
  three_phase_ = o.three_phase;
  if (three_phase_) {
    phase_end_ = {o.pct_start * total - 1.0, 2.0 * o.pct_start * total - 2.0, total - 1.0};
  } else {
    phase_end_ = {o.pct_start * total - 1.0, total - 1.0};
  }
  anneal_cos_ = o.anneal_strategy == "cos";
  max_lrs_ = per_group(max_lrs, "max_lr");
  for (size_t g = 0; g < max_lrs_.size(); ++g) {
    EMBER_CHECK(std::isfinite(max_lrs_[g]) && max_lrs_[g] >= 0.0,
                "OneCycleLR: max_lr must be "
                ">= 0, got ",
                max_lrs_[g]);
    const double initial = max_lrs_[g] / o.div_factor;
    optimizer_.set_initial_lr(g, initial);
    base_lrs_[g] = initial;
    min_lrs_.push_back(initial / o.final_div_factor);
  }
  cycle_momentum_ = o.cycle_momentum;
  if (cycle_momentum_) {
    EMBER_CHECK(optimizer_.has_momentum(), "OneCycleLR: ", optimizer_.name(),
                " has no momentum "
                "to cycle; set cycle_momentum = false");
    max_momentums_.assign(max_lrs_.size(), o.max_momentum);
    base_momentums_.assign(max_lrs_.size(), o.base_momentum);
    for (size_t g = 0; g < max_lrs_.size(); ++g) optimizer_.set_momentum(g, o.max_momentum);
  }
  initial_step();
}

void OneCycleLR::check_settings() const {
  EMBER_CHECK(total_steps_ >= 1, "OneCycleLR: total_steps must be >= 1, got ", total_steps_);
  EMBER_CHECK(phase_end_.size() == (three_phase_ ? 3u : 2u), "OneCycleLR: ", phase_end_.size(),
              " phases, expected ", three_phase_ ? 3 : 2);
  const size_t groups = optimizer_.num_param_groups();
  EMBER_CHECK(max_lrs_.size() == groups && min_lrs_.size() == groups &&
                  (!cycle_momentum_ ||
                   (max_momentums_.size() == groups && base_momentums_.size() == groups)),
              "OneCycleLR: the state has values for another number of parameter groups than the "
              "optimizer's ",
              groups);
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (anneal_cos_) {
    const double cos_out = std::cos(kPi * pct) + 1.0;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() const {
  EMBER_CHECK(last_epoch_ <= total_steps_, "OneCycleLR: tried to step ", last_epoch_ + 1,
              " times; total_steps is ", total_steps_,
              " (step once per batch, and give "
              "total_steps = epochs * batches per epoch)");
  const double step = static_cast<double>(last_epoch_);
  // Each phase: (start lr, end lr, start momentum, end momentum).
  struct Ends {
    double lr0, lr1, m0, m1;
  };
  std::vector<double> lrs, momenta;
  for (size_t g = 0; g < max_lrs_.size(); ++g) {
    const double initial = optimizer_.initial_lr(g).value_or(base_lrs_[g]);
    const double maxm = cycle_momentum_ ? max_momentums_[g] : 0.0;
    const double basem = cycle_momentum_ ? base_momentums_[g] : 0.0;
    const std::array<Ends, 3> ends =
        three_phase_ ? std::array<Ends, 3>{{{initial, max_lrs_[g], maxm, basem},
                                            {max_lrs_[g], initial, basem, maxm},
                                            {initial, min_lrs_[g], maxm, maxm}}}
                     : std::array<Ends, 3>{{{initial, max_lrs_[g], maxm, basem},
                                            {max_lrs_[g], min_lrs_[g], basem, maxm},
                                            {0.0, 0.0, 0.0, 0.0}}};
    double start_step = 0.0;
    for (size_t i = 0; i < phase_end_.size(); ++i) {
      const double end_step = phase_end_[i];
      if (step <= end_step || i + 1 == phase_end_.size()) {
        EMBER_CHECK(end_step != start_step, "OneCycleLR: phase ", i,
                    " of the cycle has no "
                    "steps (pct_start * total_steps is too small); give more total_steps or "
                    "another pct_start");
        const double pct = (step - start_step) / (end_step - start_step);
        lrs.push_back(anneal(ends[i].lr0, ends[i].lr1, pct));
        momenta.push_back(anneal(ends[i].m0, ends[i].m1, pct));
        break;
      }
      start_step = end_step;
    }
    EMBER_CHECK(lrs.back() >= 0.0, "OneCycleLR: the step past the end of the cycle (step() call ",
                total_steps_, ") gives parameter group ", g, " an lr of ", lrs.back(),
                ": linear annealing carries on below min_lr there, as in PyTorch 1.13, and ember "
                "refuses a negative lr; call step() at most total_steps - 1 times, or give one "
                "more total_steps");
  }
  // Set with the lrs, as PyTorch's get_lr does.
  if (cycle_momentum_) {
    for (size_t g = 0; g < momenta.size(); ++g) {
      const_cast<Optimizer&>(optimizer_).set_momentum(g, momenta[g]);
    }
  }
  return lrs;
}

// ---- ReduceLROnPlateau -----------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& o)
    : LRScheduler(optimizer, "ReduceLROnPlateau", /*record_initial_lr=*/false),
      factor_(o.factor),
      patience_(o.patience),
      threshold_(o.threshold),
      cooldown_(o.cooldown),
      eps_(o.eps) {
  EMBER_CHECK(o.mode == "min" || o.mode == "max",
              "ReduceLROnPlateau: mode must be \"min\" or \"max\", got \"", o.mode, "\"");
  EMBER_CHECK(o.threshold_mode == "rel" || o.threshold_mode == "abs",
              "ReduceLROnPlateau: threshold_mode must be \"rel\" or \"abs\", got \"",
              o.threshold_mode, "\"");
  mode_max_ = o.mode == "max";
  threshold_abs_ = o.threshold_mode == "abs";
  min_lrs_ = o.min_lrs.empty() ? std::vector<double>(optimizer.num_param_groups(), o.min_lr)
                               : per_group(o.min_lrs, "min_lr");
  best_ = mode_max_ ? -HUGE_VAL : HUGE_VAL;  // the worst value for the mode
  last_epoch_ = 0;
  check_settings();
}

void ReduceLROnPlateau::check_settings() const {
  EMBER_CHECK(factor_ >= 0.0 && factor_ < 1.0,
              "ReduceLROnPlateau: factor must be in [0, 1) (new lr = lr * factor), got ", factor_);
  EMBER_CHECK(patience_ >= 0, "ReduceLROnPlateau: patience must be >= 0, got ", patience_);
  EMBER_CHECK(cooldown_ >= 0 && cooldown_counter_ >= 0,
              "ReduceLROnPlateau: cooldown must be >= 0, got ", cooldown_);
  EMBER_CHECK(std::isfinite(threshold_) && threshold_ >= 0.0,
              "ReduceLROnPlateau: threshold must be >= 0, got ", threshold_);
  EMBER_CHECK(std::isfinite(eps_) && eps_ >= 0.0, "ReduceLROnPlateau: eps must be >= 0, got ",
              eps_);
  EMBER_CHECK(min_lrs_.size() == optimizer_.num_param_groups(),
              "ReduceLROnPlateau: ", min_lrs_.size(), " min_lrs for ",
              optimizer_.num_param_groups(), " parameter groups");
  for (double m : min_lrs_) {
    EMBER_CHECK(std::isfinite(m) && m >= 0.0, "ReduceLROnPlateau: min_lr must be >= 0, got ", m);
  }
}

void ReduceLROnPlateau::step() {
  throw ValueError("ReduceLROnPlateau steps on a metric: call step(metric) with the value it "
                   "watches (e.g. the validation loss), once per epoch");
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (!mode_max_) return threshold_abs_ ? a < best - threshold_ : a < best * (1.0 - threshold_);
  return threshold_abs_ ? a > best + threshold_ : a > best * (threshold_ + 1.0);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in the cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
      const double old_lr = optimizer_.lr(g);
      const double new_lr = std::max(old_lr * factor_, min_lrs_[g]);
      if (old_lr - new_lr > eps_) optimizer_.set_lr(g, new_lr);
    }
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_ = current_lrs();
}

// ---- SequentialLR and ChainedScheduler -------------------------------------------------------

namespace {
Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers,
                           const char* who) {
  EMBER_CHECK(!schedulers.empty(), who, ": got no schedulers");
  for (size_t i = 0; i < schedulers.size(); ++i) {
    EMBER_CHECK(schedulers[i] != nullptr, who, ": scheduler ", i, " is null");
  }
  return schedulers[0]->optimizer();
}

void check_members(const std::vector<std::shared_ptr<LRScheduler>>& schedulers,
                   const Optimizer& optimizer, const char* who, bool sequential) {
  for (size_t i = 0; i < schedulers.size(); ++i) {
    const LRScheduler& s = *schedulers[i];
    EMBER_CHECK(&s.optimizer() == &optimizer, who, ": scheduler ", i, " (", s.name(),
                ") belongs "
                "to another optimizer; every scheduler must be built on the same one");
    EMBER_CHECK(dynamic_cast<const ReduceLROnPlateau*>(&s) == nullptr, who, ": scheduler ", i,
                " is ReduceLROnPlateau, which steps on a metric; step it on its own");
    if (sequential) {
      EMBER_CHECK(dynamic_cast<const SequentialLR*>(&s) == nullptr &&
                      dynamic_cast<const ChainedScheduler*>(&s) == nullptr,
                  who, ": scheduler ", i, " is a ", s.name(),
                  "; SequentialLR runs plain "
                  "schedulers (put a ChainedScheduler around SequentialLRs instead)");
    }
  }
}
}  // namespace

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer, "SequentialLR", /*record_initial_lr=*/false),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  (void)first_optimizer(schedulers_, "SequentialLR");
  check_members(schedulers_, optimizer_, "SequentialLR", /*sequential=*/true);
  check_settings();
  last_epoch_ = 0;
  // Undo what the schedulers' own constructors did, then start the first one at epoch 0.
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
    optimizer_.set_lr(g, optimizer_.initial_lr(g).value_or(optimizer_.lr(g)));
  }
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::check_settings() const {
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: expected ",
              schedulers_.size() - 1, " milestones (one fewer than the ", schedulers_.size(),
              " schedulers), got ", milestones_.size());
  for (size_t i = 0; i < milestones_.size(); ++i) {
    EMBER_CHECK(milestones_[i] >= 1 && (i == 0 || milestones_[i] > milestones_[i - 1]),
                "SequentialLR: milestones must be increasing epochs >= 1, got ", milestones_[i],
                " at position ", i);
  }
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  try {
    if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
      s.step_to(0);
    } else {
      s.step();
    }
  } catch (...) {
    --last_epoch_;
    throw;
  }
  last_lr_ = s.get_last_lr();
}

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(first_optimizer(schedulers, "ChainedScheduler"), "ChainedScheduler",
                  /*record_initial_lr=*/false),
      schedulers_(std::move(schedulers)) {
  check_members(schedulers_, optimizer_, "ChainedScheduler", /*sequential=*/false);
  last_lr_ = current_lrs();
}

void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  last_lr_ = current_lrs();
}

}  // namespace ember::optim
