// ember/data/cifar10.cpp — finding the CIFAR-10 batch files and checking every byte count.
#include "data/cifar10.h"

#include <cstring>
#include <filesystem>

#include "kernels/base/error.h"
#include "core/ops.h"
#include "data/image_decode.h"

namespace ember::data {

namespace {

namespace fs = std::filesystem;

bool has_batches(const fs::path& dir, bool train) {
  std::error_code ec;
  return fs::is_regular_file(dir / (train ? "data_batch_1.bin" : "test_batch.bin"), ec);
}

// The folder with the .bin files: root itself or root/cifar-10-batches-bin.
std::string find_folder(const std::string& root, bool train) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    throw IOError("CIFAR10: the folder '" + root + "' does not exist.\n" + cifar10_download_hint());
  }
  if (!fs::is_directory(root, ec)) {
    throw IOError("CIFAR10: '" + root + "' is a file; pass the folder that holds the .bin "
                  "files.\n" + cifar10_download_hint());
  }
  const fs::path unpacked = fs::path(root) / "cifar-10-batches-bin";
  if (has_batches(root, train)) return root;
  if (has_batches(unpacked, train)) return unpacked.string();
  // The pickled Python version is what torchvision downloads: say so instead of "not found".
  for (const fs::path& d : {fs::path(root), fs::path(root) / "cifar-10-batches-py"}) {
    if (fs::is_regular_file(d / "data_batch_1", ec) || fs::is_regular_file(d / "test_batch", ec)) {
      throw IOError("CIFAR10: '" + d.string() + "' holds the Python (pickle) version of "
                    "CIFAR-10, which ember does not read; it reads the binary version.\n" +
                    cifar10_download_hint());
    }
  }
  const std::string want = train ? "data_batch_1.bin" : "test_batch.bin";
  throw IOError("CIFAR10: no " + want + " in '" + root + "' nor in '" + unpacked.string() +
                "'.\n" + cifar10_download_hint());
}

}  // namespace

std::string cifar10_download_hint() {
  return "ember reads the binary version of CIFAR-10: a folder with data_batch_1.bin ... "
         "data_batch_5.bin (training) and test_batch.bin (test), each 10000 records of 1 label "
         "byte + 3072 pixel bytes (30,730,000 bytes per file).\n"
         "To get it:\n"
         "  wget https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz    # 162 MB\n"
         "  tar xzf cifar-10-binary.tar.gz    # unpacks to cifar-10-batches-bin/\n"
         "and pass cifar-10-batches-bin or the folder that holds it. (torchvision's download "
         "gives the Python version, cifar-10-python.tar.gz, which is a different format.)";
}

TensorDataset read_cifar10_batch(const std::string& path, int64_t expected_records) {
  EMBER_CHECK(expected_records >= 0, "read_cifar10_batch: expected_records must be >= 0, got ",
              expected_records);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw IOError("CIFAR10: " + path + ": no such file.\n" + cifar10_download_hint());
  }
  std::vector<uint8_t> bytes;
  const std::string read_error = read_file_bytes(path, bytes);
  if (!read_error.empty()) throw IOError("CIFAR10: " + path + ": " + read_error);
  const int64_t R = CIFAR10::kRecordBytes;
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size == 0 || size % R != 0) {
    throw IOError("CIFAR10: " + path + ": " + std::to_string(size) + " bytes is not a whole "
                  "number of " + std::to_string(R) + "-byte records (1 label byte + 3072 pixel "
                  "bytes): the file is truncated, or it is not a CIFAR-10 binary batch" +
                  (size > 0 && size % R != 0 && size > R
                       ? " (the last record is cut after " + std::to_string(size % R) + " bytes)"
                       : "") +
                  ".\n" + cifar10_download_hint());
  }
  const int64_t n = size / R;
  if (expected_records > 0 && n != expected_records) {
    throw IOError("CIFAR10: " + path + ": holds " + std::to_string(n) + " records, a CIFAR-10 "
                  "batch file has " + std::to_string(expected_records) + " (" +
                  std::to_string(expected_records * R) + " bytes): the download was cut short "
                  "or the file is from another data set; download it again.\n" +
                  cifar10_download_hint());
  }
  // Host tensors whatever the default device is: the training loop moves batches with .to().
  Tensor images = empty({n, 3, 32, 32}, TensorOptions(kUInt8).device(Device::cpu()));
  Tensor labels = empty({n}, TensorOptions(kInt64).device(Device::cpu()));
  uint8_t* x = images.data_ptr<uint8_t>();
  int64_t* y = labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* rec = bytes.data() + i * R;
    if (rec[0] > 9) {
      throw IOError("CIFAR10: " + path + ": record " + std::to_string(i) + " (byte " +
                    std::to_string(i * R) + ") has label " + std::to_string(rec[0]) +
                    ", CIFAR-10's labels are 0..9: the file is corrupt or not CIFAR-10 "
                    "(CIFAR-100's binary records have two label bytes)");
    }
    y[i] = rec[0];
    std::memcpy(x + i * (R - 1), rec + 1, static_cast<size_t>(R - 1));
  }
  return TensorDataset(images, labels);
}

