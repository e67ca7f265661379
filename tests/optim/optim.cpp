// optim: SGD, Adam, AdamW, the schedulers and clip_grad_norm_.
//
// The main check replays tests/fixtures/optim/trajectories.txt (written by
// tests/fixtures/optim/make_trajectories.py with PyTorch 1.13): a tiny float64 MLP trained for a
// few steps with each optimizer configuration (parameter groups with their own lr and weight
// decay among them), every parameter compared with PyTorch's after
// every step — once with the fused CPU kernels and once with the tensor-op path. The unit tests
// below pin down the rest: zero_grad, skipped parameters, option errors, schedules against their
// closed forms, clipping, the fused kernels against the tensor ops bit for bit, and state that
// follows a parameter moved with set_data.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/ember.h"
#include "optim/optim.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

const char* const kRegenerate =
    "regenerate it with: /usr/bin/python3 tests/fixtures/optim/make_trajectories.py";
// |ember - PyTorch| for every parameter value after every step. Both sides compute in float64 and
// agree to ~1e-14; 1e-10 leaves room for another GEMM summation order while still catching
// formula slips such as eps added before the bias correction (~1e-5 on these runs).
constexpr double kParamTol = 1e-10;

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

// ---- the fixture file -------------------------------------------------------------------------

struct Step {
  double lr = 0.0, loss = 0.0;
  bool has_norm = false;
  double total_norm = 0.0;
  std::map<std::string, std::vector<double>> values;  // parameter name -> values after the step
};

struct Run {
  std::string label;
  std::string optimizer;                // sgd, adam, adamw
  std::map<std::string, double> opt;    // lr, momentum, beta1, ...
  // Parameter groups (format 2): each group's parameter names and options; none: one group.
  std::vector<std::pair<std::vector<std::string>, std::map<std::string, double>>> groups;
  std::string scheduler = "none";       // none, steplr, cosine
  std::map<std::string, double> sched;  // step_size, gamma, T_max, eta_min
  bool clip = false;
  double max_norm = 0.0, norm_type = 2.0;
  std::vector<Step> steps;
};

struct Trajectories {
  int steps = 0;
  std::vector<std::string> params;
  std::map<std::string, Tensor> tensors;  // initial parameters, X, Y (float64)
  std::vector<Run> runs;
};

// "key value key value ..." from token k on.
std::map<std::string, double> key_values(const std::vector<std::string>& toks, size_t k) {
  std::map<std::string, double> kv;
  for (; k + 1 < toks.size(); k += 2) kv[toks[k]] = std::stod(toks[k + 1]);
  return kv;
}

Trajectories load_trajectories() {
  const std::string path = EMBER_FIXTURE_DIR "/optim/trajectories.txt";
  std::ifstream in(path);
  if (!in) FAIL("cannot open " << path << ": " << kRegenerate);
  Trajectories t;
  std::string line;
  int total = -1;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::vector<std::string> toks;
    for (std::string w; ss >> w;) toks.push_back(w);
    const std::string& kind = toks[0];
    if (kind == "trajectories") {
      REQUIRE(toks.size() == 4);
      REQUIRE(toks[1] == "2");
    } else if (kind == "steps") {
      t.steps = std::stoi(toks[1]);
    } else if (kind == "params") {
      t.params.assign(toks.begin() + 1, toks.end());
    } else if (kind == "tensor") {
      const size_t ndim = std::stoul(toks[2]);
      Shape shape;
      for (size_t d = 0; d < ndim; ++d) shape.push_back(std::stoll(toks[3 + d]));
      std::vector<double> v;
      for (size_t k = 3 + ndim; k < toks.size(); ++k) v.push_back(std::stod(toks[k]));
      t.tensors[toks[1]] = tensor(v, shape, kFloat64);
    } else if (kind == "run") {
      t.runs.emplace_back();
      t.runs.back().label = toks[1];
    } else if (kind == "optimizer") {
      t.runs.back().optimizer = toks[1];
      t.runs.back().opt = key_values(toks, 2);
    } else if (kind == "group") {
      std::vector<std::string> names;
      std::stringstream list(toks[1]);
      for (std::string n; std::getline(list, n, ',');) names.push_back(n);
      t.runs.back().groups.emplace_back(names, key_values(toks, 2));
    } else if (kind == "scheduler") {
      t.runs.back().scheduler = toks[1];
      t.runs.back().sched = key_values(toks, 2);
    } else if (kind == "clip") {
      Run& r = t.runs.back();
      r.clip = toks[1] != "none";
      if (r.clip) {
        const auto kv = key_values(toks, 1);
        r.max_norm = kv.at("max_norm");
        r.norm_type = kv.at("norm_type");  // "inf" reads as infinity
      }
    } else if (kind == "step") {
      // step <k> lr <v> loss <v> total_norm <v|none>
      REQUIRE(toks.size() == 8);
      Step s;
      s.lr = std::stod(toks[3]);
      s.loss = std::stod(toks[5]);
      s.has_norm = toks[7] != "none";
      if (s.has_norm) s.total_norm = std::stod(toks[7]);
      t.runs.back().steps.push_back(s);
    } else if (kind == "value") {
      std::vector<double> v;
      for (size_t k = 2; k < toks.size(); ++k) v.push_back(std::stod(toks[k]));
      t.runs.back().steps.back().values[toks[1]] = v;
    } else if (kind == "end") {
      REQUIRE(static_cast<int>(t.runs.back().steps.size()) == t.steps);
    } else if (kind == "total") {
      total = std::stoi(toks[1]);
    } else {
      FAIL(path << ": unknown line '" << kind << "': " << kRegenerate);
    }
  }
  if (total != static_cast<int>(t.runs.size()) || t.runs.empty()) {
    FAIL(path << " is truncated (no matching 'total' line): " << kRegenerate);
  }
  return t;
}

