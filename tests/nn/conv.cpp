// nn: the convolution and pooling layers (Conv2d, MaxPool2d, AvgPool2d), their functional
// forms, nn::init and F::one_hot — shapes, initialisation, printing, values, moving.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "nn/nn.h"

using namespace ember;
using Catch::Matchers::Contains;
namespace F = ember::nn::functional;

namespace {

// Seed 002's Net, written as a user would write it in ember: the size of the flattened conv
// output is found by pushing one dummy 50x50 image through the conv stack, as the seed does.
struct Net : nn::Layer {
  std::shared_ptr<nn::Conv2d> conv1, conv2, conv3;
  std::shared_ptr<nn::Linear> fc1, fc2;
  int64_t to_linear = 0;

  Net() {
    conv1 = register_module("conv1", std::make_shared<nn::Conv2d>(1, 32, 5));
    conv2 = register_module("conv2", std::make_shared<nn::Conv2d>(32, 64, 5));
    conv3 = register_module("conv3", std::make_shared<nn::Conv2d>(64, 128, 5));
    {
      NoGradGuard no_grad;
      to_linear = convs(randn({50, 50}).view({-1, 1, 50, 50}))[0].numel();
    }
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(to_linear, 512));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(512, 2));
  }

  Tensor convs(Tensor x) {
    x = F::max_pool2d(F::relu((*conv1)(x)), {2, 2});
    x = F::max_pool2d(F::relu((*conv2)(x)), {2, 2});
    x = F::max_pool2d(F::relu((*conv3)(x)), {2, 2});
    return x;
  }

  Tensor forward(const Tensor& input) override {
    Tensor x = convs(input);
    x = x.view({-1, to_linear});
    x = F::relu((*fc1)(x));
    x = (*fc2)(x);
    return F::softmax(x, 1);
  }
};

// A plain-loop cross-correlation in double: the reference a Conv2d layer must agree with.
// x [N, C, H, W], w [K, C, R, S], b [K] (or empty).
std::vector<double> manual_conv(const std::vector<double>& x, const std::vector<double>& w,
                                const std::vector<double>& b, int64_t N, int64_t C, int64_t H,
                                int64_t W, int64_t K, int64_t R, int64_t S, nn::Size2 stride,
                                nn::Size2 pad, nn::Size2 dil, int64_t& P, int64_t& Q) {
  P = (H + 2 * pad[0] - dil[0] * (R - 1) - 1) / stride[0] + 1;
  Q = (W + 2 * pad[1] - dil[1] * (S - 1) - 1) / stride[1] + 1;
  std::vector<double> y(static_cast<size_t>(N * K * P * Q));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q) {
          double acc = b.empty() ? 0.0 : b[static_cast<size_t>(k)];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                const int64_t h = p * stride[0] - pad[0] + r * dil[0];
                const int64_t v = q * stride[1] - pad[1] + s * dil[1];
                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                acc += x[static_cast<size_t>(((n * C + c) * H + h) * W + v)] *
                       w[static_cast<size_t>(((k * C + c) * R + r) * S + s)];
              }
          y[static_cast<size_t>(((n * K + k) * P + p) * Q + q)] = acc;
        }
  return y;
}

}  // namespace

TEST_CASE("nn conv: Conv2d registers weight [out, in, kh, kw] and bias [out]", "[nn][conv]") {
  nn::Conv2d conv(3, 6, 5);
  CHECK(conv.weight.shape() == Shape{6, 3, 5, 5});
  CHECK(conv.bias.shape() == Shape{6});
  CHECK(conv.weight.requires_grad());
  CHECK(conv.weight.is_leaf());
  const nn::NamedTensors named = conv.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "weight");
  CHECK(named[1].first == "bias");
  CHECK(named[0].second.is_same(conv.weight));
  CHECK(conv.kernel_size == nn::Size2{5, 5});
  CHECK(conv.stride == nn::Size2{1, 1});

  nn::Conv2d rect(2, 4, nn::Size2{3, 1}, nn::Size2{2, 1}, nn::Size2{1, 0}, nn::Size2{1, 1},
                  /*groups=*/1, /*bias=*/false);
  CHECK(rect.weight.shape() == Shape{4, 2, 3, 1});
  CHECK_FALSE(rect.bias.defined());
  CHECK(rect.parameters().size() == 1);

  // The seed's model: 832 + 51264 + 204928 + 262656 + 1026 parameters, as PyTorch counts them.
  Net net;
  CHECK(net.to_linear == 128 * 2 * 2);
  int64_t count = 0;
  for (const Tensor& p : net.parameters()) count += p.numel();
  CHECK(count == 832 + 51264 + 204928 + 262656 + 1026);

  CHECK_THROWS_WITH(nn::Conv2d(0, 4, 3), Contains("at least 1"));
  CHECK_THROWS_WITH(nn::Conv2d(1, 4, 0), Contains("kernel_size"));
  CHECK_THROWS_WITH(nn::Conv2d(1, 4, 3, /*stride=*/0), Contains("stride"));
  CHECK_THROWS_WITH(nn::Conv2d(1, 4, 3, 1, /*padding=*/-1), Contains("padding"));
  CHECK_THROWS_WITH(nn::Conv2d(1, 4, 3, 1, 0, /*dilation=*/0), Contains("dilation"));
}

