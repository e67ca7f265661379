// Parameter groups (optim/optimizer.h) and the state of optimizers and LR schedulers: groups
// behave as separate optimizers would, their hyper-parameters go through state_dict and
// checkpoints, states and checkpoints written before groups existed still load, and bad states
// are refused with a message that says what differs.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/ember.h"
#include "nn/nn.h"
#include "optim/checkpoint.h"
#include "optim/optim.h"
#include "test_files.h"

using namespace ember;
using Catch::Matchers::Contains;
using test::error_of;

namespace {

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

Tensor sines(const Shape& shape, double scale, double phase) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.7 * i + phase);
  return tensor(v, shape, kFloat64);
}

Tensor param(const Shape& shape, double phase) { return sines(shape, 1.0, phase).requires_grad_(); }

NamedTensors without(const NamedTensors& state, const std::string& key) {
  NamedTensors out;
  for (const auto& kv : state)
    if (kv.first != key) out.push_back(kv);
  return out;
}

const Tensor& entry(const NamedTensors& state, const std::string& key) {
  for (const auto& kv : state)
    if (kv.first == key) return kv.second;
  FAIL("no '" << key << "' in the state");
  return state.front().second;
}

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_param_groups_") {}
};

}  // namespace

// ---- groups step as separate optimizers would --------------------------------------------------

TEST_CASE("param groups: each group is updated with its own options", "[optim][param_groups]") {
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "tensor ops"));
    // Two copies of the same parameters: one optimizer with two groups, and two optimizers.
    Tensor a1 = param({5, 3}, 0.1), b1 = param({3}, 0.7);
    Tensor a2 = param({5, 3}, 0.1), b2 = param({3}, 0.7);
    optim::SGDOptions decay{0.1, 0.9, 0.0, 0.05};
    decay.fused = fused;
    optim::SGDOptions plain = decay;
    plain.lr = 0.03;
    plain.weight_decay = 0.0;
    plain.nesterov = true;
    optim::SGD grouped({{{a1}, decay}, {{b1}, plain}});
    optim::SGD only_a({a2}, decay), only_b({b2}, plain);

    optim::AdamOptions ad;
    ad.lr = 0.01;
    ad.weight_decay = 0.1;
    ad.fused = fused;
    optim::AdamOptions ams = ad;
    ams.lr = 0.002;
    ams.amsgrad = true;
    ams.beta1 = 0.8;
    Tensor c1 = param({4, 2}, 1.3), d1 = param({2}, 2.1);
    Tensor c2 = param({4, 2}, 1.3), d2 = param({2}, 2.1);
    optim::AdamW adamw_grouped({{{c1}, {0.01, 0.9, 0.999, 1e-8, 0.1, false, fused}},
                                {{d1}, {0.003, 0.9, 0.99, 1e-8, 0.0, false, fused}}});
    optim::AdamW adamw_c({c2}, {0.01, 0.9, 0.999, 1e-8, 0.1, false, fused});
    optim::AdamW adamw_d({d2}, {0.003, 0.9, 0.99, 1e-8, 0.0, false, fused});
    Tensor e1 = param({6}, 0.4), f1 = param({2, 2}, 0.9);
    Tensor e2 = param({6}, 0.4), f2 = param({2, 2}, 0.9);
    optim::Adam adam_grouped({{{e1}, ad}, {{f1}, ams}});
    optim::Adam adam_e({e2}, ad), adam_f({f2}, ams);

    for (int k = 0; k < 4; ++k) {
      for (Tensor* t : {&a1, &a2}) t->set_grad(sines({5, 3}, 0.5, 1.0 + k));
      for (Tensor* t : {&b1, &b2}) t->set_grad(sines({3}, 0.3, 2.0 + k));
      for (Tensor* t : {&c1, &c2}) t->set_grad(sines({4, 2}, 0.4, 3.0 + k));
      for (Tensor* t : {&d1, &d2}) t->set_grad(sines({2}, 0.2, 4.0 + k));
      for (Tensor* t : {&e1, &e2}) t->set_grad(sines({6}, 0.6, 5.0 + k));
      for (Tensor* t : {&f1, &f2}) t->set_grad(sines({2, 2}, 0.7, 6.0 + k));
      grouped.step();
      only_a.step();
      only_b.step();
      adamw_grouped.step();
      adamw_c.step();
      adamw_d.step();
      adam_grouped.step();
      adam_e.step();
      adam_f.step();
    }
    CHECK(vals(a1) == vals(a2));
    CHECK(vals(b1) == vals(b2));
    CHECK(vals(c1) == vals(c2));
    CHECK(vals(d1) == vals(d2));
    CHECK(vals(e1) == vals(e2));
    CHECK(vals(f1) == vals(f2));
    CHECK(vals(a1) != vals(sines({5, 3}, 1.0, 0.1)));  // something happened
  }
}

