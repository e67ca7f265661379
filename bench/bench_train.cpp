// bench/bench_train.cpp — how fast do the three example models train, and where does a step go?
//
// The models are the examples' own (examples/common/models.h): seed 000's MNIST MLP
// (784-512-256-128-64-10, SGD lr 0.1 momentum 0.5, cross-entropy) at batch 64, seed 001's
// CIFAR-10 CNN (SGD lr 0.001 momentum 0.9, cross-entropy) at the tutorial's batch 4 and at 64,
// and seed 002's cats-vs-dogs CNN (softmax output, MSE against one-hot labels, Adam lr 1e-3) at
// batch 100. Each runs on --device cpu and/or cuda.
//
// The data is in memory before the clock starts: by default synthetic tensors of the real
// training sets' shapes and sizes (60,000 x 1x28x28; 50,000 x 3x32x32; 22,452 x 1x50x50, the
// seed's 24,946 photos less 10% for validation), already normalized as the examples' transforms
// would leave them; --mnist-data, --cifar-data, --cats-data load the real sets instead. A step
// is what the examples' loop does, written out in four phases:
//   data       gather the batch's rows by a shuffled index (index_select), and on CUDA copy
//              them to the GPU (pinned, non-blocking, as DataLoader's pin_memory=True)
//   forward    model(x) and the loss
//   backward   loss.backward()
//   optimizer  optimizer.step() and zero_grad()
// Unlike the examples, the gather happens in the loop, not on the DataLoader's prefetch thread:
// so the data phase shows what loading costs when nothing hides it (bench/pytorch/
// bench_train.py gathers the same way).
//
// Method. Per model, batch and device: warm-up steps (untimed), then --repeats runs of --steps
// steps each (--steps 0: as many as fill --min-time seconds, at least 20); steps/s is the median
// over the runs. The wall time of each phase is read with steady_clock at its boundaries. On CUDA
// the phases only end when the GPU has finished them, so the split run calls
// cuda::synchronize() at every boundary — four extra waits per step that keep the CPU from
// queueing the next phase while the GPU works, which makes that run slower than real training.
// CUDA therefore gets a second, unsplit run of the same steps without those syncs (one
// synchronize at the end of the run): its steps/s is the headline number; the percentages come
// from the split run. On the CPU every op has finished when it returns; the split run is the only
// run and its clock reads cost nothing measurable.
// "epoch s" is extrapolated: (training-set size / batch) steps at the measured steps/s, not a
// timed pass over the data (the partial last batch counted as a full one).
//
// Validation, before timing, on CUDA: the same model initialized twice from one seed, one copy on
// the CPU and one on the GPU, one forward and backward on the same batch; the losses must agree
// within 1e-5 + 1e-4 |cpu| and every parameter's gradient within 1e-3 max|grad_cpu| +
// 1e-3 |grad_cpu| elementwise (float32 sums in different orders). A mismatch, or a loss that is
// not finite after the timed steps, prints FAIL in place of the numbers.
//
// Threads and load (CPU rows). --threads takes a list ("1,2"): every CPU row is measured at each
// count, side by side. --load measures every CPU row a second time while another process (a
// child this program forks, a busy loop, not pinned) keeps one core busy, and prints table 3:
// idle and loaded epoch times and their ratio. A process sharing the machine is the normal case
// on a laptop or a shared server; the goal is loaded/idle <= 2.
//
//   bench_train [--device cpu|cuda|both] [--model mnist_mlp,cifar10_cnn,cats_vs_dogs]
//               [--threads N[,N...]] [--load] [--steps 0] [--min-time 1.0] [--repeats 3]
//               [--warmup 5] [--cuda-graph]
//               [--mnist-data DIR] [--cifar-data DIR] [--cats-data DIR] [--json FILE]
//
// CUDA graphs (--cuda-graph, CUDA rows): the same steps with the step captured once in a CUDA graph
// (core/cuda_graph.h) after the warm-up and replayed, each batch copied into the graph's static
// input tensors — what bench/pytorch/bench_train.py --cuda-graphs does for PyTorch. For the SGD
// models the whole step (forward, loss, backward, SGD) is one graph; Adam's step cannot be
// captured in ember (its bias corrections change every step), so for cats_vs_dogs the graph holds
// forward and backward and the Adam step runs eagerly after each replay. Table 3 gives the
// unsplit steps/s beside the eager ones, and the kernels and copies one step queues (the
// graph's nodes: what an eager step launches one by one, the eager step's host-side label check
// aside) against the one launch of a replay. In the emulation build an eager step's launches are
// also counted directly.
//
// bench/pytorch/bench_train.py prints the same tables for PyTorch; bench/run_all.py joins them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <csignal>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "bench/harness.h"
#include "core/ember.h"
#ifdef EMBER_CUDA_EMULATED
#include "kernels/emulator/emulator.h"
#endif
#include "data/data.h"
#include "examples/common/models.h"
#include "nn/nn.h"
#include "optim/optim.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using Clock = std::chrono::steady_clock;
namespace bench = ember::bench;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// ---- the models and their training sets ---------------------------------------------------------

