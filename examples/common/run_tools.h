// examples/common/run_tools.h — what the three training examples share besides their models:
// checkpoints (--save-dir, --save-every, --keep-last, --resume), a run log (--log-dir:
// metrics.jsonl, then loss.png and accuracy.png drawn by scripts/plot-run), the per-step time
// breakdown (data, forward, backward, optimizer) printed at the end, and NVTX ranges (--nvtx).
// add_run_flags also arms the library's test hooks from EMBER_TEST_* (core/test_hooks.h): that is
// how the e2e tests, which run an example as a child process, crash it where they need to.
//
// Header-only and not part of the library, like models.h. A training loop uses it so:
//
//   examples::RunTools run("mnist_mlp", flags, device);
//   optim::Progress at = run.resume(parts);            // epoch 0, batch 0 without --resume
//   for (int epoch = at.epoch; epoch < epochs; ++epoch) {
//     run.timer.start_epoch();
//     for (const data::Batch& batch : loader) {
//       ... copy the batch to the device ...              run.timer.mark(Phase::Data);
//       ... forward, loss ...                             run.timer.mark(Phase::Forward);
//       loss.backward();                                  run.timer.mark(Phase::Backward);
//       optimizer.step();                                 run.timer.mark(Phase::Optimizer);
//       run.after_step(parts, at, loader, loss, batch_size, lr);
//     }
//     ... test ...
//     run.after_epoch(parts, at, accuracy);
//   }
//   run.finish(model);
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "core/test_hooks.h"
#include "data/data.h"
#include "nn/nn.h"
#include "optim/checkpoint.h"
#include "optim/optim.h"

