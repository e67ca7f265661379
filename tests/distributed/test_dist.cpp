// tests/distributed/test_dist.cpp — ember::distributed on several processes: run under
//   mpirun -np 2 ember_distributed_tests
// (tests/distributed/CMakeLists.txt registers it with CTest, label `dist`). Every rank runs every test
// case, in the same order, so the ranks make the same collective calls. A test that fails on
// one rank only may leave the other waiting in a collective: the group's timeout
// (EMBER_DIST_TIMEOUT, 60 s in CTest) ends it with a message instead of a hang.
//
// The data of every rank is drawn from a seed that names the rank, so each rank can also draw
// every other rank's data and do the collective's arithmetic locally: that is the reference.
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "distributed/distributed.h"
#include "examples/common/models.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

namespace {

std::shared_ptr<distributed::ProcessGroup> group() {
  if (!distributed::is_initialized()) distributed::init_process_group();
  return distributed::default_group();
}

// Rank r's tensor for test `salt`: the same numbers whichever rank draws them.
Tensor data_of(int rank, int salt, const Shape& shape, DType dtype) {
  manual_seed(static_cast<uint64_t>(1000 * salt + rank));
  switch (dtype) {
    case DType::Float32: return randn(shape);
    case DType::Float64: return randn(shape, TensorOptions(kFloat64));
    case DType::Int64: return (rand(shape) * 200.0 - 100.0).to(kInt64);
    case DType::Bool: return rand(shape).gt(0.5);
    default: return (rand(shape) * 255.0).to(DType::UInt8);
  }
}

// Element-wise reduction over all ranks' tensors, done locally in float64 (int64 exactly).
Tensor reduce_locally(int size, int salt, const Shape& shape, DType dtype, distributed::ReduceOp op) {
  std::vector<double> acc = data_of(0, salt, shape, dtype).to(kFloat64).to_vector<double>();
  for (int r = 1; r < size; ++r) {
    const std::vector<double> t = data_of(r, salt, shape, dtype).to(kFloat64).to_vector<double>();
    for (size_t i = 0; i < acc.size(); ++i) {
      switch (op) {
        case distributed::ReduceOp::Sum:
        case distributed::ReduceOp::Avg: acc[i] += t[i]; break;
        case distributed::ReduceOp::Max: acc[i] = std::max(acc[i], t[i]); break;
        case distributed::ReduceOp::Min: acc[i] = std::min(acc[i], t[i]); break;
      }
    }
  }
  if (op == distributed::ReduceOp::Avg)
    for (double& v : acc) v /= static_cast<double>(size);
  return from_vector<double>(acc, shape, kFloat64);
}

// Exactly the same values (compared in float64, which holds every float32, int64 in the tests'
// range, uint8 and bool exactly).
bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         a.cpu().to(kFloat64).to_vector<double>() == b.cpu().to(kFloat64).to_vector<double>();
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.cpu().to(kFloat64) - b.cpu().to(kFloat64)).abs().max().item();
}

// The largest |a - b| / max|b| over a model's parameters (a relative error per tensor).
double max_relative_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = b[i].to(kFloat64).abs().max().item();
    worst = std::max(worst, max_abs_diff(a[i], b[i]) / std::max(scale, 1e-30));
  }
  return worst;
}

// Does every rank hold exactly the same values as rank 0?
bool same_on_every_rank(distributed::ProcessGroup& g, const Tensor& t) {
  const Tensor mine = t.detach().contiguous().clone();
  Tensor root = mine.clone();
  g.broadcast(root, 0);
  Tensor differs = from_vector<double>({same(root, mine) ? 0.0 : 1.0}, {1}, kFloat64);
  g.all_reduce(differs, distributed::ReduceOp::Max);
  return differs.item() == 0.0;
}

const DType kDTypes[] = {kFloat32, kFloat64, kInt64};

// The CPU, and this rank's GPU where there is one: NCCL moves its tensors in a CUDA build with
// NCCL, MPI through host memory elsewhere (the emulation build's emulated devices).
std::vector<Device> devices(const distributed::ProcessGroup& g) {
  std::vector<Device> out{Device::cpu()};
  if (g.device().is_cuda()) out.push_back(g.device());
  return out;
}

}  // namespace