TEST_CASE("param groups: lrs, options and errors", "[optim][param_groups]") {
  Tensor w = param({3}, 0.0), b = param({2}, 1.0), x = param({4}, 2.0);
  optim::SGDOptions o{0.1, 0.9, 0.0, 5e-4};
  optim::SGDOptions no_decay = o;
  no_decay.weight_decay = 0.0;
  no_decay.lr = 0.02;
  optim::SGD opt({{{w, x}, o}, {{b}, no_decay}});
  CHECK(opt.num_param_groups() == 2);
  CHECK(opt.params().size() == 3);
  CHECK(opt.params()[1].is_same(x));  // group 0's parameters first, in order
  CHECK(opt.group_of(2) == 1);
  CHECK(opt.param_group(1).size() == 1);
  CHECK(opt.lr() == 0.1);  // group 0's
  CHECK(opt.lr(1) == 0.02);
  CHECK(opt.options(1).weight_decay == 0.0);
  CHECK(opt.options(0).weight_decay == 5e-4);
  opt.set_lr(1, 0.5);
  CHECK(opt.lr(1) == 0.5);
  CHECK(opt.lr(0) == 0.1);
  opt.set_lr(0.25);  // every group
  CHECK(opt.lr(0) == 0.25);
  CHECK(opt.lr(1) == 0.25);
  CHECK_THROWS_WITH(opt.set_lr(2, 0.1), Contains("no parameter group 2") && Contains("0 to 1"));
  CHECK_THROWS_WITH(opt.set_lr(1, -0.1), Contains("SGD: lr must be >= 0, got -0.1"));
  CHECK_THROWS_WITH(opt.lr(7), Contains("no parameter group 7"));

  // The same tensor in two groups, a bad option in one group, no parameters at all.
  CHECK_THROWS_WITH(optim::SGD({{{w}, o}, {{w}, o}}),
                    Contains("appears twice") && Contains("two parameter groups"));
  optim::SGDOptions bad = o;
  bad.momentum = -1.0;
  CHECK_THROWS_WITH(optim::SGD({{{w}, o}, {{b}, bad}}), Contains("momentum must be >= 0"));
  CHECK_THROWS_WITH(optim::SGD(std::vector<optim::SGDParamGroup>{}),
                    Contains("empty parameter list"));
  optim::AdamOptions neg;
  neg.lr = -1.0;
  CHECK_THROWS_WITH(optim::Adam({{{w}, {}}, {{b}, neg}}), Contains("Adam: lr must be >= 0"));
}

// ---- optimizer state -------------------------------------------------------------------------

