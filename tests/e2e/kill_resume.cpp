// Crash and resume, for real: examples/mnist_mlp is started as a separate process, killed with
// SIGKILL in the middle of an epoch — once between two checkpoints, once while a checkpoint is
// being written — and started again with --resume. Its final weights must equal, bit for bit,
// those of a run that was never interrupted.
//
// The kill points come from two test hooks (core/test_hooks.h), armed in the child through its
// environment: EMBER_TEST_PAUSE_AT_STEP=N makes the example stop after step N and wait
// (examples/common/run_tools.h); EMBER_TEST_SAVE_FAULT=pause@K makes the K-th atomic file write
// stop half-way through its temporary file and wait, and kill@K makes it SIGKILL itself there
// (core/serialize.h). The test then sends SIGKILL itself: nothing runs after it, exactly as after
// a crash or a power cut (minus the page cache). A build without test hooks skips these tests.
//
// The data is the first 1280 samples of Fashion-MNIST (Debian's dataset-fashion-mnist, which
// scripts/install-deps installs): 2 epochs of 20 steps, a checkpoint every 7 steps.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "core/test_hooks.h"
#include "data/data.h"
#include "test_files.h"

extern char** environ;

using namespace ember;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

#ifdef EMBER_MNIST_MLP
const char* const kProgram = EMBER_MNIST_MLP;
#else
const char* const kProgram = "";
#endif

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_kill_resume_") {}
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A running mnist_mlp, its stdout and stderr going to files in `dir`.
struct Process {
  pid_t pid = -1;
  std::string out, err;

  Process(const TempDir& dir, const std::string& tag, const std::vector<std::string>& args,
          const std::vector<std::string>& env_extra) {
    out = dir / (tag + ".out");
    err = dir / (tag + ".err");
    std::vector<std::string> argv_s = {kProgram};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) {
      const std::string v(*e);
      if (v.rfind("EMBER_TEST_", 0) != 0) env_s.push_back(v);
    }
    env_s.insert(env_s.end(), env_extra.begin(), env_extra.end());
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid, kProgram, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(rc == 0);
  }

  std::string output() const { return read_text(out) + read_text(err); }

  // Waits for the exit; returns the wait status.
  int wait() {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    pid = -1;
    return status;
  }

  // Waits until stderr contains `marker` (the seam paused the program), then SIGKILLs it.
  void kill_when(const std::string& marker) {
    const auto start = std::chrono::steady_clock::now();
    while (read_text(err).find(marker) == std::string::npos) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        FAIL("mnist_mlp ended before '" << marker << "':\n" << output());
      }
      if (std::chrono::steady_clock::now() - start > std::chrono::minutes(5)) {
        ::kill(pid, SIGKILL);
        wait();
        FAIL("no '" << marker << "' after 5 minutes:\n" << output());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE(::kill(pid, SIGKILL) == 0);
    const int status = wait();
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
  }

  ~Process() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
};

std::vector<std::string> common_args(const std::string& save_dir) {
  return {"--device", "cpu", "--threads", "1", "--epochs", "2", "--batch-size", "64",
          "--train-limit", "1280", "--test-limit", "500", "--log-interval", "1000",
          "--save-dir", save_dir, "--save-every", "7", "--keep-last", "2"};
}

void run_to_end(const TempDir& dir, const std::string& tag, std::vector<std::string> args) {
  Process p(dir, tag, args, {});
  const int status = p.wait();
  INFO(p.output());
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::vector<std::string> checkpoint_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Both folders' final weights hold the same tensors, bit for bit.
void require_same_weights(const std::string& a_dir, const std::string& b_dir) {
  const NamedTensors a = load(a_dir + "/model.safetensors");
  const NamedTensors b = load(b_dir + "/model.safetensors");
  REQUIRE(a.size() == 10);  // 5 layers, weight and bias
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    const Tensor x = a[i].second, y = b[i].second;
    REQUIRE(x.shape() == y.shape());
    CHECK(std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.numel()) * 4) == 0);
  }
}

