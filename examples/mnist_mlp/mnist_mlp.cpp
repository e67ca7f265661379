// examples/mnist_mlp — seed 000 in C++: the fully connected MNIST classifier
// 784-512-256-128-64-10 with ReLU, SGD (lr 0.1, momentum 0.5), batch 64, 5 epochs,
// cross-entropy, inputs normalized with mean 0.1307 and std 0.3081.
//
// The printed lines follow the seed: "[epoch, batch] loss: x" every 300 batches (the seed divides
// the running loss by 300 even at batch 0, and so do we, so the numbers compare), then
// "Accuracy on test set: N %" after each epoch. ember adds the wall time per epoch and in total.
//
//   mnist_mlp [--data DIR] [--device cpu|cuda|cuda:N] [--epochs 5] [--batch-size 64] [--lr 0.1]
//             [--momentum 0.5] [--seed 0] [--threads N] [--cuda-graph]
//             [--save-dir DIR] [--save-every STEPS] [--keep-last 3] [--resume [PATH]]
//             [--log-dir DIR] [--log-every 1] [--nvtx] [--train-limit N] [--test-limit N]
//             [--distributed]
//
// With --cuda-graph (a GPU), the training step — forward, loss, backward, SGD step — is captured
// once in a CUDA graph (core/cuda_graph.h) after three eager warm-up steps, and every later full
// batch is copied into the graph's static input tensors and trained by one replay: one launch
// instead of a few dozen. The last, shorter batch of an epoch (60,000 = 937 x 64 + 32) has
// other shapes than the graph's, so it runs eagerly, as do the warm-up steps: the run trains on
// the same batches in the same order as without the flag, and ends with the same weights. The
// loss lines read a loss summed on the GPU, once per line, instead of one loss.item() per step.
//
// With --distributed, under `mpirun -np N mnist_mlp --distributed`, the N processes train one
// model with DistributedDataParallel (distributed/distributed_data_parallel.h): each takes its
// share of every epoch (data::DistributedSampler) in batches of --batch-size, so the global batch
// is N times that; rank 0 prints the lines, saves and logs. CPU ranks, or one GPU per rank.
//
// Checkpoints, the run log and the time breakdown are examples/common/run_tools.h's: a run
// killed at any point and started again with --resume ends with the same weights, bit for bit on
// the CPU, as a run never stopped (tests/e2e/kill_resume.cpp checks it).
//
// Without --data it trains on Fashion-MNIST from Debian's dataset-fashion-mnist package (same IDX
// format, same shapes). Point --data at a folder with the four MNIST files for the digits.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "examples/common/device.h"
#include "examples/common/distributed.h"
#include "examples/common/models.h"
#include "examples/common/run_tools.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

namespace {

// The seed's FullyNeuralNetwork, layer for layer (examples/common/models.h, shared with
// bench/bench_train).
using examples::mnist_mlp::FullyNeuralNetwork;

using examples::Phase;
using examples::seconds_since;

// One line, rewritten in place, while stdout is a terminal.
void progress(int epoch, int64_t done, int64_t total, double rate, double loss) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::printf("\r  epoch %d [%s%s] %lld/%lld  %.0f batches/s  loss %.3f ", epoch,
              std::string(static_cast<size_t>(filled), '#').c_str(),
              std::string(static_cast<size_t>(kWidth - filled), '.').c_str(),
              static_cast<long long>(done), static_cast<long long>(total), rate, loss);
  std::fflush(stdout);
}

void train(int epoch, nn::Layer& model, nn::CrossEntropyLoss& criterion,
           optim::Optimizer& optimizer, data::DataLoader& loader, Device device, bool tty,
           int log_interval, examples::RunTools& run, const optim::TrainingParts& parts,
           optim::Progress& at) {
  model.train();
  double running_loss = 0.0, bar_loss = 0.0;
  int64_t batch_idx = at.batch;  // not 0 when resuming in the middle of an epoch
  const int64_t total = loader.size();
  const auto start = std::chrono::steady_clock::now();
  bool first = true;
  run.timer.start_epoch();
  for (const data::Batch& batch : loader) {
    // From pinned memory (the loader's pin_memory on a GPU) these copies are asynchronous.
    const Tensor inputs = batch.data.to(device, /*non_blocking=*/true);
    const Tensor target = batch.target.to(device, /*non_blocking=*/true);
    run.timer.mark(Phase::Data);
    optimizer.zero_grad();
    Tensor loss;
    {
      const profile::Range range("forward");
      const Tensor outputs = model(inputs);
      loss = criterion(outputs, target);
    }
    run.timer.mark(Phase::Forward);
    {
      const profile::Range range("backward");
      loss.backward();
    }
    run.timer.mark(Phase::Backward);
    {
      const profile::Range range("optimizer");
      optimizer.step();
    }
    run.timer.mark(Phase::Optimizer);

    const double l = loss.item();
    run.after_step(parts, at, loader, loss, batch.target.size(0), optimizer.lr());
    running_loss += l;
    bar_loss = first ? l : 0.98 * bar_loss + 0.02 * l;
    first = false;
    if (batch_idx % log_interval == 0) {
      if (tty) std::printf("\r%90s\r", "");
      std::printf("[%d, %5lld] loss: %.3f\n", epoch, static_cast<long long>(batch_idx),
                  running_loss / log_interval);
      running_loss = 0.0;
    }
    ++batch_idx;
    if (tty && (batch_idx % 20 == 0 || batch_idx == total)) {
      progress(epoch, batch_idx, total, batch_idx / seconds_since(start), bar_loss);
    }
  }
  if (tty) std::printf("\r%90s\r", "");
}