namespace examples {

namespace fs = std::filesystem;

// ---- flags -------------------------------------------------------------------------------------

struct RunFlags {
  std::string save_dir;
  int64_t save_every = 0;  // steps between checkpoints; 0: at the end of every epoch
  int keep_last = 3;
  std::string resume;      // a checkpoint file, or a folder (its newest checkpoint)
  CLI::Option* resume_option = nullptr;
  bool resume_given() const { return resume_option && resume_option->count() > 0; }
  std::string log_dir;
  int64_t log_every = 1;
  bool nvtx = false;
};

inline void add_run_flags(CLI::App& app, RunFlags& f, int64_t default_log_every) {
  // Every example calls this first, before it touches data or checkpoints, so the hooks are armed
  // before any fault point can be reached. A build without test hooks ignores the variables.
  ember::test_hooks::arm_from_environment();
  f.log_every = default_log_every;
  app.add_option("--save-dir", f.save_dir,
                 "write checkpoints (model, optimizer, RNG, data position) to this folder, and "
                 "the final weights to DIR/model.safetensors");
  app.add_option("--save-every", f.save_every,
                 "optimizer steps between checkpoints (default: one at the end of every epoch)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--keep-last", f.keep_last, "checkpoints to keep in --save-dir")
      ->check(CLI::PositiveNumber);
  f.resume_option =
      app.add_option("--resume", f.resume,
                     "go on from a checkpoint: a file, or a folder's newest (no value: --save-dir's)")
          ->expected(0, 1);
  app.add_option("--log-dir", f.log_dir,
                 "write metrics.jsonl here, and at the end loss.png and accuracy.png");
  app.add_option("--log-every", f.log_every, "optimizer steps per metrics.jsonl line")
      ->default_val(default_log_every)
      ->check(CLI::PositiveNumber);
  app.add_flag("--nvtx", f.nvtx, "NVTX ranges for Nsight Systems (CUDA builds)");
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// ---- the step timer ------------------------------------------------------------------------------

enum class Phase { Data, Forward, Backward, Optimizer };
inline constexpr int kPhases = 4;
inline const char* phase_name(int p) {
  static const char* names[] = {"data", "forward", "backward", "optimizer"};
  return names[p];
}

// Wall time of each phase of a step. On the CPU every step is timed. On a GPU, kernels run
// after the host has moved on, so a phase's host time says little: one step in `gpu_sample`
// is timed with a cuda::synchronize() at each phase boundary (synchronising every step would
// slow the run down), and the means are over those steps.
class StepTimer {
 public:
  explicit StepTimer(ember::Device device, int64_t gpu_sample = 20)
      : gpu_(device.is_cuda()), sample_(gpu_ ? gpu_sample : 1) {}

  // Call before the loop over the loader: the first batch's wait counts as data time.
  void start_epoch() { begin_step(); }

  // The end of `phase` of the current step.
  void mark(Phase phase) {
    if (!timed_) return;
    if (gpu_) ember::cuda::synchronize();
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    step_ms_[static_cast<int>(phase)] = ms;
    last_ = now;
    if (phase == Phase::Optimizer) {
      for (int p = 0; p < kPhases; ++p) {
        total_ms_[p] += step_ms_[p];
        interval_ms_[p] += step_ms_[p];
      }
      ++timed_steps_;
      ++interval_steps_;
    }
  }

  // Call at the end of a step's bookkeeping (logging, checkpoints): the next data phase starts.
  void begin_step() {
    ++step_;
    // On a GPU, not the first step of a run: it pays for allocations the later ones reuse.
    timed_ = step_ % sample_ == sample_ - 1;
    if (timed_ && gpu_) ember::cuda::synchronize();
    last_ = std::chrono::steady_clock::now();
  }

  // Mean ms per timed step since the last call (for the log), and over the whole run.
  std::vector<double> take_interval_means() {
    std::vector<double> out(kPhases, 0.0);
    for (int p = 0; p < kPhases; ++p) {
      out[static_cast<size_t>(p)] = interval_steps_ ? interval_ms_[p] / interval_steps_ : 0.0;
      interval_ms_[p] = 0.0;
    }
    interval_steps_ = 0;
    return out;
  }

  // "time per step (mean of 938 steps): data 0.21 ms, forward 0.93 ms, ..."
  std::string summary() const {
    if (timed_steps_ == 0) {
      return "time per step: no step was timed (on a GPU one step in " +
             std::to_string(sample_) + " is)";
    }
    char buf[512];
    double total = 0;
    for (double v : total_ms_) total += v;
    const double n = static_cast<double>(timed_steps_);
    std::snprintf(buf, sizeof(buf),
                  "time per step (mean of %lld %ssteps): data %.3f ms, forward %.3f ms, "
                  "backward %.3f ms, optimizer %.3f ms; total %.3f ms",
                  static_cast<long long>(timed_steps_), gpu_ ? "sampled, device-synchronised " : "",
                  total_ms_[0] / n, total_ms_[1] / n, total_ms_[2] / n, total_ms_[3] / n, total / n);
    return buf;
  }

 private:
  bool gpu_;
  int64_t sample_;
  int64_t step_ = -1;
  bool timed_ = false;
  std::chrono::steady_clock::time_point last_;
  double step_ms_[kPhases] = {};
  double total_ms_[kPhases] = {};
  double interval_ms_[kPhases] = {};
  int64_t timed_steps_ = 0, interval_steps_ = 0;
};

// ---- the metrics log -----------------------------------------------------------------------------

// Resident memory of this process in MB (Linux), for the log of CPU runs.
inline double host_rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long long pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0.0;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

// A number as JSON: finite values with 6 significant digits, else null.
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

// The "step" of a metrics.jsonl line, or -1.
inline int64_t line_step(const std::string& line) {
  const size_t at = line.find("\"step\":");
  if (at == std::string::npos) return -1;
  return std::atoll(line.c_str() + at + 7);
}

// ---- everything together -------------------------------------------------------------------------

class RunTools {
 public:
  RunTools(std::string example, const RunFlags& flags, ember::Device device)
      : timer(device), example_(std::move(example)), flags_(flags), device_(device) {
    if (flags_.nvtx) {
      ember::profile::set_nvtx_enabled(true);
      if (!ember::profile::nvtx_compiled()) {
        std::printf("nvtx: this build has no NVTX ranges (a CPU-only or emulated build); "
                    "--nvtx does nothing\n");
      }
    }
    if (!flags_.save_dir.empty()) checkpoints_.emplace(flags_.save_dir, flags_.keep_last);
    if (flags_.resume_given() && flags_.resume.empty() && !checkpoints_) {
      throw ember::ValueError("--resume without a path needs --save-dir (the folder to resume "
                              "from); or give it a checkpoint file or folder");
    }
  }

  StepTimer timer;

  // Restores the run from --resume (or returns epoch 0, batch 0). A --resume folder without a
  // checkpoint starts from the beginning and says so, so that a restart loop can always pass it.
  ember::optim::Progress resume(const ember::optim::TrainingParts& parts) {
    ember::optim::Progress at;
    if (flags_.resume_given()) {
      std::string path = flags_.resume.empty() ? flags_.save_dir : flags_.resume;
      std::vector<std::string> older;  // to name in the error if the newest cannot be read
      if (fs::is_directory(path)) {
        older = ember::optim::CheckpointDir(path, flags_.keep_last).list();
        if (older.empty()) {
          std::printf("resume: no checkpoint in %s yet; starting from the beginning\n",
                      path.c_str());
          path.clear();
        } else {
          path = older.back();
          older.pop_back();
        }
      }
      if (!path.empty()) {
        const auto start = std::chrono::steady_clock::now();
        try {
          at = ember::optim::load_checkpoint(path, parts);
        } catch (const ember::IOError& e) {
          if (older.empty()) throw;
          throw ember::IOError(std::string(e.what()) + "\nAn older checkpoint may be intact: "
                               "resume from it with --resume " + older.back());
        }
        std::printf("resume: %s (epoch %lld, batch %lld, step %lld) in %.1f ms\n", path.c_str(),
                    static_cast<long long>(at.epoch), static_cast<long long>(at.batch),
                    static_cast<long long>(at.step), 1e3 * seconds_since(start));
      }
    }
    open_log(at.step);
    return at;
  }

  // After each optimizer step: counts it, logs it, and checkpoints with --save-every.
  // `loss` is this step's loss as a tensor (read only when a log line is due).
  void after_step(const ember::optim::TrainingParts& parts, ember::optim::Progress& at,
                  const ember::data::DataLoader& loader, const ember::Tensor& loss,
                  int64_t examples, double lr) {
    ++at.step;
    at.batch = loader.batch_index() + 1;
    if (log_) {
      if (!interval_loss_.defined()) interval_loss_ = ember::zeros({}, loss.device());
      interval_loss_.add_(loss.detach());
      interval_examples_ += examples;
      ++interval_steps_;
      if (at.step % flags_.log_every == 0) write_step_line(at, lr);
    }
    if (checkpoints_ && flags_.save_every > 0 && at.step % flags_.save_every == 0) {
      save_checkpoint(parts, at);
    }
    const int64_t pause_at = ember::test_hooks::pause_at_step();  // 0 unless a test armed it
    if (pause_at > 0 && at.step == pause_at) pause_for_test(at);
    timer.begin_step();
  }

  // After an epoch's training and test pass: `at` moves to the next epoch's first batch, the
  // accuracy (a fraction, or < 0 for none) is logged, and without --save-every a checkpoint is
  // written.
  void after_epoch(const ember::optim::TrainingParts& parts, ember::optim::Progress& at,
                   double accuracy, double test_loss = NAN) {
    const int64_t finished = at.epoch;
    at.epoch += 1;
    at.batch = 0;
    if (log_ && accuracy >= 0) {
      log_ << "{\"kind\":\"test\",\"step\":" << at.step << ",\"epoch\":" << finished
           << ",\"accuracy\":" << json_number(accuracy) << ",\"loss\":" << json_number(test_loss)
           << "}\n";
      log_.flush();
    }
    if (checkpoints_ && flags_.save_every == 0) save_checkpoint(parts, at);
    timer.begin_step();
  }

  // The end of the run: final weights, the checkpoint cost, the time breakdown, the plots.
  void finish(const ember::nn::Module& model) {
    if (checkpoints_) {
      const std::string weights = (fs::path(flags_.save_dir) / "model.safetensors").string();
      ember::save(model.state_dict(), weights, {{"example", example_}});
      std::printf("weights: %s (load in PyTorch with safetensors.torch.load_file)\n",
                  weights.c_str());
      if (saves_ > 0) {
        std::printf("checkpoints: %lld written to %s, %.2f MB each, %.1f ms each on average "
                    "(%.1f ms the slowest)\n",
                    static_cast<long long>(saves_), flags_.save_dir.c_str(), last_mb_,
                    save_ms_ / static_cast<double>(saves_), max_save_ms_);
      }
    }
    std::printf("%s\n", timer.summary().c_str());
    if (log_) {
      log_.close();
      draw_plots();
    }
    std::fflush(stdout);
  }

 private:
  void open_log(int64_t resumed_step) {
    if (flags_.log_dir.empty()) return;
    std::error_code ec;
    fs::create_directories(flags_.log_dir, ec);
    const std::string path = (fs::path(flags_.log_dir) / "metrics.jsonl").string();
    // A resumed run drops the lines the interrupted run wrote after its checkpoint: they are
    // trained again and logged again.
    std::vector<std::string> kept;
    if (resumed_step > 0) {
      std::ifstream in(path);
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line_step(line) <= resumed_step) kept.push_back(line);
      }
      ember::write_file_atomically(path, [&](ember::FileSink& out) {
        for (const std::string& line : kept) {
          out.write(line.data(), line.size());
          out.write("\n", 1);
        }
      });
    }
    log_.open(path, resumed_step > 0 ? std::ios::app : std::ios::trunc);
    if (!log_) throw ember::IOError("cannot write " + path);
    if (resumed_step == 0) {
      log_ << "{\"kind\":\"run\",\"step\":0,\"example\":" << json_string(example_)
           << ",\"device\":" << json_string(device_.str()) << "}\n";
    }
    log_path_ = path;
    interval_start_ = std::chrono::steady_clock::now();
  }