// One (model, batch) row of the tables.
struct Config {
  std::string model;  // the example's name: mnist_mlp, cifar10_cnn, cats_vs_dogs
  int64_t batch;
};

const std::vector<Config> kConfigs = {
    {"mnist_mlp", 64}, {"cifar10_cnn", 4}, {"cifar10_cnn", 64}, {"cats_vs_dogs", 100}};

// A training set in host memory: float32 inputs [N, C, H, W] ready for the model, and targets
// (int64 class indices [N], or float32 one-hot rows [N, 2] for the MSE model).
struct TrainingSet {
  Tensor data, targets;
  std::string source;  // "synthetic" or where the real data came from
};

// Synthetic data of the real set's shape, with the value range the examples' transforms give.
TrainingSet synthetic_set(const std::string& model, uint64_t seed) {
  manual_seed(seed);
  TrainingSet s;
  s.source = "synthetic";
  if (model == "mnist_mlp") {  // ToTensor + Normalize(0.1307, 0.3081): about zero mean, unit std
    s.data = randn({60000, 1, 28, 28});
    s.targets = randint(0, 10, {60000});
  } else if (model == "cifar10_cnn") {  // Normalize(0.5, 0.5) per channel: [-1, 1]
    s.data = rand({50000, 3, 32, 32}) * 2.0 - 1.0;
    s.targets = randint(0, 10, {50000});
  } else {  // cats_vs_dogs: ToTensor, 0..1; one-hot labels for the MSE loss
    s.data = rand({22452, 1, 50, 50});
    s.targets = F::one_hot(randint(0, 2, {22452}), 2);
  }
  return s;
}

// The real training set, normalized once up front (the timed loop only gathers rows).
TrainingSet real_set(const std::string& model, const std::string& dir, uint64_t seed) {
  TrainingSet s;
  s.source = dir;
  if (model == "mnist_mlp") {
    const data::MNIST raw(dir, /*train=*/true);
    const data::Transform t = data::Compose({data::ToTensor(), data::Normalize(0.1307, 0.3081)});
    s.data = t(raw.images()).contiguous();
    s.targets = raw.labels();
  } else if (model == "cifar10_cnn") {
    const data::CIFAR10 raw(dir, /*train=*/true);
    const data::Transform t = data::Compose(
        {data::ToTensor(), data::Normalize({0.5, 0.5, 0.5}, {0.5, 0.5, 0.5})});
    s.data = t(raw.images()).contiguous();
    s.targets = raw.labels();
  } else {  // the training part of the examples' 90/10 split
    data::ImageFolderOptions options;
    options.height = options.width = 50;
    options.grayscale = true;
    options.verbose = false;
    const data::ImageFolder pets(dir, options);
    const data::TrainValSplit split = data::train_val_split(pets, 0.1, seed);
    s.data = data::ToTensor()(split.train.data()).contiguous();
    s.targets = F::one_hot(split.train.targets(), 2);
  }
  return s;
}

// A model ready to train on one device, with its loss and optimizer as its example sets them.
struct Trainer {
  std::shared_ptr<nn::Layer> model;
  std::shared_ptr<nn::Loss> criterion;
  std::unique_ptr<optim::Optimizer> optimizer;
};

