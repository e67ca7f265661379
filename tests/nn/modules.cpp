// nn: modules (registration, naming, modes, moving, printing), the layers, and the losses.
#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "nn/nn.h"

using namespace ember;
using Catch::Matchers::Contains;
namespace F = ember::nn::functional;

namespace {

// The seed's model (000: FullyNeuralNetwork), written as a user would write it in ember.
struct FullyNeuralNetwork : nn::Layer {
  std::shared_ptr<nn::Linear> layer_1, layer_2, layer_3, layer_4, layer_5;

  FullyNeuralNetwork() {
    layer_1 = register_module("layer_1", std::make_shared<nn::Linear>(784, 512));
    layer_2 = register_module("layer_2", std::make_shared<nn::Linear>(512, 256));
    layer_3 = register_module("layer_3", std::make_shared<nn::Linear>(256, 128));
    layer_4 = register_module("layer_4", std::make_shared<nn::Linear>(128, 64));
    layer_5 = register_module("layer_5", std::make_shared<nn::Linear>(64, 10));
  }

  Tensor forward(const Tensor& data) override {
    Tensor x = data.view({-1, 784});
    x = F::relu((*layer_1)(x));
    x = F::relu((*layer_2)(x));
    x = F::relu((*layer_3)(x));
    x = F::relu((*layer_4)(x));
    return (*layer_5)(x);
  }
};

// A module with buffers next to its parameters, for state_dict and to().
struct WithBuffers : nn::Module {
  Tensor scale, running, steps, scratch;
  std::shared_ptr<nn::Linear> fc;
  WithBuffers() {
    scale = register_parameter("scale", ones({3}));
    running = register_buffer("running", zeros({3}));
    steps = register_buffer("steps", zeros({1}, kInt64));
    scratch = register_buffer("scratch", zeros({2}), /*persistent=*/false);
    fc = register_module("fc", std::make_shared<nn::Linear>(3, 2));
  }
};

std::vector<std::string> names_of(const nn::NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& entry : named) out.push_back(entry.first);
  return out;
}

int64_t count_parameters(const nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}

// Plain loops over host copies: the reference a Linear layer must agree with.
std::vector<double> manual_linear(const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>& b, int64_t rows, int64_t in,
                                  int64_t out) {
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      double acc = b.empty() ? 0.0 : b[static_cast<size_t>(j)];
      for (int64_t k = 0; k < in; ++k) {
        acc += x[static_cast<size_t>(i * in + k)] * w[static_cast<size_t>(j * in + k)];
      }
      y[static_cast<size_t>(i * out + j)] = acc;
    }
  }
  return y;
}

void check_close(const std::vector<double>& a, const std::vector<double>& b, double tol = 1e-12) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(tol));
}

}  // namespace

TEST_CASE("nn: parameters of the seed's MLP have PyTorch's dotted names and counts", "[nn]") {
  auto model = std::make_shared<FullyNeuralNetwork>();

  const std::vector<std::string> expected = {"layer_1.weight", "layer_1.bias",   "layer_2.weight",
                                             "layer_2.bias",   "layer_3.weight", "layer_3.bias",
                                             "layer_4.weight", "layer_4.bias",   "layer_5.weight",
                                             "layer_5.bias"};
  CHECK(names_of(model->named_parameters()) == expected);
  CHECK(model->parameters().size() == 10);
  CHECK(model->parameters(/*recurse=*/false).empty());  // the MLP itself owns none
  CHECK(model->layer_1->parameters(false).size() == 2);

  const int64_t total =
      784 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10;
  CHECK(total == 575050);
  CHECK(count_parameters(*model) == total);

  // The registered tensors are the layers' own members (the same handles), and require grad.
  const auto named = model->named_parameters();
  CHECK(named[0].second.is_same(model->layer_1->weight));
  CHECK(named[9].second.is_same(model->layer_5->bias));
  for (const Tensor& p : model->parameters()) CHECK(p.requires_grad());
  CHECK(model->layer_3->weight.shape() == Shape{128, 256});
  CHECK(model->layer_3->bias.shape() == Shape{128});

  const auto children = model->named_children();
  REQUIRE(children.size() == 5);
  CHECK(children[0].first == "layer_1");
  CHECK(children[4].first == "layer_5");
  CHECK(children[2].second.get() == model->layer_3.get());
  CHECK(model->children().size() == 5);

  // The forward pass of the seed: [N, 1, 28, 28] images -> [N, 10] scores.
  const Tensor out = (*model)(randn({3, 1, 28, 28}));
  CHECK(out.shape() == Shape{3, 10});
}

