// bench/bench_mnist_epoch — one training epoch of seed 000's MLP on the CPU, data in memory.
//
// The same loop as examples/mnist_mlp (784-512-256-128-64-10, ReLU, cross-entropy, SGD lr 0.1
// momentum 0.5, batch 64, shuffled), minus the file reading: the normalized training set is a
// float32 tensor in memory, and each batch is gathered from it by index. bench/pytorch/
// mnist_epoch.py runs the identical loop in PyTorch so the two can be timed side by side.
//
//   bench_mnist_epoch [--data DIR] [--threads 2] [--epochs 3] [--quick]
// Prints the time of every epoch and the median; --quick trains 100 batches only (a CI smoke run).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

int main(int argc, char** argv) {
  CLI::App app{"ember: one epoch of seed 000's MNIST MLP on the CPU (data in memory)"};
  std::string data_dir = data::kFashionMnistDir;
  int threads = 2, epochs = 3;
  bool quick = false;
  app.add_option("--data", data_dir, "folder with the MNIST-format IDX files");
  app.add_option("--threads", threads, "CPU threads")->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "epochs to time")->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "100 batches per epoch (smoke run)");
  CLI11_PARSE(app, argc, argv);

  try {
    set_num_threads(threads);
    manual_seed(0);
    const data::Transform transform =
        data::Compose({data::ToTensor(), data::Normalize(0.1307, 0.3081)});
    // Normalize the whole training set once: the timed loop only gathers batches.
    const data::MNIST raw(data_dir, /*train=*/true);
    const Tensor images = transform(raw.data()).contiguous();
    data::TensorDataset train_set(images, raw.targets());
    data::DataLoader loader(train_set, {64, /*shuffle=*/true, false, /*seed=*/0});

    auto model = std::make_shared<nn::Sequential>(
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 512),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(512, 256),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(256, 128),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(128, 64),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(64, 10));
    nn::CrossEntropyLoss criterion;
    optim::SGDOptions o;
    o.lr = 0.1;
    o.momentum = 0.5;
    optim::SGD optimizer(model->parameters(), o);

    std::printf("ember %s: seed 000 MLP, batch 64, %lld batches/epoch, %d threads\n",
                "bench_mnist_epoch", static_cast<long long>(quick ? 100 : loader.size()), threads);
    std::vector<double> times;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      int64_t n = 0;
      double last_loss = 0;
      for (const data::Batch& b : loader) {
        optimizer.zero_grad();
        Tensor loss = criterion((*model)(b.data), b.target);
        loss.backward();
        optimizer.step();
        if (++n == (quick ? 100 : loader.size())) {
          last_loss = loss.item();
          break;
        }
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      times.push_back(s);
      std::printf("epoch %d: %.3f s (%.1f batches/s), last loss %.3f\n", epoch, s, n / s, last_loss);
    }
    std::sort(times.begin(), times.end());
    std::printf("median epoch: %.3f s\n", times[times.size() / 2]);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_mnist_epoch: %s\n", e.what());
    return 1;
  }
  return 0;
}
