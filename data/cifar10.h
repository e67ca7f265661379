// ember/data/cifar10.h — the CIFAR-10 dataset, binary version.
//
// Seed 001 loads it with torchvision:
//   trainset = torchvision.datasets.CIFAR10(root='./data', train=True, transform=transform)
// which in ember is
//   data::CIFAR10 trainset(root, /*train=*/true, transform);
// It reads the "binary version" of CIFAR-10 (cifar-10-binary.tar.gz), not the pickled Python
// version torchvision downloads: six files of records
//   <1 byte label 0..9> <1024 bytes red> <1024 bytes green> <1024 bytes blue>
// each colour plane a 32x32 image in row-major order, so a record's 3072 pixel bytes are already
// one [3, 32, 32] sample. data_batch_1.bin ... data_batch_5.bin hold the 50000 training images,
// test_batch.bin the 10000 test images, 10000 records per file.
//
// Every file must be exactly 10000 records (30,730,000 bytes): the real files always are, and a
// shorter one — even one cut at a record boundary — is a broken download we would rather report
// than train on. read_cifar10_batch reads a single file of any whole number of records, for
// subsets and tests.
#pragma once

#include <string>
#include <vector>

#include "data/dataset.h"

namespace ember::data {

// Where to get the binary version and how the folder must look: every "not found" error ends
// with it.
std::string cifar10_download_hint();

class CIFAR10 : public TensorDataset {
 public:
  // root holds the .bin files, or holds cifar-10-batches-bin/ with them (what the archive
  // unpacks to). images uint8 [N, 3, 32, 32] (N = 50000 for train, 10000 for test), labels
  // int64 [N]. Throws ember::IOError naming the file for a missing file, a size that is not
  // 10000 records, or a label above 9.
  CIFAR10(const std::string& root, bool train = true, Transform transform = {});

  // "plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck" (the seed's
  // names, in label order; batches.meta.txt calls the first two airplane and automobile).
  static const std::vector<std::string>& classes();
  // "50000 training images of 3x32x32 from data/cifar-10-batches-bin"
  std::string summary() const;

  const Tensor& images() const { return data(); }     // uint8 [N, 3, 32, 32]
  const Tensor& labels() const { return targets(); }  // int64 [N], values 0..9
  bool train() const { return train_; }
  const std::string& folder() const { return folder_; }

  static constexpr int64_t kRecordsPerFile = 10000;
  static constexpr int64_t kRecordBytes = 1 + 3 * 32 * 32;

 private:
  struct Loaded;
  static Loaded load(const std::string& root, bool train);
  CIFAR10(Loaded loaded, bool train, Transform transform);

  std::string folder_;
  bool train_;
};

// One binary batch file: images uint8 [R, 3, 32, 32], labels int64 [R]. expected_records: the
// number of records the file must hold (CIFAR10 passes 10000), or 0 for any whole number of
// records (at least one). Throws ember::IOError naming the file.
TensorDataset read_cifar10_batch(const std::string& path, int64_t expected_records = 0);

}  // namespace ember::data