TEST_CASE("nn: Sequential names its layers by position and nests", "[nn]") {
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Flatten>(),
                                              std::make_shared<nn::Linear>(12, 5),
                                              std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(5, 2, /*bias=*/false));
  CHECK(seq->size() == 4);
  CHECK(names_of(seq->named_parameters()) ==
        std::vector<std::string>{"1.weight", "1.bias", "3.weight"});
  CHECK(count_parameters(*seq) == 12 * 5 + 5 + 5 * 2);

  // Indexing: plain, negative, typed, and out of range.
  CHECK((*seq)[1]->name() == "Linear");
  CHECK((*seq)[-1].get() == (*seq)[3].get());
  CHECK(seq->at<nn::Linear>(3)->in_features == 5);
  CHECK_FALSE(seq->at<nn::Linear>(3)->bias.defined());
  CHECK_THROWS_WITH((*seq)[4], Contains("index 4 is out of range for 4 layers"));
  CHECK_THROWS_WITH(seq->at<nn::Linear>(2), Contains("ReLU"));

  // forward is the composition of the layers.
  manual_seed(1);
  const Tensor x = randn({2, 3, 4});
  const Tensor expected =
      (*seq->at<nn::Linear>(3))(F::relu((*seq->at<nn::Linear>(1))(x.flatten(1))));
  CHECK(seq->forward(x).to_vector<float>() == expected.to_vector<float>());

  // push_back chains; a Sequential inside a model gets dotted names two levels deep.
  auto outer = std::make_shared<nn::Sequential>();
  CHECK(outer->forward(x).is_same(x));  // empty: the identity
  outer->push_back(seq).push_back(std::make_shared<nn::Linear>(2, 1));
  CHECK(names_of(outer->named_parameters()) ==
        std::vector<std::string>{"0.1.weight", "0.1.bias", "0.3.weight", "1.weight", "1.bias"});
  CHECK(outer->forward(x).shape() == Shape{2, 1});

  const std::vector<std::shared_ptr<nn::Layer>> list = {std::make_shared<nn::ReLU>()};
  CHECK(nn::Sequential(list).size() == 1);
  CHECK_THROWS_WITH(outer->push_back(nullptr), Contains("null"));
}

TEST_CASE("nn: Sequential in braces or by push_back makes its layers in order, as PyTorch",
          "[nn]") {
  // The weights each Linear draws when made one after another, first to last.
  manual_seed(7);
  const Tensor w1 = nn::Linear(3, 5).weight.detach(), w2 = nn::Linear(5, 2).weight.detach();
  const auto same = [](const Tensor& a, const Tensor& b) {
    return a.to_vector<float>() == b.to_vector<float>();
  };
  REQUIRE_FALSE(same(w1.flatten().slice(0, 0, 10), w2.flatten()));  // the two draws differ

  manual_seed(7);
  nn::Sequential braces{std::make_shared<nn::Linear>(3, 5), std::make_shared<nn::Linear>(5, 2)};
  CHECK(same(braces.at<nn::Linear>(0)->weight, w1));
  CHECK(same(braces.at<nn::Linear>(1)->weight, w2));

  manual_seed(7);
  auto chained = std::make_shared<nn::Sequential>();
  chained->push_back(std::make_shared<nn::Linear>(3, 5))
      .push_back(std::make_shared<nn::Linear>(5, 2));
  CHECK(same(chained->at<nn::Linear>(0)->weight, w1));
  CHECK(same(chained->at<nn::Linear>(1)->weight, w2));
}