Trainer make_trainer(const std::string& model, Device device, uint64_t seed) {
  manual_seed(seed);  // the same seed gives the same weights on every device
  Trainer t;
  if (model == "mnist_mlp") {
    t.model = std::make_shared<examples::mnist_mlp::FullyNeuralNetwork>();
    t.criterion = std::make_shared<nn::CrossEntropyLoss>();
  } else if (model == "cifar10_cnn") {
    t.model = std::make_shared<examples::cifar10_cnn::Net>();
    t.criterion = std::make_shared<nn::CrossEntropyLoss>();
  } else {
    t.model = std::make_shared<examples::cats_vs_dogs::Net>();
    t.criterion = std::make_shared<nn::MSELoss>();
  }
  t.model->to(device);
  t.criterion->to(device);
  t.model->train();
  if (model == "cats_vs_dogs") {
    optim::AdamOptions o;
    o.lr = 1e-3;
    t.optimizer = std::make_unique<optim::Adam>(t.model->parameters(), o);
  } else {
    optim::SGDOptions o;
    o.lr = model == "mnist_mlp" ? 0.1 : 0.001;
    o.momentum = model == "mnist_mlp" ? 0.5 : 0.9;
    t.optimizer = std::make_unique<optim::SGD>(t.model->parameters(), o);
  }
  return t;
}

// ---- one training step, in four phases ----------------------------------------------------------

// Hands out batches in a new shuffled order every epoch (full batches only).
class BatchSource {
 public:
  BatchSource(const TrainingSet& set, int64_t batch, Device device, uint64_t seed)
      : set_(set), batch_(batch), device_(device), seed_(seed) {}

  // Gathers the next batch and puts it on the device.
  data::Batch next() {
    const int64_t n = set_.data.size(0);
    if (!order_.defined() || pos_ + batch_ > n) {
      order_ = data::shuffled_order(n, seed_, epoch_++);
      pos_ = 0;
    }
    const Tensor index = order_.narrow(0, pos_, batch_);
    pos_ += batch_;
    data::Batch b{set_.data.index_select(0, index), set_.targets.index_select(0, index)};
    if (device_.is_cuda()) {
      // Page-locked, so that the copies return at once and overlap the GPU's work.
      b.data = b.data.pin_memory().to(device_, /*non_blocking=*/true);
      b.target = b.target.pin_memory().to(device_, /*non_blocking=*/true);
    }
    return b;
  }

 private:
  const TrainingSet& set_;
  int64_t batch_;
  Device device_;
  uint64_t seed_;
  Tensor order_;
  int64_t pos_ = 0, epoch_ = 0;
};

// Seconds spent in each phase, summed over steps.
struct Phases {
  double data = 0, forward = 0, backward = 0, optimizer = 0;
  double total() const { return data + forward + backward + optimizer; }
};

// Runs `steps` training steps and returns their wall time in seconds. With `split`, waits for the
// device at every phase boundary and adds each phase's time to *split; without, waits once at
// the end.
double run_steps(Trainer& t, BatchSource& source, int64_t steps, Device device, Phases* split,
                 Tensor* last_loss) {
  const bool cuda = device.is_cuda();
  const auto wait = [cuda] {
    if (cuda) cuda::synchronize();
  };
  wait();
  const Clock::time_point start = Clock::now();
  Tensor loss;
  for (int64_t s = 0; s < steps; ++s) {
    const Clock::time_point t0 = split ? Clock::now() : Clock::time_point{};
    const data::Batch b = source.next();
    Clock::time_point t1, t2, t3;
    if (split) wait(), t1 = Clock::now();
    const Tensor output = (*t.model)(b.data);
    loss = (*t.criterion)(output, b.target);
    if (split) wait(), t2 = Clock::now();
    loss.backward();
    if (split) wait(), t3 = Clock::now();
    t.optimizer->step();
    t.optimizer->zero_grad();
    if (split) {
      wait();
      const Clock::time_point t4 = Clock::now();
      split->data += seconds(t0, t1);
      split->forward += seconds(t1, t2);
      split->backward += seconds(t2, t3);
      split->optimizer += seconds(t3, t4);
    }
  }
  wait();
  if (last_loss) *last_loss = loss;
  return seconds(start, Clock::now());
}

// ---- validation: the device against the CPU -----------------------------------------------------

