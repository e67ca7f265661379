// examples/cats_vs_dogs — seed 002 in C++: Kaggle's cats-vs-dogs photos as 50x50 grayscale
// images, a three-layer CNN (conv 1->32->64->128, 5x5, ReLU, 2x2 max-pool each; fc 512->512;
// fc 512->2; softmax), MSE against one-hot labels, Adam lr 1e-3, batch 100, 5 epochs, 10% of the
// images held out for validation.
//
// The printed lines follow the seed: the per-class counts and the number of images, the model,
// "Epoch: 0. Loss: 0.2506680488586426" after each epoch (the loss of the epoch's last batch,
// printed as Python prints a float), then "Accuracy:  0.71" on the validation set (rounded to 3
// digits, with print's double space). ember adds the mean loss and the wall time of every epoch,
// and the total.
//
//   cats_vs_dogs [--data DIR] [--device cpu|cuda|cuda:N] [--epochs 5] [--batch-size 100]
//                [--lr 0.001] [--seed 0] [--threads N] [--no-cache]
//                [--save-dir DIR] [--save-every STEPS] [--keep-last 3] [--resume [PATH]]
//                [--log-dir DIR] [--log-every 1] [--nvtx] [--distributed]
//
// --distributed: `mpirun -np N cats_vs_dogs --distributed` trains on N processes with
// DistributedDataParallel (examples/common/distributed.h): each rank takes its share of every
// epoch in batches of --batch-size (a global batch N times that); rank 0 prints, saves, logs.
//
// Checkpoints (model, Adam's moments and steps, the loader's position, the generator), the run
// log with its plots and the per-step time breakdown: examples/common/run_tools.h. With --log-dir
// the validation accuracy is measured after every epoch too, for accuracy.png.
//
// --data is the PetImages folder (PetImages/Cat/*.jpg, PetImages/Dog/*.jpg); by default
// $EMBER_DATA/PetImages, or ./PetImages without EMBER_DATA. The first run decodes the photos (a few
// seconds) and caches them in PetImages/.ember-cache; later runs read the cache.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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
namespace F = ember::nn::functional;

namespace {

// The seed's Net, layer for layer (examples/common/models.h, shared with bench/bench_train).
using examples::cats_vs_dogs::Net;

using examples::Phase;
using examples::seconds_since;

// How Python's repr prints a float: the shortest digits that read back as the same double
// (0.2506680488586426), with ".0" on whole numbers. The loss is a float32 widened to double, as
// PyTorch's f"{loss}" formats it.
std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// One line, rewritten in place, while stdout is a terminal.
void progress(int epoch, int64_t done, int64_t total, double rate, double loss) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::printf("\r  epoch %d [%s%s] %lld/%lld  %.1f batches/s  loss %.4f ", epoch,
              std::string(static_cast<size_t>(filled), '#').c_str(),
              std::string(static_cast<size_t>(kWidth - filled), '.').c_str(),
              static_cast<long long>(done), static_cast<long long>(total), rate, loss);
  std::fflush(stdout);
}

struct EpochResult {
  double last_loss = 0.0;  // the seed prints the loss of the epoch's last batch
  double mean_loss = 0.0;
  int64_t samples = 0;
};