TEST_CASE("nn: registration rejects bad names and non-leaf parameters, and tied weights count once",
          "[nn]") {
  nn::Module m;
  m.register_parameter("w", zeros({2}));
  CHECK_THROWS_WITH(m.register_parameter("w", zeros({2})), Contains("already has"));
  CHECK_THROWS_WITH(m.register_buffer("w", zeros({2})), Contains("already has"));
  CHECK_THROWS_WITH(m.register_parameter("a.b", zeros({2})), Contains("must not contain '.'"));
  CHECK_THROWS_WITH(m.register_parameter("", zeros({2})), Contains("must not be empty"));
  CHECK_THROWS_WITH(m.register_parameter("i", zeros({2}, kInt64)), Contains("float32 or float64"));
  const Tensor leaf = ones({2}, TensorOptions().requires_grad());
  CHECK_THROWS_WITH(m.register_parameter("computed", leaf * 2.0), Contains("register a leaf"));
  CHECK_THROWS_WITH(m.register_module("child", std::shared_ptr<nn::Linear>()), Contains("null"));

  // Weight tying: one tensor registered in two modules is trained once.
  auto a = std::make_shared<nn::Linear>(3, 3);
  auto b = std::make_shared<nn::Module>();
  b->register_parameter("shared", a->weight);
  auto root = std::make_shared<nn::Module>();
  root->register_module("a", a);
  root->register_module("b", b);
  CHECK(names_of(root->named_parameters()) == std::vector<std::string>{"a.weight", "a.bias"});
  CHECK(names_of(root->state_dict()) == std::vector<std::string>{"a.weight", "a.bias", "b.shared"});

  // A module reached through two parents is also visited once.
  auto twice = std::make_shared<nn::Module>();
  twice->register_module("x", a);
  twice->register_module("y", a);
  CHECK(twice->parameters().size() == 2);
}