template <typename Options>
Options adam_options(const std::map<std::string, double>& o, bool fused) {
  Options a;
  a.lr = o.at("lr");
  a.beta1 = o.at("beta1");
  a.beta2 = o.at("beta2");
  a.eps = o.at("eps");
  a.weight_decay = o.at("weight_decay");
  a.amsgrad = o.at("amsgrad") != 0.0;
  a.fused = fused;
  return a;
}

optim::SGDOptions sgd_options(const std::map<std::string, double>& o, bool fused) {
  optim::SGDOptions s;
  s.lr = o.at("lr");
  s.momentum = o.at("momentum");
  s.dampening = o.at("dampening");
  s.weight_decay = o.at("weight_decay");
  s.nesterov = o.at("nesterov") != 0.0;
  s.fused = fused;
  return s;
}

// The run's optimizer over `p` (parameter name -> tensor), with its groups when it has some.
std::unique_ptr<optim::Optimizer> make_optimizer(const Run& r, const std::vector<Tensor>& params,
                                                 std::map<std::string, Tensor>& p, bool fused) {
  auto grouped = [&](auto make_options, auto tag) {
    using Options = decltype(tag);
    std::vector<optim::ParamGroup<Options>> groups;
    for (const auto& [names, o] : r.groups) {
      std::vector<Tensor> ps;
      for (const auto& n : names) ps.push_back(p.at(n));
      groups.push_back({ps, make_options(o)});
    }
    return groups;
  };
  const bool has_groups = !r.groups.empty();
  if (r.optimizer == "sgd") {
    if (has_groups) {
      return std::make_unique<optim::SGD>(
          grouped([&](const auto& o) { return sgd_options(o, fused); }, optim::SGDOptions{}));
    }
    return std::make_unique<optim::SGD>(params, sgd_options(r.opt, fused));
  }
  if (r.optimizer == "adam") {
    if (has_groups) {
      return std::make_unique<optim::Adam>(
          grouped([&](const auto& o) { return adam_options<optim::AdamOptions>(o, fused); },
                  optim::AdamOptions{}));
    }
    return std::make_unique<optim::Adam>(params, adam_options<optim::AdamOptions>(r.opt, fused));
  }
  REQUIRE(r.optimizer == "adamw");
  if (has_groups) {
    return std::make_unique<optim::AdamW>(
        grouped([&](const auto& o) { return adam_options<optim::AdamWOptions>(o, fused); },
                optim::AdamWOptions{}));
  }
  return std::make_unique<optim::AdamW>(params, adam_options<optim::AdamWOptions>(r.opt, fused));
}

