// ember/nn/container.cpp — Sequential and Flatten.
#include "nn/container.h"

#include "kernels/base/error.h"
#include "nn/functional.h"

namespace ember::nn {

Sequential::Sequential(const std::vector<std::shared_ptr<Layer>>& layers) {
  for (const auto& layer : layers) push_back(layer);
}

Sequential& Sequential::push_back(std::shared_ptr<Layer> layer) {
  EMBER_CHECK(layer != nullptr, "Sequential::push_back: the layer is null (create it with "
              "std::make_shared)");
  // Registered as a child too, so parameters(), train(), to() and the printout reach it.
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& layer : layers_) y = layer->forward(y);
  return y;
}

const std::shared_ptr<Layer>& Sequential::operator[](int64_t index) const {
  const auto n = static_cast<int64_t>(layers_.size());
  EMBER_CHECK(index >= -n && index < n, "Sequential: index ", index, " is out of range for ", n,
              " layer", n == 1 ? "" : "s");
  return layers_[static_cast<size_t>(index < 0 ? index + n : index)];
}

void Sequential::throw_wrong_type(int64_t index) const {
  throw ValueError("Sequential::at(" + std::to_string(index) + "): the layer there is a " +
                   (*this)[index]->name() + ", not the requested type");
}

Tensor Flatten::forward(const Tensor& x) { return F::flatten(x, start_dim, end_dim); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

}  // namespace ember::nn