TEST_CASE("dist: the group has the rank and size mpirun gave", "[dist]") {
  auto g = group();
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  REQUIRE(rank != nullptr);  // the test runs under OpenMPI's mpirun
  CHECK(g->rank() == std::atoi(rank));
  CHECK(g->size() == std::atoi(size));
  CHECK(g->size() >= 2);
  CHECK(distributed::get_rank() == g->rank());
  CHECK(distributed::get_world_size() == g->size());
  CHECK(g->backend_name(Device::cpu()) == "mpi");
  if (cuda::is_available()) {
    // One GPU per rank, from the local rank (OMPI_COMM_WORLD_LOCAL_RANK).
    CHECK(g->device() == Device::cuda(g->local_rank() % cuda::device_count()));
    // NCCL where it is built and every rank of this machine has a GPU of its own.
    const bool nccl = distributed::nccl_is_built() && !cuda::is_emulated() &&
                      std::atoi(std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) <= cuda::device_count();
    CHECK(g->backend_name(g->device()) == (nccl ? "nccl" : "mpi (staged through host memory)"));
  } else {
    CHECK(g->device() == Device::cpu());
  }
  CHECK(g->local_rank() == std::atoi(std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")));
}

TEST_CASE("dist: all_reduce sum, avg, max, min match the arithmetic done locally", "[dist]") {
  auto g = group();
  const Shape shape{37, 5};  // odd sizes
  int salt = 1;
  for (const Device& device : devices(*g))
  for (DType dtype : kDTypes) {
    for (distributed::ReduceOp op : {distributed::ReduceOp::Sum, distributed::ReduceOp::Avg, distributed::ReduceOp::Max, distributed::ReduceOp::Min}) {
      if (op == distributed::ReduceOp::Avg && dtype == kInt64) continue;
      ++salt;
      Tensor t = data_of(g->rank(), salt, shape, dtype).to(device);
      const Tensor before = t.clone();
      g->all_reduce(t, op);
      const Tensor want = reduce_locally(g->size(), salt, shape, dtype, op);
      INFO(distributed::reduce_op_name(op) << " of " << dtype << " on " << device << " by " << g->backend_name(device));
      CHECK(t.dtype() == dtype);
      CHECK(t.device() == device);
      CHECK(max_abs_diff(t, want) <= (dtype == kFloat32 ? 1e-5 : dtype == kFloat64 ? 1e-12 : 0.0));
      CHECK_FALSE(same(t, before));  // it did change (the ranks' data differ)
    }
  }
  // bool: max is "any", min is "all".
  Tensor any = data_of(g->rank(), 90, {64}, kBool), all = any.clone();
  g->all_reduce(any, distributed::ReduceOp::Max);
  g->all_reduce(all, distributed::ReduceOp::Min);
  const Tensor any_want = reduce_locally(g->size(), 90, {64}, kBool, distributed::ReduceOp::Max);
  const Tensor all_want = reduce_locally(g->size(), 90, {64}, kBool, distributed::ReduceOp::Min);
  CHECK(same(any, any_want));
  CHECK(same(all, all_want));
}

TEST_CASE("dist: broadcast from every root", "[dist]") {
  auto g = group();
  for (const Device& device : devices(*g))
  for (int root = 0; root < g->size(); ++root) {
    for (DType dtype : kDTypes) {
      Tensor t = data_of(g->rank(), 200 + root, {3, 4, 5}, dtype).to(device);
      g->broadcast(t, root);
      CHECK(same(t, data_of(root, 200 + root, {3, 4, 5}, dtype)));
    }
  }
  CHECK_THROWS_AS(g->broadcast(zeros({2}), g->size()), distributed::DistError);
}

TEST_CASE("dist: all_gather concatenates every rank's tensor along dim 0", "[dist]") {
  auto g = group();
  for (const Device& device : devices(*g))
  for (DType dtype : kDTypes) {
    const Tensor mine = data_of(g->rank(), 300, {7, 3}, dtype).to(device);
    std::vector<Tensor> parts;
    for (int r = 0; r < g->size(); ++r) parts.push_back(data_of(r, 300, {7, 3}, dtype));
    const Tensor want = cat(parts, 0);
    const Tensor got = g->all_gather(mine);
    CHECK(got.shape() == Shape{7 * g->size(), 3});
    CHECK(got.device() == device);
    CHECK(same(got, want));
    const auto list = g->all_gather_list(mine);
    REQUIRE(list.size() == static_cast<size_t>(g->size()));
    for (int r = 0; r < g->size(); ++r) CHECK(same(list[static_cast<size_t>(r)], parts[static_cast<size_t>(r)]));
  }
  Tensor wrong = empty({7, 3});
  CHECK_THROWS_WITH(g->all_gather(wrong, zeros({7, 3})), Catch::Contains("the output must have shape"));
}

TEST_CASE("dist: reduce_scatter keeps this rank's rows of the reduction", "[dist]") {
  auto g = group();
  const int64_t k = 5;
  for (const Device& device : devices(*g))
  for (DType dtype : kDTypes) {
    for (distributed::ReduceOp op : {distributed::ReduceOp::Sum, distributed::ReduceOp::Avg, distributed::ReduceOp::Max, distributed::ReduceOp::Min}) {
      if (op == distributed::ReduceOp::Avg && dtype == kInt64) continue;
      const Shape in_shape{k * g->size(), 4};
      const Tensor input = data_of(g->rank(), 400, in_shape, dtype).to(device);
      Tensor out = empty({k, 4}, TensorOptions(dtype).device(device));
      g->reduce_scatter(out, input, op);
      const Tensor want = reduce_locally(g->size(), 400, in_shape, dtype, op).narrow(0, g->rank() * k, k);
      INFO(distributed::reduce_op_name(op) << " of " << dtype);
      CHECK(max_abs_diff(out, want) <= (dtype == kFloat32 ? 1e-5 : dtype == kFloat64 ? 1e-12 : 0.0));
    }
  }
  Tensor out = empty({3});
  CHECK_THROWS_WITH(g->reduce_scatter(out, zeros({2 * g->size() + 1})),
                    Catch::Contains("must be a multiple of the number of ranks"));
}

TEST_CASE("dist: async collectives overlap and finish in order, and the barrier", "[dist]") {
  auto g = group();
  std::vector<Tensor> ts;
  std::vector<distributed::WorkHandle> works;
  for (int i = 0; i < 6; ++i) {
    ts.push_back(data_of(g->rank(), 500 + i, {1000 + i}, kFloat64));
    works.push_back(g->all_reduce_async(ts.back(), distributed::ReduceOp::Sum, "test tensor " + std::to_string(i)));
  }
  CHECK(works[0]->description().find("test tensor 0") != std::string::npos);
  for (int i = 5; i >= 0; --i) works[static_cast<size_t>(i)]->wait();  // any order of waits
  for (int i = 0; i < 6; ++i) {
    CHECK(works[static_cast<size_t>(i)]->is_completed());
    CHECK(max_abs_diff(ts[static_cast<size_t>(i)],
                       reduce_locally(g->size(), 500 + i, {1000 + i}, kFloat64, distributed::ReduceOp::Sum)) < 1e-12);
  }
  works[0]->wait();  // again: returns at once

  // A barrier: rank 0 arrives late; nobody leaves before it has arrived.
  if (g->rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  g->barrier();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (g->rank() != 0) CHECK(waited > 0.2);
  g->barrier_async()->wait();
}

TEST_CASE("dist: bad arguments are refused on the calling rank with a clear message", "[dist]") {
  auto g = group();
  Tensor strided = zeros({4, 6}).transpose(0, 1);
  CHECK_THROWS_WITH(g->all_reduce(strided), Catch::Contains("is not contiguous"));
  Tensor ints = zeros({3}, kInt64);
  CHECK_THROWS_WITH(g->all_reduce(ints, distributed::ReduceOp::Avg), Catch::Contains("avg needs a floating dtype"));
  Tensor out = empty({2 * g->size()}, kFloat64);
  CHECK_THROWS_WITH(g->all_gather(out, zeros({2})), Catch::Contains("output is float64"));
  // The group is still in step after all of that (nothing was sent).
  Tensor one = ones({1});
  g->all_reduce(one);
  CHECK(one.item() == g->size());
}

TEST_CASE("dist: ranks that disagree about a collective all get a DistError naming it", "[dist]") {
  auto g = group();
  // Shapes differ: rank r passes [r + 2].
  Tensor t = ones({g->rank() + 2});
  std::string message;
  try {
    g->all_reduce(t, distributed::ReduceOp::Sum, "mismatch test");
  } catch (const distributed::DistError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("all_reduce") != std::string::npos);
  CHECK(message.find("mismatch test") != std::string::npos);
  CHECK(message.find("the ranks disagree") != std::string::npos);
  CHECK(message.find("rank 0 called all_reduce(sum) of float32 [2]") != std::string::npos);
  CHECK(message.find("rank 1 called all_reduce(sum) of float32 [3]") != std::string::npos);
  CHECK(same(t, ones({g->rank() + 2})));  // untouched
  // Dtypes differ.
  Tensor d = g->rank() == 0 ? zeros({4}) : zeros({4}, kFloat64);
  CHECK_THROWS_WITH(g->broadcast(d, 0), Catch::Contains("float64 [4]") && Catch::Contains("float32 [4]"));
  // Different collectives.
  Tensor x = zeros({4});
  if (g->rank() == 0) {
    CHECK_THROWS_WITH(g->all_reduce(x), Catch::Contains("broadcast from rank 0"));
  } else {
    CHECK_THROWS_WITH(g->broadcast(x, 0), Catch::Contains("all_reduce(sum)"));
  }
  // Still usable.
  Tensor one = ones({1});
  g->all_reduce(one);
  CHECK(one.item() == g->size());
}

// ---- DistributedDataParallel ------------------------------------------------------------------

namespace {

using examples::mnist_mlp::FullyNeuralNetwork;

// Step s's global batch (the same on every rank): `per_rank` samples for each rank.
std::pair<Tensor, Tensor> global_batch(int step, int64_t samples) {
  manual_seed(static_cast<uint64_t>(70000 + step));
  const Tensor x = randn({samples, 1, 28, 28});
  const Tensor y = (rand({samples}) * 9.999).to(kInt64);
  return {x, y};
}

std::vector<Tensor> clones(const std::vector<Tensor>& ps) {
  std::vector<Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone());
  return out;
}

optim::SGDOptions seed_sgd() {
  optim::SGDOptions o;
  o.lr = 0.1;  // seed 000's optimizer
  o.momentum = 0.5;
  return o;
}

}  // namespace

TEST_CASE("dist: DDP trains the MNIST MLP like one process on the concatenated batches", "[dist][ddp]") {
  auto g = group();
  const int steps = 50;
  const int64_t per_rank = 16, global = per_rank * g->size();

  // Every rank builds its net from a different seed: DDP must broadcast rank 0's weights.
  manual_seed(static_cast<uint64_t>(11 + g->rank()));
  auto net = std::make_shared<FullyNeuralNetwork>();
  nn::DistributedDataParallelOptions options;
  options.bucket_cap_mb = 0.3;  // several buckets for this 2.2 MB model
  options.first_bucket_cap_mb = 0.1;
  nn::DistributedDataParallel model(net, g, options);
  const auto buckets = model.buckets();
  REQUIRE(buckets.size() >= 3);
  // Reverse registration order: the last layer's parameters are in the first bucket.
  CHECK(buckets.front().parameters.front() == "layer_5.bias");
  CHECK(buckets.back().parameters.back() == "layer_1.weight");

  // The reference: one process, rank 0's initial weights, the whole batch.
  manual_seed(11);
  auto single = std::make_shared<FullyNeuralNetwork>();
  CHECK(max_relative_diff(net->parameters(), single->parameters()) == 0.0);

  optim::SGD opt(model.parameters(), seed_sgd());
  optim::SGD single_opt(single->parameters(), seed_sgd());
  nn::CrossEntropyLoss criterion;
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = global_batch(step, global);
    opt.zero_grad();
    Tensor loss = criterion(model(x.narrow(0, g->rank() * per_rank, per_rank)),
                            y.narrow(0, g->rank() * per_rank, per_rank));
    loss.backward();
    opt.step();

    single_opt.zero_grad();
    Tensor single_loss = criterion((*single)(x), y);
    single_loss.backward();
    single_opt.step();
    if (step == 0) first_loss = single_loss.item();
    last_loss = single_loss.item();
  }
  CHECK(model.comm_stats().synced_steps == steps);
  CHECK(model.comm_stats().bytes_per_step == 4 * (784 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10));

  bool identical = true;
  for (const auto& p : net->parameters()) identical = same_on_every_rank(*g, p) && identical;
  const double rel = max_relative_diff(net->parameters(), single->parameters());
  if (g->rank() == 0) {
    std::printf("DDP, %d ranks, %d steps of the MNIST MLP: parameters identical across ranks: %s; "
                "max relative difference to one process on the concatenated batches: %.3g "
                "(loss %.4f -> %.4f)\n",
                g->size(), steps, identical ? "yes" : "NO", rel, first_loss, last_loss);
  }
  CHECK(identical);
  CHECK(rel <= 1e-5);
  // The training did something: the weights moved away from the start.
  manual_seed(11);
  const FullyNeuralNetwork initial;
  CHECK(max_relative_diff(net->parameters(), initial.parameters()) > 1e-3);
}

TEST_CASE("dist: DDP no_sync accumulates locally, the next backward averages the sum", "[dist][ddp]") {
  auto g = group();
  const int64_t per_rank = 8, global = per_rank * g->size();
  manual_seed(21);
  auto net = std::make_shared<FullyNeuralNetwork>();
  nn::DistributedDataParallel model(net, g);
  manual_seed(21);
  FullyNeuralNetwork single;
  nn::CrossEntropyLoss criterion;

  auto [xa, ya] = global_batch(100, global);
  auto [xb, yb] = global_batch(101, global);
  const int64_t at = g->rank() * per_rank;
  {
    auto guard = model.no_sync();
    criterion(model(xa.narrow(0, at, per_rank)), ya.narrow(0, at, per_rank)).backward();
  }
  CHECK(model.comm_stats().synced_steps == 0);
  // Not averaged yet: each rank has the gradient of its own micro-batch.
  CHECK_FALSE(same_on_every_rank(*g, net->layer_5->weight.grad()));
  criterion(model(xb.narrow(0, at, per_rank)), yb.narrow(0, at, per_rank)).backward();
  CHECK(model.comm_stats().synced_steps == 1);

  // One process: the two whole batches' gradients, summed.
  criterion(single(xa), ya).backward();
  criterion(single(xb), yb).backward();
  std::vector<Tensor> grads, single_grads;
  for (const auto& p : net->parameters()) grads.push_back(p.grad());
  for (const auto& p : single.parameters()) single_grads.push_back(p.grad());
  bool identical = true;
  for (const auto& gr : grads) identical = same_on_every_rank(*g, gr) && identical;
  CHECK(identical);
  const double rel = max_relative_diff(grads, single_grads);
  INFO("relative difference of the accumulated gradients: " << rel);
  CHECK(rel <= 1e-5);
}

TEST_CASE("dist: DDP with the DistributedSampler and the DataLoader", "[dist][ddp]") {
  auto g = group();
  const int64_t n = 203;  // not a multiple of the ranks: the sampler pads
  manual_seed(5);
  const Tensor x = randn({n, 784});
  const Tensor y = arange(0, n, 1, kInt64);  // the targets name the samples
  auto sampler = std::make_shared<data::DistributedSampler>(g->size(), g->rank());
  data::DataLoaderOptions lo;
  lo.batch_size = 10;
  lo.sampler = sampler;
  data::DataLoader loader(std::make_shared<data::TensorDataset>(x, y), lo);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<Tensor> seen;
    for (const data::Batch& b : loader) seen.push_back(b.target);
    const Tensor mine = cat(seen, 0);
    CHECK(mine.numel() == (n + g->size() - 1) / g->size());
    const Tensor all = g->all_gather(mine);
    // Every sample is visited; only the padding repeats some.
    std::vector<int> count(static_cast<size_t>(n), 0);
    for (int64_t i : all.to_vector<int64_t>()) ++count[static_cast<size_t>(i)];
    int64_t visited = 0, repeats = 0;
    for (int c : count) {
      visited += c > 0;
      repeats += c > 1 ? c - 1 : 0;
    }
    CHECK(visited == n);
    CHECK(repeats == all.numel() - n);
  }
}

