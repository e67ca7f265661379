// ember/core/test_hooks.h — the faults that tests make happen inside the library, all in one place.
//
// Three fault points exist, each for one end-to-end test of what survives a crash or a full disk:
//
//   save fault     write_file_atomically (core/serialize.h), the checkpoint writer: the K-th
//                  atomic write after arming stops half-way through its temporary file
//                  (tests/e2e/kill_resume.cpp);
//   cache fault    ImageFolder's cache writer (data/image_folder.cpp): every cache write stops
//                  half-way through its pixels, or fails as on a full disk (tests/e2e/faults.cpp);
//   pause at step  the examples' training loop (examples/common/run_tools.h) stops after step N
//                  (tests/e2e/kill_resume.cpp).
//
// A test, or an example program a test starts, arms them with the arm_* functions; the library's
// fault points ask the query functions. The hooks exist only in builds configured with the CMake
// option EMBER_TEST_HOOKS (ON when the tests are built, OFF otherwise). Without it every arm_*
// call is ignored, every query answers "no fault", and nothing reads the environment: a release
// library has no test behaviour to trigger.
//
// The e2e tests run an example as a child process, so they cannot call arm_* in it: they set
// EMBER_TEST_* variables in the child's environment instead, and the example calls
// arm_from_environment() once at start. That function is the only place ember reads them.
#pragma once

#include <cstdint>
#include <string>

namespace ember::test_hooks {

// Whether this build has the hooks (EMBER_TEST_HOOKS). Tests of the faults skip without them.
bool compiled();

enum class Action {
  None,
  Kill,     // SIGKILL the process at the fault point: a crash, nothing runs after it
  Pause,    // print "ember: <what>: paused ..." to stderr and wait for a signal (a test kills it)
  NoSpace,  // cache fault only: the write fails with ENOSPC, as on a full disk
};

// Save fault: the k-th call of write_file_atomically after this one (k >= 1) stops half-way
// through its temporary file, after fsyncing what it wrote, and does `action` (Kill or Pause).
// Action::None disarms it.
void arm_save_fault(Action action, int64_t k);
// For write_file_atomically, once per write: what this write must do (None but for the armed one).
Action next_save_fault();

// Cache fault: every ImageFolder cache write stops half-way through its pixels and does `action`
// (Kill, Pause or NoSpace) until disarmed with Action::None.
void arm_cache_fault(Action action);
Action cache_fault();

// Pause at step: the examples' training loop stops after optimizer step `step` (its checkpoint
// written, if one was due) and waits to be killed. 0 disarms it.
void arm_pause_at_step(int64_t step);
int64_t pause_at_step();

// Where a Kill or Pause fault lands: SIGKILLs the process, or prints "ember: <what>" to stderr and
// waits forever for a signal. The caller has already put its half-written file on disk.
[[noreturn]] void stop(Action action, const std::string& what);

// Arms the hooks from the environment of this process, for the tests that start an example:
//   EMBER_TEST_SAVE_FAULT=kill@K | pause@K   arm_save_fault(Kill | Pause, K)
//   EMBER_TEST_CACHE_FAULT=kill | pause | enospc   arm_cache_fault(Kill | Pause | NoSpace)
//   EMBER_TEST_PAUSE_AT_STEP=N               arm_pause_at_step(N)
// A value it cannot read is ignored with one line on stderr. Does nothing without EMBER_TEST_HOOKS.
void arm_from_environment();

}  // namespace ember::test_hooks