TEST_CASE("nn conv: Conv2d's default init is U(-1/sqrt(fan_in), 1/sqrt(fan_in))",
          "[nn][conv][init]") {
  manual_seed(0);
  nn::Conv2d conv(32, 64, 5);
  // fan_in = in_channels * kh * kw = 800; kaiming_uniform_(a = sqrt(5)) gives
  // bound = sqrt(2 / 6) * sqrt(3 / 800) = 1 / sqrt(800).
  CHECK(nn::init::fan_in(conv.weight) == 800);
  const double bound = 1.0 / std::sqrt(800.0);
  const auto w = conv.weight.to_vector<float>();
  const auto [wmin, wmax] = std::minmax_element(w.begin(), w.end());
  CHECK(*wmin >= -bound);
  CHECK(*wmax <= bound);
  // 51200 draws: the extremes come within 0.1% of the bound (a miss has odds below 1e-10).
  CHECK(*wmin < -0.999 * bound);
  CHECK(*wmax > 0.999 * bound);
  double sum = 0.0, sq = 0.0;
  for (float v : w) {
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(w.size());
  const double mean = sum / n, var = sq / n - mean * mean;
  CHECK(std::abs(mean) < 4.0 * bound / std::sqrt(3.0 * n));  // 4 standard errors
  CHECK(var == Approx(bound * bound / 3.0).epsilon(0.02));
  // A Linear layer with the same fan_in would use the same bound: the bias too.
  for (float v : conv.bias.to_vector<float>()) {
    CHECK(std::abs(v) <= bound);
  }

  // A 1-channel 5x5 conv has fan_in 25: bound 0.2.
  nn::Conv2d first(1, 32, 5);
  for (float v : first.weight.to_vector<float>()) CHECK(std::abs(v) <= 0.2f);
  const auto b = first.bias.to_vector<float>();
  CHECK(*std::max_element(b.begin(), b.end()) <= 0.2f);
  CHECK(*std::max_element(b.begin(), b.end()) > 0.05f);  // 32 draws spread over (-0.2, 0.2)

  // Same seed, same layer; reset_parameters re-draws in place.
  manual_seed(0);
  nn::Conv2d again(32, 64, 5);
  CHECK(again.weight.to_vector<float>() == w);
  const Tensor handle = again.weight;
  again.reset_parameters();
  CHECK(again.weight.is_same(handle));
  CHECK(handle.to_vector<float>() != w);
}

TEST_CASE("nn conv: init helpers compute PyTorch's fan_in and bounds", "[nn][init]") {
  CHECK(nn::init::fan_in(empty({10, 7})) == 7);
  CHECK(nn::init::fan_in(empty({4, 3, 5, 2})) == 30);
  CHECK_THROWS_WITH(nn::init::fan_in(empty({4})), Contains("at least 2 dimensions"));
  manual_seed(2);
  Tensor t = empty({1000, 12});
  nn::init::kaiming_uniform_(t, /*a=*/0.0);  // ReLU gain sqrt(2): bound sqrt(6 / 12)
  const auto v = t.to_vector<float>();
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  CHECK(*hi <= std::sqrt(0.5));
  CHECK(*hi > 0.99 * std::sqrt(0.5));
  CHECK(*lo >= -std::sqrt(0.5));
  Tensor u = empty({500});
  nn::init::uniform_(u, 2.0, 3.0);
  const auto uv = u.to_vector<float>();
  CHECK(*std::min_element(uv.begin(), uv.end()) >= 2.0f);
  CHECK(*std::max_element(uv.begin(), uv.end()) <= 3.0f);
}

TEST_CASE("nn conv: layers print as PyTorch prints them", "[nn][conv][print]") {
  CHECK(nn::Conv2d(1, 32, 5).str() == "Conv2d(1, 32, kernel_size=(5, 5), stride=(1, 1))");
  CHECK(nn::Conv2d(3, 6, 5).str() == "Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))");
  CHECK(nn::Conv2d(3, 8, 3, 2, 1).str() ==
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))");
  CHECK(nn::Conv2d(3, 6, nn::Size2{5, 3}, nn::Size2{2, 1}, nn::Size2{1, 0}, nn::Size2{1, 2},
                   /*groups=*/1, /*bias=*/false)
            .str() ==
        "Conv2d(3, 6, kernel_size=(5, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2), "
        "bias=False)");

  CHECK(nn::MaxPool2d(2).str() ==
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::MaxPool2d(2, 2).str() ==
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::MaxPool2d(3, 1, 1).str() ==
        "MaxPool2d(kernel_size=3, stride=1, padding=1, dilation=1, ceil_mode=False)");
  CHECK(nn::MaxPool2d(nn::Size2{2, 2}).str() ==
        "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::AvgPool2d(2).str() == "AvgPool2d(kernel_size=2, stride=2, padding=0)");
  CHECK(nn::AvgPool2d(nn::Size2{3, 2}, nn::Size2{1, 1}, nn::Size2{1, 1}).str() ==
        "AvgPool2d(kernel_size=(3, 2), stride=(1, 1), padding=(1, 1))");

  // Seed 002's print(net), line for line.
  Net net;
  CHECK(net.str() ==
        "Net(\n"
        "  (conv1): Conv2d(1, 32, kernel_size=(5, 5), stride=(1, 1))\n"
        "  (conv2): Conv2d(32, 64, kernel_size=(5, 5), stride=(1, 1))\n"
        "  (conv3): Conv2d(64, 128, kernel_size=(5, 5), stride=(1, 1))\n"
        "  (fc1): Linear(in_features=512, out_features=512, bias=True)\n"
        "  (fc2): Linear(in_features=512, out_features=2, bias=True)\n"
        ")");

  CHECK_THROWS_WITH(nn::MaxPool2d(2, 2, 2), Contains("at most half of kernel_size"));
  CHECK_THROWS_WITH(nn::AvgPool2d(0), Contains("kernel_size"));
}

TEST_CASE("nn conv: seed 002's conv stack turns [1, 1, 50, 50] into 128 * 2 * 2 features",
          "[nn][conv]") {
  manual_seed(0);
  Net net;
  const Tensor x = randn({50, 50}).view({-1, 1, 50, 50});
  Tensor h = (*net.conv1)(x);
  CHECK(h.shape() == Shape{1, 32, 46, 46});
  h = F::max_pool2d(F::relu(h), {2, 2});
  CHECK(h.shape() == Shape{1, 32, 23, 23});
  h = (*net.conv2)(h);
  CHECK(h.shape() == Shape{1, 64, 19, 19});
  h = F::max_pool2d(F::relu(h), {2, 2});
  CHECK(h.shape() == Shape{1, 64, 9, 9});
  h = F::max_pool2d(F::relu((*net.conv3)(h)), {2, 2});
  CHECK(h.shape() == Shape{1, 128, 2, 2});
  CHECK(h[0].size(0) * h[0].size(1) * h[0].size(2) == 512);

  // The whole model: a batch of 4 gives 4 rows of 2 probabilities.
  const Tensor batch = rand({4, 1, 50, 50});
  const Tensor out = net(batch);
  CHECK(out.shape() == Shape{4, 2});
  for (float s : out.sum({1}).to_vector<float>()) CHECK(s == Approx(1.0).epsilon(1e-6));

  // MSE against one-hot labels, as the seed trains it: every parameter gets a gradient.
  const Tensor target = F::one_hot(tensor({0, 1, 1, 0}, kInt64), 2);
  const Tensor loss = F::mse_loss(out, target);
  loss.backward();
  for (const auto& [name, p] : net.named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().shape() == p.shape());
    CHECK(p.grad().abs().sum().item() > 0.0);
  }
}

