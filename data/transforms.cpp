// ember/data/transforms.cpp — the batch transforms, written with ember ops.
#include "data/transforms.h"

#include <cmath>
#include <cstring>

#include "kernels/base/error.h"
#include "core/ops.h"
#include "kernels/base/philox.h"

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

// ---- random augmentations ---------------------------------------------------------------------

namespace {

// Mixed into the Philox key so that crop and flip (and the DataLoader's shuffle) draw different
// numbers from the same seed: "RandCrop" and "RandFlip" in ASCII.
constexpr uint64_t kCropStream = 0x52616E6443726F70ULL;
constexpr uint64_t kFlipStream = 0x52616E64466C6970ULL;

// The checks both augmentations share; returns the indices as a contiguous int64 tensor.
Tensor check_augmentation_args(const char* name, const Tensor& images, const Tensor& indices) {
  EMBER_CHECK(images.defined() && images.dim() == 4, name, ": expected images [B, C, H, W], got ",
              images.defined() ? shape_str(images.shape()) : std::string("an undefined tensor"));
  EMBER_CHECK(images.device().is_cpu(), name, ": images must be on the CPU (augment in the "
              "dataset, before the batch is moved to ", images.device().str(), ")");
  EMBER_CHECK(indices.defined() && indices.dim() == 1 && indices.dtype() == kInt64 &&
                  indices.device().is_cpu() && indices.size(0) == images.size(0),
              name, ": expected indices int64 [", images.size(0), "] (one per image, on the CPU), got ",
              indices.defined() ? shape_str(indices.shape()) : std::string("an undefined tensor"));
  return indices.contiguous();
}

// Two 32-bit random words for sample `index` in `epoch`.
kernels::Philox4 draw(uint64_t seed, uint64_t stream, int64_t index, int64_t epoch) {
  return kernels::philox4x32(seed ^ stream, static_cast<uint64_t>(index),
                             static_cast<uint64_t>(epoch));
}

}  // namespace

Tensor RandomCrop::operator()(const Tensor& images, const Tensor& indices, int64_t epoch) const {
  const Tensor idx = check_augmentation_args("RandomCrop", images, indices);
  EMBER_CHECK(height > 0 && width > 0 && padding >= 0, "RandomCrop: needs a positive size and "
              "padding >= 0, got ", height, "x", width, " with padding ", padding);
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  const int64_t PH = H + 2 * padding, PW = W + 2 * padding;  // the padded image
  EMBER_CHECK(height <= PH && width <= PW, "RandomCrop: a ", height, "x", width,
              " crop does not fit in a ", H, "x", W, " image padded by ", padding, " (", PH, "x",
              PW, "): crop smaller or pad more");
  const Tensor src = images.contiguous();
  Tensor out = zeros({B, C, height, width}, TensorOptions(images.dtype()).device(Device::cpu()));
  // Pure data movement, so it works on bytes for every dtype: element size `es`.
  const size_t es = static_cast<size_t>(src.element_size());
  const auto* in = static_cast<const uint8_t*>(src.raw_data());
  auto* o = static_cast<uint8_t*>(out.raw_data());
  const int64_t* ix = idx.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const kernels::Philox4 r = draw(seed, kCropStream, ix[b], epoch);
    // (top, left) in the padded image; 32 random bits mod a small range: bias below 2^-20.
    const int64_t top = static_cast<int64_t>(r.v[0] % static_cast<uint32_t>(PH - height + 1));
    const int64_t left = static_cast<int64_t>(r.v[1] % static_cast<uint32_t>(PW - width + 1));
    // Output column x reads padded column left + x, that is source column left + x - padding;
    // the columns outside [0, W) stay zero (the padding). Same for rows.
    const int64_t x0 = std::max<int64_t>(0, padding - left);
    const int64_t x1 = std::min<int64_t>(width, W + padding - left);
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t y = 0; y < height; ++y) {
        const int64_t sy = top + y - padding;
        if (sy < 0 || sy >= H || x1 <= x0) continue;
        const int64_t sx = left + x0 - padding;
        std::memcpy(o + (((b * C + c) * height + y) * width + x0) * es,
                    in + (((b * C + c) * H + sy) * W + sx) * es,
                    static_cast<size_t>(x1 - x0) * es);
      }
    }
  }
  return out;
}

Tensor RandomHorizontalFlip::operator()(const Tensor& images, const Tensor& indices,
                                        int64_t epoch) const {
  const Tensor idx = check_augmentation_args("RandomHorizontalFlip", images, indices);
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "RandomHorizontalFlip: p is a probability, got ", p);
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  Tensor out = images.contiguous().clone();
  const size_t es = static_cast<size_t>(out.element_size());
  auto* o = static_cast<uint8_t*>(out.raw_data());
  const int64_t* ix = idx.data_ptr<int64_t>();
  // Flip when the draw u (uniform in [0, 1), from 32 bits) is below p: p = 1 always flips.
  for (int64_t b = 0; b < B; ++b) {
    const double u = draw(seed, kFlipStream, ix[b], epoch).v[0] * (1.0 / 4294967296.0);
    if (!(u < p)) continue;
    for (int64_t row = 0; row < C * H; ++row) {
      uint8_t* line = o + ((b * C * H) + row) * W * es;
      for (int64_t x = 0; x < W / 2; ++x) {
        // swap element x and element W - 1 - x, es bytes each
        uint8_t* a = line + x * es;
        uint8_t* z = line + (W - 1 - x) * es;
        for (size_t k = 0; k < es; ++k) std::swap(a[k], z[k]);
      }
    }
  }
  return out;
}

Tensor ComposeAugmentations::operator()(const Tensor& images, const Tensor& indices,
                                        int64_t epoch) const {
  Tensor y = images;
  for (const Augmentation& a : steps_) {
    if (a) y = a(y, indices, epoch);
  }
  return y;
}

}  // namespace ember::data