// --cuda-graph: the training step as one CUDA graph (core/cuda_graph.h). The batch goes into
// static tensors whose addresses the graph recorded; the graph's loss lands in static_loss, and
// the graph adds it to `running` (float64, on the GPU), which the loss lines read.
struct GraphStep {
  static constexpr int kWarmup = 3;  // eager steps before the capture, as PyTorch's recipe asks
  int64_t batch_size = 0;
  Tensor static_x, static_y, static_loss, running;
  cuda::CUDAGraph graph;
  int eager_steps = 0;

  GraphStep(int64_t batch, Device device)
      : batch_size(batch),
        static_x(empty({batch, 1, 28, 28}, TensorOptions(kFloat32).device(device))),
        static_y(empty({batch}, TensorOptions(kInt64).device(device))),
        running(zeros({}, TensorOptions(kFloat64).device(device))) {}
};

// One eager step of the graph loop (a warm-up step, or an epoch's last, shorter batch); the loss
// is added to g.running, as the graph does.
Tensor eager_graph_step(GraphStep& g, nn::Layer& model, nn::CrossEntropyLoss& criterion,
                        optim::Optimizer& optimizer, const Tensor& inputs, const Tensor& target) {
  optimizer.zero_grad();
  Tensor loss = criterion(model(inputs), target);
  loss.backward();
  optimizer.step();
  g.running.add_(loss.detach());
  return loss;
}

// train() with --cuda-graph. Full batches are copied into the static tensors; the first
// kWarmup of them train eagerly, the next one is captured (the capture records the step
// without running it) and then replayed, as are all later ones. The last, shorter batch of an
// epoch runs eagerly: the graph's shapes are fixed. The timer sees the replay as one phase.
void train_graph(GraphStep& g, int epoch, nn::Layer& model, nn::CrossEntropyLoss& criterion,
                 optim::Optimizer& optimizer, data::DataLoader& loader, Device device, bool tty,
                 int log_interval, examples::RunTools& run, const optim::TrainingParts& parts,
                 optim::Progress& at) {
  model.train();
  double bar_loss = 0.0;
  int64_t batch_idx = at.batch;
  const int64_t total = loader.size();
  const auto start = std::chrono::steady_clock::now();
  bool first = true;
  g.running.zero_();  // the loss summed since the last line, per epoch as in train()
  run.timer.start_epoch();
  for (const data::Batch& batch : loader) {
    Tensor loss;
    if (batch.target.size(0) != g.batch_size) {
      const Tensor inputs = batch.data.to(device, /*non_blocking=*/true);
      const Tensor target = batch.target.to(device, /*non_blocking=*/true);
      run.timer.mark(Phase::Data);
      loss = eager_graph_step(g, model, criterion, optimizer, inputs, target);
    } else {
      // New data, same addresses (asynchronous: the loader's batches are pinned).
      g.static_x.copy_(batch.data, /*non_blocking=*/true);
      g.static_y.copy_(batch.target, /*non_blocking=*/true);
      run.timer.mark(Phase::Data);
      if (!g.graph.captured() && g.eager_steps < GraphStep::kWarmup) {
        ++g.eager_steps;
        loss = eager_graph_step(g, model, criterion, optimizer, g.static_x, g.static_y);
      } else {
        if (!g.graph.captured()) {
          optimizer.zero_grad();  // the captured backward writes fresh gradients, not +=
          cuda::capture(g.graph, [&] {
            g.static_loss = criterion(model(g.static_x), g.static_y);
            g.static_loss.backward();
            optimizer.step();
            g.running.add_(g.static_loss.detach());
          });
          if (tty) std::printf("\r%90s\r", "");
          std::printf("captured the training step in a CUDA graph: %lld kernels and copies, "
                      "replayed with one launch per step (%.1f MiB in the graph's memory pool)\n",
                      static_cast<long long>(g.graph.num_nodes()),
                      static_cast<double>(g.graph.pool_reserved()) / (1 << 20));
        }
        const profile::Range range("graph replay");
        g.graph.replay();
        loss = g.static_loss;
      }
    }
    run.timer.mark(Phase::Forward);  // the whole step
    run.timer.mark(Phase::Backward);
    run.timer.mark(Phase::Optimizer);

    run.after_step(parts, at, loader, loss, batch.target.size(0), optimizer.lr());
    if (batch_idx % log_interval == 0) {
      // Summed on the GPU in double, in the order train() sums on the host: the same number.
      const double running_loss = g.running.item();
      g.running.zero_();
      if (tty) std::printf("\r%90s\r", "");
      std::printf("[%d, %5lld] loss: %.3f\n", epoch, static_cast<long long>(batch_idx),
                  running_loss / log_interval);
    }
    ++batch_idx;
    if (tty && (batch_idx % 20 == 0 || batch_idx == total)) {
      const double l = loss.item();  // read only when the bar is drawn: a wait for the GPU
      bar_loss = first ? l : 0.9 * bar_loss + 0.1 * l;
      first = false;
      progress(epoch, batch_idx, total, batch_idx / seconds_since(start), bar_loss);
    }
  }
  if (tty) std::printf("\r%90s\r", "");
}