TEST_CASE("nn conv: Conv2d's forward equals a hand-written cross-correlation", "[nn][conv]") {
  struct Case {
    int64_t N, C, H, W, K, R, S;
    nn::Size2 stride, pad, dil;
    bool bias;
  };
  const std::vector<Case> cases = {
      {2, 3, 7, 6, 4, 3, 3, {1, 1}, {0, 0}, {1, 1}, true},
      {1, 2, 9, 8, 3, 3, 2, {2, 1}, {1, 0}, {1, 2}, false},
      {3, 1, 5, 5, 2, 5, 5, {1, 1}, {2, 2}, {1, 1}, true},
  };
  manual_seed(4);
  for (const Case& c : cases) {
    INFO("C=" << c.C << " H=" << c.H << " W=" << c.W << " K=" << c.K << " R=" << c.R);
    nn::Conv2d conv(c.C, c.K, nn::Size2{c.R, c.S}, c.stride, c.pad, c.dil, /*groups=*/1, c.bias);
    conv.to(kFloat64);
    const Tensor x = randn({c.N, c.C, c.H, c.W}, kFloat64);
    const Tensor y = conv(x);
    int64_t P = 0, Q = 0;
    const auto ref = manual_conv(x.to_vector<double>(), conv.weight.to_vector<double>(),
                                 c.bias ? conv.bias.to_vector<double>() : std::vector<double>(),
                                 c.N, c.C, c.H, c.W, c.K, c.R, c.S, c.stride, c.pad, c.dil, P, Q);
    REQUIRE(y.shape() == Shape{c.N, c.K, P, Q});
    const auto got = y.to_vector<double>();
    for (size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == Approx(ref[i]).margin(1e-12));

    // The functional form with the layer's parameters is the same computation, and one image
    // [C, H, W] gives the first row of the batch.
    const Tensor yf = F::conv2d(x, conv.weight, conv.bias, c.stride, c.pad, c.dil);
    CHECK(yf.to_vector<double>() == got);
    const Tensor one = conv(x[0]);
    CHECK(one.shape() == Shape{c.K, P, Q});
    CHECK(one.to_vector<double>() == y[0].to_vector<double>());
  }
  // The int form of F::conv2d.
  nn::Conv2d sq(2, 2, 3, 2, 1);
  const Tensor x = randn({1, 2, 6, 6});
  CHECK(F::conv2d(x, sq.weight, sq.bias, 2, 1).to_vector<float>() == sq(x).to_vector<float>());
}

