// ember/data/transforms.cpp — the batch transforms, written with ember ops.
#include "data/transforms.h"

#include <cmath>

#include "core/error.h"
#include "core/ops.h"

namespace ember::data {

Tensor ToFloat::operator()(const Tensor& x) const {
  EMBER_CHECK(x.defined(), "ToFloat: got an undefined tensor");
  if (x.dtype() != kUInt8) return x.to(kFloat32);
  // Converting first and dividing in float32 gives exactly torchvision's values: float(v) / 255.
  return x.to(kFloat32) / divisor;
}

Tensor ToTensor::operator()(const Tensor& x) const {
  const Tensor f = ToFloat{}(x);
  return f.dim() == 3 ? f.unsqueeze(1) : f;
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  EMBER_CHECK(!mean_.empty() && mean_.size() == std_.size(), "Normalize: got ", mean_.size(),
              " means and ", std_.size(), " stds: give one of each per channel (or one each)");
  for (size_t c = 0; c < std_.size(); ++c) {
    EMBER_CHECK(std::isfinite(std_[c]) && std_[c] != 0.0, "Normalize: std ", std_[c],
                " for channel ", c, " would divide by zero or not-a-number");
  }
}

Tensor Normalize::operator()(const Tensor& x) const {
  EMBER_CHECK(x.defined(), "Normalize: got an undefined tensor");
  EMBER_CHECK(is_floating(x.dtype()), "Normalize: expected a float tensor, got ", x.dtype(),
              ": put ToFloat() (or ToTensor()) before Normalize in the Compose");
  const int64_t channels = static_cast<int64_t>(mean_.size());
  if (channels == 1) return (x - mean_[0]) / std_[0];
  EMBER_CHECK(x.dim() >= 2 && x.size(1) == channels, "Normalize: ", channels,
              " channel means need a batch [B, ", channels, ", ...], got shape ",
              shape_str(x.shape()));
  // Shape [1, C, 1, ...] broadcasts one value per channel over the batch and the pixels.
  Shape per_channel(static_cast<size_t>(x.dim()), 1);
  per_channel[1] = channels;
  const Tensor m = tensor(mean_, per_channel, x.dtype());
  const Tensor s = tensor(std_, per_channel, x.dtype());
  return (x - m) / s;
}

Tensor Compose::operator()(const Tensor& x) const {
  Tensor y = x;
  for (const Transform& t : transforms_) {
    if (t) y = t(y);
  }
  return y;
}

}  // namespace ember::data