namespace {
// A model whose second head takes part only when asked to.
struct TwoHeads : nn::Layer {
  std::shared_ptr<nn::Linear> a, b;
  bool use_b = true;
  TwoHeads() {
    a = register_module("a", std::make_shared<nn::Linear>(4, 3));
    b = register_module("b", std::make_shared<nn::Linear>(4, 3));
  }
  std::string name() const override { return "TwoHeads"; }
  Tensor forward(const Tensor& x) override { return use_b ? (*a)(x) + (*b)(x) : (*a)(x); }
};
}  // namespace

TEST_CASE("dist: DDP and parameters that take no part in a forward", "[dist][ddp]") {
  auto g = group();
  manual_seed(31);
  const Tensor x = randn({6, 4});
  const Tensor mine = x.narrow(0, 3 * (g->rank() % 2), 3) * static_cast<double>(g->rank() + 1);
  {
    // Without find_unused_parameters: the bucket never completes, and the next forward says why.
    manual_seed(32);
    auto net = std::make_shared<TwoHeads>();
    net->use_b = false;
    nn::DistributedDataParallel model(net, g);
    model(mine).sum().backward();
    CHECK_THROWS_WITH(model(mine), Catch::Contains("did not produce gradients for b.weight, b.bias") &&
                                       Catch::Contains("find_unused_parameters = true"));
    net->use_b = true;
    model(mine).sum().backward();  // usable again
    CHECK(same_on_every_rank(*g, net->b->weight.grad()));
  }
  // With it: the unused head's share is zero, the used one is averaged.
  manual_seed(33);
  auto net = std::make_shared<TwoHeads>();
  net->use_b = false;
  nn::DistributedDataParallelOptions o;
  o.find_unused_parameters = true;
  nn::DistributedDataParallel model(net, g, o);
  model(mine).sum().backward();
  CHECK(model.comm_stats().synced_steps == 1);
  REQUIRE(net->b->weight.grad().defined());
  CHECK(net->b->weight.grad().abs().max().item() == 0.0);
  // d/dW of sum(W x + c) is the sum of the rows of x: averaged over the ranks.
  Tensor want = zeros({4}, kFloat64);
  for (int r = 0; r < g->size(); ++r)
    want = want + x.narrow(0, 3 * (r % 2), 3).to(kFloat64).sum({0}) * static_cast<double>(r + 1);
  want = want / static_cast<double>(g->size());
  const Tensor got = net->a->weight.grad();  // [3, 4]: every row is `want`
  for (int64_t row = 0; row < 3; ++row) CHECK(max_abs_diff(got.narrow(0, row, 1).reshape({4}), want) < 1e-5);
}

