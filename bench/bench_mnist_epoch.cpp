// bench/bench_mnist_epoch — one training epoch of seed 000's MLP on the CPU, data in memory.
//
// The same loop as examples/mnist_mlp (784-512-256-128-64-10, ReLU, cross-entropy, SGD lr 0.1
// momentum 0.5, batch 64, shuffled), minus the file reading: the normalized training set is a
// float32 tensor in memory, and each batch is gathered from it by index. bench/pytorch/
// mnist_epoch.py runs the identical loop in PyTorch so the two can be timed side by side.
//
//   bench_mnist_epoch [--data DIR] [--threads 2] [--epochs 3] [--quick] [--probe]
// Prints the time of every epoch and the median; --quick trains 100 batches only (a CI smoke run).
//
// --probe asks whether the machine itself is steady enough to judge an epoch-to-epoch spread
// (issue 28 wants ten epochs within 10%). After every epoch it times two fixed amounts of work on
// one thread that depend on nothing in ember: a chain of dependent integer multiply-adds (the
// core's clock) and passes over two 64 MiB buffers (the caches and memory that the epoch, with
// its 188 MB of images, shares with whatever else runs on the host). Both are sized once, after the
// first epoch, to last about as long as it did (a spread shrinks as the window it is measured over
// grows), then kept fixed. If the probes spread as much as the epochs, the machine is the limit,
// not the training loop.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Work that takes the same number of instructions every time, so that its time measures the
// machine. `rounds` == 0 means "size it": run until `target_s` has passed and keep the count.
struct MachineProbe {
  std::vector<float> a, b;
  int64_t alu_rounds = 0, memory_rounds = 0;
  volatile uint64_t sink = 0;  // the results go here, so the compiler keeps the work

  MachineProbe() : a(size_t{16} << 20, 0.5f), b(size_t{16} << 20, 1.0f) {}

  // 2^20 dependent 64-bit multiply-adds: each waits for the one before, so the time is the
  // core's latency times its clock; no memory is touched.
  void alu_round() {
    uint64_t x = sink + 1;
    for (int i = 0; i < (1 << 20); ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
  }
  // One pass over two 64 MiB buffers, b = b * 0.999 + a: 128 MiB read, 64 MiB written.
  void memory_round() {
    float* bp = b.data();
    const float* ap = a.data();
    for (size_t i = 0; i < b.size(); ++i) bp[i] = bp[i] * 0.999f + ap[i];
    sink = static_cast<uint64_t>(bp[b.size() / 2]);
  }

  template <typename Round>
  double run(int64_t& rounds, double target_s, Round round) {
    const auto t0 = std::chrono::steady_clock::now();
    if (rounds == 0) {
      while (seconds_since(t0) < target_s) {
        round();
        ++rounds;
      }
    } else {
      for (int64_t r = 0; r < rounds; ++r) round();
    }
    return seconds_since(t0);
  }
  double alu(double target_s) {
    return run(alu_rounds, target_s, [this] { alu_round(); });
  }
  double memory(double target_s) {
    return run(memory_rounds, target_s, [this] { memory_round(); });
  }
};

// Slowest over fastest, minus one, in percent.
double spread_percent(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return 100.0 * (*hi / *lo - 1.0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: one epoch of seed 000's MNIST MLP on the CPU (data in memory)"};
  std::string data_dir = data::kFashionMnistDir;
  int threads = 2, epochs = 3;
  bool quick = false, probe = false;
  app.add_option("--data", data_dir, "folder with the MNIST-format IDX files");
  app.add_option("--threads", threads, "CPU threads")->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "epochs to time")->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "100 batches per epoch (smoke run)");
  app.add_flag("--probe", probe,
               "after each epoch, time fixed work on one thread (a multiply-add chain, passes over "
               "64 MiB buffers) to show how steady the machine itself is");
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
    std::vector<double> times, alu_times, memory_times;
    MachineProbe machine;
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
      const double s = seconds_since(t0);
      times.push_back(s);
      std::printf("epoch %d: %.3f s (%.1f batches/s), last loss %.3f", epoch, s, n / s, last_loss);
      if (probe) {
        alu_times.push_back(machine.alu(s));
        memory_times.push_back(machine.memory(s));
        std::printf("; probe: multiply-add chain %.3f s, memory passes %.3f s", alu_times.back(),
                    memory_times.back());
      }
      std::printf("\n");
    }
    if (epochs > 1) {
      std::printf("spread (slowest / fastest - 1): epochs %.1f %%", spread_percent(times));
      // The first probe sized the work, so only the later ones are compared.
      if (probe && epochs > 2) {
        const std::vector<double> alu(alu_times.begin() + 1, alu_times.end());
        const std::vector<double> memory(memory_times.begin() + 1, memory_times.end());
        std::printf("; probes after epochs 1-%d: multiply-add chain %.1f %%, memory passes %.1f %%",
                    epochs - 1, spread_percent(alu), spread_percent(memory));
      }
      std::printf("\n");
    }
    std::sort(times.begin(), times.end());
    std::printf("median epoch: %.3f s\n", times[times.size() / 2]);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_mnist_epoch: %s\n", e.what());
    return 1;
  }
  return 0;
}