  void write_step_line(const ember::optim::Progress& at, double lr) {
    const double loss = interval_loss_.item() / static_cast<double>(interval_steps_);
    const double secs = interval_start_ ? seconds_since(*interval_start_) : NAN;
    const std::vector<double> ms = timer.take_interval_means();
    log_ << "{\"kind\":\"train\",\"step\":" << at.step << ",\"epoch\":" << at.epoch
         << ",\"batch\":" << at.batch << ",\"loss\":" << json_number(loss)
         << ",\"lr\":" << json_number(lr)
         << ",\"examples_per_s\":" << json_number(static_cast<double>(interval_examples_) / secs);
    for (int p = 0; p < kPhases; ++p) {
      log_ << ",\"" << phase_name(p) << "_ms\":" << json_number(ms[static_cast<size_t>(p)]);
    }
    log_ << ",\"device_memory_mb\":"
         << (device_.is_cuda() ? json_number(static_cast<double>(ember::cuda::memory_allocated(
                                                 device_.index)) / 1e6)
                               : std::string("null"))
         << ",\"host_rss_mb\":" << json_number(host_rss_mb()) << "}\n";
    log_.flush();
    interval_loss_.zero_();
    interval_examples_ = 0;
    interval_steps_ = 0;
    interval_start_ = std::chrono::steady_clock::now();
  }

