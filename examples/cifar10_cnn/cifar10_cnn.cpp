// examples/cifar10_cnn — seed 001 in C++: the CIFAR-10 classifier of PyTorch's "Training a
// classifier" tutorial (conv 3->6 5x5, 2x2 max-pool, conv 6->16 5x5, pool, fc 400->120->84->10),
// cross-entropy, SGD lr 0.001 momentum 0.9, batch 4, 2 epochs, images normalized to [-1, 1]
// with mean 0.5 and std 0.5 per channel.
//
// The printed lines follow the seed: "[1,  2000] loss: 2.196" every 2000 mini-batches (the
// running loss divided by 2000), "Finished Training, cost 188.4 seconds", the ground truth and
// the predictions for the first four test images, then "Accuracy of the network on the 10000
// test images: 54 %". ember adds the time of each epoch.
//
//   cifar10_cnn [--data DIR] [--device cpu|cuda|cuda:N] [--epochs 2] [--batch-size 4]
//               [--lr 0.001] [--momentum 0.9] [--seed 0] [--threads N] [--log-interval 2000]
//               [--save-dir DIR] [--save-every STEPS] [--keep-last 3] [--resume [PATH]]
//               [--log-dir DIR] [--log-every 20] [--nvtx] [--data-parallel]
//
// --data-parallel is the tutorial's `net = nn.DataParallel(net)`: every batch is split over all
// visible GPUs, one host thread each (nn/data_parallel.h); the gradients end on the one model.
//
// Checkpoints (model, SGD's momentum, the loader's position, the generator), the run log with its
// plots and the per-step time breakdown: examples/common/run_tools.h. With --log-dir the test
// accuracy is measured after every epoch too, for accuracy.png.
//
// --data is the folder with the binary batches (data_batch_1.bin ... test_batch.bin) or the one
// holding cifar-10-batches-bin/; by default $EMBER_DATA/cifar-10-batches-bin, or
// ./cifar-10-batches-bin without EMBER_DATA.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "examples/common/device.h"
#include "examples/common/models.h"
#include "examples/common/run_tools.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

namespace {

// The seed's Net, layer for layer (examples/common/models.h, shared with bench/bench_train).
using examples::cifar10_cnn::Net;

using examples::Phase;
using examples::seconds_since;

// One line, rewritten in place, while stdout is a terminal.
void progress(int epoch, int64_t done, int64_t total, double rate) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::printf("\r  epoch %d [%s%s] %lld/%lld  %.0f batches/s ", epoch,
              std::string(static_cast<size_t>(filled), '#').c_str(),
              std::string(static_cast<size_t>(kWidth - filled), '.').c_str(),
              static_cast<long long>(done), static_cast<long long>(total), rate);
  std::fflush(stdout);
}

void train(int epoch, nn::Layer& net, nn::CrossEntropyLoss& criterion, optim::Optimizer& optimizer,
           data::DataLoader& loader, Device device, bool tty, int log_interval,
           examples::RunTools& run, const optim::TrainingParts& parts, optim::Progress& at) {
  net.train();
  const int64_t total = loader.size();
  const auto start = std::chrono::steady_clock::now();
  // The seed adds loss.item() every step. Summing on the device and reading the sum every
  // log_interval steps prints the same numbers without making the host wait for the GPU after
  // each of the 12,500 tiny steps.
  Tensor running_loss = zeros({}, device);
  int64_t i = at.batch;  // not 0 when resuming in the middle of an epoch
  run.timer.start_epoch();
  for (const data::Batch& batch : loader) {
    const Tensor inputs = batch.data.to(device, /*non_blocking=*/true);
    const Tensor labels = batch.target.to(device, /*non_blocking=*/true);
    run.timer.mark(Phase::Data);

    optimizer.zero_grad();
    Tensor loss;
    {
      const profile::Range range("forward");
      const Tensor outputs = net(inputs);
      loss = criterion(outputs, labels);
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

    running_loss.add_(loss.detach());
    run.after_step(parts, at, loader, loss, batch.target.size(0), optimizer.lr());
    if (i % log_interval == log_interval - 1) {  // print every log_interval mini-batches
      if (tty) std::printf("\r%90s\r", "");
      std::printf("[%d, %5lld] loss: %.3f\n", epoch + 1, static_cast<long long>(i + 1),
                  running_loss.item() / log_interval);
      std::fflush(stdout);
      running_loss.zero_();
    }
    ++i;
    if (tty && (i % 200 == 0 || i == total)) {
      progress(epoch + 1, i, total, static_cast<double>(i) / seconds_since(start));
    }
  }
  if (tty) std::printf("\r%90s\r", "");
}

// "GroundTruth:    cat  ship  ship plane": the tutorial's ' '.join('%5s' % classes[j] ...).
std::string class_names(const Tensor& labels, int64_t n) {
  std::string s;
  const auto& classes = data::CIFAR10::classes();
  for (int64_t j = 0; j < n && j < labels.size(0); ++j) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%5s", j ? " " : "",
                  classes[static_cast<size_t>(labels[j].item())].c_str());
    s += buf;
  }
  return s;
}