TEST_CASE("param groups: state_dict round trip, then identical steps", "[optim][param_groups]") {
  auto make = [](std::vector<Tensor>& p) {
    p = {param({3, 2}, 0.3), param({2}, 0.8), param({4}, 1.9)};
    optim::AdamOptions a;
    a.lr = 0.05;
    optim::AdamOptions b = a;
    b.lr = 0.001;
    b.weight_decay = 0.2;
    b.amsgrad = true;
    return std::make_unique<optim::Adam>(
        std::vector<optim::AdamParamGroup>{{{p[0], p[1]}, a}, {{p[2]}, b}});
  };
  std::vector<Tensor> p1, p2;
  auto o1 = make(p1);
  auto o2 = make(p2);
  auto grads = [](std::vector<Tensor>& p, int k) {
    for (size_t i = 0; i < p.size(); ++i) p[i].set_grad(sines(p[i].shape(), 0.5, 0.3 * k + i));
  };
  for (int k = 0; k < 3; ++k) {
    grads(p1, k);
    o1->step();
  }
  o1->set_lr(1, 0.004);
  const NamedTensors state = o1->state_dict();
  CHECK(vals(entry(state, "param_groups.0.params")) == std::vector<double>{0, 1});
  CHECK(vals(entry(state, "param_groups.1.params")) == std::vector<double>{2});
  CHECK(entry(state, "param_groups.1.lr").item() == 0.004);
  CHECK(entry(state, "param_groups.1.amsgrad").item() == 1.0);
  CHECK(entry(state, "param_groups.0.amsgrad").item() == 0.0);
  for (size_t i = 0; i < p1.size(); ++i) p2[i].set_data(p1[i].detach().clone());
  o2->load_state_dict(state);
  CHECK(o2->lr(1) == 0.004);
  CHECK(o2->options(1).amsgrad);
  CHECK(o2->state(2).max_exp_avg_sq.defined());
  for (int k = 3; k < 6; ++k) {
    grads(p1, k);
    grads(p2, k);
    o1->step();
    o2->step();
  }
  for (size_t i = 0; i < p1.size(); ++i) CHECK(vals(p1[i]) == vals(p2[i]));
}

TEST_CASE("param groups: a state of other groups is refused and nothing changes",
          "[optim][param_groups]") {
  Tensor a = param({2}, 0.0), b = param({3}, 1.0), c = param({1}, 2.0);
  optim::SGD two({{{a, b}, {0.1, 0.9}}, {{c}, {0.01, 0.9}}});
  optim::SGD one({a, b, c}, {0.3, 0.9});
  optim::SGD sizes({{{a}, {0.1, 0.9}}, {{b, c}, {0.01, 0.9}}});
  const NamedTensors one_before = one.state_dict();

  std::string msg = error_of<ValueError>([&] { one.load_state_dict(two.state_dict()); });
  CHECK_THAT(msg, Contains("SGD.load_state_dict: nothing was loaded") &&
                      Contains("the state has 2 parameter groups") && Contains("this SGD has 1") &&
                      Contains("same parameter groups"));
  CHECK(one.lr() == 0.3);

  msg = error_of<ValueError>([&] { sizes.load_state_dict(two.state_dict()); });
  CHECK_THAT(msg, Contains("param_groups.0.params lists 2 parameters, this optimizer's group 0 "
                           "has 1"));
  CHECK_THAT(msg, Contains("param_groups.1.params lists 1 parameters"));
  CHECK(sizes.lr(1) == 0.01);

  // A 2-group state without its params lists (as no ember writes) is refused too.
  NamedTensors stripped =
      without(without(two.state_dict(), "param_groups.0.params"), "param_groups.1.params");
  CHECK_THAT(error_of<ValueError>([&] { sizes.load_state_dict(stripped); }),
             Contains("missing key 'param_groups.0.params'"));

  NamedTensors neg = two.state_dict();
  for (auto& kv : neg)
    if (kv.first == "param_groups.1.lr") kv.second = full({}, -2.0, kFloat64);
  optim::SGD same({{{a, b}, {0.2, 0.9}}, {{c}, {0.03, 0.9}}});
  CHECK_THAT(error_of<ValueError>([&] { same.load_state_dict(neg); }),
             Contains("SGD: lr must be >= 0, got -2"));
  CHECK(same.lr(1) == 0.03);
  same.load_state_dict(two.state_dict());
  CHECK(same.lr(1) == 0.01);
}