std::unique_ptr<optim::LRScheduler> make_scheduler(const Run& r, optim::Optimizer& opt) {
  if (r.scheduler == "steplr") {
    return std::make_unique<optim::StepLR>(opt, static_cast<int64_t>(r.sched.at("step_size")),
                                           r.sched.at("gamma"));
  }
  if (r.scheduler == "cosine") {
    return std::make_unique<optim::CosineAnnealingLR>(
        opt, static_cast<int64_t>(r.sched.at("T_max")), r.sched.at("eta_min"));
  }
  REQUIRE(r.scheduler == "none");
  return nullptr;
}

// Replays one run and checks every step against PyTorch.
void replay(const Trajectories& t, const Run& r, bool fused) {
  std::map<std::string, Tensor> p;
  std::vector<Tensor> params;
  for (const auto& name : t.params) {
    p[name] = t.tensors.at(name).clone().requires_grad_();
    params.push_back(p[name]);
  }
  const Tensor& X = t.tensors.at("X");
  const Tensor& Y = t.tensors.at("Y");
  auto opt = make_optimizer(r, params, p, fused);
  REQUIRE(opt->num_param_groups() == std::max<size_t>(1, r.groups.size()));
  auto sched = make_scheduler(r, *opt);
  for (int k = 0; k < t.steps; ++k) {
    const Step& want = r.steps[static_cast<size_t>(k)];
    INFO("step " << k + 1);
    opt->zero_grad();
    const Tensor out = matmul(tanh(matmul(X, p["W1"]) + p["b1"]), p["W2"]) + p["b2"];
    const Tensor diff = out - Y;
    const Tensor loss = mean(diff * diff);
    CHECK(loss.item() == Approx(want.loss).epsilon(1e-12));
    loss.backward();
    CHECK(opt->lr() == Approx(want.lr).epsilon(1e-12));
    if (r.clip) {
      const double norm = optim::clip_grad_norm_(params, r.max_norm, r.norm_type);
      REQUIRE(want.has_norm);
      CHECK(norm == Approx(want.total_norm).epsilon(1e-12));
    }
    opt->step();
    if (sched) sched->step();
    for (const auto& name : t.params) {
      INFO("parameter " << name);
      const std::vector<double> got = vals(p[name]);
      const std::vector<double>& ref = want.values.at(name);
      REQUIRE(got.size() == ref.size());
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": ember " << got[i] << ", PyTorch " << ref[i]);
        CHECK(std::abs(got[i] - ref[i]) <= kParamTol);
      }
    }
  }
}

// Deterministic values for the unit tests.
Tensor sines(const Shape& shape, double scale, double phase, DType dtype = kFloat64) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.7 * i + phase);
  return tensor(v, shape, dtype);
}

Tensor param(const Shape& shape, double phase, DType dtype = kFloat64) {
  return sines(shape, 1.0, phase, dtype).requires_grad_();
}

}  // namespace

// ---- against PyTorch ---------------------------------------------------------------------------

TEST_CASE("optim: trajectories match PyTorch with fused kernels and with tensor ops", "[optim]") {
  const Trajectories t = load_trajectories();
  REQUIRE(t.steps >= 1);
  for (const Run& r : t.runs) {
    for (bool fused : {true, false}) {
      DYNAMIC_SECTION(r.label << (fused ? " (fused)" : " (tensor ops)")) { replay(t, r, fused); }
    }
  }
}

// ---- Optimizer basics --------------------------------------------------------------------------

TEST_CASE("optim: zero_grad sets grads to none by default or fills them with zeros",
          "[optim]") {
  Tensor w = param({3}, 0.1);
  optim::SGD opt({w}, {0.1});
  (w * w).sum().backward();
  REQUIRE(w.grad().defined());
  opt.zero_grad(/*set_to_none=*/false);
  REQUIRE(w.grad().defined());
  CHECK(vals(w.grad()) == std::vector<double>{0.0, 0.0, 0.0});
  opt.zero_grad();
  CHECK_FALSE(w.grad().defined());
  opt.zero_grad();  // nothing to clear: fine
  CHECK_FALSE(w.grad().defined());
}

