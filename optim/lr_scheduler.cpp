#include "optim/lr_scheduler.h"

#include <cmath>

#include "kernels/base/error.h"

namespace ember::optim {

LRScheduler::LRScheduler(Optimizer& optimizer)
    : optimizer_(optimizer), base_lr_(optimizer.lr()), last_lr_(optimizer.lr()) {}

void LRScheduler::step() {
  ++last_epoch_;
  last_lr_ = lr_at(last_epoch_);
  optimizer_.set_lr(last_lr_);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size >= 1, "StepLR: step_size must be >= 1 (epochs between decays), got ",
              step_size);
  EMBER_CHECK(std::isfinite(gamma) && gamma >= 0.0, "StepLR: gamma must be >= 0, got ", gamma);
  initial_step();
}

double StepLR::lr_at(int64_t epoch) const {
  EMBER_CHECK(epoch >= 0, "StepLR: epoch must be >= 0, got ", epoch);
  return base_lr_ * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max >= 1, "CosineAnnealingLR: T_max must be >= 1 (epochs to anneal over), got ",
              T_max);
  EMBER_CHECK(std::isfinite(eta_min) && eta_min >= 0.0,
              "CosineAnnealingLR: eta_min must be >= 0, got ", eta_min);
  initial_step();
}

double CosineAnnealingLR::lr_at(int64_t epoch) const {
  EMBER_CHECK(epoch >= 0, "CosineAnnealingLR: epoch must be >= 0, got ", epoch);
  const double pi = std::acos(-1.0);
  const double angle = pi * static_cast<double>(epoch) / static_cast<double>(t_max_);
  return eta_min_ + (base_lr_ - eta_min_) * (1.0 + std::cos(angle)) / 2.0;
}

}  // namespace ember::optim