TEST_CASE("nn: Linear's default init follows kaiming_uniform_(a=sqrt(5))", "[nn][init]") {
  manual_seed(0);
  nn::Linear fc(784, 512);
  CHECK(fc.weight.shape() == Shape{512, 784});
  CHECK(fc.bias.shape() == Shape{512});
  CHECK(fc.weight.dtype() == kFloat32);
  CHECK(fc.weight.is_leaf());

  // torch.nn.init's arithmetic: gain = sqrt(2 / (1 + a^2)), bound = gain * sqrt(3 / fan_in).
  const double a = std::sqrt(5.0);
  const double bound = std::sqrt(2.0 / (1.0 + a * a)) * std::sqrt(3.0 / 784.0);
  CHECK(bound == Approx(1.0 / 28.0).epsilon(1e-12));

  const auto w = fc.weight.to_vector<float>();
  const auto [wmin, wmax] = std::minmax_element(w.begin(), w.end());
  CHECK(*wmin >= -bound);
  CHECK(*wmax <= bound);
  // 401408 draws fill the interval: the extremes come within 0.1% of the bound.
  CHECK(*wmin < -0.999 * bound);
  CHECK(*wmax > 0.999 * bound);
  double sum = 0.0, sq = 0.0;
  for (float v : w) {
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(w.size());
  const double mean = sum / n, var = sq / n - mean * mean;
  // U(-b, b) has mean 0 and variance b^2 / 3; the standard error of the mean is ~3.3e-5.
  CHECK(std::abs(mean) < 2e-4);
  CHECK(var == Approx(bound * bound / 3.0).epsilon(0.01));

  const auto bias = fc.bias.to_vector<float>();
  for (float v : bias) {
    CHECK(v >= -1.0 / 28.0);
    CHECK(v <= 1.0 / 28.0);
  }

  // Same seed, same layers; another seed, other weights.
  manual_seed(0);
  nn::Linear again(784, 512);
  CHECK(again.weight.to_vector<float>() == w);
  CHECK(again.bias.to_vector<float>() == bias);
  manual_seed(1);
  nn::Linear other(784, 512);
  CHECK(other.weight.to_vector<float>() != w);

  // The bound follows fan_in: a 64-input layer draws from U(-1/8, 1/8).
  nn::Linear small(64, 10);
  for (float v : small.weight.to_vector<float>()) CHECK(std::abs(v) <= 0.125f);

  // reset_parameters re-draws in place: same tensor, new values.
  const Tensor handle = small.weight;
  const auto before = handle.to_vector<float>();
  small.reset_parameters();
  CHECK(small.weight.is_same(handle));
  CHECK(handle.to_vector<float>() != before);

  // Degenerate sizes are allowed, negative ones are not.
  nn::Linear empty_in(0, 3);
  CHECK(empty_in.bias.to_vector<float>() == std::vector<float>(3, 0.0f));
  CHECK_THROWS_WITH(nn::Linear(-1, 3), Contains("must not be negative"));
}

TEST_CASE("nn: Linear's forward equals a hand-written matmul for any leading dims", "[nn]") {
  manual_seed(3);
  nn::Linear fc(5, 3);
  fc.to(kFloat64);
  const auto w = fc.weight.to_vector<double>();
  const auto b = fc.bias.to_vector<double>();

  const Tensor x = randn({4, 5}, kFloat64);
  const Tensor y = fc(x);
  CHECK(y.shape() == Shape{4, 3});
  check_close(y.to_vector<double>(), manual_linear(x.to_vector<double>(), w, b, 4, 5, 3));

  // [*, in]: leading dims are kept; a transposed (non-contiguous) input works too.
  const Tensor x3 = randn({2, 3, 5}, kFloat64);
  const Tensor y3 = fc(x3);
  CHECK(y3.shape() == Shape{2, 3, 3});
  check_close(y3.to_vector<double>(), manual_linear(x3.to_vector<double>(), w, b, 6, 5, 3));
  const Tensor xt = randn({5, 4}, kFloat64).t();
  check_close(fc(xt).to_vector<double>(), manual_linear(xt.to_vector<double>(), w, b, 4, 5, 3));

  // A single sample [in] -> [out].
  const Tensor x1 = randn({5}, kFloat64);
  CHECK(fc(x1).shape() == Shape{3});
  check_close(fc(x1).to_vector<double>(), manual_linear(x1.to_vector<double>(), w, b, 1, 5, 3));

  // Without bias; and the functional form agrees with the module.
  nn::Linear nobias(5, 3, false);
  nobias.to(kFloat64);
  check_close(nobias(x).to_vector<double>(),
              manual_linear(x.to_vector<double>(), nobias.weight.to_vector<double>(), {}, 4, 5, 3));
  check_close(F::linear(x, fc.weight, fc.bias).to_vector<double>(), y.to_vector<double>());
}

TEST_CASE("nn: Linear reports wrong inputs by layer, shape, dtype and device", "[nn][errors]") {
  nn::Linear fc(784, 512);
  CHECK_THROWS_AS(fc(zeros({64, 100})), ValueError);
  CHECK_THROWS_WITH(fc(zeros({64, 100})),
                    Contains("Linear(in_features=784, out_features=512, bias=True)") &&
                        Contains("784 features") && Contains("[64, 100]"));
  // Unflattened images: the message says how to flatten them.
  CHECK_THROWS_WITH(fc(zeros({2, 1, 28, 28})), Contains("x.view({-1, 784})"));
  CHECK_THROWS_WITH(fc(scalar_tensor(1.0)), Contains("got shape []"));
  CHECK_THROWS_WITH(fc(zeros({2, 784}, kFloat64)),
                    Contains("float64") && Contains("model->to(ember::kFloat64)"));
  CHECK_THROWS_WITH(fc(zeros({2, 784}, kUInt8)), Contains("x.to(ember::kFloat32)"));

  CHECK_THROWS_WITH(F::linear(zeros({2, 3}), zeros({4, 5})),
                    Contains("linear") && Contains("[2, 3]") && Contains("[4, 5]"));
  CHECK_THROWS_WITH(F::linear(zeros({2, 5}), zeros({4, 5}), zeros({3})), Contains("[4]"));
  CHECK_THROWS_WITH(F::linear(zeros({2, 5}), zeros({5})), Contains("2-d"));
}

TEST_CASE("nn: gradients reach every Linear weight and bias", "[nn][autograd]") {
  manual_seed(5);
  nn::Linear fc(4, 3);
  fc.to(kFloat64);
  const Tensor x = randn({6, 4}, kFloat64);
  fc(x).sum().backward();

  // d(sum y)/dW[j][k] = sum_i x[i][k] for every j; d(sum y)/db[j] = number of rows.
  REQUIRE(fc.weight.grad().defined());
  REQUIRE(fc.bias.grad().defined());
  CHECK(fc.weight.grad().shape() == Shape{3, 4});
  const auto xs = x.to_vector<double>();
  const auto gw = fc.weight.grad().to_vector<double>();
  for (int64_t j = 0; j < 3; ++j) {
    for (int64_t k = 0; k < 4; ++k) {
      double col = 0.0;
      for (int64_t i = 0; i < 6; ++i) col += xs[static_cast<size_t>(i * 4 + k)];
      CHECK(gw[static_cast<size_t>(j * 4 + k)] == Approx(col).margin(1e-12));
    }
  }
  CHECK(fc.bias.grad().to_vector<double>() == std::vector<double>(3, 6.0));

  // Finite differences through a whole small model, for weight, bias and input.
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4),
                                                std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(4, 2));
  model->to(kFloat64);
  const Tensor xin = randn({5, 3}, TensorOptions(kFloat64).requires_grad());
  const auto params = model->parameters();
  std::vector<Tensor> inputs = {xin};
  inputs.insert(inputs.end(), params.begin(), params.end());
  CHECK(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return F::linear(F::relu(F::linear(in[0], in[1], in[2])), in[3], in[4]);
      },
      inputs));

  // Through the seed's MLP and the loss, every parameter gets a gradient of its own shape.
  auto mlp = std::make_shared<FullyNeuralNetwork>();
  nn::CrossEntropyLoss criterion;
  criterion((*mlp)(randn({4, 1, 28, 28})), tensor({1, 0, 9, 3}, kInt64)).backward();
  for (const auto& [name, p] : mlp->named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().shape() == p.shape());
  }
}