TEST_CASE("nn conv: MaxPool2d and AvgPool2d pool windows and equal their functional forms",
          "[nn][conv][pool]") {
  // One 4x4 plane, values 0..15 row by row: the 2x2 windows' maxima are the bottom-right taps.
  const Tensor x = arange(16.0).view({1, 1, 4, 4});
  nn::MaxPool2d max2(2);
  const Tensor m = max2(x);
  CHECK(m.shape() == Shape{1, 1, 2, 2});
  CHECK(m.to_vector<float>() == std::vector<float>{5, 7, 13, 15});
  CHECK(F::max_pool2d(x, 2).to_vector<float>() == m.to_vector<float>());
  CHECK(F::max_pool2d(x, {2, 2}).to_vector<float>() == m.to_vector<float>());

  nn::AvgPool2d avg2(2);
  const Tensor a = avg2(x);
  CHECK(a.to_vector<float>() == std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f});
  CHECK(F::avg_pool2d(x, {2, 2}).to_vector<float>() == a.to_vector<float>());

  // Overlapping 3x3 windows with stride 1 and padding 1 keep the size; padding never wins a max.
  nn::MaxPool2d max3(3, 1, 1);
  const Tensor neg = (arange(16.0) - 100.0).view({1, 1, 4, 4});
  const Tensor m3 = max3(neg);
  CHECK(m3.shape() == Shape{1, 1, 4, 4});
  CHECK(m3.max().item() == -85.0);
  CHECK(m3.to_vector<float>()[0] == -95.0f);  // window rows 0-1, cols 0-1: max is x[1][1]
  CHECK(F::max_pool2d(neg, 3, 1, 1).to_vector<float>() == m3.to_vector<float>());

  // A rectangular kernel and one image without a batch dim.
  nn::MaxPool2d rect(nn::Size2{1, 2});
  CHECK(rect(x[0]).shape() == Shape{1, 4, 2});
  CHECK(rect(x[0]).to_vector<float>() == std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15});

  CHECK_THROWS_WITH(max2(arange(16.0).view({4, 4})), Contains("x.view({1, 1, H, W})"));
}