TEST_CASE("optim: parameters without a gradient are skipped", "[optim]") {
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "tensor ops"));
    Tensor used = param({4}, 0.3);
    Tensor unused = param({2}, 1.1);
    const std::vector<double> unused_before = vals(unused);
    optim::SGDOptions so;
    so.lr = 0.1;
    so.momentum = 0.9;
    so.fused = fused;
    optim::SGD sgd({used, unused}, so);
    optim::AdamOptions ao;
    ao.fused = fused;
    optim::Adam adam({used, unused}, ao);
    (used * used).sum().backward();
    const std::vector<double> used_before = vals(used);
    sgd.step();
    adam.step();
    CHECK(vals(unused) == unused_before);
    CHECK(vals(used) != used_before);
    CHECK(sgd.momentum_buffer(0).defined());
    CHECK_FALSE(sgd.momentum_buffer(1).defined());
    CHECK(adam.state(0).step == 1);
    CHECK(adam.state(1).step == 0);
    CHECK_FALSE(adam.state(1).exp_avg.defined());
    // The update is not recorded: parameters stay leaves.
    CHECK(used.is_leaf());
    CHECK(used.requires_grad());
  }
}

TEST_CASE("optim: step() leaves the gradient itself unchanged", "[optim]") {
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "tensor ops"));
    Tensor w = param({5}, 0.2);
    (w * w * w).sum().backward();
    const std::vector<double> g = vals(w.grad());
    optim::SGDOptions so;
    so.lr = 0.1;
    so.momentum = 0.9;
    so.nesterov = true;
    so.weight_decay = 0.1;
    so.fused = fused;
    optim::SGD sgd({w}, so);
    sgd.step();
    sgd.step();
    CHECK(vals(w.grad()) == g);
    optim::AdamOptions ao;
    ao.weight_decay = 0.1;
    ao.fused = fused;
    optim::Adam adam({w}, ao);
    adam.step();
    CHECK(vals(w.grad()) == g);
  }
}

TEST_CASE("optim: the parameter list is checked", "[optim]") {
  CHECK_THROWS_WITH(optim::SGD({}, {0.1}), Contains("empty parameter list"));
  Tensor w = param({3}, 0.0);
  CHECK_THROWS_WITH(optim::SGD({w, w}, {0.1}), Contains("appears twice"));
  CHECK_THROWS_WITH(optim::Adam({Tensor()}, {}), Contains("undefined"));
  const Tensor y = w * 2.0;  // computed by an op: not a leaf
  CHECK_THROWS_AS(optim::SGD({y}, {0.1}), AutogradError);
  CHECK_THROWS_WITH(optim::SGD({y}, {0.1}), Contains("leaf") && Contains("MulBackward"));
  const Tensor labels = tensor({1, 2}, kInt64);
  CHECK_THROWS_WITH(optim::SGD({labels}, {0.1}), Contains("int64"));
}