// "" when one forward and backward on `device` matches the CPU's, else what differs.
std::string check_against_cpu(const std::string& model, const TrainingSet& set, int64_t batch,
                              Device device, uint64_t seed) {
  Trainer cpu_t = make_trainer(model, Device::cpu(), seed);
  Trainer dev_t = make_trainer(model, device, seed);
  const Tensor index = data::shuffled_order(set.data.size(0), seed, 0).narrow(0, 0, batch);
  const Tensor x = set.data.index_select(0, index), y = set.targets.index_select(0, index);
  const Tensor loss_cpu = (*cpu_t.criterion)((*cpu_t.model)(x), y);
  const Tensor loss_dev = (*dev_t.criterion)((*dev_t.model)(x.to(device)), y.to(device));
  loss_cpu.backward();
  loss_dev.backward();
  std::ostringstream why;
  const double lc = loss_cpu.item(), ld = loss_dev.item();
  if (!(std::abs(ld - lc) <= 1e-5 + 1e-4 * std::abs(lc))) {
    why << "loss " << ld << " on " << device.str() << ", " << lc << " on cpu";
    return why.str();
  }
  const auto names = cpu_t.model->named_parameters();
  const std::vector<Tensor> cpu_params = cpu_t.model->parameters();
  const std::vector<Tensor> dev_params = dev_t.model->parameters();
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    if (!cpu_params[i].grad().defined() || !dev_params[i].grad().defined()) {
      why << "no gradient for " << names[i].first << " on "
          << (cpu_params[i].grad().defined() ? device.str() : "cpu");
      return why.str();
    }
    const Tensor gc = cpu_params[i].grad().contiguous();
    const Tensor gd = dev_params[i].grad().cpu().contiguous();
    const float* c = gc.data_ptr<float>();
    const float* d = gd.data_ptr<float>();
    const int64_t n = gc.numel();
    double scale = 0;
    for (int64_t k = 0; k < n; ++k) scale = std::max(scale, std::abs(static_cast<double>(c[k])));
    for (int64_t k = 0; k < n; ++k) {
      const double tol = 1e-3 * scale + 1e-3 * std::abs(static_cast<double>(c[k]));
      if (!(std::abs(static_cast<double>(d[k]) - c[k]) <= tol)) {
        why << "gradient of " << names[i].first << "[" << k << "]: " << d[k] << " on "
            << device.str() << ", " << c[k] << " on cpu (tolerance " << tol << ")";
        return why.str();
      }
    }
  }
  return "";
}

// ---- one row ------------------------------------------------------------------------------------

struct Options {
  int64_t steps = 0;
  double min_time = 1.0;
  int repeats = 3;
  int warmup = 5;
  uint64_t seed = 0;
};