TEST_CASE("nn conv: Conv2d reports wrong inputs by layer, shape, dtype and device",
          "[nn][conv][errors]") {
  nn::Conv2d conv(3, 6, 5);
  CHECK_THROWS_AS(conv(randn({2, 1, 32, 32})), ValueError);
  CHECK_THROWS_WITH(conv(randn({2, 1, 32, 32})),
                    Contains("Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))") &&
                        Contains("[N, 3, H, W]") && Contains("[2, 1, 32, 32]"));
  CHECK_THROWS_WITH(conv(randn({2, 32, 32, 3})), Contains("NCHW"));
  nn::Conv2d gray(1, 4, 3);
  CHECK_THROWS_WITH(gray(randn({28, 28})), Contains("x.view({1, 1, H, W})"));
  CHECK_THROWS_WITH(conv(zeros({1, 3, 8, 8}, kUInt8)), Contains("uint8") && Contains("ToTensor"));
  CHECK_THROWS_WITH(conv(randn({1, 3, 8, 8}, kFloat64)), Contains("float64"));
}

TEST_CASE("nn conv: one_hot turns class indices into rows of the identity", "[nn][one_hot]") {
  const Tensor labels = tensor({1, 0, 2, 1}, kInt64);
  const Tensor oh = F::one_hot(labels, 3);
  CHECK(oh.shape() == Shape{4, 3});
  CHECK(oh.dtype() == kFloat32);
  CHECK(oh.to_vector<float>() == std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0});
  // The seed's np.eye(2)[label].
  CHECK(F::one_hot(tensor({0, 1}, kInt64), 2).to_vector<float>() ==
        std::vector<float>{1, 0, 0, 1});
  // num_classes -1: max + 1; int64 on request; any leading shape.
  CHECK(F::one_hot(labels).shape() == Shape{4, 3});
  const Tensor i64 = F::one_hot(labels.view({2, 2}), 4, kInt64);
  CHECK(i64.shape() == Shape{2, 2, 4});
  CHECK(i64.dtype() == kInt64);
  CHECK(i64.sum().item() == 4.0);
  CHECK(F::one_hot(empty({0}, kInt64), 2).shape() == Shape{0, 2});

  CHECK_THROWS_WITH(F::one_hot(labels, 2), Contains("class index 2 is out of range for 2"));
  CHECK_THROWS_WITH(F::one_hot(tensor({-1, 0}, kInt64), 2), Contains("must not be negative"));
  CHECK_THROWS_WITH(F::one_hot(tensor({0.0f, 1.0f}), 2), Contains("int64"));
  CHECK_THROWS_WITH(F::one_hot(empty({0}, kInt64)), Contains("num_classes must be given"));
}

TEST_CASE("nn conv: to(dtype) and to(device) move conv parameters in place", "[nn][conv][device]") {
  Net net;
  const std::vector<Tensor> held = net.parameters();
  net.to(kFloat64);
  CHECK(net.conv1->weight.dtype() == kFloat64);
  CHECK(held[0].is_same(net.conv1->weight));
  CHECK(held[0].dtype() == kFloat64);
  CHECK(net(randn({2, 1, 50, 50}, kFloat64)).dtype() == kFloat64);
  net.to(kFloat32);

  if (!cuda::is_available()) {
    CHECK_THROWS_AS(net.to(Device("cuda")), DeviceError);
    for (const Tensor& p : held) CHECK(p.device() == Device::cpu());
    // A CUDA input cannot even be made here; the layer's own device check is exercised on a GPU.
    return;
  }
  net.cuda();
  for (const Tensor& p : held) CHECK(p.is_cuda());
  CHECK(net.conv3->weight.is_cuda());
  CHECK(net.conv3->bias.is_cuda());
  CHECK_THROWS_AS((*net.conv1)(randn({1, 1, 50, 50})), DeviceError);  // input left on the CPU
  const Tensor x = rand({3, 1, 50, 50});
  const Tensor out = net(x.cuda());
  CHECK(out.is_cuda());
  CHECK(out.shape() == Shape{3, 2});
  const Tensor target = F::one_hot(tensor({0, 1, 1}, kInt64).cuda(), 2);
  CHECK(target.is_cuda());
  F::mse_loss(out, target).backward();
  CHECK(net.conv1->weight.grad().is_cuda());
  // The GPU computes what the CPU computes.
  const Tensor on_gpu = out.cpu();
  net.cpu();
  const Tensor on_cpu = net(x);
  const auto g = on_gpu.to_vector<float>(), c = on_cpu.to_vector<float>();
  for (size_t i = 0; i < c.size(); ++i) CHECK(g[i] == Approx(c[i]).margin(1e-5));
}