  void save_checkpoint(const ember::optim::TrainingParts& parts, const ember::optim::Progress& at) {
    const auto start = std::chrono::steady_clock::now();
    const std::string path = checkpoints_->save(parts, at, {{"example", example_}});
    const double ms = 1e3 * seconds_since(start);
    save_ms_ += ms;
    max_save_ms_ = std::max(max_save_ms_, ms);
    ++saves_;
    std::error_code ec;
    last_mb_ = static_cast<double>(fs::file_size(path, ec)) / 1e6;
  }

  // The pause-at-step test hook (core/test_hooks.h): stop after step N (its checkpoint written,
  // if one was due), say so on stderr and wait to be killed — tests/e2e/kill_resume.cpp's "crash
  // between checkpoints".
  [[noreturn]] void pause_for_test(const ember::optim::Progress& at) {
    ember::test_hooks::stop(ember::test_hooks::Action::Pause,
                            "pause at step: paused after step " + std::to_string(at.step) +
                                " (epoch " + std::to_string(at.epoch) + ", batch " +
                                std::to_string(at.batch) + ")");
  }

  void draw_plots() {
    const std::string script = std::string(EMBER_SOURCE_DIR) + "/scripts/plot-run";
    const std::string command = "scripts/plot-run " + flags_.log_dir;
    std::fflush(stdout);
    if (std::system("command -v gnuplot > /dev/null 2>&1") != 0 || !fs::exists(script)) {
      std::printf("plots: gnuplot is not installed; install it (apt-get install gnuplot-nox) and "
                  "draw loss.png and accuracy.png with: %s\n", command.c_str());
      return;
    }
    const std::string run = "\"" + script + "\" \"" + flags_.log_dir + "\"";
    std::fflush(stdout);  // our lines first, then the script's
    if (std::system(run.c_str()) != 0) {
      std::printf("plots: drawing failed; try again with: %s\n", command.c_str());
    }
  }

  std::string example_;
  RunFlags flags_;
  ember::Device device_;
  std::optional<ember::optim::CheckpointDir> checkpoints_;
  std::ofstream log_;
  std::string log_path_;
  ember::Tensor interval_loss_;
  int64_t interval_examples_ = 0, interval_steps_ = 0;
  std::optional<std::chrono::steady_clock::time_point> interval_start_;
  int64_t saves_ = 0;
  double save_ms_ = 0, max_save_ms_ = 0, last_mb_ = 0;
};

}  // namespace examples
