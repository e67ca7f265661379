// Training checkpoints (optim/checkpoint.h) and the state they are made of: optimizer and LR
// scheduler state dicts, the RNG state, the DataLoader's position. The main property: a run
// stopped in the middle of an epoch and resumed from its checkpoint in a fresh model, optimizer
// and loader ends with the same parameters, bit for bit, as a run that never stopped — with
// SGD momentum, Adam (and amsgrad), a StepLR schedule, shuffling and dropout all in play.
// tests/e2e/kill_resume.cpp does the same across real processes killed with SIGKILL.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "nn/nn.h"
#include "optim/checkpoint.h"
#include "optim/optim.h"
#include "test_files.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using test::error_of;

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_checkpoint_") {}
};

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.numel()) * x.element_size()) == 0;
}

bool same_state(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !same_bits(a[i].second, b[i].second)) return false;
  }
  return true;
}

enum class Opt { SGD, Adam, AdamAmsgrad };

// A model, its optimizer, a StepLR schedule and a shuffled loader over a fixed data set: one
// training run. Dropout draws from the global generator, so the RNG state matters too.
struct Run {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::Optimizer> opt;
  std::unique_ptr<optim::StepLR> sched;
  std::unique_ptr<data::DataLoader> loader;
  nn::CrossEntropyLoss loss_fn;

  explicit Run(Opt kind, uint64_t init_seed) {
    manual_seed(init_seed);
    model = std::make_shared<nn::Sequential>(
        std::make_shared<nn::Linear>(4, 16), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(16, 3));
    if (kind == Opt::SGD) {
      optim::SGDOptions o;
      o.lr = 0.05;
      o.momentum = 0.9;
      o.weight_decay = 1e-3;
      opt = std::make_unique<optim::SGD>(model->parameters(), o);
    } else {
      optim::AdamOptions o;
      o.lr = 1e-2;
      o.amsgrad = kind == Opt::AdamAmsgrad;
      opt = std::make_unique<optim::Adam>(model->parameters(), o);
    }
    sched = std::make_unique<optim::StepLR>(*opt, /*step_size=*/1, /*gamma=*/0.5);
    // The data never depends on the init seed: a fixed generator state.
    manual_seed(99);
    const Tensor x = randn({90, 4});
    const Tensor y = randint(0, 3, {90});
    loader = std::make_unique<data::DataLoader>(data::TensorDataset(x, y),
                                                data::DataLoaderOptions{16, true, false, 7});
    manual_seed(init_seed + 1000);  // the stream dropout draws from
  }

  optim::TrainingParts parts() {
    return {model.get(), opt.get(), sched.get(), optim::loader_state(*loader)};
  }

  // Trains from `at` until `stop_after` total steps (or the end of `epochs`), updating `at`.
  void train(optim::Progress& at, int epochs, int64_t stop_after = -1) {
    for (; at.epoch < epochs; ++at.epoch, at.batch = 0) {
      for (const data::Batch& b : *loader) {
        opt->zero_grad();
        loss_fn((*model)(b.data), b.target).backward();
        opt->step();
        ++at.step;
        at.batch = loader->batch_index() + 1;
        if (at.step == stop_after) return;
      }
      sched->step();
    }
  }
};

void resume_matches_uninterrupted(Opt kind) {
  TempDir dir;
  const int epochs = 3;  // 6 batches per epoch (90 samples, batch 16)
  Run straight(kind, 1);
  optim::Progress end;
  straight.train(end, epochs);
  CHECK(end.step == 18);

  for (int64_t stop : {1, 4, 6, 9, 17}) {
    INFO("stopped after step " << stop);
    const std::string path = dir / ("ckpt-" + std::to_string(stop) + ".safetensors");
    {
      Run first(kind, 1);
      optim::Progress at;
      first.train(at, epochs, stop);
      optim::save_checkpoint(path, first.parts(), at);
    }
    // A fresh process would start with another seed: everything must come from the file.
    Run resumed(kind, 12345);
    optim::Progress at = optim::load_checkpoint(path, resumed.parts());
    CHECK(at.step == stop);
    // (Stopped after an epoch's last batch, the loader resumes with an empty rest of epoch and
    // the loop goes on to the scheduler step, as the unstopped run did.)
    resumed.train(at, epochs);
    CHECK(at.step == end.step);
    CHECK(same_state(resumed.model->state_dict(), straight.model->state_dict()));
    CHECK(same_state(resumed.opt->state_dict(), straight.opt->state_dict()));
    CHECK(resumed.opt->lr() == straight.opt->lr());
  }
}

}  // namespace