// The layout ember wrote before parameter groups: param_groups.0.* without .params.
TEST_CASE("param groups: optimizer states of the one-group layout still load",
          "[optim][param_groups][checkpoint]") {
  Tensor a = param({2}, 0.0), b = param({3}, 1.0);
  const auto f64 = [](double v) { return full({}, v, kFloat64); };
  const NamedTensors old_sgd = {{"param_groups.0.lr", f64(0.05)},
                                {"param_groups.0.momentum", f64(0.8)},
                                {"param_groups.0.dampening", f64(0.1)},
                                {"param_groups.0.weight_decay", f64(1e-3)},
                                {"param_groups.0.nesterov", full({}, 0.0, kBool)},
                                {"state.1.momentum_buffer", sines({3}, 0.25, 0.5)}};
  optim::SGD sgd({a, b}, {0.1});
  sgd.load_state_dict(old_sgd);
  CHECK(sgd.lr() == 0.05);
  CHECK(sgd.options().momentum == 0.8);
  CHECK(sgd.options().dampening == 0.1);
  CHECK(vals(sgd.momentum_buffer(1)) == vals(sines({3}, 0.25, 0.5)));
  CHECK_FALSE(sgd.momentum_buffer(0).defined());
  CHECK_FALSE(sgd.initial_lr(0).has_value());

  const NamedTensors old_adam = {{"param_groups.0.lr", f64(0.002)},
                                 {"param_groups.0.betas", tensor({0.8, 0.99}, {2}, kFloat64)},
                                 {"param_groups.0.eps", f64(1e-7)},
                                 {"param_groups.0.weight_decay", f64(0.0)},
                                 {"param_groups.0.amsgrad", full({}, 0.0, kBool)},
                                 {"state.0.step", full({}, 4.0, kInt64)},
                                 {"state.0.exp_avg", sines({2}, 0.1, 0.0)},
                                 {"state.0.exp_avg_sq", sines({2}, 0.1, 0.0).abs()}};
  optim::Adam adam({a, b}, {});
  adam.load_state_dict(old_adam);
  CHECK(adam.lr() == 0.002);
  CHECK(adam.options().beta1 == 0.8);
  CHECK(adam.state(0).step == 4);
  CHECK(adam.state(1).step == 0);

  // Into an optimizer with two groups it cannot go: it does not say how to split them.
  optim::SGD grouped({{{a}, {0.1}}, {{b}, {0.1}}});
  CHECK_THAT(error_of<ValueError>([&] { grouped.load_state_dict(old_sgd); }),
             Contains("the state has 1 parameter groups") && Contains("this SGD has 2"));
}