TEST_CASE("optim: options are checked with messages that say what is wrong", "[optim]") {
  Tensor w = param({3}, 0.0);
  auto sgd = [&](optim::SGDOptions o) { optim::SGD opt({w}, o); };
  CHECK_THROWS_WITH(sgd({-0.1}), Contains("SGD: lr must be >= 0, got -0.1"));
  CHECK_THROWS_WITH(sgd({0.1, -0.5}), Contains("momentum must be >= 0"));
  CHECK_THROWS_WITH(sgd({0.1, 0.9, 0.0, -1e-4}), Contains("weight_decay must be >= 0"));
  CHECK_THROWS_WITH(sgd({0.1, 0.0, 0.0, 0.0, true}),
                    Contains("nesterov momentum needs momentum > 0 and dampening == 0"));
  CHECK_THROWS_WITH(sgd({0.1, 0.9, 0.1, 0.0, true}), Contains("dampening 0.1"));
  CHECK_NOTHROW(sgd({0.1, 0.9, 0.0, 0.0, true}));
  CHECK_THROWS_AS(sgd({std::numeric_limits<double>::quiet_NaN()}), ValueError);

  auto adam = [&](optim::AdamOptions o) { optim::Adam opt({w}, o); };
  CHECK_THROWS_WITH(adam({-1e-3}), Contains("Adam: lr must be >= 0"));
  CHECK_THROWS_WITH(adam({1e-3, 1.0}), Contains("beta1 must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(adam({1e-3, 0.9, -0.1}), Contains("beta2 must be in [0, 1)"));
  CHECK_THROWS_WITH(adam({1e-3, 0.9, 0.999, -1e-8}), Contains("eps must be >= 0"));
  CHECK_THROWS_WITH(adam({1e-3, 0.9, 0.999, 1e-8, -0.1}), Contains("weight_decay must be >= 0"));
  optim::AdamWOptions wo;
  wo.beta2 = 1.5;
  CHECK_THROWS_WITH(optim::AdamW({w}, wo), Contains("AdamW: beta2 must be in [0, 1)"));

  optim::SGD opt({w}, {0.1});
  CHECK_THROWS_WITH(opt.set_lr(-1.0), Contains("lr must be >= 0"));
  opt.set_lr(0.25);
  CHECK(opt.lr() == 0.25);
  CHECK(opt.options().lr == 0.25);
}

TEST_CASE("optim: defaults are PyTorch's", "[optim]") {
  Tensor w = param({2}, 0.0);
  optim::Adam adam({w}, {});
  CHECK(adam.lr() == 1e-3);
  CHECK(adam.options().beta1 == 0.9);
  CHECK(adam.options().beta2 == 0.999);
  CHECK(adam.options().eps == 1e-8);
  CHECK(adam.options().weight_decay == 0.0);
  optim::AdamW adamw({w}, {});
  CHECK(adamw.options().weight_decay == 1e-2);
  CHECK(adamw.name() == "AdamW");
  optim::SGD sgd({w}, {0.1});
  CHECK(sgd.options().momentum == 0.0);
  CHECK_FALSE(sgd.options().nesterov);
}

// ---- SGD and Adam against hand-computed updates ------------------------------------------------

TEST_CASE("optim: SGD momentum by hand (the first step is undamped)", "[optim]") {
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "tensor ops"));
    Tensor w = tensor({1.0, -2.0}, TensorOptions(kFloat64).requires_grad());
    optim::SGDOptions o;
    o.lr = 0.1;
    o.momentum = 0.9;
    o.dampening = 0.5;
    o.fused = fused;
    optim::SGD opt({w}, o);
    w.set_grad(tensor({0.5, 1.0}, kFloat64));
    opt.step();  // b = g = [0.5, 1]; w = [1 - 0.05, -2 - 0.1]
    CHECK(vals(opt.momentum_buffer(0)) == std::vector<double>{0.5, 1.0});
    CHECK(vals(w)[0] == Approx(0.95));
    CHECK(vals(w)[1] == Approx(-2.1));
    opt.step();  // b = 0.9 b + 0.5 g = [0.7, 1.4]; w -= 0.1 b
    CHECK(vals(opt.momentum_buffer(0))[0] == Approx(0.7));
    CHECK(vals(w)[0] == Approx(0.95 - 0.07));
    CHECK(vals(w)[1] == Approx(-2.1 - 0.14));
  }
}

TEST_CASE("optim: Adam's first step moves every weight by about lr", "[optim]") {
  // At t = 1, m / (1 - beta1) = g and sqrt(v / (1 - beta2)) = |g|: the step is lr * sign(g).
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "tensor ops"));
    Tensor w = tensor({1.0, -2.0, 3.0}, TensorOptions(kFloat64).requires_grad());
    optim::AdamOptions o;
    o.lr = 0.01;
    o.eps = 0.0;
    o.fused = fused;
    optim::Adam opt({w}, o);
    w.set_grad(tensor({0.3, -40.0, 1e-3}, kFloat64));
    opt.step();
    const std::vector<double> got = vals(w);
    CHECK(got[0] == Approx(0.99).epsilon(1e-12));
    CHECK(got[1] == Approx(-1.99).epsilon(1e-12));
    CHECK(got[2] == Approx(2.99).epsilon(1e-12));
    CHECK(opt.state(0).step == 1);
  }
}

// ---- fused kernels against tensor ops ----------------------------------------------------------

