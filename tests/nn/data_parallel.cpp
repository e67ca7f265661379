// nn::DataParallel: one process, several devices. On a machine without a GPU the emulation
// build (-DEMBER_CUDA=EMULATE, docs/emulator.md) runs these on its two emulated devices.
#include <iostream>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "nn/data_parallel.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

// Small, but with what DataParallel must get right: a convolution (4-d batches), two linears,
// and a parameter used twice.
struct SmallNet : nn::Layer {
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::Linear> fc1, fc2;
  SmallNet() {
    conv = register_module("conv", std::make_shared<nn::Conv2d>(2, 3, 3));
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(3 * 4 * 4, 8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 8));
  }
  std::string name() const override { return "SmallNet"; }
  Tensor forward(const Tensor& x) override {
    Tensor h = relu((*conv)(x)).reshape({-1, 3 * 4 * 4});
    h = relu((*fc1)(h));
    return (*fc2)(relu((*fc2)(h)));  // fc2 twice
  }
};

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.cpu().to(kFloat64) - b.cpu().to(kFloat64)).abs().max().item();
}

bool two_devices() {
  if (cuda::is_available() && cuda::device_count() >= 2) return true;
  std::cout << "SKIPPED: DataParallel over 2 devices needs 2 CUDA devices ("
            << (cuda::is_available() ? "this machine has 1" : cuda::unavailable_reason())
            << "; the emulation build has 2)\n";
  return false;
}

}  // namespace

TEST_CASE("DataParallel: without CUDA, or on one device, it is the module", "[nn][data_parallel]") {
  manual_seed(1);
  auto net = std::make_shared<SmallNet>();
  const Device device = cuda::is_available() ? Device::cuda(0) : Device::cpu();
  net->to(device);
  nn::DataParallel<SmallNet> model(net, cuda::is_available() ? std::vector<int>{0} : std::vector<int>{});
  manual_seed(2);
  const Tensor x = randn({5, 2, 6, 6});
  const Tensor out = model(x);
  CHECK(out.device() == device);
  CHECK(max_abs_diff(out, (*net)(x.to(device))) == 0.0);
  CHECK(model.named_parameters().front().first == "module.conv.weight");  // PyTorch's state_dict keys
}

TEST_CASE("DataParallel over 2 devices matches one device: outputs, gradients, training", "[cuda][nn][data_parallel]") {
  if (!two_devices()) return;
  const Device d0 = Device::cuda(0);
  manual_seed(3);
  auto net = std::make_shared<SmallNet>();
  net->to(d0);
  manual_seed(3);
  auto single = std::make_shared<SmallNet>();
  single->to(d0);
  nn::DataParallel<SmallNet> model(net, {0, 1});
  REQUIRE(model.device_ids() == std::vector<int>{0, 1});
  nn::CrossEntropyLoss criterion;
  optim::SGDOptions so;
  so.lr = 0.05;
  so.momentum = 0.9;
  optim::SGD opt(model.parameters(), so), single_opt(single->parameters(), so);

  for (int step = 0; step < 3; ++step) {
    manual_seed(100 + static_cast<uint64_t>(step));
    const Tensor x = randn({9, 2, 6, 6});  // 9 rows: chunks of 5 and 4
    const Tensor y = (rand({9}) * 7.99).to(kInt64);
    opt.zero_grad();
    single_opt.zero_grad();
    const Tensor out = model(x);  // x on the CPU: DataParallel scatters it
    const Tensor single_out = (*single)(x.to(d0));
    CHECK(out.device() == d0);
    CHECK(out.shape() == Shape{9, 8});
    CHECK(max_abs_diff(out, single_out) < 1e-6);
    criterion(out, y.to(d0)).backward();
    criterion(single_out, y.to(d0)).backward();
    // The gradients are on the module's own parameters, on device 0, the sum of both devices'.
    const auto ps = net->named_parameters(), qs = single->named_parameters();
    for (size_t k = 0; k < ps.size(); ++k) {
      INFO(ps[k].first);
      REQUIRE(ps[k].second.grad().defined());
      CHECK(ps[k].second.grad().device() == d0);
      CHECK(max_abs_diff(ps[k].second.grad(), qs[k].second.grad()) < 1e-5);
    }
    opt.step();
    single_opt.step();
  }
  for (size_t k = 0; k < net->parameters().size(); ++k)
    CHECK(max_abs_diff(net->parameters()[k], single->parameters()[k]) < 1e-5);

  // A batch smaller than the devices: only the first one works.
  const Tensor one = randn({1, 2, 6, 6});
  CHECK(max_abs_diff(model(one), (*single)(one.to(d0))) < 1e-5);
  // Under no_grad nothing is recorded.
  {
    NoGradGuard ng;
    CHECK_FALSE(model(randn({4, 2, 6, 6})).requires_grad());
  }
}

TEST_CASE("DataParallel: wrong devices are refused with a message", "[cuda][nn][data_parallel]") {
  if (!two_devices()) return;
  auto net = std::make_shared<SmallNet>();
  CHECK_THROWS_WITH(nn::DataParallel<SmallNet>(net, {0, 1}), Contains("call module->to(\"cuda:0\") first"));
  net->to(Device::cuda(0));
  CHECK_THROWS_WITH(nn::DataParallel<SmallNet>(net, {0, 7}), Contains("device_ids has 7"));
  nn::DataParallel<SmallNet> model(net, {0, 1});
  CHECK_THROWS_WITH(model(randn({})), Contains("batch dimension"));
}