// A checkpoint file as ember wrote it before parameter groups and chainable schedulers: the
// optimizer without param_groups.0.params and initial_lr, the scheduler as {last_epoch, base_lr}.
TEST_CASE("checkpoint: a checkpoint of the old layout loads and training goes on",
          "[optim][param_groups][checkpoint]") {
  TempDir dir;
  manual_seed(3);
  auto model = std::make_shared<nn::Linear>(3, 2);
  NamedTensors tensors;
  for (const auto& [k, t] : model->state_dict()) tensors.emplace_back("model." + k, t);
  const auto f64 = [](double v) { return full({}, v, kFloat64); };
  // StepLR(step_size 2, gamma 0.5) from lr 0.4 after 5 epochs: the closed form gave 0.1.
  tensors.emplace_back("optimizer.param_groups.0.lr", f64(0.1));
  tensors.emplace_back("optimizer.param_groups.0.momentum", f64(0.9));
  tensors.emplace_back("optimizer.param_groups.0.dampening", f64(0.0));
  tensors.emplace_back("optimizer.param_groups.0.weight_decay", f64(0.0));
  tensors.emplace_back("optimizer.param_groups.0.nesterov", full({}, 0.0, kBool));
  tensors.emplace_back("optimizer.state.0.momentum_buffer", sines({2, 3}, 0.1, 0.2));
  tensors.emplace_back("scheduler.last_epoch", full({}, 5.0, kInt64));
  tensors.emplace_back("scheduler.base_lr", f64(0.4));
  tensors.emplace_back("rng.state", get_rng_state());
  const std::string path = dir / "old.safetensors";
  save(tensors, path,
       {{"format", "pt"},
        {"ember_checkpoint", "1"},
        {"epoch", "5"},
        {"batch", "0"},
        {"step", "40"},
        {"optimizer", "SGD"}});

  manual_seed(4);
  auto fresh = std::make_shared<nn::Linear>(3, 2);
  optim::SGD opt(fresh->parameters(), {0.4, 0.9});
  optim::StepLR sched(opt, 2, 0.5);
  const optim::Progress at = optim::load_checkpoint(path, {fresh.get(), &opt, &sched, {}});
  CHECK(at.step == 40);
  CHECK(opt.lr() == 0.1);
  CHECK(opt.options().momentum == 0.9);
  CHECK(vals(opt.momentum_buffer(0)) == vals(sines({2, 3}, 0.1, 0.2).to(kFloat32)));
  CHECK(sched.last_epoch() == 5);
  CHECK(sched.base_lrs() == std::vector<double>{0.4});
  CHECK(sched.get_last_lr() == std::vector<double>{0.1});
  sched.step();  // epoch 6: a decay
  CHECK(opt.lr() == 0.05);
  sched.step();
  CHECK(opt.lr() == 0.05);

  // The same old scheduler state into a CosineAnnealingLR, and refused by one without a closed
  // form.
  optim::SGD opt2(fresh->parameters(), {0.4});
  optim::CosineAnnealingLR cos(opt2, 10);
  cos.load_state_dict({{"last_epoch", full({}, 5.0, kInt64)}, {"base_lr", f64(0.4)}});
  CHECK(cos.get_last_lr()[0] == Approx(0.2).epsilon(1e-15));
  optim::LambdaLR lambda(opt2, [](int64_t) { return 1.0; });
  CHECK_THAT(
      error_of<ValueError>([&] {
        lambda.load_state_dict({{"last_epoch", full({}, 5.0, kInt64)}, {"base_lr", f64(0.4)}});
      }),
      Contains("old StepLR or CosineAnnealingLR state"));
}

// ---- scheduler state ------------------------------------------------------------------------

namespace {
// Two identical optimizers with two groups; `make` builds the scheduler under test on one.
struct Pair {
  Tensor a1 = param({2}, 0.0), b1 = param({2}, 1.0), a2 = param({2}, 0.0), b2 = param({2}, 1.0);
  optim::SGD o1{{{{a1}, {0.1, 0.9}}, {{b1}, {0.02, 0.9}}}};
  optim::SGD o2{{{{a2}, {0.1, 0.9}}, {{b2}, {0.02, 0.9}}}};
};

std::vector<double> lrs(const optim::Optimizer& o) {
  std::vector<double> out;
  for (size_t g = 0; g < o.num_param_groups(); ++g) out.push_back(o.lr(g));
  return out;
}

void step(optim::LRScheduler& s, int k) {
  if (auto* p = dynamic_cast<optim::ReduceLROnPlateau*>(&s)) {
    p->step(1.0 / (1 + k % 3));  // improves, then stalls
  } else {
    s.step();
  }
}
}  // namespace

