// bench/bench_emulator.cpp — how fast does the emulation build (-DEMBER_CUDA=EMULATE) run CUDA
// kernels on the CPU, and what do its checkers cost?
//
// The numbers say nothing about a GPU: the emulator runs every CUDA thread of every kernel as a
// fiber on the CPU (kernels/emulator/). They say how long the emulated test suite and an
// emulated training step take, and which checker is worth turning off when speed matters
// (EMBER_EMULATOR_CHECKS, docs/emulator.md).
//
// For each workload and each checker setting (none; the default memcheck + racecheck +
// synccheck; the default with globalrace; all of them) the table gives the median wall time of
// --runs runs after one warm-up, and a rate: elements/s for memory-bound kernels, GFLOP/s for
// matmul, ms per training step for seed 000's MLP (batch 64, 784-512-256-128-64-10, SGD with
// momentum).
//
//   bench_emulator [--runs 3] [--quick] [--json FILE]
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/harness.h"
#include "core/ember.h"
#include "examples/common/models.h"
#include "kernels/emulator/emulator.h"
#include "nn/nn.h"
#include "optim/optim.h"

namespace {

using namespace ember;
namespace bench = ember::bench;

struct Workload {
  std::string name;
  std::string unit;  // what `amount` counts, per run
  double amount;
  std::function<void()> run;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Speed of the CUDA emulator and of its checkers (emulation build only)"};
  int runs = 3;
  bool quick = false;
  std::string json;
  app.add_option("--runs", runs, "timed runs per cell (the median is reported)")->check(CLI::Range(1, 100));
  app.add_flag("--quick", quick, "smaller sizes");
  app.add_option("--json", json, "also write the table to this JSON file");
  CLI11_PARSE(app, argc, argv);

  if (!cuda::is_available()) {
    std::cout << "bench_emulator: no emulated device: " << cuda::unavailable_reason() << "\n";
    return 0;
  }
  const Device dev = Device::cuda(0);
  const int64_t n = quick ? (int64_t{1} << 20) : (int64_t{1} << 22);
  const int64_t gemm = quick ? 128 : 256;
  manual_seed(0);
  const Tensor a = rand({n}, TensorOptions(kFloat32).device(dev));
  const Tensor b = rand({n}, TensorOptions(kFloat32).device(dev));
  const Tensor m = rand({2048, n / 2048}, TensorOptions(kFloat32).device(dev));
  const Tensor logits = rand({n / 1000, 1000}, TensorOptions(kFloat32).device(dev));
  const Tensor ga = rand({gemm, gemm}, TensorOptions(kFloat32).device(dev));
  const Tensor gb = rand({gemm, gemm}, TensorOptions(kFloat32).device(dev));
  const Tensor x64 = rand({64, 784}, TensorOptions(kFloat32).device(dev));
  const Tensor w1 = rand({784, 512}, TensorOptions(kFloat32).device(dev));

  auto model = std::make_shared<examples::mnist_mlp::FullyNeuralNetwork>();
  model->to(dev);
  nn::CrossEntropyLoss criterion;
  optim::SGD opt(model->parameters(), {/*lr=*/0.01, /*momentum=*/0.5});
  const Tensor xb = randn({64, 1, 28, 28}, TensorOptions(kFloat32).device(dev));
  const Tensor yb = randint(0, 10, {64}, TensorOptions(kInt64).device(dev));

  const std::vector<Workload> work = {
      {"add, contiguous float32", "Melem/s", static_cast<double>(n), [&] { (void)(a + b); }},
      {"copy of a transposed view", "Melem/s", static_cast<double>(n), [&] { (void)m.t().contiguous(); }},
      {"sum of all elements", "Melem/s", static_cast<double>(n), [&] { (void)a.sum(); }},
      {"softmax over rows of 1000", "Melem/s", static_cast<double>(n / 1000 * 1000),
       [&] { (void)softmax(logits, -1); }},
      {"matmul " + std::to_string(gemm) + "^3 float32", "GFLOP/s", 2.0 * gemm * gemm * gemm,
       [&] { (void)ga.matmul(gb); }},
      {"matmul 64x784 @ 784x512 (mnist_mlp's first layer)", "GFLOP/s", 2.0 * 64 * 784 * 512,
       [&] { (void)x64.matmul(w1); }},
      {"mnist_mlp training step, batch 64", "ms/step", 1.0, [&] {
         opt.zero_grad();
         Tensor loss = criterion(model->forward(xb), yb);
         loss.backward();
         opt.step();
       }},
  };

  struct Setting {
    const char* name;
    unsigned mask;
  };
  const std::vector<Setting> settings = {
      {"none", 0u},
      {"default", emu::kMemcheck | emu::kRacecheck | emu::kSynccheck},
      {"default+globalrace", emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kGlobalRace},
      {"all", emu::kAllChecks},
  };
  std::vector<std::string> columns = {"workload", "unit"};
  for (const Setting& s : settings) {
    columns.push_back(std::string(s.name) + " ms");
    columns.push_back(std::string(s.name) + " rate");
  }
  bench::Table table("CUDA emulator: median wall time and rate per checker setting", columns);
  const unsigned saved = emu::checks();
  for (const Workload& w : work) {
    std::vector<std::string> row = {w.name, w.unit};
    for (const Setting& s : settings) {
      emu::set_checks(s.mask);
      const bench::Timing t = bench::time_host(
          [&] {
            w.run();
            cuda::synchronize();
          },
          1, runs);
      double rate = 0;
      if (w.unit == "Melem/s") rate = w.amount / (t.median_ms * 1e-3) / 1e6;
      else if (w.unit == "GFLOP/s") rate = w.amount / (t.median_ms * 1e-3) / 1e9;
      else rate = t.median_ms;
      row.push_back(bench::fmt(t.median_ms, 2));
      row.push_back(bench::fmt(rate, w.unit == "GFLOP/s" ? 3 : 1));
    }
    table.add_row(row);
  }
  emu::set_checks(saved);
  const std::string header = bench::cpu_header(emu::worker_threads()) +
                             "\nemulator: " + std::to_string(emu::worker_threads()) +
                             " CPU threads, kernels instrumented: " +
                             (emu::instrumented() ? "yes" : "no");
  std::cout << header << "\n\n";
  table.print(std::cout);
  const emu::Stats st = emu::stats();
  std::cout << "\n" << st.launches << " launches, " << st.blocks << " blocks, " << st.threads
            << " CUDA threads, " << st.switches << " switches between CUDA threads in all\n";
  if (!json.empty()) bench::write_json(json, "bench_emulator", header, {table});
  return 0;
}
