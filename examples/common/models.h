// examples/common/models.h — the three tutorial models, defined once, layer for layer as the
// seeds define them. The examples (examples/mnist_mlp, cifar10_cnn, cats_vs_dogs) train them and
// bench/bench_train times them; both include this header, so the benchmark measures exactly the
// model the example trains.
//
// Header-only and not part of the library: include it as "examples/common/models.h" (the repo
// root is on the include path of every target that links ember::ember in this tree).
//
// Each model lives in a namespace named after its example, because two of them are called Net,
// as in their seeds. name() and the printed module tree are the seeds' names.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/ember.h"
#include "nn/nn.h"

namespace examples {

// ---- seed 000: the MNIST fully connected classifier (examples/mnist_mlp) ----------------------
namespace mnist_mlp {

// The seed's FullyNeuralNetwork, layer for layer: 784-512-256-128-64-10 with ReLU.
// Input [N, 1, 28, 28] (or anything with 784 values per sample), output logits [N, 10].
struct FullyNeuralNetwork : ember::nn::Layer {
  std::shared_ptr<ember::nn::Linear> layer_1, layer_2, layer_3, layer_4, layer_5;
  FullyNeuralNetwork() {
    using ember::nn::Linear;
    layer_1 = register_module("layer_1", std::make_shared<Linear>(784, 512));  // 28 x 28 pixels
    layer_2 = register_module("layer_2", std::make_shared<Linear>(512, 256));
    layer_3 = register_module("layer_3", std::make_shared<Linear>(256, 128));
    layer_4 = register_module("layer_4", std::make_shared<Linear>(128, 64));
    layer_5 = register_module("layer_5", std::make_shared<Linear>(64, 10));
  }
  std::string name() const override { return "FullyNeuralNetwork"; }
  ember::Tensor forward(const ember::Tensor& data) override {
    ember::Tensor x = data.reshape({-1, 784});
    x = ember::relu((*layer_1)(x));
    x = ember::relu((*layer_2)(x));
    x = ember::relu((*layer_3)(x));
    x = ember::relu((*layer_4)(x));
    return (*layer_5)(x);
  }
};

}  // namespace mnist_mlp

// ---- seed 001: the CIFAR-10 CNN of "Training a classifier" (examples/cifar10_cnn) -------------
namespace cifar10_cnn {

// The seed's Net, layer for layer: one MaxPool2d module used twice, as the tutorial does.
// Input [N, 3, 32, 32], output logits [N, 10].
struct Net : ember::nn::Layer {
  std::shared_ptr<ember::nn::Conv2d> conv1, conv2;
  std::shared_ptr<ember::nn::MaxPool2d> pool;
  std::shared_ptr<ember::nn::Linear> fc1, fc2, fc3;

  Net() {
    using ember::nn::Conv2d;
    using ember::nn::Linear;
    conv1 = register_module("conv1", std::make_shared<Conv2d>(3, 6, 5));
    pool = register_module("pool", std::make_shared<ember::nn::MaxPool2d>(2, 2));
    conv2 = register_module("conv2", std::make_shared<Conv2d>(6, 16, 5));
    fc1 = register_module("fc1", std::make_shared<Linear>(16 * 5 * 5, 120));
    fc2 = register_module("fc2", std::make_shared<Linear>(120, 84));
    fc3 = register_module("fc3", std::make_shared<Linear>(84, 10));
  }
  std::string name() const override { return "Net"; }

  ember::Tensor forward(const ember::Tensor& input) override {
    namespace F = ember::nn::functional;
    ember::Tensor x = (*pool)(F::relu((*conv1)(input)));  // [N, 6, 14, 14]
    x = (*pool)(F::relu((*conv2)(x)));                    // [N, 16, 5, 5]
    x = x.view({-1, 16 * 5 * 5});
    x = F::relu((*fc1)(x));
    x = F::relu((*fc2)(x));
    return (*fc3)(x);
  }
};

}  // namespace cifar10_cnn

// ---- seed 002: the cats-vs-dogs CNN (examples/cats_vs_dogs) ------------------------------------
namespace cats_vs_dogs {

// The seed's Net, layer for layer. Like the seed, it finds the size of the flattened conv output
// (128 * 2 * 2 = 512 for 50x50 inputs) by pushing one dummy image through the conv stack — which
// draws from the global generator (randn), as the seed does, before fc1 is initialized.
// Input [N, 1, 50, 50], output class probabilities [N, 2] (a softmax: the seed trains it with
// MSE against one-hot labels).
struct Net : ember::nn::Layer {
  std::shared_ptr<ember::nn::Conv2d> conv1, conv2, conv3;
  std::shared_ptr<ember::nn::Linear> fc1, fc2;
  int64_t to_linear = 0;

  explicit Net(int64_t image_size = 50) {
    using ember::nn::Conv2d;
    using ember::nn::Linear;
    // 1 image in, 32 out, 5x5
    conv1 = register_module("conv1", std::make_shared<Conv2d>(1, 32, 5));
    conv2 = register_module("conv2", std::make_shared<Conv2d>(32, 64, 5));
    conv3 = register_module("conv3", std::make_shared<Conv2d>(64, 128, 5));
    {
      ember::NoGradGuard no_grad;
      const ember::Tensor x =
          ember::randn({image_size, image_size}).view({-1, 1, image_size, image_size});
      to_linear = convs(x)[0].numel();
    }
    fc1 = register_module("fc1", std::make_shared<Linear>(to_linear, 512));  // flattening
    fc2 = register_module("fc2", std::make_shared<Linear>(512, 2));  // 2 classes: cat, dog
  }
  std::string name() const override { return "Net"; }

  ember::Tensor convs(ember::Tensor x) {
    namespace F = ember::nn::functional;
    // max pooling over 2x2
    x = F::max_pool2d(F::relu((*conv1)(x)), {2, 2});
    x = F::max_pool2d(F::relu((*conv2)(x)), {2, 2});
    x = F::max_pool2d(F::relu((*conv3)(x)), {2, 2});
    return x;
  }

  ember::Tensor forward(const ember::Tensor& input) override {
    namespace F = ember::nn::functional;
    ember::Tensor x = convs(input);
    x = x.view({-1, to_linear});
    x = F::relu((*fc1)(x));
    x = (*fc2)(x);  // the output layer: no activation here
    return F::softmax(x, 1);
  }
};

}  // namespace cats_vs_dogs

}  // namespace examples
