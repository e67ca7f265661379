// ember/optim/lr_scheduler.h — learning-rate schedules (torch.optim.lr_scheduler).
//
// A scheduler owns nothing: it sets its optimizer's lr. As in PyTorch, constructing one counts
// as epoch 0 (the optimizer keeps its lr, which becomes the schedule's base_lr), and each
// step() — called once per epoch, after the epoch's optimizer.step() calls — moves to the next
// epoch and sets the lr for it:
//
//   optim::SGD opt(model.parameters(), {0.1});
//   optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 90; ++epoch) {
//     train_one_epoch(model, opt);      // lr 0.1 for epochs 0-29, 0.01 for 30-59, ...
//     sched.step();
//   }
//
// The lr is computed from the epoch count with the schedule's closed form, so an lr set by hand
// with set_lr() lasts until the next scheduler step. The scheduler keeps a reference to the
// optimizer, which must outlive it.
#pragma once

#include <cstdint>

#include "optim/optimizer.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Next epoch: last_epoch() += 1, and the optimizer's lr set from the schedule.
  void step();
  double get_last_lr() const { return last_lr_; }  // the lr the last step (or the constructor) set
  int64_t last_epoch() const { return last_epoch_; }
  double base_lr() const { return base_lr_; }
  // The schedule itself: the lr at a given epoch (>= 0).
  virtual double lr_at(int64_t epoch) const = 0;

  // {"last_epoch": int64, "base_lr": float64}: where the schedule is (optim/state_dict.cpp).
  // Loading sets last_epoch and base_lr and recomputes get_last_lr(); the optimizer's own lr
  // comes back with the optimizer's state.
  NamedTensors state_dict() const;
  void load_state_dict(const NamedTensors& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Epoch 0. Derived constructors call it last (lr_at is virtual: the base constructor can't).
  void initial_step() { step(); }

  Optimizer& optimizer_;
  double base_lr_;
  int64_t last_epoch_ = -1;
  double last_lr_;
};

// lr = base_lr * gamma^floor(epoch / step_size): decay by gamma every step_size epochs.
class StepLR final : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2: half a cosine from
// base_lr down to eta_min over T_max epochs (SGDR without restarts). Past T_max the cosine
// carries on, climbing back to base_lr at 2 * T_max, as PyTorch's does.
class CosineAnnealingLR final : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);
  double lr_at(int64_t epoch) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

}  // namespace ember::optim