TEST_CASE("nn: zero_grad clears or zeroes every parameter's gradient", "[nn][autograd]") {
  auto model = std::make_shared<FullyNeuralNetwork>();
  (*model)(randn({2, 784})).sum().backward();
  for (const Tensor& p : model->parameters()) REQUIRE(p.grad().defined());

  model->zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : model->parameters()) {
    REQUIRE(p.grad().defined());
    const auto g = p.grad().to_vector<float>();
    CHECK(std::all_of(g.begin(), g.end(), [](float v) { return v == 0.0f; }));
  }
  model->zero_grad();
  for (const Tensor& p : model->parameters()) CHECK_FALSE(p.grad().defined());

  // Gradients accumulate until zero_grad, as in PyTorch.
  nn::Linear fc(2, 1);
  const Tensor x = ones({1, 2});
  fc(x).sum().backward();
  fc(x).sum().backward();
  CHECK(fc.bias.grad().item() == 2.0);
  fc.zero_grad();
  fc(x).sum().backward();
  CHECK(fc.bias.grad().item() == 1.0);
}

TEST_CASE("nn: train() and eval() reach every nested module", "[nn]") {
  auto inner = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 4),
                                                std::make_shared<nn::Dropout>(0.5));
  auto outer = std::make_shared<nn::Sequential>(inner, std::make_shared<nn::ReLU>());
  int modules = 0;
  auto all_training = [&](bool expected) {
    bool ok = true;
    modules = 0;
    outer->apply([&](nn::Module& m) {
      ++modules;
      ok = ok && m.is_training() == expected;
    });
    return ok;
  };
  CHECK(all_training(true));  // modules start in training mode
  CHECK(modules == 5);
  nn::Module& same = outer->eval();
  CHECK(&same == outer.get());
  CHECK(all_training(false));
  CHECK_FALSE(inner->at<nn::Dropout>(1)->is_training());
  outer->train();
  CHECK(all_training(true));
  outer->train(false);
  CHECK(all_training(false));
  // Setting a child leaves its parent alone.
  inner->train();
  CHECK(inner->is_training());
  CHECK_FALSE(outer->is_training());
}

TEST_CASE("nn: Dropout zeroes about p of the elements in training and is the identity in eval",
          "[nn][dropout]") {
  manual_seed(7);
  nn::Dropout drop(0.3);
  const int64_t n = 100000;
  const Tensor x = ones({n}, TensorOptions().requires_grad());
  const Tensor y = drop(x);
  const auto v = y.to_vector<float>();
  const auto zeros_count = std::count(v.begin(), v.end(), 0.0f);
  // Binomial(100000, 0.3): standard deviation ~145 elements, the band is ~7 of them.
  CHECK(static_cast<double>(zeros_count) / n == Approx(0.3).margin(0.01));
  const float kept = static_cast<float>(1.0 / 0.7);
  CHECK(std::all_of(v.begin(), v.end(), [&](float e) { return e == 0.0f || e == kept; }));

  // The gradient is the same mask: zero where dropped, 1/(1-p) where kept.
  y.sum().backward();
  CHECK(x.grad().to_vector<float>() == v);

  // A fresh mask per call; the same seed reproduces it.
  CHECK(drop(x).to_vector<float>() != v);
  manual_seed(7);
  CHECK(drop(x).to_vector<float>() == v);

  drop.eval();
  CHECK(drop(x).is_same(x));
  CHECK(F::dropout(x, 0.5, /*training=*/false).is_same(x));
  CHECK(F::dropout(x, 0.0).is_same(x));

  // float64 keeps its dtype; the scale is applied exactly.
  const Tensor d = F::dropout(full({1000}, 2.0, kFloat64), 0.5);
  CHECK(d.dtype() == kFloat64);
  for (double e : d.to_vector<double>()) CHECK((e == 0.0 || e == 4.0));

  CHECK_THROWS_WITH(nn::Dropout(1.0), Contains("[0, 1)"));
  CHECK_THROWS_WITH(nn::Dropout(-0.1), Contains("[0, 1)"));
  CHECK_THROWS_WITH(F::dropout(x, 1.5), Contains("[0, 1)"));
  CHECK_THROWS_WITH(F::dropout(zeros({3}, kInt64), 0.5), Contains("int64"));
}