namespace {
// Runs `steps` updates of two copies of the same parameters, one through the fused kernels and
// one through tensor ops, with the same gradients, and returns both final values. A strided
// parameter (a transposed view) always takes the tensor-op path, so it is compared too.
template <typename MakeOpt>
std::pair<std::vector<double>, std::vector<double>> fused_vs_ops(DType dtype,
                                                                  const MakeOpt& make) {
  const Shape shape = {37, 129};  // odd sizes; 4773 elements
  Tensor a = sines(shape, 1.0, 0.3, dtype).requires_grad_();
  Tensor b = sines(shape, 1.0, 0.3, dtype).requires_grad_();
  auto fused = make({a}, true);
  auto ops = make({b}, false);
  for (int k = 0; k < 6; ++k) {
    const Tensor g = sines(shape, 0.5 + 0.1 * k, 1.0 + k, dtype);
    a.set_grad(g.clone());
    b.set_grad(g.clone());
    fused->step();
    ops->step();
    // A scheduler-like change of lr between steps.
    fused->set_lr(fused->lr() * 0.9);
    ops->set_lr(ops->lr() * 0.9);
  }
  return {vals(a), vals(b)};
}

std::unique_ptr<optim::Optimizer> sgd_with(const std::vector<Tensor>& p, bool fused,
                                           optim::SGDOptions o) {
  o.fused = fused;
  return std::make_unique<optim::SGD>(p, o);
}
std::unique_ptr<optim::Optimizer> adam_with(const std::vector<Tensor>& p, bool fused,
                                            optim::AdamOptions o, bool decoupled) {
  o.fused = fused;
  if (!decoupled) return std::make_unique<optim::Adam>(p, o);
  optim::AdamWOptions w;
  w.lr = o.lr;
  w.beta1 = o.beta1;
  w.beta2 = o.beta2;
  w.eps = o.eps;
  w.weight_decay = o.weight_decay;
  w.amsgrad = o.amsgrad;
  w.fused = fused;
  return std::make_unique<optim::AdamW>(p, w);
}
}  // namespace

TEST_CASE("optim: fused SGD kernel and tensor ops give identical results", "[optim]") {
  const std::vector<optim::SGDOptions> configs = {
      {0.1},                           // plain
      {0.1, 0.0, 0.0, 0.01},           // weight decay, no momentum
      {0.1, 0.9},                      // momentum
      {0.05, 0.9, 0.3, 0.02},          // momentum, dampening, weight decay
      {0.05, 0.8, 0.0, 0.01, true},    // nesterov
  };
  for (DType dtype : {kFloat32, kFloat64}) {
    for (size_t c = 0; c < configs.size(); ++c) {
      INFO(dtype << ", config " << c);
      const auto [fused, ops] = fused_vs_ops(dtype, [&](const std::vector<Tensor>& p, bool f) {
        return sgd_with(p, f, configs[c]);
      });
      CHECK(fused == ops);
    }
  }
}

// Both paths take a correctly rounded sqrt (ember builds Eigen with EIGEN_FAST_MATH=0) and do
// the same sequence of roundings, so they must agree bit for bit.
TEST_CASE("optim: fused Adam kernel and tensor ops agree bit for bit", "[optim]") {
  struct Config {
    optim::AdamOptions o;
    bool decoupled;
  };
  const std::vector<Config> configs = {
      {{1e-2}, false},
      {{1e-2, 0.8, 0.95, 1e-6, 0.1}, false},               // L2 weight decay
      {{1e-2, 0.9, 0.5, 1e-8, 0.0, true}, false},          // amsgrad
      {{1e-2, 0.9, 0.999, 1e-8, 0.1}, true},               // AdamW
      {{1e-2, 0.9, 0.5, 1e-8, 0.2, true}, true},           // AdamW + amsgrad
  };
  for (DType dtype : {kFloat32, kFloat64}) {
    for (size_t c = 0; c < configs.size(); ++c) {
      INFO(dtype << ", config " << c);
      const auto [fused, ops] = fused_vs_ops(dtype, [&](const std::vector<Tensor>& p, bool f) {
        return adam_with(p, f, configs[c].o, configs[c].decoupled);
      });
      CHECK(fused == ops);
    }
  }
}

TEST_CASE("optim: a strided parameter takes the tensor-op path and gets the same update",
          "[optim]") {
  // p_t is a transposed view (not contiguous), p_c a contiguous copy of the same values.
  for (bool adam : {false, true}) {
    INFO((adam ? "Adam" : "SGD"));
    Tensor p_t = sines({9, 7}, 1.0, 0.4).t().requires_grad_();
    Tensor p_c = p_t.detach().contiguous().requires_grad_();
    REQUIRE_FALSE(p_t.is_contiguous());
    std::unique_ptr<optim::Optimizer> ot, oc;
    if (adam) {
      ot = adam_with({p_t}, true, {1e-2, 0.9, 0.5, 1e-8, 0.1, true}, false);
      oc = adam_with({p_c}, true, {1e-2, 0.9, 0.5, 1e-8, 0.1, true}, false);
    } else {
      ot = sgd_with({p_t}, true, {0.1, 0.9, 0.0, 0.01, true});
      oc = sgd_with({p_c}, true, {0.1, 0.9, 0.0, 0.01, true});
    }
    for (int k = 0; k < 3; ++k) {
      const Tensor g = sines({7, 9}, 1.0, 2.0 + k);
      p_t.set_grad(g.clone());
      p_c.set_grad(g.clone());
      ot->step();
      oc->step();
    }
    CHECK(vals(p_t) == vals(p_c));
  }
}