TEST_CASE("checkpoint: a resumed SGD run ends bit for bit where an unstopped one does", "[checkpoint]") {
  resume_matches_uninterrupted(Opt::SGD);
}

TEST_CASE("checkpoint: a resumed Adam run ends bit for bit where an unstopped one does", "[checkpoint]") {
  resume_matches_uninterrupted(Opt::Adam);
  resume_matches_uninterrupted(Opt::AdamAmsgrad);
}

TEST_CASE("checkpoint: the file holds PyTorch-style names and the run's position", "[checkpoint]") {
  TempDir dir;
  Run run(Opt::Adam, 2);
  optim::Progress at;
  run.train(at, 1, 3);
  optim::save_checkpoint(dir / "c.safetensors", run.parts(), at, {{"example", "test"}});
  const SafetensorsFile f = load_file(dir / "c.safetensors");
  std::vector<std::string> names;
  for (const auto& [n, t] : f.tensors) names.push_back(n);
  for (const char* expected :
       {"model.0.weight", "model.3.bias", "optimizer.param_groups.0.lr",
        "optimizer.param_groups.0.betas", "optimizer.state.0.exp_avg", "optimizer.state.3.step",
        "scheduler.last_epoch", "rng.state"}) {
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  CHECK(f.metadata.at("ember_checkpoint") == "1");
  CHECK(f.metadata.at("step") == "3");
  CHECK(f.metadata.at("batch") == "3");
  CHECK(f.metadata.at("epoch") == "0");
  CHECK(f.metadata.at("optimizer") == "Adam");
  CHECK(f.metadata.at("loader.batch_size") == "16");
  CHECK(f.metadata.at("example") == "test");
}

TEST_CASE("checkpoint: a mismatched run is refused and left untouched", "[checkpoint]") {
  TempDir dir;
  Run sgd(Opt::SGD, 3);
  optim::Progress at;
  sgd.train(at, 1, 2);
  const std::string path = dir / "sgd.safetensors";
  optim::save_checkpoint(path, sgd.parts(), at);

  Run adam(Opt::Adam, 4);
  const NamedTensors before = adam.model->state_dict();
  std::vector<Tensor> copies;
  for (const auto& [n, t] : before) copies.push_back(t.clone());
  CHECK_THAT(error_of<ValueError>([&] { optim::load_checkpoint(path, adam.parts()); }),
             Contains(path) && Contains("written by a run with SGD, this run uses Adam"));

  Run other_batch(Opt::SGD, 5);
  other_batch.loader = std::make_unique<data::DataLoader>(
      data::TensorDataset(randn({90, 4}), randint(0, 3, {90})),
      data::DataLoaderOptions{32, true, false, 7});
  CHECK_THAT(error_of<ValueError>([&] { optim::load_checkpoint(path, other_batch.parts()); }),
             Contains("loader.batch_size is 16 in the checkpoint and 32 in this run"));

  // A model of another shape: the optimizer and the model keep their values.
  auto wide = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8),
                                               std::make_shared<nn::ReLU>(),
                                               std::make_shared<nn::Dropout>(0.2),
                                               std::make_shared<nn::Linear>(8, 3));
  const Tensor w = wide->parameters()[0].clone();
  optim::SGD wide_opt(wide->parameters(), {0.1});
  optim::TrainingParts parts{wide.get(), &wide_opt, nullptr, {}};
  const std::string msg = error_of<ValueError>([&] { optim::load_checkpoint(path, parts); });
  CHECK_THAT(msg, Contains("the model does not match") && Contains("0.weight: shape [16, 4]"));
  CHECK(same_bits(wide->parameters()[0], w));

  // A plain weights file is not a checkpoint.
  save(sgd.model->state_dict(), dir / "weights.safetensors");
  CHECK_THAT(error_of<IOError>([&] { optim::load_checkpoint(dir / "weights.safetensors", sgd.parts()); }),
             Contains("not an ember training checkpoint"));
}

