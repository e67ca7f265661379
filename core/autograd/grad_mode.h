// ember/core/autograd/grad_mode.h — turning the tape on and off.
#pragma once

namespace ember {

// Is the tape recording? True by default; per thread, like torch.is_grad_enabled().
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// RAII form of `with torch.no_grad():` — ops inside build no graph. Evaluation loops and
// optimizer steps run under it.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// The opposite, for a region that must record even inside a NoGradGuard.
class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace ember
