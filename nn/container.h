// ember/nn/container.h — Sequential (torch.nn.Sequential) and Flatten (torch.nn.Flatten).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

// Layers applied one after another; each is registered as a child named by its position
// ("0", "1", ...), so parameters are named "0.weight", "0.bias", "2.weight" as in PyTorch.
//
//   nn::Sequential model{std::make_shared<nn::Flatten>(),
//                        std::make_shared<nn::Linear>(784, 512), std::make_shared<nn::ReLU>(),
//                        std::make_shared<nn::Linear>(512, 10)};
//
// Braces, not parentheses. A layer draws its initial weights from the global generator when it
// is made, so the order in which the layers are made decides every weight. C++ leaves the order
// of a call's arguments to the compiler: in `Sequential(a, b, c)` GCC makes c first on x86-64
// and a first on aarch64 (clang: a first everywhere), so after manual_seed(0) the same line gives
// other weights on each machine, and on x86-64 not PyTorch's, whose layers are made in order.
// Inside braces the order is left to right on every compiler. As a shared_ptr, made in order:
//
//   auto model = std::make_shared<nn::Sequential>();
//   model->push_back(std::make_shared<nn::Linear>(784, 512))
//       .push_back(std::make_shared<nn::ReLU>());
class Sequential : public Layer {
 public:
  Sequential() = default;
  // Any number of layers of any Layer type (also the zero-argument case above).
  template <typename... Layers>
  explicit Sequential(std::shared_ptr<Layers>... layers) {
    (push_back(std::move(layers)), ...);
  }
  explicit Sequential(const std::vector<std::shared_ptr<Layer>>& layers);

  // Appends a layer and returns the container, so calls chain.
  Sequential& push_back(std::shared_ptr<Layer> layer);

  // Feeds x through every layer in order; an empty Sequential returns x.
  Tensor forward(const Tensor& x) override;

  // The layer at `index`; negative indices count from the end, as in Python.
  const std::shared_ptr<Layer>& operator[](int64_t index) const;
  // The same, cast to its concrete type: `seq->at<nn::Linear>(0)->weight`. Throws if the layer
  // there is not an M.
  template <typename M>
  std::shared_ptr<M> at(int64_t index) const {
    auto layer = std::dynamic_pointer_cast<M>((*this)[index]);
    if (!layer) throw_wrong_type(index);
    return layer;
  }
  size_t size() const { return layers_.size(); }
  bool empty() const { return layers_.empty(); }
  std::vector<std::shared_ptr<Layer>>::const_iterator begin() const { return layers_.begin(); }
  std::vector<std::shared_ptr<Layer>>::const_iterator end() const { return layers_.end(); }

  std::string name() const override { return "Sequential"; }

 private:
  [[noreturn]] void throw_wrong_type(int64_t index) const;
  std::vector<std::shared_ptr<Layer>> layers_;
};

// Merges dims start_dim..end_dim into one; the defaults keep the batch dim and flatten the
// rest, turning MNIST's [N, 1, 28, 28] images into [N, 784] rows for a Linear layer.
class Flatten : public Layer {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Flatten"; }
  std::string extra_repr() const override;

  const int64_t start_dim;
  const int64_t end_dim;
};

}  // namespace ember::nn
