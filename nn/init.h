// ember/nn/init.h — filling parameters in place (torch.nn.init).
//
// The layers' reset_parameters() call these, so Linear and Conv2d draw their starting weights
// the same way PyTorch does, from ember's global generator (manual_seed makes them repeatable).
// They change the values of a parameter without recording anything for autograd and without
// replacing the tensor, so every handle to it (a layer's `weight`, an optimizer) keeps seeing it.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ember::nn::init {

// Fills t with U(low, high), keeping its identity, dtype and device. Returns t.
Tensor& uniform_(Tensor& t, double low, double high);

// The number of inputs one output element sees: size(1) times the kernel's spatial size, i.e.
// in_features for a Linear weight [out, in], in_channels * kh * kw for a Conv2d weight
// [out, in, kh, kw]. Needs at least 2 dimensions.
int64_t fan_in(const Tensor& weight);

// kaiming_uniform_(t, a) with mode fan_in and a leaky-ReLU nonlinearity of slope a: U(-bound,
// bound) with gain = sqrt(2 / (1 + a^2)) and bound = gain * sqrt(3 / fan_in), so that the
// standard deviation is gain / sqrt(fan_in). PyTorch's layers use a = sqrt(5), for which the
// bound is exactly 1 / sqrt(fan_in). An empty weight (fan_in 0) is left as it is. Returns t.
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0);

// What Linear and Conv2d do in reset_parameters(), as torch.nn.Linear / _ConvNd do:
// weight <- kaiming_uniform_(a = sqrt(5)), bias (if defined) <- U(-1/sqrt(fan_in), 1/sqrt(fan_in))
// with the weight's fan_in.
void default_layer_init_(Tensor& weight, Tensor& bias);

}  // namespace ember::nn::init