struct Result {
  std::string fail;        // non-empty: what went wrong; the row prints FAIL
  double steps_per_s = 0;  // headline: the unsplit run on CUDA, the split run on the CPU
  double split_steps_per_s = 0;
  Phases per_step;  // seconds per step in each phase (split run)
  int64_t steps = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Result measure(const Config& c, const TrainingSet& set, Device device, const Options& o) {
  Result r;
  if (device.is_cuda()) {
    r.fail = check_against_cpu(c.model, set, c.batch, device, o.seed);
    if (!r.fail.empty()) return r;
  }
  Trainer t = make_trainer(c.model, device, o.seed);
  BatchSource source(set, c.batch, device, o.seed);
  Phases warm;
  const double warm_s = run_steps(t, source, std::max(o.warmup, 1), device, &warm, nullptr);
  r.steps = o.steps > 0 ? o.steps
                        : std::max<int64_t>(20, static_cast<int64_t>(std::ceil(
                                                    o.min_time * std::max(o.warmup, 1) / warm_s)));
  std::vector<double> split_rates, plain_rates;
  Tensor loss;
  for (int rep = 0; rep < o.repeats; ++rep) {
    const double s = run_steps(t, source, r.steps, device, &r.per_step, &loss);
    split_rates.push_back(static_cast<double>(r.steps) / s);
    if (device.is_cuda()) {
      const double p = run_steps(t, source, r.steps, device, nullptr, &loss);
      plain_rates.push_back(static_cast<double>(r.steps) / p);
    }
  }
  const double total_steps = static_cast<double>(r.steps) * o.repeats;
  r.per_step.data /= total_steps;
  r.per_step.forward /= total_steps;
  r.per_step.backward /= total_steps;
  r.per_step.optimizer /= total_steps;
  r.split_steps_per_s = median(split_rates);
  r.steps_per_s = device.is_cuda() ? median(plain_rates) : r.split_steps_per_s;
  const double l = loss.item();
  if (!std::isfinite(l)) r.fail = "the loss is " + std::to_string(l) + " after the timed steps";
  return r;
}

// ---- CUDA graphs -----------------------------------------------------------------------------

struct GraphResult {
  std::string fail;  // non-empty: what went wrong
  double steps_per_s = 0;
  int64_t nodes = 0;          // kernels and copies in the captured graph
  int64_t eager_launches = -1;  // an eager step's launches, counted by the emulator (-1: not known)
  bool whole_step = true;     // false: forward and backward captured, the optimizer step eager
};

// Steps/s with the step replayed from a CUDA graph: warm-up steps eagerly on static input
// tensors, one capture, then --repeats runs of `steps` replays, each after copying the next
// batch into the static inputs. The median run, unsplit (one synchronize per run).
GraphResult measure_graph(const Config& c, const TrainingSet& set, Device device,
                          const Options& o, int64_t steps) {
  GraphResult r;
  Trainer t = make_trainer(c.model, device, o.seed);
  BatchSource source(set, c.batch, device, o.seed);
  r.whole_step = c.model != "cats_vs_dogs";  // Adam: see the top of the file
  data::Batch first = source.next();
  Tensor static_x = first.data.clone(), static_y = first.target.clone();
  const auto eager_step = [&] {
    t.optimizer->zero_grad();
    const Tensor loss = (*t.criterion)((*t.model)(static_x), static_y);
    loss.backward();
    t.optimizer->step();
    return loss;
  };
  for (int i = 0; i < std::max(o.warmup, 3); ++i) {
    const data::Batch b = source.next();
    static_x.copy_(b.data, /*non_blocking=*/true);
    static_y.copy_(b.target, /*non_blocking=*/true);
    (void)eager_step();
  }
#ifdef EMBER_CUDA_EMULATED
  {
    cuda::synchronize();
    const emu::Stats before = emu::stats();
    (void)eager_step();
    r.eager_launches = emu::stats().submissions - before.submissions;
  }
#endif
  cuda::CUDAGraph graph;
  Tensor static_loss;
  t.optimizer->zero_grad();
  cuda::capture(graph, [&] {
    static_loss = (*t.criterion)((*t.model)(static_x), static_y);
    static_loss.backward();
    if (r.whole_step) t.optimizer->step();
  });
  r.nodes = graph.num_nodes();
  const auto run = [&](int64_t n) {
    cuda::synchronize();
    const Clock::time_point start = Clock::now();
    for (int64_t s = 0; s < n; ++s) {
      const data::Batch b = source.next();
      static_x.copy_(b.data, /*non_blocking=*/true);
      static_y.copy_(b.target, /*non_blocking=*/true);
      graph.replay();
      if (!r.whole_step) t.optimizer->step();
    }
    cuda::synchronize();
    return seconds(start, Clock::now());
  };
  (void)run(std::max(o.warmup, 1));
  std::vector<double> rates;
  for (int rep = 0; rep < o.repeats; ++rep) rates.push_back(static_cast<double>(steps) / run(steps));
  r.steps_per_s = median(rates);
  const double l = static_loss.item();
  if (!std::isfinite(l)) r.fail = "the loss is " + std::to_string(l) + " after the replayed steps";
  return r;
}

// Another process keeping one core busy while it lives: a forked child in a busy loop, killed
// (SIGKILL) and reaped on destruction.
class BusyProcess {
 public:
  BusyProcess() {
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("bench_train --load: fork failed");
    if (pid_ == 0) {
      volatile uint64_t spin = 0;
      for (;;) spin = spin + 1;
    }
  }
  ~BusyProcess() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;