// The first `limit` samples of a dataset (all of them for limit <= 0): quick runs and tests.
data::TensorDataset first_samples(const data::TensorDataset& d, int64_t limit) {
  if (limit <= 0 || limit >= d.size()) return d;
  return data::TensorDataset(d.data().narrow(0, 0, limit).contiguous(),
                             d.targets().narrow(0, 0, limit).contiguous(), d.transform());
}

double test(FullyNeuralNetwork& model, data::DataLoader& loader, Device device) {
  model.eval();
  NoGradGuard no_grad;
  int64_t correct = 0, total = 0;
  for (const data::Batch& batch : loader) {
    const Tensor outputs = model(batch.data.to(device, /*non_blocking=*/true));
    const Tensor predicted = max(outputs, 1).indices.cpu();
    total += batch.target.size(0);
    correct += static_cast<int64_t>(predicted.eq(batch.target).to(kInt64).sum().item());
  }
  const double accuracy = 100.0 * static_cast<double>(correct) / static_cast<double>(total);
  std::printf("Accuracy on test set: %d %%\n", static_cast<int>(accuracy));
  return accuracy;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: seed 000's MNIST fully connected network (784-512-256-128-64-10)"};
  std::string data_dir = data::kFashionMnistDir;
  std::string device_name;
  int epochs = 5, threads = 0, log_interval = 300;
  int64_t batch_size = 64;
  double lr = 0.1, momentum = 0.5;
  uint64_t seed = 0;
  app.add_option("--data", data_dir,
                 "folder with the four IDX files (plain or .gz); default: Fashion-MNIST from "
                 "Debian's dataset-fashion-mnist");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: cuda when available)");
  app.add_option("--epochs", epochs, "passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", batch_size, "samples per batch")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "SGD learning rate")->check(CLI::NonNegativeNumber);
  app.add_option("--momentum", momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", seed, "seed for initialization and shuffling");
  app.add_option("--threads", threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--log-interval", log_interval, "batches between loss lines")->check(CLI::PositiveNumber);
  int64_t train_limit = 0, test_limit = 0;
  app.add_option("--train-limit", train_limit, "train on the first N samples only (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--test-limit", test_limit, "test on the first N samples only (0: all)")
      ->check(CLI::NonNegativeNumber);
  bool cuda_graph = false;
  app.add_flag("--cuda-graph", cuda_graph,
               "GPU: capture the training step in a CUDA graph after 3 eager warm-up steps and "
               "replay it for every full batch; an epoch's last, shorter batch runs eagerly "
               "(the same batches and weights as without the flag)");
  bool distributed = false;
  app.add_flag("--distributed", distributed,
               "train with DistributedDataParallel on the ranks of `mpirun -np N` (each rank "
               "takes --batch-size samples per step)");
  examples::RunFlags run_flags;
  examples::add_run_flags(app, run_flags, /*default_log_every=*/1);
  CLI11_PARSE(app, argc, argv);

  try {
    examples::Ranks ranks;
    if (distributed) {
      if (run_flags.resume_given())
        throw Error("--resume is not supported with --distributed yet: resume on one process");
      ranks = examples::Ranks::start(threads > 0);
      if (ranks.rank != 0) {  // rank 0 saves and logs
        run_flags.save_dir.clear();
        run_flags.log_dir.clear();
      }
    }
    if (threads > 0) set_num_threads(threads);
    // As the seed: CUDA when available, else the CPU — and say which.
    const Device device = ranks.device(examples::choose_device(device_name), device_name);
    examples::print_device(device, device_name);
    if (cuda_graph && !device.is_cuda()) {
      throw DeviceError("--cuda-graph needs a CUDA device (this run is on " + device.str() +
                        "): use --device cuda, or leave the flag out");
    }
    if (cuda_graph && distributed) {
      throw Error("--cuda-graph does not combine with --distributed (the gradients' all-reduce "
                  "runs on the host between backward and step): use one of the two");
    }
    if (device.is_cpu()) {
      std::printf("threads: %d, cpu kernels: %s\n", get_num_threads(), get_cpu_isa().c_str());
    }
    manual_seed(seed);

    const data::Transform transform =
        data::Compose({data::ToTensor(), data::Normalize(0.1307, 0.3081)});
    const auto load_start = std::chrono::steady_clock::now();
    data::MNIST train_files(data_dir, /*train=*/true, transform);
    data::MNIST test_files(data_dir, /*train=*/false, transform);
    std::printf("data: %s (%s)\n      %s (%.2f s)\n", data_dir.c_str(),
                train_files.summary().c_str(), test_files.summary().c_str(),
                seconds_since(load_start));
    const data::TensorDataset train_set = first_samples(train_files, train_limit);
    const data::TensorDataset test_set = first_samples(test_files, test_limit);
    if (train_limit > 0 || test_limit > 0) {
      std::printf("using the first %lld training and %lld test samples\n",
                  static_cast<long long>(train_set.size()), static_cast<long long>(test_set.size()));
    }
    data::DataLoaderOptions train_opts;
    train_opts.batch_size = batch_size;
    train_opts.shuffle = true;
    train_opts.seed = seed;
    ranks.share(train_opts);  // --distributed: this rank's share of each epoch
    train_opts.pin_memory = device.is_cuda();
    data::DataLoaderOptions test_opts;
    test_opts.batch_size = batch_size;
    test_opts.pin_memory = device.is_cuda();
    data::DataLoader train_loader(train_set, train_opts);
    data::DataLoader test_loader(test_set, test_opts);

    auto model_ptr = std::make_shared<FullyNeuralNetwork>();
    FullyNeuralNetwork& model = *model_ptr;
    model.to(device);  // moves the parameters in place, like the seed's model.cuda()
    const std::shared_ptr<nn::Layer> trained = ranks.wrap(model_ptr);  // DDP with --distributed
    nn::CrossEntropyLoss criterion;
    criterion.to(device);
    optim::SGDOptions sgd;
    sgd.lr = lr;
    sgd.momentum = momentum;
    optim::SGD optimizer(model.parameters(), sgd);
    std::printf("%s\n", model.str().c_str());
    ranks.print(batch_size);

    // What a checkpoint saves and restores: the model, SGD's momentum buffers, the loader's
    // place in its epoch (and, always, the random generator).
    examples::RunTools run("mnist_mlp", run_flags, device);
    const optim::TrainingParts parts{&model, &optimizer, nullptr,
                                     optim::loader_state(train_loader)};
    optim::Progress at = run.resume(parts);

    const bool tty = isatty(fileno(stdout)) != 0;
    std::unique_ptr<GraphStep> graph;
    if (cuda_graph) graph = std::make_unique<GraphStep>(batch_size, device);
    const auto total_start = std::chrono::steady_clock::now();
    for (int epoch = static_cast<int>(at.epoch); epoch < epochs; ++epoch) {
      const auto epoch_start = std::chrono::steady_clock::now();
      if (graph) {
        train_graph(*graph, epoch, *trained, criterion, optimizer, train_loader, device, tty,
                    log_interval, run, parts, at);
      } else {
        train(epoch, *trained, criterion, optimizer, train_loader, device, tty, log_interval, run,
              parts, at);
      }
      const double train_s = seconds_since(epoch_start);
      if (ranks.distributed()) {
        // Every rank trained its share: train_set.size() samples (plus padding) in all.
        std::printf("epoch %d: %.0f samples/s over %d ranks\n", epoch,
                    static_cast<double>(ranks.size * train_opts.sampler->length(train_set.size())) / train_s,
                    ranks.size);
      }
      const double accuracy = test(model, test_loader, device);
      std::printf("epoch %d: test accuracy %.2f %%, %.2f s training, %.2f s with the test pass\n",
                  epoch, accuracy, train_s, seconds_since(epoch_start));
      run.after_epoch(parts, at, accuracy / 100.0);
      std::fflush(stdout);
    }
    std::printf("total: %.2f s for %d epochs\n", seconds_since(total_start), epochs);
    run.finish(model);
  } catch (const Error& e) {
    std::fprintf(stderr, "mnist_mlp: %s\n", e.what());
    return 1;
  }
  return 0;
}
