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
// The DataLoader runs them on its background threads, so they overlap with training.
//
// Random augmentations (RandomCrop, RandomHorizontalFlip) are seeded per sample: the draw for
// dataset sample i in epoch e is Philox(seed, counter = (i, e)) — a pure function of
// (seed, epoch, sample index), not of a generator that advances as batches are made. So the
// augmented batches are the same for any number of DataLoader workers and any timing, every
// epoch sees new crops, and the same seed replays them. They take the batch's sample indices
// and the epoch, which the dataset passes (TensorDataset::set_augmentation, LazyImageFolder).
#pragma once

#include <cstdint>
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

// images [B, C, H, W] (any dtype), indices int64 [B] (the dataset index of each row), epoch.
using Augmentation =
    std::function<Tensor(const Tensor& images, const Tensor& indices, int64_t epoch)>;

// torchvision's RandomCrop(size, padding): each image is padded with `padding` zero pixels on
// every side, then a height x width window at a random (top, left) is cut out of it, uniform
// over the (H + 2p - height + 1) x (W + 2p - width + 1) positions. CIFAR-10 training uses
// RandomCrop{32, 32, 4}: shifts of up to 4 pixels, the border filled with black.
struct RandomCrop {
  int64_t height = 0, width = 0;
  int64_t padding = 0;
  uint64_t seed = 0;
  Tensor operator()(const Tensor& images, const Tensor& indices, int64_t epoch) const;
};

// torchvision's RandomHorizontalFlip(p): each image is mirrored left-right with probability p.
struct RandomHorizontalFlip {
  double p = 0.5;
  uint64_t seed = 0;
  Tensor operator()(const Tensor& images, const Tensor& indices, int64_t epoch) const;
};

// Augmentations applied in order; each draws from its own seed.
class ComposeAugmentations {
 public:
  ComposeAugmentations(std::vector<Augmentation> steps) : steps_(std::move(steps)) {}  // NOLINT
  Tensor operator()(const Tensor& images, const Tensor& indices, int64_t epoch) const;

 private:
  std::vector<Augmentation> steps_;
};

}  // namespace ember::data
