// examples/mnist_mlp — seed 000 in C++: the fully connected MNIST classifier
// 784-512-256-128-64-10 with ReLU, SGD (lr 0.1, momentum 0.5), batch 64, 5 epochs,
// cross-entropy, inputs normalized with mean 0.1307 and std 0.3081.
//
// The printed lines follow the seed: "[epoch, batch] loss: x" every 300 batches (the seed divides
// the running loss by 300 even at batch 0, and so do we, so the numbers compare), then
// "Accuracy on test set: N %" after each epoch. ember adds the wall time per epoch and in total.
//
//   mnist_mlp [--data DIR] [--device cpu|cuda|cuda:N] [--epochs 5] [--batch-size 64] [--lr 0.1]
//             [--momentum 0.5] [--seed 0] [--threads N]
//
// Without --data it trains on Fashion-MNIST from Debian's dataset-fashion-mnist package (same IDX
// format, same shapes). Point --data at a folder with the four MNIST files for the digits.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "examples/common/device.h"
#include "examples/common/models.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

namespace {

// The seed's FullyNeuralNetwork, layer for layer (examples/common/models.h, shared with
// bench/bench_train).
using examples::mnist_mlp::FullyNeuralNetwork;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

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

void train(int epoch, FullyNeuralNetwork& model, nn::CrossEntropyLoss& criterion,
           optim::Optimizer& optimizer, data::DataLoader& loader, Device device, bool tty,
           int log_interval) {
  model.train();
  double running_loss = 0.0, bar_loss = 0.0;
  int64_t batch_idx = 0;
  const int64_t total = loader.size();
  const auto start = std::chrono::steady_clock::now();
  for (const data::Batch& batch : loader) {
    // From pinned memory (the loader's pin_memory on a GPU) these copies are asynchronous.
    const Tensor inputs = batch.data.to(device, /*non_blocking=*/true);
    const Tensor target = batch.target.to(device, /*non_blocking=*/true);
    optimizer.zero_grad();
    const Tensor outputs = model(inputs);
    const Tensor loss = criterion(outputs, target);
    loss.backward();
    optimizer.step();

    const double l = loss.item();
    running_loss += l;
    bar_loss = batch_idx == 0 ? l : 0.98 * bar_loss + 0.02 * l;
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
  CLI11_PARSE(app, argc, argv);

  try {
    if (threads > 0) set_num_threads(threads);
    // As the seed: CUDA when available, else the CPU — and say which.
    const Device device = examples::choose_device(device_name);
    examples::print_device(device, device_name);
    if (device.is_cpu()) std::printf("threads: %d\n", get_num_threads());
    manual_seed(seed);

    const data::Transform transform =
        data::Compose({data::ToTensor(), data::Normalize(0.1307, 0.3081)});
    const auto load_start = std::chrono::steady_clock::now();
    data::MNIST train_set(data_dir, /*train=*/true, transform);
    data::MNIST test_set(data_dir, /*train=*/false, transform);
    std::printf("data: %s (%s)\n      %s (%.2f s)\n", data_dir.c_str(), train_set.summary().c_str(),
                test_set.summary().c_str(), seconds_since(load_start));
    data::DataLoaderOptions train_opts;
    train_opts.batch_size = batch_size;
    train_opts.shuffle = true;
    train_opts.seed = seed;
    train_opts.pin_memory = device.is_cuda();
    data::DataLoaderOptions test_opts;
    test_opts.batch_size = batch_size;
    test_opts.pin_memory = device.is_cuda();
    data::DataLoader train_loader(train_set, train_opts);
    data::DataLoader test_loader(test_set, test_opts);

    FullyNeuralNetwork model;
    model.to(device);  // moves the parameters in place, like the seed's model.cuda()
    nn::CrossEntropyLoss criterion;
    criterion.to(device);
    optim::SGDOptions sgd;
    sgd.lr = lr;
    sgd.momentum = momentum;
    optim::SGD optimizer(model.parameters(), sgd);
    std::printf("%s\n", model.str().c_str());

    const bool tty = isatty(fileno(stdout)) != 0;
    const auto total_start = std::chrono::steady_clock::now();
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const auto epoch_start = std::chrono::steady_clock::now();
      train(epoch, model, criterion, optimizer, train_loader, device, tty, log_interval);
      const double train_s = seconds_since(epoch_start);
      const double accuracy = test(model, test_loader, device);
      std::printf("epoch %d: test accuracy %.2f %%, %.2f s training, %.2f s with the test pass\n",
                  epoch, accuracy, train_s, seconds_since(epoch_start));
      std::fflush(stdout);
    }
    std::printf("total: %.2f s for %d epochs\n", seconds_since(total_start), epochs);
  } catch (const Error& e) {
    std::fprintf(stderr, "mnist_mlp: %s\n", e.what());
    return 1;
  }
  return 0;
}