TEST_CASE("nn conv: groups, depthwise layers and the pooling options", "[nn][conv]") {
  // torch.nn.Conv2d(8, 16, 3, padding=1, groups=4): weight [16, 2, 3, 3], fan_in 2 * 3 * 3.
  manual_seed(12);
  nn::Conv2d grouped(8, 16, 3, 1, 1, 1, /*groups=*/4);
  CHECK(grouped.weight.shape() == Shape{16, 2, 3, 3});
  CHECK(grouped.bias.shape() == Shape{16});
  const double bound = 1.0 / std::sqrt(18.0);
  for (double v : grouped.weight.to_vector<double>()) CHECK(std::abs(v) <= bound);
  CHECK(grouped.str() ==
        "Conv2d(8, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=4)");
  const Tensor x = randn({2, 8, 5, 6});
  const Tensor y = grouped(x);
  CHECK(y.shape() == Shape{2, 16, 5, 6});
  const auto want = F::conv2d(x, grouped.weight, grouped.bias, 1, 1, 1, 4).to_vector<float>();
  CHECK(y.to_vector<float>() == want);
  // Depthwise, no bias: the bias comes after groups, in torch's order.
  nn::Conv2d depthwise(6, 6, nn::Size2{3, 3}, nn::Size2{2, 2}, nn::Size2{1, 1}, nn::Size2{1, 1}, 6,
                       false);
  CHECK(depthwise.weight.shape() == Shape{6, 1, 3, 3});
  CHECK_FALSE(depthwise.bias.defined());
  CHECK(depthwise(randn({1, 6, 7, 7})).shape() == Shape{1, 6, 4, 4});
  CHECK_THROWS_WITH(nn::Conv2d(6, 4, 3, 1, 0, 1, 3), Contains("groups must divide both"));
  CHECK_THROWS_WITH(nn::Conv2d(6, 6, 3, 1, 0, 1, 0), Contains("groups must be at least 1"));

  // MaxPool2d(3, 2, 1, dilation=1, return_indices=True, ceil_mode=True) and AvgPool2d's options.
  nn::MaxPool2d mp(3, 2, 1, 1, true, true);
  CHECK(mp.str() == "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)");
  const Tensor img = randn({1, 2, 8, 8});
  const ValuesIndices vi = mp.forward_with_indices(img);
  CHECK(vi.values.shape() == Shape{1, 2, 5, 5});  // ceil mode: 5 windows, the last overhangs
  CHECK(vi.indices.dtype() == kInt64);
  CHECK(mp(img).to_vector<float>() == vi.values.to_vector<float>());
  nn::MaxPool2d dil(nn::Size2{2, 2}, nn::Size2{1, 1}, nn::Size2{0, 0}, nn::Size2{2, 1});
  CHECK(dil.str() == "MaxPool2d(kernel_size=(2, 2), stride=(1, 1), padding=0, dilation=(2, 1), "
                     "ceil_mode=False)");
  CHECK(dil(img).shape() == Shape{1, 2, 6, 7});
  nn::AvgPool2d ap(3, 2, 1, /*ceil_mode=*/true, /*count_include_pad=*/false);
  CHECK(ap(img).to_vector<float>() == F::avg_pool2d(img, 3, 2, 1, true, false).to_vector<float>());
  CHECK(ap(img).shape() == Shape{1, 2, 5, 5});
}
