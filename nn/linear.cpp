// ember/nn/linear.cpp — Linear: initialisation, checks that name the layer, and forward.
#include "nn/linear.h"

#include "kernels/base/error.h"
#include "core/ops.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace ember::nn {

namespace {

// "ember::kFloat32": how the user spells the dtype in a fix.
std::string dtype_constant(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "ember::kFloat32";
    case DType::Float64: return "ember::kFloat64";
    case DType::Int64: return "ember::kInt64";
    case DType::Int32: return "ember::kInt32";
    case DType::UInt8: return "ember::kUInt8";
    case DType::Bool: return "ember::kBool";
  }
  return dtype_name(dtype);
}

}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  EMBER_CHECK(in >= 0 && out >= 0, "Linear(in_features=", in, ", out_features=", out,
              "): the sizes must not be negative");
  weight = register_parameter("weight", empty({out, in}));
  bias = register_parameter("bias", with_bias ? empty({out}) : Tensor());
  reset_parameters();
}

void Linear::reset_parameters() {
  // torch.nn.init.kaiming_uniform_(weight, a=sqrt(5)) and a U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  // bias, fan_in = in_features: the init Conv2d shares (nn/init.cpp spells out the arithmetic).
  init::default_layer_init_(weight, bias);
}

Tensor Linear::forward(const Tensor& x) {
  // The checks F::linear would also make, phrased for this layer so that a model's error says
  // which layer was given what.
  if (x.dim() == 0 || x.size(-1) != in_features) {
    std::string hint;
    if (x.dim() > 2 && in_features > 0 && x.numel() % in_features == 0) {
      hint = " (to feed images, flatten them first: x.view({-1, " + std::to_string(in_features) +
             "}) or an nn::Flatten layer)";
    }
    throw ValueError(str() + ": expected an input whose last dimension has " +
                     std::to_string(in_features) + " features, got shape " +
                     shape_str(x.shape()) + hint);
  }
  EMBER_CHECK_T(DeviceError, x.device() == weight.device(), str(), ": the input is on ",
                x.device(), " but the layer's weight is on ", weight.device(), ": move the model "
                "with model->to(device) (modules move in place) or the input with x.to(device)");
  if (x.dtype() != weight.dtype()) {
    std::string fix = "convert the input with x.to(" + dtype_constant(weight.dtype()) + ")";
    if (is_floating(x.dtype())) {
      fix += " or the model with model->to(" + dtype_constant(x.dtype()) + ")";
    }
    throw ValueError(str() + ": the input is " + dtype_name(x.dtype()) +
                     " but the layer's weight is " + dtype_name(weight.dtype()) + ": " + fix);
  }
  return F::linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" +
         std::to_string(out_features) + ", bias=" + (bias.defined() ? "True" : "False");
}

}  // namespace ember::nn
