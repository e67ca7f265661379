// ember/nn/activation.cpp — the activation layers forward to nn::functional.
#include "nn/activation.h"

#include "nn/functional.h"

namespace ember::nn {

Tensor ReLU::forward(const Tensor& x) { return F::relu(x); }

Tensor Softmax::forward(const Tensor& x) { return F::softmax(x, dim); }

std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim); }

}  // namespace ember::nn