EpochResult train(int epoch, nn::Layer& net, nn::MSELoss& loss_function, optim::Optimizer& optimizer,
                  data::DataLoader& loader, Device device, bool tty, examples::RunTools& run,
                  const optim::TrainingParts& parts, optim::Progress& at) {
  net.train();
  const int64_t total = loader.size();
  const auto start = std::chrono::steady_clock::now();
  // The losses are summed on the device and read once at the end: reading every batch's loss
  // would make the host wait for the GPU after each step.
  Tensor loss_sum = zeros({}, device);
  Tensor loss;
  EpochResult r;
  int64_t batch_idx = 0;
  run.timer.start_epoch();
  for (const data::Batch& batch : loader) {
    // From pinned memory (the loader's pin_memory on a GPU) this copy is asynchronous.
    const Tensor batch_X = batch.data.to(device, /*non_blocking=*/true);  // [B, 1, 50, 50]
    // The seed's labels are np.eye(2)[label] rows; one_hot builds them from the class indices,
    // on the CPU, where checking the labels' range costs no wait for the GPU. Pinned, so that
    // their copy is asynchronous too (a copy from pageable memory would wait for the GPU to
    // finish the previous step).
    Tensor one_hot = F::one_hot(batch.target, 2);
    if (device.is_cuda()) one_hot = one_hot.pin_memory();
    const Tensor batch_y = one_hot.to(device, /*non_blocking=*/true);  // [B, 2]
    run.timer.mark(Phase::Data);

    optimizer.zero_grad();  // the seed also calls net.zero_grad(): the same parameters
    {
      const profile::Range range("forward");
      const Tensor outputs = net(batch_X);
      loss = loss_function(outputs, batch_y);
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

    loss_sum.add_(loss.detach());
    run.after_step(parts, at, loader, loss, batch.target.size(0), optimizer.lr());
    r.samples += batch.target.size(0);
    ++batch_idx;
    if (tty && (batch_idx % 10 == 0 || batch_idx == total)) {
      progress(epoch, batch_idx, total, batch_idx / seconds_since(start), loss.item());
    }
  }
  if (tty) std::printf("\r%90s\r", "");
  if (batch_idx > 0) {
    r.last_loss = loss.item();
    r.mean_loss = loss_sum.item() / static_cast<double>(batch_idx);
  }
  return r;
}

// The fraction of validation images whose larger softmax output is their class. The seed feeds
// them one by one; batches give the same predictions, faster.
double test(Net& net, data::DataLoader& loader, Device device) {
  net.eval();
  NoGradGuard no_grad;
  int64_t correct = 0, total = 0;
  for (const data::Batch& batch : loader) {
    const Tensor net_out = net(batch.data.to(device, /*non_blocking=*/true));
    const Tensor predicted_class = argmax(net_out, 1).cpu();
    correct += static_cast<int64_t>(predicted_class.eq(batch.target).to(kInt64).sum().item());
    total += batch.target.size(0);
  }
  return total > 0 ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

std::string default_data_dir() {
  const char* root = std::getenv("EMBER_DATA");
  return root && *root ? (std::filesystem::path(root) / "PetImages").string() : "PetImages";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: seed 002's cats-vs-dogs CNN (50x50 grayscale, conv 32-64-128, fc 512-2)"};
  std::string data_dir = default_data_dir();
  std::string device_name;
  int epochs = 5, threads = 0;
  int64_t batch_size = 100;
  double lr = 1e-3, val_fraction = 0.1;
  uint64_t seed = 0;
  bool no_cache = false;
  examples::RunFlags run_flags;
  app.add_option("--data", data_dir,
                 "the PetImages folder (Cat/ and Dog/ sub-folders of photos); default: "
                 "$EMBER_DATA/PetImages, else ./PetImages");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: cuda when available)");
  app.add_option("--epochs", epochs, "passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", batch_size, "images per batch")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "Adam learning rate")->check(CLI::NonNegativeNumber);
  app.add_option("--val-fraction", val_fraction, "share of the images held out for validation")
      ->check(CLI::Range(0.0, 0.99));
  app.add_option("--seed", seed, "seed for initialization, the split and shuffling");
  app.add_option("--threads", threads, "CPU threads for training and decoding (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-cache", no_cache, "decode the photos again; do not read or write the cache");
  int workers = 0;
  app.add_option("--workers", workers,
                 "DataLoader worker threads making training batches (0: one prefetch thread); "
                 "the batches are the same for any value")
      ->check(CLI::NonNegativeNumber);
  bool distributed = false;
  app.add_flag("--distributed", distributed,
               "train with DistributedDataParallel on the ranks of `mpirun -np N` (each rank "
               "takes --batch-size images per step)");
  examples::add_run_flags(app, run_flags, /*default_log_every=*/1);
  CLI11_PARSE(app, argc, argv);

  if (!std::filesystem::exists(data_dir)) {
    std::fprintf(stderr, "cats_vs_dogs: no data at '%s'.\n\n%s\n\nThen run: cats_vs_dogs --data "
                 "path/to/PetImages (or set EMBER_DATA to the folder that holds PetImages).\n",
                 data_dir.c_str(), data::pet_images_hint().c_str());
    return 2;
  }

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
    // As the seed: the GPU when there is one, else the CPU — and say which.
    const Device device = ranks.device(examples::choose_device(device_name), device_name);
    // An unusable --device fails here, with the core's reason, not after the data is loaded.
    (void)zeros({1}, device);
    std::printf("%s\n", device.is_cuda() ? "Running on the GPU" : "Running on the CPU");
    examples::print_device(device, device_name);
    if (device.is_cpu()) {
      std::printf("threads: %d, cpu kernels: %s\n", get_num_threads(), get_cpu_isa().c_str());
    }
    manual_seed(seed);

    // The data: 50x50 grayscale, uint8 in memory; ToTensor scales each batch to 0..1 (the
    // seed's X / 255.0) on the loader's background thread.
    data::ImageFolderOptions options;
    options.height = options.width = 50;
    options.grayscale = true;
    options.threads = threads;
    options.use_cache = !no_cache;
    const auto load_start = std::chrono::steady_clock::now();
    // --distributed: rank 0 decodes and writes the cache first; the others then read it.
    if (ranks.rank != 0) ranks.barrier();
    data::ImageFolder pets(data_dir, options, data::ToTensor());
    if (ranks.rank == 0) ranks.barrier();
    std::printf("%s\n%lld\n", pets.summary().c_str(), static_cast<long long>(pets.size()));
    std::printf("data: %s, %s in %.2f s\n", data_dir.c_str(),
                pets.from_cache() ? "read from the cache" : "decoded", seconds_since(load_start));
    std::fflush(stdout);

    auto [train_set, val_set] = data::train_val_split(pets, val_fraction, seed);
    std::printf("train: %lld images, validation: %lld images\n",
                static_cast<long long>(train_set.size()), static_cast<long long>(val_set.size()));
    data::DataLoaderOptions train_opts;
    train_opts.batch_size = batch_size;
    train_opts.shuffle = true;
    train_opts.seed = seed;
    train_opts.pin_memory = device.is_cuda();
    train_opts.num_workers = workers;
    train_opts.persistent_workers = workers > 0;
    ranks.share(train_opts);  // --distributed: this rank's share of each epoch
    data::DataLoaderOptions val_opts;
    val_opts.batch_size = batch_size;
    val_opts.pin_memory = device.is_cuda();
    data::DataLoader train_loader(std::move(train_set), train_opts);
    data::DataLoader val_loader(std::move(val_set), val_opts);

    const auto net_ptr = std::make_shared<Net>();
    Net& net = *net_ptr;
    net.to(device);  // moves the parameters in place: the seed's Net().to(device)
    std::printf("%s\n", net.str().c_str());
    const std::shared_ptr<nn::Layer> trained = ranks.wrap(net_ptr);  // DDP with --distributed
    ranks.print(batch_size);
    optim::AdamOptions adam;
    adam.lr = lr;
    optim::Adam optimizer(net.parameters(), adam);
    nn::MSELoss loss_function;

    examples::RunTools run("cats_vs_dogs", run_flags, device);
    const optim::TrainingParts parts{&net, &optimizer, nullptr, optim::loader_state(train_loader)};
    optim::Progress at = run.resume(parts);

    const bool tty = isatty(fileno(stdout)) != 0;
    const auto total_start = std::chrono::steady_clock::now();
    double train_seconds = 0.0;
    const int first_epoch = static_cast<int>(at.epoch);
    for (int epoch = first_epoch; epoch < epochs; ++epoch) {
      const auto epoch_start = std::chrono::steady_clock::now();
      const EpochResult r = train(epoch, *trained, loss_function, optimizer, train_loader, device, tty,
                                  run, parts, at);
      const double s = seconds_since(epoch_start);  // the final loss.item() waited for the GPU
      train_seconds += s;
      std::printf("Epoch: %d. Loss: %s\n", epoch, python_float(r.last_loss).c_str());
      std::printf("  epoch %d: mean loss %.4f, %.2f s (%.0f images/s%s)\n", epoch, r.mean_loss, s,
                  static_cast<double>(r.samples * ranks.size) / s,
                  ranks.distributed() ? (" over " + std::to_string(ranks.size) + " ranks").c_str() : "");
      double accuracy = -1.0;  // measured every epoch only for the run log's accuracy.png
      if (!run_flags.log_dir.empty()) {
        accuracy = test(net, val_loader, device);
        std::printf("  epoch %d: validation accuracy %.3f\n", epoch, accuracy);
      }
      run.after_epoch(parts, at, accuracy);
      std::fflush(stdout);
    }
    const int trained_epochs = std::max(1, epochs - first_epoch);

    const auto test_start = std::chrono::steady_clock::now();
    const double accuracy = test(net, val_loader, device);
    std::printf("Accuracy:  %s\n", python_float(std::round(accuracy * 1000.0) / 1000.0).c_str());
    std::printf("validation: %.2f s; training: %.2f s for %d epochs (%.2f s per epoch); total "
                "%.2f s\n",
                seconds_since(test_start), train_seconds, trained_epochs,
                train_seconds / trained_epochs, seconds_since(total_start));
    run.finish(net);
  } catch (const IOError& e) {
    // A folder that is there but laid out wrongly, or holds no image: the message says what was
    // expected (it ends with data::pet_images_hint()).
    std::fprintf(stderr, "cats_vs_dogs: %s\n", e.what());
    return 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "cats_vs_dogs: %s\n", e.what());
    return 1;
  }
  return 0;
}