TEST_CASE("nn: state_dict lists parameters then buffers, module by module", "[nn]") {
  auto m = std::make_shared<WithBuffers>();
  const auto sd = m->state_dict();
  CHECK(names_of(sd) ==
        std::vector<std::string>{"scale", "running", "steps", "fc.weight", "fc.bias"});
  // Aliases of the live tensors (same storage), cut from the graph.
  CHECK(sd[0].second.storage() == m->scale.storage());
  CHECK_FALSE(sd[0].second.requires_grad());
  CHECK(sd[3].second.storage() == m->fc->weight.storage());

  CHECK(names_of(m->named_buffers()) == std::vector<std::string>{"running", "steps", "scratch"});
  CHECK(m->buffers().size() == 3);
  CHECK(names_of(m->named_parameters()) ==
        std::vector<std::string>{"scale", "fc.weight", "fc.bias"});
  CHECK_FALSE(m->running.requires_grad());  // buffers are not trained

  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 2),
                                              std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(2, 1, false));
  CHECK(names_of(seq->state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight"});

  // A loss's class weight is part of its state; without one there is nothing to save.
  CHECK(names_of(nn::CrossEntropyLoss(tensor({1, 3})).state_dict()) ==
        std::vector<std::string>{"weight"});
  CHECK(nn::CrossEntropyLoss().state_dict().empty());
  CHECK(nn::CrossEntropyLoss().buffers().empty());
}

TEST_CASE("nn: modules print as PyTorch prints them", "[nn][print]") {
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(784, 512),
                                              std::make_shared<nn::ReLU>());
  CHECK(seq->str() == "Sequential(\n"
                      "  (0): Linear(in_features=784, out_features=512, bias=True)\n"
                      "  (1): ReLU()\n"
                      ")");

  // Nested: a child's own children are indented one more level (PyTorch's _addindent).
  struct Net : nn::Module {
    Net() {
      register_module("features",
                      std::make_shared<nn::Sequential>(
                          std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 512),
                          std::make_shared<nn::ReLU>(), std::make_shared<nn::Dropout>(0.2),
                          std::make_shared<nn::Softmax>(1)));
      register_module("head", std::make_shared<nn::Linear>(512, 10, false));
    }
    std::string name() const override { return "Net"; }
  };
  std::ostringstream os;
  os << Net();
  CHECK(os.str() == "Net(\n"
                    "  (features): Sequential(\n"
                    "    (0): Flatten(start_dim=1, end_dim=-1)\n"
                    "    (1): Linear(in_features=784, out_features=512, bias=True)\n"
                    "    (2): ReLU()\n"
                    "    (3): Dropout(p=0.2)\n"
                    "    (4): Softmax(dim=1)\n"
                    "  )\n"
                    "  (head): Linear(in_features=512, out_features=10, bias=False)\n"
                    ")");

  // The default name is the C++ class name, without namespaces.
  const std::string mlp = FullyNeuralNetwork().str();
  CHECK(mlp.rfind("FullyNeuralNetwork(\n  (layer_1): Linear(in_features=784", 0) == 0);
  CHECK(nn::Sequential().str() == "Sequential()");
  CHECK(nn::CrossEntropyLoss(tensor({1, 3})).str() == "CrossEntropyLoss()");
  CHECK(nn::MSELoss().str() == "MSELoss()");
  CHECK(nn::Dropout().str() == "Dropout(p=0.5)");
  CHECK(nn::Dropout(0.0).str() == "Dropout(p=0.0)");
  CHECK(nn::Dropout(0.1).str() == "Dropout(p=0.1)");
}