// ---- a rank that dies or stops (run by tests/distributed/check_failure.cmake, not by default) ----------

TEST_CASE("dist: a rank that is killed in the middle of training", "[.killed]") {
  auto g = group();
  manual_seed(3);
  auto net = std::make_shared<FullyNeuralNetwork>();
  nn::DistributedDataParallel model(net, g);
  optim::SGD opt(model.parameters(), seed_sgd());
  nn::CrossEntropyLoss criterion;
  for (int step = 0; step < 1000000; ++step) {
    if (step == 5 && g->rank() == 1) std::raise(SIGKILL);
    auto [x, y] = global_batch(step, 8);
    opt.zero_grad();
    criterion(model(x), y).backward();
    opt.step();
  }
  FAIL("rank " << g->rank() << " trained on although rank 1 was killed");
}

TEST_CASE("dist: a rank that stops calling collectives", "[.stuck]") {
  auto g = group();
  Tensor t = ones({10});
  for (int step = 0; step < 5; ++step) g->all_reduce(t);
  if (g->rank() == 1) std::this_thread::sleep_for(std::chrono::hours(1));
  g->all_reduce(t, distributed::ReduceOp::Sum, "the one rank 1 never calls");
  FAIL("all_reduce returned although rank 1 never called it");
}

// Run WITHOUT mpirun: ranks described by torchrun's variables can only meet over NCCL.
TEST_CASE("dist: RANK/WORLD_SIZE without mpirun and without NCCL", "[.torchrun]") {
  REQUIRE(std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", "29531", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "5", 1);
  CHECK_THROWS_WITH(distributed::init_process_group(), Catch::Contains("RANK=5 is not below WORLD_SIZE=2"));
  ::setenv("RANK", "x1", 1);
  CHECK_THROWS_WITH(distributed::init_process_group(), Catch::Contains("RANK=x1 is not a rank"));
  ::setenv("RANK", "1", 1);
  CHECK_THROWS_WITH(distributed::init_process_group("mpi"), Catch::Contains("needs ranks started by mpirun"));
  CHECK_THROWS_WITH(distributed::init_process_group(), Catch::Contains("only NCCL can connect them") &&
                                                    Catch::Contains("mpirun -np 2"));
  CHECK_THROWS_WITH(distributed::init_process_group("gloo"), Catch::Contains("unknown backend 'gloo'"));
  CHECK_FALSE(distributed::is_initialized());
  // A group of one (WORLD_SIZE=1) works without any engine.
  ::setenv("WORLD_SIZE", "1", 1);
  ::setenv("RANK", "0", 1);
  auto g = distributed::init_process_group();
  CHECK(g->size() == 1);
  CHECK(g->backend_name(Device::cpu()) == "self");
  Tensor t = from_vector<float>({1, 2, 3}, {3});
  g->all_reduce(t, distributed::ReduceOp::Avg);
  CHECK(same(t, from_vector<float>({1, 2, 3}, {3})));
  CHECK(same(g->all_gather(t), t));
}
