// ember/data/mnist.h — the MNIST dataset (and Fashion-MNIST, which has the same files).
//
// A folder holds four IDX files (see data/idx.h), each plain or gzipped (name + ".gz"):
//   train-images-idx3-ubyte  train-labels-idx1-ubyte    60000 training samples
//   t10k-images-idx3-ubyte   t10k-labels-idx1-ubyte     10000 test samples
// Images are 28 x 28 bytes (0 = background, 255 = ink), labels bytes 0..9.
//
// The equivalent of the tutorial's
//   datasets.MNIST(root=MNIST_PATH, train=True, transform=transform)
// is
//   data::MNIST(root, /*train=*/true, transform)
// It loads both files into memory at construction and is a TensorDataset: images uint8
// [N, H, W], labels int64 [N]; give it to a DataLoader.
#pragma once

#include <string>

#include "data/dataset.h"

namespace ember::data {

// Where Debian's and Ubuntu's `dataset-fashion-mnist` package installs Fashion-MNIST (the four
// files, gzipped). ember's examples read it by default: `apt install dataset-fashion-mnist`.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Where to get MNIST and what the folder must contain: the text every "not found" error ends with.
std::string mnist_download_hint();

class MNIST : public TensorDataset {
 public:
  // Looks in root_dir, then in root_dir/MNIST/raw (where torchvision's download=True puts the
  // files). train: the 60000-sample training files, else the 10000-sample t10k test files.
  // Raises ember::IOError when the folder or a file is missing or a file is malformed, when the
  // images and labels disagree in count, or when a label is not 0..9.
  MNIST(const std::string& root_dir, bool train = true, Transform transform = {});

  const Tensor& images() const { return data(); }    // uint8 [N, H, W]
  const Tensor& labels() const { return targets(); }  // int64 [N], values 0..9
  int64_t height() const { return data().size(1); }   // 28 for MNIST and Fashion-MNIST
  int64_t width() const { return data().size(2); }
  bool train() const { return train_; }
  const std::string& images_path() const { return images_path_; }
  const std::string& labels_path() const { return labels_path_; }
  // "60000 training images of 28x28 from
  //  /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
  std::string summary() const;

  static constexpr int64_t kNumClasses = 10;

 private:
  struct Loaded;
  static Loaded load(const std::string& root_dir, bool train);
  MNIST(Loaded loaded, bool train, Transform transform);

  bool train_;
  std::string images_path_, labels_path_;
};

}  // namespace ember::data