// ---- state follows the parameter ---------------------------------------------------------------

TEST_CASE("optim: state is created with the parameter's dtype at its first step", "[optim]") {
  // The optimizer is built while the parameter is float64; the model is then converted in place
  // (as Module::to(kFloat32) does), before any step.
  Tensor w = param({4}, 0.5);
  optim::SGD sgd({w}, {0.1, 0.9});
  optim::Adam adam({w}, {});
  w.set_data(w.detach().to(kFloat32));
  w.set_grad(sines({4}, 1.0, 0.0, kFloat32));
  sgd.step();
  adam.step();
  CHECK(sgd.momentum_buffer(0).dtype() == kFloat32);
  CHECK(adam.state(0).exp_avg.dtype() == kFloat32);
  CHECK(adam.state(0).exp_avg_sq.dtype() == kFloat32);
  CHECK(w.dtype() == kFloat32);

  // Moving it back after state exists: the state follows at the next step.
  w.set_data(w.detach().to(kFloat64));
  w.set_grad(sines({4}, 1.0, 0.0, kFloat64));
  sgd.step();
  adam.step();
  CHECK(sgd.momentum_buffer(0).dtype() == kFloat64);
  CHECK(adam.state(0).exp_avg.dtype() == kFloat64);
  CHECK(adam.state(0).step == 2);
}

TEST_CASE("optim: the optimizer sees parameters replaced with set_data", "[optim]") {
  Tensor w = param({3}, 0.0);
  optim::SGD opt({w}, {0.5});
  w.set_data(tensor({1.0, 2.0, 3.0}, kFloat64));
  w.set_grad(tensor({1.0, 1.0, 1.0}, kFloat64));
  opt.step();
  CHECK(vals(opt.params()[0]) == std::vector<double>{0.5, 1.5, 2.5});
  CHECK(opt.params()[0].is_same(w));
}

// ---- schedulers --------------------------------------------------------------------------------

TEST_CASE("optim: StepLR untouched follows base_lr * gamma^(epoch / step_size)", "[optim]") {
  Tensor w = param({2}, 0.0);
  optim::SGD opt({w}, {0.2});
  optim::StepLR sched(opt, /*step_size=*/3, /*gamma=*/0.5);
  CHECK(sched.last_epoch() == 0);
  CHECK(sched.get_last_lr() == std::vector<double>{0.2});
  CHECK(opt.lr() == 0.2);
  for (int epoch = 1; epoch <= 10; ++epoch) {
    sched.step();
    const double want = 0.2 * std::pow(0.5, epoch / 3);
    CHECK(sched.last_epoch() == epoch);
    CHECK(sched.get_last_lr()[0] == Approx(want).epsilon(1e-15));
    CHECK(opt.lr() == sched.get_last_lr()[0]);
  }
  CHECK_THROWS_WITH(optim::StepLR(opt, 0), Contains("step_size must be >= 1"));
}

// The schedule the closed form gave before schedulers stepped from the current lr: an lr nobody
// else touches still follows it, up to rounding.
TEST_CASE("optim: CosineAnnealingLR untouched follows the closed form", "[optim]") {
  Tensor w = param({2}, 0.0);
  optim::Adam opt({w}, {0.1});
  const double eta_min = 0.01;
  optim::CosineAnnealingLR sched(opt, /*T_max=*/4, eta_min);
  CHECK(opt.lr() == 0.1);
  const double pi = std::acos(-1.0);
  for (int epoch = 1; epoch <= 20; ++epoch) {
    sched.step();
    const double want = eta_min + (0.1 - eta_min) * (1 + std::cos(pi * epoch / 4)) / 2;
    INFO("epoch " << epoch);
    CHECK(opt.lr() == Approx(want).epsilon(1e-14));
  }
  CHECK_THROWS_WITH(optim::CosineAnnealingLR(opt, 0), Contains("T_max must be >= 1"));
}

TEST_CASE("optim: an lr set by hand carries on under the scheduler, as in PyTorch", "[optim]") {
  Tensor w = param({2}, 0.0);
  optim::SGD opt({w}, {1.0});
  optim::StepLR sched(opt, 1, 0.5);
  opt.set_lr(123.0);
  sched.step();
  CHECK(opt.lr() == 61.5);
  CHECK(sched.base_lrs() == std::vector<double>{1.0});
}