 private:
  pid_t pid_ = -1;
};

std::vector<int> parse_threads(const std::string& list) {
  std::vector<int> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int n = 0;
    try {
      size_t used = 0;
      n = std::stoi(item, &used);
      if (used != item.size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1) {
      throw std::invalid_argument("--threads '" + list +
                                  "': give thread counts of 1 or more, separated by commas (e.g. 1,2)");
    }
    out.push_back(n);
  }
  return out;
}

int64_t dataset_steps(const TrainingSet& set, int64_t batch) {
  return (set.data.size(0) + batch - 1) / batch;
}

std::string pct(double part, double whole) { return bench::fmt(100.0 * part / whole, 1); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: training steps of the three example models, split into data, forward, "
               "backward and optimizer"};
  std::string device_flag = "auto", model_flag, json_path;
  std::string mnist_dir, cifar_dir, cats_dir, threads_flag;
  bool load = false, cuda_graph = false;
  Options o;
  app.add_option("--device", device_flag,
                 "cpu, cuda or both (default: both when a usable GPU is present, else cpu)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "both"}));
  app.add_option("--model", model_flag,
                 "comma-separated subset of mnist_mlp,cifar10_cnn,cats_vs_dogs (default: all)");
  app.add_option("--threads", threads_flag,
                 "CPU threads, or a comma-separated list to compare (default: ember's, all cores)");
  app.add_flag("--load", load,
               "also measure each CPU row while a busy process keeps one core busy (table 3)");
  app.add_option("--steps", o.steps, "timed steps per run (0: enough for --min-time, >= 20)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-time", o.min_time, "seconds per timed run when --steps is 0")
      ->check(CLI::PositiveNumber);
  app.add_option("--repeats", o.repeats, "timed runs; the median is reported")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "seed for the weights, the synthetic data and the order");
  app.add_flag("--cuda-graph", cuda_graph,
               "CUDA rows: also time the step captured in a CUDA graph and replayed (table 3)");
  app.add_option("--mnist-data", mnist_dir, "MNIST-format IDX folder (default: synthetic data)");
  app.add_option("--cifar-data", cifar_dir, "CIFAR-10 binary batches (default: synthetic data)");
  app.add_option("--cats-data", cats_dir, "the PetImages folder (default: synthetic data)");
  app.add_option("--json", json_path, "also write the tables to this JSON file");
  CLI11_PARSE(app, argc, argv);

