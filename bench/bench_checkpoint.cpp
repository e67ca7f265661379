// bench/bench_checkpoint.cpp — what a training checkpoint of each example model costs: its size
// on disk and the time to write it (atomically: temporary file, fsync, rename, folder fsync) and
// to read it back into a model, optimizer and loader.
//
// The models and optimizers are the examples' own (examples/common/models.h): seed 000's MNIST
// MLP with SGD momentum, seed 001's CIFAR-10 CNN with SGD momentum, seed 002's cats-vs-dogs CNN
// with Adam. Each takes one optimizer step on a random batch first, so that the optimizer state
// (momentum buffers; Adam's two moments and step) exists and is saved, as in a real run. The
// loader is a small TensorDataset with the example's batch size: its position is a few metadata
// strings whatever the dataset's size.
//
// Method: --warmup untimed saves, then --runs timed ones (host wall time: the write ends with
// fsync, so the disk is in the number); the median is reported. Loading is timed the same way.
// The files go to --dir (default: the system's temp folder): put it on the disk your checkpoints
// will use.
//
//   bench_checkpoint [--dir DIR] [--runs 11] [--warmup 2] [--json FILE]
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/harness.h"
#include "core/ember.h"
#include "data/data.h"
#include "examples/common/models.h"
#include "nn/nn.h"
#include "optim/checkpoint.h"
#include "optim/optim.h"

namespace {

using namespace ember;
namespace bench = ember::bench;
namespace fs = std::filesystem;

struct Case {
  std::string name;
  std::shared_ptr<nn::Layer> model;
  std::unique_ptr<optim::Optimizer> opt;
  Shape input;     // one batch
  int64_t classes;
  bool one_hot_mse;  // cats_vs_dogs: MSE against one-hot labels
};

Case make_case(const std::string& name) {
  manual_seed(0);
  Case c;
  c.name = name;
  if (name == "mnist_mlp") {
    c.model = std::make_shared<examples::mnist_mlp::FullyNeuralNetwork>();
    c.opt = std::make_unique<optim::SGD>(c.model->parameters(), optim::SGDOptions{0.1, 0.5});
    c.input = {64, 1, 28, 28};
    c.classes = 10;
    c.one_hot_mse = false;
  } else if (name == "cifar10_cnn") {
    c.model = std::make_shared<examples::cifar10_cnn::Net>();
    c.opt = std::make_unique<optim::SGD>(c.model->parameters(), optim::SGDOptions{0.001, 0.9});
    c.input = {4, 3, 32, 32};
    c.classes = 10;
    c.one_hot_mse = false;
  } else {
    c.model = std::make_shared<examples::cats_vs_dogs::Net>();
    optim::AdamOptions o;
    o.lr = 1e-3;
    c.opt = std::make_unique<optim::Adam>(c.model->parameters(), o);
    c.input = {100, 1, 50, 50};
    c.classes = 2;
    c.one_hot_mse = true;
  }
  // One step, so that the optimizer state is there to be saved.
  const Tensor x = randn(c.input);
  const Tensor y = randint(0, c.classes, {c.input[0]});
  c.opt->zero_grad();
  const Tensor out = (*c.model)(x);
  const Tensor loss = c.one_hot_mse ? mse_loss(out, nn::functional::one_hot(y, c.classes).to(kFloat32))
                                    : cross_entropy(out, y);
  loss.backward();
  c.opt->step();
  return c;
}

int64_t count_parameters(const nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: the size and the write and read times of a training checkpoint of each "
               "example model"};
  std::string dir = fs::temp_directory_path().string();
  int runs = 11, warmup = 2;
  std::string json;
  app.add_option("--dir", dir, "folder to write the checkpoints in (the disk is part of the cost)");
  app.add_option("--runs", runs, "timed saves and loads per model")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed saves first")->check(CLI::NonNegativeNumber);
  app.add_option("--json", json, "also write the table to this file");
  CLI11_PARSE(app, argc, argv);

  try {
    const std::string folder = (fs::path(dir) / "ember_bench_checkpoint").string();
    fs::create_directories(folder);
    std::cout << bench::cpu_header(get_num_threads()) << "\nfolder: " << folder << "\n\n";
    bench::Table table("checkpoint of each example model (median of " + std::to_string(runs) +
                           " runs)",
                       {"model", "optimizer", "parameters", "checkpoint MB", "weights MB",
                        "save ms", "load ms", "save MB/s"});
    for (const char* name : {"mnist_mlp", "cifar10_cnn", "cats_vs_dogs"}) {
      Case c = make_case(name);
      data::DataLoader loader(data::TensorDataset(zeros({256, 1}), zeros({256}, kInt64)),
                              data::DataLoaderOptions{c.input[0], true, false, 0});
      const optim::TrainingParts parts{c.model.get(), c.opt.get(), nullptr,
                                       optim::loader_state(loader)};
      const std::string path = folder + "/" + name + ".safetensors";
      const std::string weights = folder + "/" + name + ".weights.safetensors";
      const optim::Progress at{0, 1, 1};
      const bench::Timing save = bench::time_host(
          [&] { optim::save_checkpoint(path, parts, at); }, warmup, runs);
      const bench::Timing load = bench::time_host(
          [&] { optim::load_checkpoint(path, parts); }, warmup, runs);
      optim::save_checkpoint(path, parts, at);
      ember::save(c.model->state_dict(), weights);
      const double mb = static_cast<double>(fs::file_size(path)) / 1e6;
      const double weights_mb = static_cast<double>(fs::file_size(weights)) / 1e6;
      table.add_row({name, c.opt->name(), std::to_string(count_parameters(*c.model)),
                     bench::fmt(mb, 2), bench::fmt(weights_mb, 2), bench::fmt(save.median_ms, 1),
                     bench::fmt(load.median_ms, 1), bench::fmt(mb / (save.median_ms / 1e3), 0)});
      fs::remove(path);
      fs::remove(weights);
    }
    fs::remove(folder);
    table.print(std::cout);
    if (!json.empty()) {
      bench::write_json(json, "bench_checkpoint", bench::cpu_header(get_num_threads()), {table});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_checkpoint: %s\n", e.what());
    return 1;
  }
  return 0;
}