TEST_CASE("nn: to(dtype) converts parameters and buffers in place (seed 004)", "[nn][device]") {
  auto model = std::make_shared<WithBuffers>();
  // What an optimizer built before the move would hold: the parameter handles.
  const std::vector<Tensor> held = model->parameters();
  const Tensor running = model->running;
  const Tensor weight_handle = model->fc->weight;
  const auto weight_values = weight_handle.to_vector<double>();

  // A gradient from before the move is converted along.
  model->fc->forward(ones({1, 3})).sum().backward();

  nn::Module& same = model->to(kFloat64);
  CHECK(&same == model.get());  // the module itself, not a copy
  for (const Tensor& p : held) {
    CHECK(p.dtype() == kFloat64);
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
  }
  CHECK(running.dtype() == kFloat64);
  CHECK(model->scratch.dtype() == kFloat64);
  CHECK(model->steps.dtype() == kInt64);  // integer buffers keep their dtype
  CHECK(weight_handle.is_same(model->fc->weight));
  CHECK(weight_handle.to_vector<double>() == weight_values);  // values exact (float -> double)
  REQUIRE(model->fc->weight.grad().defined());
  CHECK(model->fc->weight.grad().dtype() == kFloat64);

  // The held handles are what the model computes with, and what its gradients reach.
  model->zero_grad();
  model->fc->forward(ones({2, 3}, kFloat64)).sum().backward();
  CHECK(held[1].grad().defined());
  CHECK(held[1].grad().dtype() == kFloat64);

  // A loss's class weight is a buffer and moves with it.
  auto criterion = std::make_shared<nn::CrossEntropyLoss>(tensor({1, 3}));
  const Tensor class_weight = criterion->weight;
  criterion->to(kFloat64);
  CHECK(class_weight.dtype() == kFloat64);
  CHECK(criterion->named_buffers()[0].second.dtype() == kFloat64);

  model->to(kFloat32);
  CHECK(held[0].dtype() == kFloat32);
  CHECK_THROWS_WITH(model->to(kInt64), Contains("float dtype"));
}

TEST_CASE("nn: to(device) moves in place, or raises DeviceError without a GPU", "[nn][device]") {
  auto model = std::make_shared<FullyNeuralNetwork>();
  auto criterion = std::make_shared<nn::CrossEntropyLoss>(tensor({1, 3}));
  const std::vector<Tensor> held = model->parameters();

  // Moving to where it already is changes nothing.
  CHECK(&model->cpu() == model.get());
  CHECK(held[0].is_same(model->layer_1->weight));

  if (!cuda::is_available()) {
    CHECK_THROWS_AS(model->to(Device("cuda")), DeviceError);
    CHECK_THROWS_AS(model->cuda(), DeviceError);
    CHECK_THROWS_AS(criterion->cuda(0), DeviceError);
    // The failed move left everything where it was.
    for (const Tensor& p : held) CHECK(p.device() == Device::cpu());
    CHECK(criterion->weight.device() == Device::cpu());
    return;
  }

  // Seed 004: module.cuda() moves the module itself; criterion.cuda() moves its buffer.
  nn::Module& same = model->cuda();
  CHECK(&same == model.get());
  for (const Tensor& p : held) CHECK(p.is_cuda());
  criterion->cuda();
  CHECK(criterion->weight.is_cuda());
  CHECK(criterion->named_buffers()[0].second.is_cuda());
  const Tensor inputs = randn({4, 784}).cuda();
  const Tensor target = tensor({1, 0, 0, 1}, kInt64).cuda();
  const Tensor loss = (*criterion)((*model)(inputs).narrow(1, 0, 2), target);
  CHECK(loss.is_cuda());
  loss.backward();
  CHECK(held[0].grad().is_cuda());

  // An unmoved criterion is named as the culprit.
  nn::CrossEntropyLoss stay(tensor({1, 3}));
  CHECK_THROWS_AS(stay(randn({4, 2}).cuda(), target), DeviceError);
  model->cpu();
  for (const Tensor& p : held) CHECK(p.device() == Device::cpu());
}