bool skip_reason() {
  if (std::string(kProgram).empty() || !fs::exists(kProgram)) {
    std::cout << "SKIPPED: examples/mnist_mlp was not built (EMBER_BUILD_EXAMPLES=OFF)\n";
    return true;
  }
  if (!test_hooks::compiled()) {
    std::cout << "SKIPPED: this build has no test hooks to crash the run with "
                 "(EMBER_TEST_HOOKS=OFF)\n";
    return true;
  }
  if (!fs::exists(std::string(data::kFashionMnistDir))) {
    std::cout << "SKIPPED: no Fashion-MNIST at " << data::kFashionMnistDir
              << " (scripts/install-deps installs Debian's dataset-fashion-mnist)\n";
    return true;
  }
  return false;
}

}  // namespace

TEST_CASE("kill -9 mnist_mlp between checkpoints, resume: the same final weights", "[checkpoint][e2e][process]") {
  if (skip_reason()) return;
  TempDir dir;
  run_to_end(dir, "reference", common_args(dir / "reference"));

  const std::string run = dir / "killed";
  const std::string logs = dir / "logs";
  {
    // Step 17 is in the middle of epoch 0, three steps after the checkpoint of step 14.
    Process p(dir, "first", with(common_args(run), {"--log-dir", logs}),
              {"EMBER_TEST_PAUSE_AT_STEP=17"});
    p.kill_when("ember: pause at step: paused after step 17");
  }
  CHECK(checkpoint_names(run) == std::vector<std::string>{"checkpoint-000000007.safetensors",
                                                          "checkpoint-000000014.safetensors"});
  {
    Process p(dir, "resumed", with(common_args(run), {"--log-dir", logs, "--resume"}), {});
    const int status = p.wait();
    INFO(p.output());
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK_THAT(p.output(), Contains("(epoch 0, batch 14, step 14)"));
  }
  require_same_weights(dir / "reference", run);

  // The run log holds every step once: the steps 15-17 of the killed run were dropped and
  // logged again by the resumed one.
  std::vector<int64_t> steps;
  std::ifstream in(logs + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"kind\":\"train\"") == std::string::npos) continue;
    const size_t at = line.find("\"step\":");
    steps.push_back(std::atoll(line.c_str() + at + 7));
  }
  std::vector<int64_t> expected(40);
  for (int64_t i = 0; i < 40; ++i) expected[static_cast<size_t>(i)] = i + 1;
  CHECK(steps == expected);
}

TEST_CASE("kill -9 mnist_mlp while it writes a checkpoint, resume: the same final weights", "[checkpoint][e2e][process]") {
  if (skip_reason()) return;
  TempDir dir;
  run_to_end(dir, "reference", common_args(dir / "reference"));

  // The 4th atomic write is the checkpoint of step 28 (epoch 1, batch 8): stopped half-way.
  const std::string run = dir / "killed";
  {
    Process p(dir, "first", common_args(run), {"EMBER_TEST_SAVE_FAULT=pause@4"});
    p.kill_when("ember: save fault: paused writing");
  }
  const std::vector<std::string> left = checkpoint_names(run);
  REQUIRE(left.size() == 3);
  CHECK(left[0].rfind(".checkpoint-000000028.safetensors.tmp-", 0) == 0);  // the torn write
  CHECK(left[1] == "checkpoint-000000014.safetensors");  // the previous two are intact
  CHECK(left[2] == "checkpoint-000000021.safetensors");
  CHECK_THROWS_AS(load(run + "/" + left[0]), IOError);  // half a file: refused, not trusted
  {
    Process p(dir, "resumed", with(common_args(run), {"--resume"}), {});
    const int status = p.wait();
    INFO(p.output());
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK_THAT(p.output(), Contains("(epoch 1, batch 1, step 21)"));
  }
  require_same_weights(dir / "reference", run);
  for (const std::string& name : checkpoint_names(run)) {
    CHECK(name.find(".tmp-") == std::string::npos);  // the stale temporary file was removed
  }

  // The same with the writer killing itself at that point (no external kill): a second crash,
  // resumed from the first resume's checkpoints.
  const std::string run2 = dir / "self_killed";
  {
    Process p(dir, "self_kill", common_args(run2), {"EMBER_TEST_SAVE_FAULT=kill@2"});
    const int status = p.wait();
    INFO(p.output());
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
  }
  CHECK(fs::exists(run2 + "/checkpoint-000000007.safetensors"));
  run_to_end(dir, "self_kill_resumed", with(common_args(run2), {"--resume", run2}));
  require_same_weights(dir / "reference", run2);
}
