// ember/core/test_hooks.cpp — see core/test_hooks.h. The only file that knows whether the hooks
// are compiled in (EMBER_TEST_HOOKS, set by CMake on the ember target) and the only one that reads
// the EMBER_TEST_* variables.
#include "core/test_hooks.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#ifndef EMBER_TEST_HOOKS
#define EMBER_TEST_HOOKS 0
#endif

namespace ember::test_hooks {

#if EMBER_TEST_HOOKS

namespace {

// Atomics: a hook may be armed on one thread and reached on another (ImageFolder writes its cache
// from the thread that built it, a DataLoader worker may save).
std::atomic<Action> g_save_action{Action::None};
std::atomic<int64_t> g_save_countdown{0};  // writes left until the armed one
std::atomic<Action> g_cache_action{Action::None};
std::atomic<int64_t> g_pause_at_step{0};

}  // namespace

bool compiled() { return true; }

void arm_save_fault(Action action, int64_t k) {
  g_save_countdown = action == Action::None ? 0 : k;
  g_save_action = action;
}

Action next_save_fault() {
  const Action action = g_save_action.load();
  if (action == Action::None) return Action::None;
  // Exactly one write sees the count reach 0; later writes go below 0 and do nothing.
  return --g_save_countdown == 0 ? action : Action::None;
}

void arm_cache_fault(Action action) { g_cache_action = action; }
Action cache_fault() { return g_cache_action.load(); }

void arm_pause_at_step(int64_t step) { g_pause_at_step = step > 0 ? step : 0; }
int64_t pause_at_step() { return g_pause_at_step.load(); }

void stop(Action action, const std::string& what) {
  if (action == Action::Kill) ::raise(SIGKILL);
  std::fprintf(stderr, "ember: %s\n", what.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  for (;;) ::pause();
}

void arm_from_environment() {
  auto get = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char* v = get("EMBER_TEST_SAVE_FAULT")) {
    const std::string s(v);
    const size_t at = s.find('@');
    const std::string what = s.substr(0, at);
    const int64_t k = at == std::string::npos ? 0 : std::atoll(s.c_str() + at + 1);
    const Action action = what == "kill"    ? Action::Kill
                          : what == "pause" ? Action::Pause
                                            : Action::None;
    if (action == Action::None || k < 1) {
      std::fprintf(stderr,
                   "ember: ignoring EMBER_TEST_SAVE_FAULT=%s (expected kill@K or pause@K "
                   "with K >= 1)\n",
                   v);
    } else {
      arm_save_fault(action, k);
    }
  }
  if (const char* v = get("EMBER_TEST_CACHE_FAULT")) {
    const std::string s(v);
    const Action action = s == "kill"     ? Action::Kill
                          : s == "pause"  ? Action::Pause
                          : s == "enospc" ? Action::NoSpace
                                          : Action::None;
    if (action == Action::None) {
      std::fprintf(stderr,
                   "ember: ignoring EMBER_TEST_CACHE_FAULT=%s (expected kill, pause or "
                   "enospc)\n",
                   v);
    } else {
      arm_cache_fault(action);
    }
  }
  if (const char* v = get("EMBER_TEST_PAUSE_AT_STEP")) {
    const int64_t step = std::atoll(v);
    if (step < 1) {
      std::fprintf(stderr, "ember: ignoring EMBER_TEST_PAUSE_AT_STEP=%s (expected a step >= 1)\n",
                   v);
    } else {
      arm_pause_at_step(step);
    }
  }
}

#else  // no hooks: nothing is armed, nothing fires, nothing is read from the environment

bool compiled() { return false; }
void arm_save_fault(Action, int64_t) {}
Action next_save_fault() { return Action::None; }
void arm_cache_fault(Action) {}
Action cache_fault() { return Action::None; }
void arm_pause_at_step(int64_t) {}
int64_t pause_at_step() { return 0; }
void stop(Action, const std::string&) { std::abort(); }  // unreachable: no fault is ever armed
void arm_from_environment() {}

#endif

}  // namespace ember::test_hooks