TEST_CASE("nn: CrossEntropyLoss and MSELoss equal their functional forms", "[nn][loss]") {
  manual_seed(11);
  Tensor logits = randn({6, 4}, TensorOptions(kFloat64).requires_grad());
  const Tensor target = tensor({0, 3, 1, 1, 2, 3}, kInt64);
  const Tensor w = tensor({1.0, 3.0, 0.5, 2.0}, kFloat64);

  nn::CrossEntropyLoss weighted(w);
  CHECK(weighted.weight.is_same(w));
  const Tensor loss = weighted(logits, target);
  CHECK(loss.dim() == 0);
  CHECK(loss.item() == Approx(F::cross_entropy(logits, target, w).item()).epsilon(1e-14));

  // And by hand: -sum_i w[y_i] log softmax(x_i)[y_i] / sum_i w[y_i].
  const auto x = logits.to_vector<double>();
  const auto y = target.to_vector<int64_t>();
  const auto wv = w.to_vector<double>();
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < 6; ++i) {
    double lse = 0.0;
    for (size_t c = 0; c < 4; ++c) lse += std::exp(x[i * 4 + c]);
    const double wi = wv[static_cast<size_t>(y[i])];
    num += wi * (std::log(lse) - x[i * 4 + static_cast<size_t>(y[i])]);
    den += wi;
  }
  CHECK(loss.item() == Approx(num / den).epsilon(1e-12));

  // Reductions and ignore_index reach the op.
  const Tensor per_sample = nn::CrossEntropyLoss(w, Reduction::None)(logits, target);
  CHECK(per_sample.shape() == Shape{6});
  CHECK(nn::CrossEntropyLoss(w, Reduction::Sum)(logits, target).item() ==
        Approx(per_sample.sum().item()).epsilon(1e-12));
  CHECK(
      nn::CrossEntropyLoss(Tensor(), Reduction::Mean, 3)(logits, target).item() ==
      Approx(F::cross_entropy(logits, target, Tensor(), Reduction::Mean, 3).item()).epsilon(1e-14));

  // The gradient through the module is the functional one.
  loss.backward();
  const auto g_module = logits.grad().to_vector<double>();
  logits.zero_grad();
  F::cross_entropy(logits, target, w).backward();
  check_close(g_module, logits.grad().to_vector<double>(), 1e-14);

  CHECK_THROWS_WITH(nn::CrossEntropyLoss(tensor({1, 2, 3, 4}, {2, 2})), Contains("1-d float"));

  const Tensor pred = randn({3, 5}, kFloat64);
  const Tensor goal = randn({3, 5}, kFloat64);
  nn::MSELoss mse;
  CHECK(mse(pred, goal).item() == Approx(F::mse_loss(pred, goal).item()).epsilon(1e-14));
  CHECK(mse(pred, goal).item() == Approx((pred - goal).pow(2).mean().item()).epsilon(1e-12));
  CHECK(nn::MSELoss(Reduction::Sum)(pred, goal).item() ==
        Approx((pred - goal).pow(2).sum().item()).epsilon(1e-12));
  CHECK(nn::MSELoss(Reduction::None)(pred, goal).shape() == Shape{3, 5});
}

TEST_CASE("nn: Flatten, ReLU and Softmax modules forward to the functional ops", "[nn]") {
  const Tensor x = randn({2, 3, 4, 5});
  CHECK(nn::Flatten()(x).shape() == Shape{2, 60});
  CHECK(nn::Flatten(0, 2)(x).shape() == Shape{24, 5});
  CHECK(nn::Flatten(2)(x).shape() == Shape{2, 3, 20});
  CHECK(F::flatten(x).shape() == Shape{120});
  CHECK(nn::Flatten().str() == "Flatten(start_dim=1, end_dim=-1)");

  const Tensor r = nn::ReLU()(x);
  CHECK(r.to_vector<float>() == F::relu(x).to_vector<float>());
  const Tensor s = nn::Softmax(-1)(x);
  CHECK(s.to_vector<float>() == F::softmax(x, -1).to_vector<float>());
  CHECK(nn::Softmax(-1).str() == "Softmax(dim=-1)");
  const auto rows = s.sum({-1}).to_vector<float>();
  for (float v : rows) CHECK(v == Approx(1.0f).epsilon(1e-5));
  CHECK(F::log_softmax(x, 1).exp().to_vector<float>().size() == 120);
}
