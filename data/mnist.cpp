// ember/data/mnist.cpp — finding MNIST's files, reading them, checking that they agree.
#include "data/mnist.h"

#include <filesystem>

#include "kernels/base/error.h"
#include "data/idx.h"

namespace ember::data {

namespace {

namespace fs = std::filesystem;

// "<dir>/<name>" if it exists, else "<dir>/<name>.gz" if that exists, else "".
std::string find_file(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  for (const std::string& candidate : {name, name + ".gz"}) {
    const fs::path p = dir / candidate;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

}  // namespace

std::string mnist_download_hint() {
  return std::string(
             "ember reads MNIST from a folder that holds its four IDX files, each plain or "
             "gzipped (.gz):\n"
             "  train-images-idx3-ubyte  train-labels-idx1-ubyte  t10k-images-idx3-ubyte  "
             "t10k-labels-idx1-ubyte\n"
             "To get them:\n"
             "  - Fashion-MNIST (same format and sizes: 28x28 images of 10 kinds of clothing) from "
             "Debian/Ubuntu:\n"
             "      sudo apt install dataset-fashion-mnist    # installs the .gz files in ") +
         kFashionMnistDir +
         "/\n"
         "    ember's examples read that folder by default.\n"
         "  - MNIST digits: download the four .gz files from "
         "https://ossci-datasets.s3.amazonaws.com/mnist/\n"
         "    (a mirror of http://yann.lecun.com/exdb/mnist/) into one folder; no need to unpack "
         "them.\n"
         "  - or let torchvision fetch them:\n"
         "      python3 -c \"import torchvision; torchvision.datasets.MNIST('data', "
         "download=True)\"\n"
         "    and pass the folder data (ember also looks in data/MNIST/raw).";
}

// The two tensors read from disk, before they become a TensorDataset.
struct MNIST::Loaded {
  Tensor images, labels;
  std::string images_path, labels_path;
};

MNIST::Loaded MNIST::load(const std::string& root, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_name = prefix + "-images-idx3-ubyte";
  const std::string labels_name = prefix + "-labels-idx1-ubyte";

  std::error_code ec;
  if (!fs::exists(root, ec)) {
    throw IOError("MNIST: the folder '" + root + "' does not exist.\n" + mnist_download_hint());
  }
  if (!fs::is_directory(root, ec)) {
    throw IOError("MNIST: '" + root + "' is a file; pass the folder that holds the MNIST files.\n" +
                  mnist_download_hint());
  }

  // The folder itself, or torchvision's layout below it.
  MNIST::Loaded l;
  const fs::path torchvision_dir = fs::path(root) / "MNIST" / "raw";
  for (const fs::path& dir : {fs::path(root), torchvision_dir}) {
    l.images_path = find_file(dir, images_name);
    l.labels_path = find_file(dir, labels_name);
    if (!l.images_path.empty() && !l.labels_path.empty()) break;
  }
  if (l.images_path.empty() || l.labels_path.empty()) {
    // Name what the root folder itself lacks.
    std::string missing;
    if (find_file(root, images_name).empty()) missing += images_name + "[.gz]";
    if (find_file(root, labels_name).empty()) {
      missing += (missing.empty() ? "" : " and ") + labels_name + "[.gz]";
    }
    throw IOError("MNIST: no " + missing + " in '" + root + "' (nor both files in '" +
                  torchvision_dir.string() + "').\n" + mnist_download_hint());
  }

  l.images = read_idx(l.images_path, IdxKind::Images);  // uint8 [N, H, W]
  const Tensor labels = read_idx(l.labels_path, IdxKind::Labels);  // uint8 [N]
  const int64_t n_images = l.images.size(0), n_labels = labels.size(0);
  if (n_images != n_labels) {
    throw IOError("MNIST: " + std::to_string(n_images) + " images vs " +
                  std::to_string(n_labels) + " labels in '" + l.images_path + "' and '" +
                  l.labels_path + "': the two files do not belong together (or one is damaged)");
  }
  if (l.images.size(1) == 0 || l.images.size(2) == 0) {
    throw IOError(l.images_path + ": images of " + std::to_string(l.images.size(1)) + "x" +
                  std::to_string(l.images.size(2)) + " pixels: the header is corrupt");
  }
  const uint8_t* y = labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n_labels; ++i) {
    if (y[i] >= MNIST::kNumClasses) {
      throw IOError(l.labels_path + ": label " + std::to_string(y[i]) + " at index " +
                    std::to_string(i) + " is out of range 0..9: this is not an MNIST labels "
                    "file, or it is corrupt");
    }
  }
  // cross_entropy wants class indices as int64, like PyTorch's MNIST targets.
  l.labels = labels.to(kInt64);
  return l;
}

MNIST::MNIST(const std::string& root_dir, bool train, Transform transform)
    : MNIST(load(root_dir, train), train, std::move(transform)) {}

MNIST::MNIST(Loaded loaded, bool train, Transform transform)
    : TensorDataset(std::move(loaded.images), std::move(loaded.labels), std::move(transform)),
      train_(train),
      images_path_(std::move(loaded.images_path)),
      labels_path_(std::move(loaded.labels_path)) {}

std::string MNIST::summary() const {
  return std::to_string(size()) + (train_ ? " training" : " test") + " images of " +
         std::to_string(height()) + "x" + std::to_string(width()) + " from " + images_path_;
}

}  // namespace ember::data