TEST_CASE("schedulers: state_dict round trip continues the same schedule",
          "[optim][scheduler][checkpoint]") {
  using Make = std::function<std::shared_ptr<optim::LRScheduler>(optim::Optimizer&)>;
  optim::OneCycleLROptions oc;
  oc.total_steps = 30;
  oc.three_phase = true;
  optim::ReduceLROnPlateauOptions rp;
  rp.patience = 1;
  rp.cooldown = 1;
  const std::vector<std::pair<const char*, Make>> makers = {
      {"StepLR", [](optim::Optimizer& o) { return std::make_shared<optim::StepLR>(o, 3, 0.5); }},
      {"MultiStepLR",
       [](optim::Optimizer& o) {
         return std::make_shared<optim::MultiStepLR>(o, std::vector<int64_t>{2, 7, 7}, 0.5);
       }},
      {"ExponentialLR",
       [](optim::Optimizer& o) { return std::make_shared<optim::ExponentialLR>(o, 0.9); }},
      {"LinearLR",
       [](optim::Optimizer& o) { return std::make_shared<optim::LinearLR>(o, 0.2, 1.0, 6); }},
      {"CosineAnnealingLR",
       [](optim::Optimizer& o) { return std::make_shared<optim::CosineAnnealingLR>(o, 5, 1e-3); }},
      {"LambdaLR",
       [](optim::Optimizer& o) {
         return std::make_shared<optim::LambdaLR>(o, [](int64_t e) { return 1.0 / (1 + e); });
       }},
      {"OneCycleLR",
       [&](optim::Optimizer& o) { return std::make_shared<optim::OneCycleLR>(o, 0.5, oc); }},
      {"ReduceLROnPlateau",
       [&](optim::Optimizer& o) { return std::make_shared<optim::ReduceLROnPlateau>(o, rp); }},
      {"SequentialLR",
       [](optim::Optimizer& o) {
         auto w = std::make_shared<optim::LinearLR>(o, 0.1, 1.0, 3);
         auto c = std::make_shared<optim::CosineAnnealingLR>(o, 8);
         return std::make_shared<optim::SequentialLR>(
             o, std::vector<std::shared_ptr<optim::LRScheduler>>{w, c}, std::vector<int64_t>{3});
       }},
      {"CyclicLR",
       [](optim::Optimizer& o) {
         optim::CyclicLROptions c;
         c.step_size_up = 3;
         c.step_size_down = 2;
         c.mode = "triangular2";
         return std::make_shared<optim::CyclicLR>(o, 0.01, 0.2, c);
       }},
      {"CosineAnnealingWarmRestarts",
       [](optim::Optimizer& o) {
         return std::make_shared<optim::CosineAnnealingWarmRestarts>(o, 2, 2, 1e-3);
       }},
      {"ChainedScheduler",
       [](optim::Optimizer& o) {
         auto s = std::make_shared<optim::StepLR>(o, 2, 0.5);
         auto e = std::make_shared<optim::ExponentialLR>(o, 0.95);
         return std::make_shared<optim::ChainedScheduler>(
             std::vector<std::shared_ptr<optim::LRScheduler>>{s, e});
       }},
  };
  for (const auto& [name, make] : makers) {
    INFO(name);
    Pair p;
    auto s1 = make(p.o1);
    CHECK(s1->name() == name);
    for (int k = 0; k < 5; ++k) step(*s1, k);
    // A fresh run: its own scheduler at epoch 0, then both states loaded.
    auto s2 = make(p.o2);
    const NamedTensors state = s1->state_dict();
    p.o2.load_state_dict(p.o1.state_dict());
    s2->load_state_dict(state);
    CHECK(s2->last_epoch() == s1->last_epoch());
    CHECK(s2->get_last_lr() == s1->get_last_lr());
    CHECK(p.o2.momentum(0) == p.o1.momentum(0));
    for (int k = 5; k < 12; ++k) {
      step(*s1, k);
      step(*s2, k);
      CHECK(lrs(p.o2) == lrs(p.o1));
      CHECK(p.o2.momentum(1) == p.o1.momentum(1));
    }
    // A bad state: an extra key and a missing one; nothing changes.
    NamedTensors bad = without(state, state.front().first);
    bad.emplace_back("no_such_field", full({}, 1.0, kFloat64));
    const NamedTensors before = s2->state_dict();
    const std::string msg = error_of<ValueError>([&] { s2->load_state_dict(bad); });
    CHECK_THAT(msg, Contains(std::string(name) + ".load_state_dict: nothing was loaded") &&
                        Contains("missing key '" + state.front().first + "'") &&
                        Contains("unexpected key 'no_such_field'"));
    const NamedTensors after = s2->state_dict();
    REQUIRE(after.size() == before.size());
    for (size_t i = 0; i < after.size(); ++i)
      CHECK(vals(after[i].second) == vals(before[i].second));
  }
}

