// ember/data/transforms.h — what happens to a batch of data on its way to the model.
//
// A transform is any callable Tensor -> Tensor; the ones here mirror torchvision's, applied to a
// whole batch at once (ember's datasets gather a batch first, then transform it):
//
//   torchvision                                         ember
//   transforms.Compose([                                Compose({
//       transforms.ToTensor(),                              ToTensor(),
//       transforms.Normalize((0.1307,), (0.3081,))])       Normalize(0.1307, 0.3081)})
//
// The DataLoader runs them on its background thread, so they overlap with training.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace ember::data {

using Transform = std::function<Tensor(const Tensor&)>;

// uint8 pixels 0..255 -> float32 0..1 (x / 255, as torchvision's ToTensor does), keeping the
// shape. Other dtypes are only converted to float32: only bytes are taken to be pixels.
struct ToFloat {
  double divisor = 255.0;
  Tensor operator()(const Tensor& x) const;
};

// torchvision's ToTensor for a batch of grayscale images: ToFloat, and [B, H, W] becomes
// [B, 1, H, W] (ToTensor turns one H x W image into [1, H, W]: a channel dimension). Other
// ranks keep their shape.
struct ToTensor {
  Tensor operator()(const Tensor& x) const;
};

// (x - mean) / std, per channel like torchvision's Normalize. With one mean and one std they
// apply to every element; with C of each, dim 1 of the batch ([B, C, ...]) must have size C.
// For MNIST, 0.1307 and 0.3081 are the mean and standard deviation of the training pixels
// (after ToFloat), so the normalized inputs have mean 0 and std 1.
class Normalize {
 public:
  Normalize(double mean, double std)
      : Normalize(std::vector<double>{mean}, std::vector<double>{std}) {}
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& x) const;

 private:
  std::vector<double> mean_, std_;
};

// Applies transforms in order.
class Compose {
 public:
  Compose(std::vector<Transform> transforms) : transforms_(std::move(transforms)) {}  // NOLINT
  Tensor operator()(const Tensor& x) const;

 private:
  std::vector<Transform> transforms_;
};

}  // namespace ember::data
