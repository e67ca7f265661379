// Optimizer::add_param_group, CyclicLR and CosineAnnealingWarmRestarts beyond the PyTorch
// fixture (tests/optim/schedulers.cpp replays their lrs): errors, defaults, state dicts and
// checkpoints, and CyclicLR's momentum on Adam (beta1), which PyTorch 1.13 cannot produce.
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

namespace {
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
Tensor param(const Shape& shape, double phase) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<double>(i) + phase);
  return from_vector<double>(v, shape, TensorOptions(kFloat64)).requires_grad_();
}
void set_grads(std::vector<Tensor> ps, int k) {
  for (size_t i = 0; i < ps.size(); ++i)
    ps[i].set_grad(
        full(ps[i].shape(), 0.1 * (k + 1) + 0.01 * static_cast<double>(i), ps[i].options()));
}
template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no exception");
  return "";
}
}  // namespace

TEST_CASE("add_param_group: own options or the defaults, and the new group is stepped",
          "[optim][param_groups]") {
  Tensor a = param({3}, 0.0), b = param({2}, 1.0), c = param({2}, 2.0);
  optim::SGDOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  optim::SGD opt({a}, o);
  opt.add_param_group(std::vector<Tensor>{b});  // defaults: the constructor's options
  optim::SGDOptions own;
  own.lr = 0.5;
  own.weight_decay = 0.1;
  opt.add_param_group(optim::SGDParamGroup{{c}, own});
  REQUIRE(opt.num_param_groups() == 3);
  CHECK(opt.lr(1) == 0.1);
  CHECK(opt.momentum(1) == 0.9);
  CHECK(opt.lr(2) == 0.5);
  CHECK(opt.options(2).weight_decay == 0.1);
  CHECK(opt.momentum(2) == 0.0);
  CHECK(opt.params().size() == 3);
  CHECK(opt.group_of(2) == 2);
  CHECK(opt.param_group(1).size() == 1);
  CHECK(opt.param_group(1)[0].is_same(b));
  CHECK_FALSE(opt.initial_lr(1).has_value());

  const auto c0 = vals(c);
  set_grads({a, b, c}, 0);
  opt.step();
  // plain SGD with weight decay on c: c - lr * (g + wd * c)
  const auto c1 = vals(c);
  for (size_t i = 0; i < c0.size(); ++i) CHECK(c1[i] == Approx(c0[i] - 0.5 * (0.12 + 0.1 * c0[i])));
}

TEST_CASE("add_param_group: a tensor already in a group is refused, and nothing changes",
          "[optim][param_groups]") {
  Tensor a = param({3}, 0.0), b = param({2}, 1.0);
  optim::AdamOptions o;
  optim::Adam opt({a}, o);
  CHECK_THAT(error_of<ValueError>([&] {
               opt.add_param_group(std::vector<Tensor>{b, a});
             }),
             Contains("already in a parameter group") &&
                 Contains("some parameters appear in more than one parameter group"));
  CHECK_THAT(error_of<ValueError>([&] {
               opt.add_param_group(std::vector<Tensor>{b, b});
             }),
             Contains("appears twice in the new group"));
  Tensor computed = a * 2.0;
  CHECK_THROWS_WITH(opt.add_param_group(std::vector<Tensor>{computed}), Contains("leaf"));
  optim::AdamOptions bad;
  bad.beta1 = 1.5;
  CHECK_THROWS(opt.add_param_group(optim::AdamParamGroup{{b}, bad}));
  CHECK(opt.num_param_groups() == 1);
  CHECK(opt.params().size() == 1);
  opt.add_param_group(std::vector<Tensor>{b});
  CHECK(opt.num_param_groups() == 2);
}

TEST_CASE("add_param_group: a scheduler made before refuses to step, one made after sees it",
          "[optim][param_groups][scheduler]") {
  Tensor a = param({3}, 0.0), b = param({2}, 1.0);
  optim::SGD opt({a}, {0.1});
  optim::StepLR before(opt, 2, 0.5);
  opt.add_param_group(optim::SGDParamGroup{{b}, {0.04}});
  CHECK_THROWS_WITH(before.step(), Contains("create the scheduler after adding the group"));
  optim::ExponentialLR after(opt, 0.5);
  CHECK(opt.initial_lr(1).value() == 0.04);
  after.step();
  CHECK(opt.lr(1) == 0.02);
}