TEST_CASE("schedulers: loaded settings are checked, and a bad one leaves the scheduler as it was",
          "[optim][scheduler][checkpoint]") {
  Pair p;
  optim::StepLR s(p.o1, 3, 0.5);
  NamedTensors state = s.state_dict();
  for (auto& kv : state)
    if (kv.first == "step_size") kv.second = full({}, 0.0, kInt64);
  CHECK_THAT(error_of<ValueError>([&] { s.load_state_dict(state); }),
             Contains("StepLR.load_state_dict: nothing was loaded") &&
                 Contains("step_size must be >= 1"));
  s.step();
  s.step();
  s.step();
  CHECK(p.o1.lr(0) == 0.05);  // still step_size 3

  // A state for one group into a two-group optimizer.
  Tensor w = param({2}, 0.0);
  optim::SGD single({w}, {0.1});
  optim::StepLR s1(single, 3, 0.5);
  CHECK_THAT(error_of<ValueError>([&] { s.load_state_dict(s1.state_dict()); }),
             Contains("base_lrs has 1 values, expected 2"));
}

// ---- scheduler errors ------------------------------------------------------------------------

TEST_CASE("schedulers: bad settings and misuse are errors that say what to do",
          "[optim][scheduler]") {
  Pair p;
  optim::Optimizer& o = p.o1;
  CHECK_THROWS_WITH(optim::LinearLR(o, 0.0), Contains("start_factor must be in (0, 1]"));
  CHECK_THROWS_WITH(optim::LinearLR(o, 0.5, 1.5), Contains("end_factor must be in [0, 1]"));
  CHECK_THROWS_WITH(optim::MultiStepLR(o, {-1, 3}), Contains("milestones are epochs"));
  CHECK_THROWS_WITH(optim::ExponentialLR(o, -0.5), Contains("gamma must be >= 0"));
  CHECK_THROWS_WITH(
      optim::LambdaLR(o, std::vector<optim::LambdaLR::Lambda>{[](int64_t) { return 1.0; }}),
      Contains("one lr_lambda per parameter group (2), got 1"));

  // A schedule that would give a negative lr is refused, and the lr stays.
  optim::LambdaLR neg(o, [](int64_t e) { return 1.0 - static_cast<double>(e); });
  neg.step();  // epoch 1: factor 0
  CHECK(o.lr(0) == 0.0);
  o.set_lr(0, 0.3);
  CHECK_THROWS_WITH(neg.step(), Contains("gives parameter group 0 an lr of -0.1 at epoch 2"));
  CHECK(o.lr(0) == 0.3);
  CHECK(neg.last_epoch() == 1);

  optim::ReduceLROnPlateauOptions ro;
  ro.mode = "lowest";
  CHECK_THROWS_WITH(optim::ReduceLROnPlateau(o, ro), Contains("mode must be \"min\" or \"max\""));
  ro.mode = "min";
  ro.factor = 1.0;
  CHECK_THROWS_WITH(optim::ReduceLROnPlateau(o, ro), Contains("factor must be in [0, 1)"));
  ro.factor = 0.5;
  ro.min_lrs = {0.1, 0.2, 0.3};
  CHECK_THROWS_WITH(optim::ReduceLROnPlateau(o, ro), Contains("min_lr"));
  ro.min_lrs = {};
  auto plateau = std::make_shared<optim::ReduceLROnPlateau>(o, ro);
  CHECK_THROWS_WITH(plateau->step(), Contains("call step(metric)"));

  optim::OneCycleLROptions oc;
  CHECK_THROWS_WITH(optim::OneCycleLR(o, 0.1, oc), Contains("give total_steps, or epochs"));
  oc.epochs = 2;
  oc.steps_per_epoch = 3;
  oc.anneal_strategy = "cosine";
  CHECK_THROWS_WITH(optim::OneCycleLR(o, 0.1, oc), Contains("\"cos\" or \"linear\""));
  oc.anneal_strategy = "cos";
  optim::OneCycleLR one_cycle(p.o2, 0.1, oc);
  for (int k = 0; k < 6; ++k) one_cycle.step();  // step 6 of 6 is allowed, as in PyTorch
  const double lr6 = p.o2.lr(0);
  CHECK_THROWS_WITH(one_cycle.step(), Contains("tried to step 8 times; total_steps is 6"));
  CHECK(p.o2.lr(0) == lr6);
  CHECK(one_cycle.last_epoch() == 6);

  // The step past the end with linear annealing: PyTorch extrapolates below zero there.
  Tensor w = param({2}, 0.0);
  optim::SGD lin_opt({w}, {0.1, 0.9});
  optim::OneCycleLROptions lo;
  lo.total_steps = 4;
  lo.anneal_strategy = "linear";
  lo.pct_start = 0.5;
  optim::OneCycleLR lin(lin_opt, 0.1, lo);
  for (int k = 0; k < 3; ++k) lin.step();
  CHECK(lin_opt.lr() == Approx(0.1 / 25 / 1e4));  // the end of the cycle: min_lr
  CHECK_THROWS_WITH(lin.step(), Contains("an lr of -") && Contains("past the end of the cycle"));
  CHECK(lin_opt.lr() == Approx(0.1 / 25 / 1e4));

  // SequentialLR and ChainedScheduler: members of the same optimizer, plain schedulers, the
  // right number of milestones.
  auto a = std::make_shared<optim::StepLR>(o, 2);
  auto b = std::make_shared<optim::ExponentialLR>(o, 0.9);
  auto other = std::make_shared<optim::ExponentialLR>(p.o2, 0.9);
  using List = std::vector<std::shared_ptr<optim::LRScheduler>>;
  CHECK_THROWS_WITH(optim::SequentialLR(o, List{a, b}, {}), Contains("expected 1 milestones"));
  CHECK_THROWS_WITH(optim::SequentialLR(o, List{a, b}, {0}),
                    Contains("milestones must be increasing"));
  CHECK_THROWS_WITH(optim::SequentialLR(o, List{a, other}, {3}),
                    Contains("scheduler 1 (ExponentialLR) belongs to another optimizer"));
  CHECK_THROWS_WITH(optim::SequentialLR(o, List{a, plateau}, {3}), Contains("steps on a metric"));
  CHECK_THROWS_WITH(optim::ChainedScheduler(List{a, plateau}), Contains("steps on a metric"));
  CHECK_THROWS_WITH(optim::ChainedScheduler(List{}), Contains("got no schedulers"));
  auto chained = std::make_shared<optim::ChainedScheduler>(List{a, b});
  CHECK_THROWS_WITH(optim::SequentialLR(o, List{a, chained}, {3}),
                    Contains("SequentialLR runs plain schedulers"));
}

TEST_CASE("schedulers: the first one records initial_lr, which goes into the optimizer's state",
          "[optim][scheduler][param_groups]") {
  Pair p;
  CHECK_FALSE(p.o1.initial_lr(0).has_value());
  optim::LinearLR warm(p.o1, 0.5, 1.0, 2);  // its epoch 0 halves the lrs
  CHECK(p.o1.initial_lr(0) == 0.1);
  CHECK(p.o1.lr(0) == 0.05);
  optim::ExponentialLR decay(p.o1, 0.5);  // its base_lrs are the initial lrs, not the halved ones
  CHECK(decay.base_lrs() == std::vector<double>{0.1, 0.02});
  const NamedTensors state = p.o1.state_dict();
  CHECK(entry(state, "param_groups.1.initial_lr").item() == 0.02);
  p.o2.load_state_dict(state);
  CHECK(p.o2.initial_lr(1) == 0.02);
}