TEST_CASE("optimizer state_dict: round trip and errors", "[checkpoint][optim]") {
  Run a(Opt::SGD, 6);
  optim::Progress at;
  a.train(at, 1, 3);
  const NamedTensors state = a.opt->state_dict();
  Run b(Opt::SGD, 7);
  b.opt->load_state_dict(state);
  CHECK(same_state(b.opt->state_dict(), state));
  // The loaded buffers are copies, not aliases of the dict's tensors.
  const auto& sgd = dynamic_cast<const optim::SGD&>(*b.opt);
  auto index_of = [&](const std::string& key) {
    for (size_t i = 0; i < state.size(); ++i)
      if (state[i].first == key) return i;
    FAIL("no " << key << " in the state");
    return state.size();
  };
  const size_t buffer0 = index_of("state.0.momentum_buffer");
  CHECK_FALSE(sgd.momentum_buffer(0).storage() == state[buffer0].second.storage());

  NamedTensors bad = state;
  bad.emplace_back("state.9.momentum_buffer", zeros({1}));
  bad.emplace_back("state.x.momentum_buffer", zeros({1}));
  bad.emplace_back("state.0.velocity", zeros({16, 4}));
  bad[buffer0].second = zeros({2, 2});  // state.0.momentum_buffer of the wrong shape
  const std::string msg = error_of<ValueError>([&] { b.opt->load_state_dict(bad); });
  CHECK_THAT(msg, Contains("4 problems"));
  CHECK_THAT(msg, Contains("state.9.momentum_buffer' is for parameter 9 but the optimizer has 4"));
  CHECK_THAT(msg, Contains("state.x.momentum_buffer' is not of the form"));
  CHECK_THAT(msg, Contains("state.0.velocity: SGD keeps only a momentum_buffer"));
  CHECK_THAT(msg, Contains("state.0.momentum_buffer has shape [2, 2] but parameter 0 has shape [16, 4]"));
  CHECK(same_state(b.opt->state_dict(), state));  // unchanged

  NamedTensors neg = state;
  neg[index_of("param_groups.0.momentum")].second = full({}, -1.0, kFloat64);
  CHECK_THAT(error_of<ValueError>([&] { b.opt->load_state_dict(neg); }),
             Contains("momentum must be >= 0"));
}

TEST_CASE("LR scheduler state_dict: round trip", "[checkpoint][optim]") {
  Tensor p = zeros({1}, TensorOptions().requires_grad());
  optim::SGD opt({p}, {0.8});
  optim::StepLR s(opt, 2, 0.5);
  for (int i = 0; i < 5; ++i) s.step();
  optim::SGD opt2({p}, {0.3});
  optim::StepLR s2(opt2, 2, 0.5);
  s2.load_state_dict(s.state_dict());
  CHECK(s2.last_epoch() == 5);
  CHECK(s2.base_lrs() == std::vector<double>{0.8});
  CHECK(s2.get_last_lr() == s.get_last_lr());
  CHECK_THROWS_AS(s2.load_state_dict({{"last_epoch", full({}, 1.0, kInt64)}}), ValueError);
}

TEST_CASE("RNG state: saving and restoring replays the same numbers", "[checkpoint][random]") {
  manual_seed(42);
  (void)randn({17});
  const Tensor state = get_rng_state();
  CHECK(state.dtype() == kUInt8);
  CHECK(state.shape() == Shape{16});
  const Tensor a = randn({5});
  const Tensor b = rand({3, 3});
  manual_seed(7);
  set_rng_state(state);
  CHECK(same_bits(randn({5}), a));
  CHECK(same_bits(rand({3, 3}), b));
  CHECK_THROWS_AS(set_rng_state(zeros({16})), ValueError);
}

TEST_CASE("RNG state: CUDA random tensors replay after a restore", "[checkpoint][random][cuda]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  manual_seed(5);
  const Tensor state = get_rng_state();
  const Tensor a = randn({1000}, Device("cuda"));
  const Tensor b = rand({7}, Device("cuda"));
  (void)randn({3});
  set_rng_state(state);
  CHECK(same_bits(randn({1000}, Device("cuda")), a));
  CHECK(same_bits(rand({7}, Device("cuda")), b));
}