  try {
    const std::vector<int> thread_counts =
        threads_flag.empty() ? std::vector<int>{get_num_threads()} : parse_threads(threads_flag);
    set_num_threads(thread_counts.front());

    // Which devices: CUDA only where this build and this machine can run it, and say why not.
    std::string cuda_why;
    bool cuda_ok = cuda::is_available();
    if (!cuda_ok) {
      cuda_why = cuda::unavailable_reason();
    } else if (!cuda::device_supported(cuda::current_device(), &cuda_why)) {
      cuda_ok = false;
    }
    std::vector<Device> devices;
    if (device_flag == "cpu" || device_flag == "both" || device_flag == "auto") {
      devices.push_back(Device::cpu());
    }
    if (device_flag == "cuda" || device_flag == "both" || (device_flag == "auto" && cuda_ok)) {
      if (!cuda_ok) {
        std::fprintf(stderr, "bench_train: --device %s: no usable GPU (%s)\n",
                     device_flag.c_str(), cuda_why.c_str());
        return 1;
      }
      devices.push_back(cuda::resolve(Device::cuda()));
    }

    std::vector<Config> configs;
    for (const Config& c : kConfigs) {
      if (model_flag.empty() || ("," + model_flag + ",").find("," + c.model + ",") !=
                                    std::string::npos) {
        configs.push_back(c);
      }
    }
    if (configs.empty()) {
      std::fprintf(stderr, "bench_train: --model '%s' names none of mnist_mlp, cifar10_cnn, "
                   "cats_vs_dogs\n", model_flag.c_str());
      return 1;
    }

    std::string header = bench::cpu_header(get_num_threads());
    bool on_gpu = false;
    for (const Device& d : devices) on_gpu = on_gpu || d.is_cuda();
    if (on_gpu) {
      header += bench::gpu_header(devices.back().index);
    } else if (device_flag == "auto") {
      header += "  cuda: not measured (" + cuda_why + ")\n";
    }
    std::printf("ember bench_train: training steps of the example models\n%s", header.c_str());
    std::printf(
        "  method: %d warm-up steps, then %d runs of %s steps; steps/s is the median run.\n"
        "  epoch s = (training-set size / batch) steps at that rate: extrapolated, not timed.\n"
        "  The split synchronizes the GPU at every phase boundary (4 extra waits per step); on\n"
        "  CUDA steps/s and epoch s come from a second run without them (table 2 shows both).\n"
        "  data = index gather (+ pinned host->device copy on CUDA), forward = model + loss,\n"
        "  backward = loss.backward(), optimizer = step + zero_grad.\n\n",
        std::max(o.warmup, 1), o.repeats,
        o.steps > 0 ? std::to_string(o.steps).c_str()
                    : ("enough for " + bench::fmt(o.min_time, 1) + " s (>= 20)").c_str());

    bench::Table main_table(
        "Table 1: training steps, steps/s and the split of a step's wall time",
        {"model", "device", "threads", "batch", "steps/s", "epoch s", "data %", "forward %",
         "backward %", "optimizer %"});
    bench::Table split_table(
        "Table 2: the split run (synchronized at each phase boundary), ms per step",
        {"model", "device", "threads", "batch", "step ms", "data ms", "forward ms", "backward ms",
         "optimizer ms", "steps/s synced", "steps/s unsynced", "steps x runs"});
    bench::Table graph_table(
        "Table 3: CUDA graphs: the step captured once and replayed, unsplit steps/s beside eager",
        {"model", "device", "batch", "captured", "eager steps/s", "graph steps/s",
         "graph / eager", "graph epoch s", "kernels+copies per step", "launches per step eager",
         "launches per step graph"});
    bench::Table load_table(
        std::string("Table ") + (cuda_graph ? "4" : "3") +
            ": CPU epochs on an idle machine and with one core kept busy by another process",
        {"model", "threads", "batch", "idle epoch s", "loaded epoch s", "loaded / idle",
         "goal <= 2"});

    std::map<std::string, TrainingSet> sets;
    for (const Config& c : configs) {
      if (!sets.count(c.model)) {
        const std::string& dir =
            c.model == "mnist_mlp" ? mnist_dir : c.model == "cifar10_cnn" ? cifar_dir : cats_dir;
        const Clock::time_point t0 = Clock::now();
        sets[c.model] = dir.empty() ? synthetic_set(c.model, o.seed)
                                    : real_set(c.model, dir, o.seed);
        const TrainingSet& s = sets[c.model];
        std::printf("data %s: %s, %lld samples of %s (%.1f s to prepare)\n", c.model.c_str(),
                    s.source.c_str(), static_cast<long long>(s.data.size(0)),
                    shape_str(s.data[0].shape()).c_str(), seconds(t0, Clock::now()));
        std::fflush(stdout);
      }
      const TrainingSet& set = sets[c.model];
      if (set.data.size(0) < c.batch) {
        std::printf("  %s batch %lld: skipped, the training set has only %lld samples\n",
                    c.model.c_str(), static_cast<long long>(c.batch),
                    static_cast<long long>(set.data.size(0)));
        continue;
      }
      for (const Device& device : devices) {
        // CUDA rows run once, at the first thread count; CPU rows at each.
        const std::vector<int> counts =
            device.is_cuda() ? std::vector<int>{thread_counts.front()} : thread_counts;
        for (int threads : counts) {
          set_num_threads(threads);
          const std::string dev = device.is_cuda() ? "cuda" : "cpu";
          const std::string batch = std::to_string(c.batch), nt = std::to_string(threads);
          const Result r = measure(c, set, device, o);
          if (!r.fail.empty()) {
            std::printf("FAIL %s %s batch %s: %s\n", c.model.c_str(), dev.c_str(), batch.c_str(),
                        r.fail.c_str());
            main_table.add_row({c.model, dev, nt, batch, "FAIL", "FAIL", "-", "-", "-", "-"});
            split_table.add_row(
                {c.model, dev, nt, batch, "FAIL", "-", "-", "-", "-", "FAIL", "FAIL", "-"});
            continue;
          }
          const Phases& p = r.per_step;
          const double steps = static_cast<double>(dataset_steps(set, c.batch));
          const double epoch_s = steps / r.steps_per_s;
          main_table.add_row({c.model, dev, nt, batch, bench::fmt(r.steps_per_s, 1),
                              bench::fmt(epoch_s, 2), pct(p.data, p.total()),
                              pct(p.forward, p.total()), pct(p.backward, p.total()),
                              pct(p.optimizer, p.total())});
          split_table.add_row({c.model, dev, nt, batch, bench::fmt(p.total() * 1e3, 3),
                               bench::fmt(p.data * 1e3, 3), bench::fmt(p.forward * 1e3, 3),
                               bench::fmt(p.backward * 1e3, 3), bench::fmt(p.optimizer * 1e3, 3),
                               bench::fmt(r.split_steps_per_s, 1),
                               device.is_cuda() ? bench::fmt(r.steps_per_s, 1) : "-",
                               std::to_string(r.steps) + " x " + std::to_string(o.repeats)});
          std::printf("  %s %s threads %s batch %s: %.1f steps/s\n", c.model.c_str(), dev.c_str(),
                      nt.c_str(), batch.c_str(), r.steps_per_s);
          std::fflush(stdout);
          if (cuda_graph && device.is_cuda()) {
            GraphResult g;
            try {
              g = measure_graph(c, set, device, o, r.steps);
            } catch (const Error& e) {
              g.fail = e.what();
            }
            if (!g.fail.empty()) {
              std::printf("FAIL %s cuda graph batch %s: %s\n", c.model.c_str(), batch.c_str(),
                          g.fail.c_str());
              graph_table.add_row({c.model, dev, batch, "FAIL", bench::fmt(r.steps_per_s, 1),
                                   "FAIL", "-", "-", "-", "-", "-"});
            } else {
              // Launches per step besides the two batch copies, which both modes make. On a GPU
              // an eager step launches the graph's nodes one by one, plus the copy-back and
              // memset of cross-entropy's host-side label check (the graph checks on the device).
              const bool cross_entropy = c.model != "cats_vs_dogs";
              const std::string eager_launches =
                  g.eager_launches >= 0 ? std::to_string(g.eager_launches)
                  : g.whole_step        ? std::to_string(g.nodes + (cross_entropy ? 2 : 0))
                                        : "-";
              graph_table.add_row(
                  {c.model, dev, batch, g.whole_step ? "whole step" : "fwd+bwd (Adam eager)",
                   bench::fmt(r.steps_per_s, 1), bench::fmt(g.steps_per_s, 1),
                   bench::fmt(g.steps_per_s / r.steps_per_s, 2) + "x",
                   bench::fmt(steps / g.steps_per_s, 2), std::to_string(g.nodes), eager_launches,
                   g.whole_step ? "1" : "1 + Adam's"});
              std::printf("  %s cuda graph batch %s: %.1f steps/s (%lld kernels and copies per "
                          "step in one launch)\n", c.model.c_str(), batch.c_str(), g.steps_per_s,
                          static_cast<long long>(g.nodes));
            }
            std::fflush(stdout);
          }
          if (load && !device.is_cuda()) {
            Result loaded;
            {
              BusyProcess busy;
              loaded = measure(c, set, device, o);
            }
            if (!loaded.fail.empty()) {
              load_table.add_row({c.model, nt, batch, bench::fmt(epoch_s, 2), "FAIL", "-", "-"});
              continue;
            }
            const double loaded_s = steps / loaded.steps_per_s;
            const double ratio = loaded_s / epoch_s;
            load_table.add_row({c.model, nt, batch, bench::fmt(epoch_s, 2),
                                bench::fmt(loaded_s, 2), bench::fmt(ratio, 2),
                                ratio <= 2.0 ? "met" : "MISSED"});
            std::printf("  %s cpu threads %s batch %s, one core busy: %.1f steps/s (%.2fx the idle "
                        "epoch)\n", c.model.c_str(), nt.c_str(), batch.c_str(),
                        loaded.steps_per_s, ratio);
            std::fflush(stdout);
          }
        }
      }
    }
    std::printf("\n");
    main_table.print(std::cout);
    std::cout << "\n";
    split_table.print(std::cout);
    if (cuda_graph) {
      std::cout << "\n";
      graph_table.print(std::cout);
      std::cout << "  kernels+copies per step: the nodes of the captured graph. Launches per step "
                   "leave out the two batch copies both\n  modes make; eager: "
#ifdef EMBER_CUDA_EMULATED
                   "counted by the emulator"
#else
                   "the graph's nodes, plus the memset and copy back of cross-entropy's label "
                   "check\n  (the graph checks the labels on the device)"
#endif
                   ".\n";
    }
    if (load) {
      std::cout << "\n";
      load_table.print(std::cout);
    }
    std::cout.flush();
    if (!json_path.empty()) {
      std::vector<bench::Table> tables = {main_table, split_table};
      if (cuda_graph) tables.push_back(graph_table);
      if (load) tables.push_back(load_table);
      bench::write_json(json_path, "bench_train", header, tables);
      std::printf("\nwrote %s\n", json_path.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
