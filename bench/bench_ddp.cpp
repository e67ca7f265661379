// bench/bench_ddp — DistributedDataParallel training steps: steps/s and samples/s on however many
// ranks mpirun started, and how much of the gradient all_reduce backward hides.
//
//   mpirun -np 1 build/bench/bench_ddp            # the baseline: one rank
//   mpirun -np 2 build/bench/bench_ddp            # two ranks (as root, OpenMPI also wants
//                                                 # --allow-run-as-root; more ranks than cores:
//                                                 # --oversubscribe)
//
// The model is seed 000's MNIST MLP (examples/common/models.h, 2.2 MB of gradients per step), on
// synthetic batches of --batch-size per rank (the global batch grows with the ranks: weak
// scaling, as DDP is used). Each configuration runs twice:
//   overlap off: every bucket's all_reduce starts after the last gradient, so the time backward
//                then waits is the whole communication time of a step;
//   overlap on:  (DDP's default) each bucket starts as soon as its gradients are in; the time
//                backward still waits at its end is the communication it did not hide.
// hidden share = 1 - (wait with overlap) / (wait without): the part of the all_reduce time that
// ran behind the rest of backward. Rank 0 prints one line per mode.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "distributed/distributed.h"
#include "examples/common/models.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

namespace {

struct Result {
  double steps_per_s = 0;
  double wait_ms_per_step = 0;  // backward blocked on all_reduce, per step
  double step_ms = 0;
};

Result run(const std::shared_ptr<distributed::ProcessGroup>& g, bool overlap, int warmup, int steps, int64_t batch,
           double bucket_mb) {
  distributed::ProcessGroup& group = *g;
  manual_seed(1);
  auto net = std::make_shared<examples::mnist_mlp::FullyNeuralNetwork>();
  nn::DistributedDataParallelOptions o;
  o.overlap = overlap;
  o.bucket_cap_mb = bucket_mb;
  nn::DistributedDataParallel model(net, g, o);
  optim::SGDOptions so;
  so.lr = 0.01;
  so.momentum = 0.5;
  optim::SGD opt(model.parameters(), so);
  nn::CrossEntropyLoss criterion;
  manual_seed(100 + static_cast<uint64_t>(group.rank()));
  const Tensor x = randn({batch, 784});
  const Tensor y = (rand({batch}) * 9.99).to(kInt64);
  auto step = [&] {
    opt.zero_grad();
    criterion(model(x), y).backward();
    opt.step();
  };
  for (int i = 0; i < warmup; ++i) step();
  group.barrier();
  model.reset_comm_stats();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  group.barrier();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Result r;
  r.steps_per_s = steps / s;
  r.step_ms = 1e3 * s / steps;
  r.wait_ms_per_step = 1e3 * model.comm_stats().wait_s / steps;
  // The slowest rank's wait is the one that counts.
  Tensor w = from_vector<double>({r.wait_ms_per_step}, {1}, kFloat64);
  group.all_reduce(w, distributed::ReduceOp::Max);
  r.wait_ms_per_step = w.item();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: DistributedDataParallel steps/s and the all_reduce time hidden behind backward"};
  int steps = 200, warmup = 20, threads = 1;
  int64_t batch = 64;
  double bucket_mb = 25;
  app.add_option("--steps", steps, "timed steps per mode")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--batch-size", batch, "samples per rank and step")->check(CLI::PositiveNumber);
  app.add_option("--bucket-mb", bucket_mb, "DDP bucket size in MB (the first bucket is 1 MB)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "CPU threads per rank")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    set_num_threads(threads);
    auto group = distributed::init_process_group();
    std::vector<Result> results;
    for (bool overlap : {false, true}) results.push_back(run(group, overlap, warmup, steps, batch, bucket_mb));
    if (group->rank() == 0) {
      std::printf("bench_ddp: MNIST MLP (784-512-256-128-64-10), %d rank(s) x batch %lld, %d thread(s) "
                  "per rank, %d steps after %d warm-up, engine %s\n",
                  group->size(), static_cast<long long>(batch), threads, steps, warmup,
                  group->backend_name(Device::cpu()).c_str());
      std::printf("%-12s %10s %12s %10s %22s\n", "overlap", "steps/s", "samples/s", "ms/step",
                  "all_reduce wait ms/step");
      for (size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        std::printf("%-12s %10.1f %12.0f %10.2f %22.3f\n", i == 0 ? "off" : "on", r.steps_per_s,
                    r.steps_per_s * static_cast<double>(batch * group->size()), r.step_ms,
                    r.wait_ms_per_step);
      }
      const double off = results[0].wait_ms_per_step, on = results[1].wait_ms_per_step;
      if (group->size() > 1 && off > 0) {
        std::printf("all_reduce time hidden behind backward: %.0f %% (waited %.3f ms/step with "
                    "overlap, %.3f ms/step without)\n",
                    100.0 * std::max(0.0, 1.0 - on / off), on, off);
      }
    }
    distributed::destroy_process_group();
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_ddp: %s\n", e.what());
    return 1;
  }
  return 0;
}