TEST_CASE("checkpoint: a CUDA run resumes from a checkpoint written by a CUDA run", "[checkpoint][cuda]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  TempDir dir;
  auto make = [](uint64_t seed) {
    manual_seed(seed);
    auto m = std::make_shared<nn::Linear>(5, 3);
    m->to(Device("cuda"));
    return m;
  };
  auto a = make(1);
  optim::AdamOptions o;
  o.lr = 0.1;
  optim::Adam opt_a(a->parameters(), o);
  const Tensor x = randn({8, 5}, Device("cuda"));
  for (int i = 0; i < 3; ++i) {
    opt_a.zero_grad();
    (*a)(x).pow(2.0).sum().backward();
    opt_a.step();
  }
  optim::save_checkpoint(dir / "gpu.safetensors", {a.get(), &opt_a, nullptr, {}}, {0, 3, 3});
  auto b = make(2);
  optim::Adam opt_b(b->parameters(), o);
  optim::load_checkpoint(dir / "gpu.safetensors", {b.get(), &opt_b, nullptr, {}});
  CHECK(b->weight.is_cuda());
  CHECK(same_bits(b->weight, a->weight));
  CHECK(opt_b.state(0).exp_avg.is_cuda());
  for (int i = 0; i < 2; ++i) {
    for (auto* pair : {&opt_a, &opt_b}) {
      auto& m = pair == &opt_a ? a : b;
      pair->zero_grad();
      (*m)(x).pow(2.0).sum().backward();
      pair->step();
    }
  }
  CHECK(same_bits(b->weight, a->weight));
  CHECK(same_bits(b->bias, a->bias));
}

TEST_CASE("DataLoader::set_position replays the rest of an epoch", "[checkpoint][data]") {
  const Tensor x = arange(0, 50, 1, kInt64).reshape({50, 1});
  for (bool prefetch : {true, false}) {
    data::DataLoaderOptions o{8, true, false, 3};
    o.prefetch = prefetch;
    data::DataLoader full_run(data::TensorDataset(x, x.reshape({50})), o);
    std::vector<std::vector<int64_t>> epoch2;
    full_run.set_epoch(2);
    for (const data::Batch& b : full_run) epoch2.push_back(b.target.to_vector<int64_t>());
    REQUIRE(epoch2.size() == 7);
    data::DataLoader resumed(data::TensorDataset(x, x.reshape({50})), o);
    resumed.set_position(2, 4);
    std::vector<std::vector<int64_t>> rest;
    for (const data::Batch& b : resumed) {
      CHECK(resumed.batch_index() == 4 + static_cast<int64_t>(rest.size()));
      rest.push_back(b.target.to_vector<int64_t>());
    }
    CHECK(rest == std::vector<std::vector<int64_t>>(epoch2.begin() + 4, epoch2.end()));
    CHECK(resumed.epoch() == 2);
    int next = 0;
    for (const data::Batch& b : resumed) {  // epoch 3, from its first batch again
      (void)b;
      ++next;
    }
    CHECK(next == 7);
    resumed.set_position(5, 7);  // an epoch whose batches are all done: an empty loop
    int none = 0;
    for (const data::Batch& b : resumed) {
      (void)b;
      ++none;
    }
    CHECK(none == 0);
    CHECK_THROWS_AS(resumed.set_position(0, 8), ValueError);
  }
}

TEST_CASE("CheckpointDir: keeps the last N, finds the newest, clears stale temporary files", "[checkpoint]") {
  TempDir dir;
  const std::string folder = dir / "run";
  fs::create_directories(folder);
  test::write_bytes(folder + "/.checkpoint-000000007.safetensors.tmp-123-0", {1, 2, 3});
  test::write_bytes(folder + "/notes.txt", {'x'});
  optim::CheckpointDir ckpts(folder, /*keep_last=*/2);
  CHECK_FALSE(fs::exists(folder + "/.checkpoint-000000007.safetensors.tmp-123-0"));
  CHECK_FALSE(ckpts.latest().has_value());
  Run run(Opt::SGD, 8);
  optim::Progress at;
  for (int64_t stop : {2, 4, 11, 12}) {
    run.train(at, 3, stop);
    ckpts.save(run.parts(), at);
  }
  const std::vector<std::string> kept = ckpts.list();
  REQUIRE(kept.size() == 2);
  CHECK(fs::path(kept[0]).filename() == "checkpoint-000000011.safetensors");
  CHECK(fs::path(kept[1]).filename() == "checkpoint-000000012.safetensors");
  CHECK(*ckpts.latest() == kept[1]);
  CHECK(fs::exists(folder + "/notes.txt"));  // not ours: left alone
  CHECK_THROWS_AS(optim::CheckpointDir(folder, 0), ValueError);
}