// ---- clip_grad_norm_ ---------------------------------------------------------------------------

TEST_CASE("optim: clip_grad_norm_ returns the total norm and scales gradients above max_norm",
          "[optim]") {
  Tensor a = param({2}, 0.0);
  Tensor b = param({2, 2}, 0.0);
  Tensor none = param({3}, 0.0);  // no gradient: ignored
  const std::vector<double> ga = {3.0, -4.0}, gb = {1.0, -2.0, 2.0, 0.0};
  auto set = [&] {
    a.set_grad(tensor(ga, {2}, kFloat64));
    b.set_grad(tensor(gb, {2, 2}, kFloat64));
  };
  const std::vector<Tensor> params = {a, b, none};

  SECTION("2-norm, clipped") {
    set();
    const double total = std::sqrt(9.0 + 16.0 + 1.0 + 4.0 + 4.0);  // sqrt(34)
    CHECK(optim::clip_grad_norm_(params, 1.0) == Approx(total).epsilon(1e-15));
    const double coef = 1.0 / (total + 1e-6);
    CHECK(vals(a.grad())[0] == Approx(3.0 * coef).epsilon(1e-15));
    CHECK(vals(b.grad())[1] == Approx(-2.0 * coef).epsilon(1e-15));
    // Now just under max_norm (1 - 1e-6 / total): below a slightly larger max_norm nothing
    // changes.
    const std::vector<double> before = vals(a.grad());
    CHECK(optim::clip_grad_norm_(params, 1.001) == Approx(1.0).epsilon(1e-6));
    CHECK(vals(a.grad()) == before);
  }
  SECTION("below max_norm: unchanged") {
    set();
    CHECK(optim::clip_grad_norm_(params, 10.0) == Approx(std::sqrt(34.0)));
    CHECK(vals(a.grad()) == ga);
    CHECK(vals(b.grad()) == gb);
  }
  SECTION("inf-norm is the largest |g|") {
    set();
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(optim::clip_grad_norm_(params, 2.0, inf) == 4.0);
    CHECK(vals(a.grad())[1] == Approx(-4.0 * 2.0 / (4.0 + 1e-6)).epsilon(1e-15));
  }
  SECTION("1-norm and 3-norm") {
    set();
    CHECK(optim::clip_grad_norm_(params, 100.0, 1.0) == Approx(12.0).epsilon(1e-15));
    const double cubes = 27.0 + 64.0 + 1.0 + 8.0 + 8.0;
    CHECK(optim::clip_grad_norm_(params, 100.0, 3.0) ==
          Approx(std::pow(cubes, 1.0 / 3.0)).epsilon(1e-14));
  }
  SECTION("float32 gradients") {
    Tensor f = param({2}, 0.0, kFloat32);
    f.set_grad(tensor({3.0, 4.0}, kFloat32));
    CHECK(optim::clip_grad_norm_({f}, 0.5) == Approx(5.0).epsilon(1e-6));
    CHECK(vals(f.grad())[1] == Approx(0.4).epsilon(1e-5));
  }
  SECTION("no gradients at all: 0") {
    CHECK(optim::clip_grad_norm_({none}, 1.0) == 0.0);
  }
  SECTION("non-finite norms") {
    set();
    b.set_grad(tensor({1.0, std::numeric_limits<double>::infinity(), 0.0, 0.0}, {2, 2},
                      kFloat64));
    CHECK_THROWS_WITH(optim::clip_grad_norm_(params, 1.0, 2.0, /*error_if_nonfinite=*/true),
                      Contains("inf"));
    // Without the flag the grads are scaled by 0 (and inf * 0 = NaN), as in PyTorch.
    CHECK(std::isinf(optim::clip_grad_norm_(params, 1.0)));
    CHECK(vals(a.grad())[0] == 0.0);
    CHECK(std::isnan(vals(b.grad())[1]));
  }
  SECTION("bad arguments") {
    CHECK_THROWS_WITH(optim::clip_grad_norm_(params, -1.0), Contains("max_norm must be >= 0"));
    CHECK_THROWS_WITH(optim::clip_grad_norm_(params, 1.0, 0.0), Contains("norm_type must be > 0"));
  }
}