TEST_CASE("add_param_group: state_dict and checkpoint round trips",
          "[optim][param_groups][checkpoint]") {
  // Two runs built the same way: model weight in the constructor's group, bias added later.
  struct Run {
    nn::Linear model{3, 2};
    std::unique_ptr<optim::Adam> opt;
    Run() {
      optim::AdamOptions o;
      o.lr = 0.01;
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{model.weight}, o);
      optim::AdamOptions b = o;
      b.lr = 0.002;
      b.amsgrad = true;
      opt->add_param_group(optim::AdamParamGroup{{model.bias}, b});
    }
    void train(int from, int to) {
      for (int k = from; k < to; ++k) {
        set_grads({model.weight, model.bias}, k);
        opt->step();
      }
    }
  };
  Run first;
  first.train(0, 3);
  const NamedTensors state = first.opt->state_dict();
  CHECK(state.size() > 0);

  Run second;
  second.model.weight.set_data(first.model.weight.detach().clone());
  second.model.bias.set_data(first.model.bias.detach().clone());
  second.opt->load_state_dict(state);
  CHECK(second.opt->options(1).amsgrad);
  CHECK(second.opt->state(1).max_exp_avg_sq.defined());

  test::TempDir dir("ember_test_add_group_");
  optim::Progress at;
  at.step = 3;
  optim::save_checkpoint(dir / "c.safetensors", {&first.model, first.opt.get()}, at);
  Run third;
  optim::load_checkpoint(dir / "c.safetensors", {&third.model, third.opt.get()});

  first.train(3, 6);
  second.train(3, 6);
  third.train(3, 6);
  CHECK(vals(second.model.weight) == vals(first.model.weight));
  CHECK(vals(second.model.bias) == vals(first.model.bias));
  CHECK(vals(third.model.weight) == vals(first.model.weight));
  CHECK(vals(third.model.bias) == vals(first.model.bias));

  // An optimizer without the added group refuses the state.
  nn::Linear model(3, 2);
  optim::Adam one({model.weight, model.bias}, optim::AdamOptions{});
  CHECK_THROWS_AS(one.load_state_dict(state), ValueError);
}

TEST_CASE("CyclicLR: cycles Adam's beta1 exactly as SGD's momentum", "[optim][scheduler]") {
  Tensor a = param({2}, 0.0), b = param({2}, 0.0);
  optim::SGD sgd({a}, {0.1, 0.9});
  optim::Adam adam({b}, optim::AdamOptions{});
  optim::CyclicLROptions o;
  o.step_size_up = 3;
  o.step_size_down = 2;
  o.mode = "exp_range";
  o.gamma = 0.97;
  o.base_momentum = 0.85;
  o.max_momentum = 0.95;
  optim::CyclicLR s1(sgd, 0.001, 0.01, o), s2(adam, 0.001, 0.01, o);
  CHECK(adam.momentum(0) == 0.95);  // epoch 0: the top of the momentum cycle
  for (int k = 0; k < 12; ++k) {
    s1.step();
    s2.step();
    CHECK(adam.momentum(0) == sgd.momentum(0));
    CHECK(adam.options(0).beta1 == sgd.options(0).momentum);
    CHECK(adam.lr(0) == sgd.lr(0));
  }
}

TEST_CASE("CyclicLR and CosineAnnealingWarmRestarts: bad settings say what to do",
          "[optim][scheduler]") {
  Tensor a = param({2}, 0.0);
  optim::SGD opt({a}, {0.1, 0.9});
  optim::CyclicLROptions o;
  o.mode = "sawtooth";
  CHECK_THROWS_WITH(optim::CyclicLR(opt, 0.01, 0.1, o), Contains("mode must be"));
  o.mode = "triangular";
  o.step_size_up = 0;
  CHECK_THROWS_WITH(optim::CyclicLR(opt, 0.01, 0.1, o), Contains("step_size_up must be > 0"));
  CHECK_THROWS_WITH(optim::CosineAnnealingWarmRestarts(opt, 0), Contains("T_0 must be"));
  CHECK_THROWS_WITH(optim::CosineAnnealingWarmRestarts(opt, 3, 0), Contains("T_mult must be"));
  optim::CosineAnnealingWarmRestarts r(opt, 3, 2, 0.0);
  CHECK_THROWS_WITH(r.step(-1.0), Contains("non-negative epoch"));
  r.step(7.5);  // the second period (3 to 9, length 6): T_cur 4.5
  CHECK(r.T_i() == 6);
  CHECK(r.T_cur() == 4.5);
  CHECK(r.last_epoch() == 7);
}