void test(Net& net, data::DataLoader& loader, Device device) {
  net.eval();
  NoGradGuard no_grad;
  int64_t correct = 0, total = 0;
  bool first = true;
  for (const data::Batch& batch : loader) {
    const Tensor outputs = net(batch.data.to(device, /*non_blocking=*/true));
    const Tensor predicted = max(outputs, 1).indices.cpu();  // _, predicted = torch.max(outputs, 1)
    if (first) {
      std::printf("GroundTruth:  %s\n", class_names(batch.target, 4).c_str());
      std::printf("Predicted:  %s\n", class_names(predicted, 4).c_str());
      first = false;
    }
    total += batch.target.size(0);
    correct += static_cast<int64_t>(predicted.eq(batch.target).to(kInt64).sum().item());
  }
  std::printf("Accuracy of the network on the %lld test images: %d %%\n",
              static_cast<long long>(total),
              total > 0 ? static_cast<int>(100.0 * static_cast<double>(correct) / total) : 0);
}

// The fraction of `loader`'s images classified right, without printing (the run log's
// accuracy.png).
double accuracy_of(Net& net, data::DataLoader& loader, Device device) {
  net.eval();
  NoGradGuard no_grad;
  int64_t correct = 0, total = 0;
  for (const data::Batch& batch : loader) {
    const Tensor predicted = max(net(batch.data.to(device, true)), 1).indices.cpu();
    total += batch.target.size(0);
    correct += static_cast<int64_t>(predicted.eq(batch.target).to(kInt64).sum().item());
  }
  return total > 0 ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

std::string default_data_dir() {
  const char* root = std::getenv("EMBER_DATA");
  return root && *root ? (std::filesystem::path(root) / "cifar-10-batches-bin").string()
                       : "cifar-10-batches-bin";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: seed 001's CIFAR-10 CNN (conv 6-16, fc 120-84-10)"};
  std::string data_dir = default_data_dir();
  std::string device_name;
  int epochs = 2, threads = 0, log_interval = 2000;
  int64_t batch_size = 4;
  double lr = 0.001, momentum = 0.9;
  uint64_t seed = 0;
  app.add_option("--data", data_dir,
                 "folder with CIFAR-10's binary batches (data_batch_1.bin ... test_batch.bin); "
                 "default: $EMBER_DATA/cifar-10-batches-bin, else ./cifar-10-batches-bin");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: cuda when available)");
  app.add_option("--epochs", epochs, "passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", batch_size, "images per batch")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "SGD learning rate")->check(CLI::NonNegativeNumber);
  app.add_option("--momentum", momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", seed, "seed for initialization and shuffling");
  app.add_option("--threads", threads, "CPU threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-interval", log_interval, "mini-batches between loss lines")
      ->check(CLI::PositiveNumber);
  bool data_parallel = false;
  app.add_flag("--data-parallel", data_parallel,
               "split each batch over all visible GPUs (nn::DataParallel, as the tutorial's "
               "nn.DataParallel(net))");
  examples::RunFlags run_flags;
  examples::add_run_flags(app, run_flags, /*default_log_every=*/20);
  CLI11_PARSE(app, argc, argv);

  if (!std::filesystem::exists(data_dir)) {
    std::fprintf(stderr, "cifar10_cnn: no data at '%s'.\n\n%s\n\nThen run: cifar10_cnn --data "
                 "path/to/cifar-10-batches-bin (or set EMBER_DATA to the folder that holds it).\n",
                 data_dir.c_str(), data::cifar10_download_hint().c_str());
    return 2;
  }

  try {
    if (threads > 0) set_num_threads(threads);
    const Device device = examples::choose_device(device_name, "cuda:0");
    // An unusable --device fails here, with the core's reason, not after the data is loaded.
    (void)zeros({1}, device);
    examples::print_device(device, device_name);
    if (device.is_cpu()) {
      std::printf("threads: %d, cpu kernels: %s\n", get_num_threads(), get_cpu_isa().c_str());
    }
    manual_seed(seed);

    // transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5),
    // (0.5, 0.5, 0.5))]), applied to each batch on the loader's background thread.
    const data::Transform transform = data::Compose(
        {data::ToTensor(), data::Normalize({0.5, 0.5, 0.5}, {0.5, 0.5, 0.5})});
    const auto load_start = std::chrono::steady_clock::now();
    data::CIFAR10 trainset(data_dir, /*train=*/true, transform);
    data::CIFAR10 testset(data_dir, /*train=*/false, transform);
    std::printf("data: %s\n      %s (%.2f s)\n", trainset.summary().c_str(),
                testset.summary().c_str(), seconds_since(load_start));
    data::DataLoaderOptions train_opts;
    train_opts.batch_size = batch_size;
    train_opts.shuffle = true;
    train_opts.seed = seed;
    train_opts.pin_memory = device.is_cuda();
    data::DataLoaderOptions test_opts;
    test_opts.batch_size = 1000;  // the tutorial's 4 gives the same counts; larger is faster
    test_opts.pin_memory = device.is_cuda();
    data::DataLoader trainloader(trainset, train_opts);
    data::DataLoader testloader(testset, test_opts);

    const auto net_ptr = std::make_shared<Net>();
    Net& net = *net_ptr;
    net.to(device);
    std::printf("%s\n", net.str().c_str());
    // What trains: the net, or with --data-parallel the net split over every visible GPU.
    std::shared_ptr<nn::Layer> trained = net_ptr;
    if (data_parallel) {
      if (!device.is_cuda() || device.index > 0)
        throw Error("--data-parallel splits batches over the GPUs from cuda:0, but the device is " +
                    device.str() + (device.is_cuda() ? ": drop --device" : ": it needs a GPU"));
      auto dp = std::make_shared<nn::DataParallel<Net>>(net_ptr);
      std::printf("DataParallel over %zu device(s)\n", dp->device_ids().size());
      trained = dp;
    }
    nn::CrossEntropyLoss criterion;
    optim::SGDOptions sgd;
    sgd.lr = lr;
    sgd.momentum = momentum;
    optim::SGD optimizer(net.parameters(), sgd);

    examples::RunTools run("cifar10_cnn", run_flags, device);
    const optim::TrainingParts parts{&net, &optimizer, nullptr, optim::loader_state(trainloader)};
    optim::Progress at = run.resume(parts);

    const bool tty = isatty(fileno(stdout)) != 0;
    const auto start = std::chrono::steady_clock::now();
    // loop over the dataset multiple times
    for (int epoch = static_cast<int>(at.epoch); epoch < epochs; ++epoch) {
      const auto epoch_start = std::chrono::steady_clock::now();
      train(epoch, *trained, criterion, optimizer, trainloader, device, tty, log_interval, run,
            parts, at);
      if (device.is_cuda()) cuda::synchronize();
      std::printf("  epoch %d: %.2f s\n", epoch + 1, seconds_since(epoch_start));
      double accuracy = -1.0;  // measured every epoch only for the run log's accuracy.png
      if (!run_flags.log_dir.empty()) {
        accuracy = accuracy_of(net, testloader, device);
        std::printf("  epoch %d: test accuracy %.2f %%\n", epoch + 1, 100.0 * accuracy);
      }
      run.after_epoch(parts, at, accuracy);
      std::fflush(stdout);
    }
    if (device.is_cuda()) cuda::synchronize();
    std::printf("Finished Training, cost %.1f seconds\n", seconds_since(start));
    test(net, testloader, device);
    run.finish(net);
  } catch (const IOError& e) {
    // Files that are there but wrong (a size that is not 10000 records, the Python version):
    // the message names the file and ends with data::cifar10_download_hint().
    std::fprintf(stderr, "cifar10_cnn: %s\n", e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "cifar10_cnn: %s\n", e.what());
    return 1;
  }
  return 0;
}