namespace {

TensorDataset read_batches(const std::string& folder, bool train) {
  std::vector<std::string> names;
  if (train) {
    for (int k = 1; k <= 5; ++k) names.push_back("data_batch_" + std::to_string(k) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  if (names.size() == 1) {
    return read_cifar10_batch((fs::path(folder) / names[0]).string(), CIFAR10::kRecordsPerFile);
  }
  // Check that every file is there before reading 150 MB.
  std::error_code ec;
  for (const std::string& name : names) {
    const fs::path p = fs::path(folder) / name;
    if (!fs::is_regular_file(p, ec)) {
      throw IOError("CIFAR10: " + p.string() + ": no such file (the training set is "
                    "data_batch_1.bin ... data_batch_5.bin).\n" + cifar10_download_hint());
    }
  }
  const int64_t per_file = CIFAR10::kRecordsPerFile;
  const int64_t sample = CIFAR10::kRecordBytes - 1;
  const int64_t total = per_file * static_cast<int64_t>(names.size());
  Tensor images = empty({total, 3, 32, 32}, TensorOptions(kUInt8).device(Device::cpu()));
  Tensor labels = empty({total}, TensorOptions(kInt64).device(Device::cpu()));
  for (size_t f = 0; f < names.size(); ++f) {
    const TensorDataset part =
        read_cifar10_batch((fs::path(folder) / names[f]).string(), per_file);
    const int64_t at = static_cast<int64_t>(f) * per_file;
    std::memcpy(images.data_ptr<uint8_t>() + at * sample, part.data().raw_data(),
                static_cast<size_t>(per_file * sample));
    std::memcpy(labels.data_ptr<int64_t>() + at, part.targets().raw_data(),
                static_cast<size_t>(per_file) * sizeof(int64_t));
  }
  return TensorDataset(images, labels);
}

}  // namespace

struct CIFAR10::Loaded {
  Tensor images, labels;
  std::string folder;
};

CIFAR10::Loaded CIFAR10::load(const std::string& root, bool train) {
  Loaded l;
  l.folder = find_folder(root, train);
  const TensorDataset d = read_batches(l.folder, train);
  l.images = d.data();
  l.labels = d.targets();
  return l;
}

CIFAR10::CIFAR10(const std::string& root, bool train, Transform transform)
    : CIFAR10(load(root, train), train, std::move(transform)) {}

CIFAR10::CIFAR10(Loaded loaded, bool train, Transform transform)
    : TensorDataset(std::move(loaded.images), std::move(loaded.labels), std::move(transform)),
      folder_(std::move(loaded.folder)),
      train_(train) {}

const std::vector<std::string>& CIFAR10::classes() {
  static const std::vector<std::string> names = {"plane", "car",  "bird",  "cat",  "deer",
                                                 "dog",   "frog", "horse", "ship", "truck"};
  return names;
}

std::string CIFAR10::summary() const {
  return std::to_string(size()) + (train_ ? " training" : " test") + " images of 3x32x32 from " +
         folder_;
}

}  // namespace ember::data
