// The CIFAR-10 binary reader against batch files written here: the record layout (label, then
// the red, green and blue planes), the size and label checks, the folder search and its errors.
// Full-size files (10000 records, 30.7 MB) are written where the reader demands them; the five
// training batches share two distinct files through symbolic links to keep the test light.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "test_files.h"

using namespace ember;
using namespace ember::data;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::error_of;
using test::write_bytes;

// A scratch folder for this file's tests.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_cifar_") {}
};

// Pixel (c, y, x) of record i in file `tag`: a value that tells all four apart (mod 256).
uint8_t pixel(int tag, int64_t i, int c, int y, int x) {
  return static_cast<uint8_t>(tag * 101 + i * 7 + c * 85 + y * 3 + x);
}
int label_of(int tag, int64_t i) { return static_cast<int>((i * 3 + tag) % 10); }

Bytes batch(int64_t records, int tag) {
  Bytes b;
  b.reserve(static_cast<size_t>(records * 3073));
  for (int64_t i = 0; i < records; ++i) {
    b.push_back(static_cast<uint8_t>(label_of(tag, i)));
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) b.push_back(pixel(tag, i, c, y, x));
      }
    }
  }
  return b;
}

// Checks sample k of `images`/`labels` against record i of file `tag`.
void check_record(const Tensor& images, const Tensor& labels, int64_t k, int tag, int64_t i) {
  INFO("sample " << k << " = record " << i << " of file " << tag);
  const std::vector<uint8_t> v = images.narrow(0, k, 1).contiguous().to_vector<uint8_t>();
  REQUIRE(v.size() == 3072);
  bool all_equal = true;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        all_equal = all_equal && v[static_cast<size_t>(c * 1024 + y * 32 + x)] == pixel(tag, i, c, y, x);
      }
    }
  }
  CHECK(all_equal);
  CHECK(labels.narrow(0, k, 1).item<int64_t>() == label_of(tag, i));
}

}  // namespace

TEST_CASE("CIFAR10: a batch file's records become [3, 32, 32] images and labels",
          "[data][cifar]") {
  TempDir dir;
  write_bytes(dir / "small.bin", batch(5, 1));
  const TensorDataset d = read_cifar10_batch(dir / "small.bin");
  CHECK(d.data().shape() == Shape{5, 3, 32, 32});
  CHECK(d.data().dtype() == kUInt8);
  CHECK(d.targets().dtype() == kInt64);
  for (int64_t i = 0; i < 5; ++i) check_record(d.data(), d.targets(), i, 1, i);
  CHECK(read_cifar10_batch(dir / "small.bin", 5).size() == 5);
}

TEST_CASE("CIFAR10: damaged batch files raise IOError naming the file", "[data][cifar]") {
  TempDir dir;
  Bytes cut = batch(3, 0);
  cut.resize(cut.size() - 100);  // the last record is incomplete
  write_bytes(dir / "cut.bin", cut);
  CHECK_THAT(error_of<IOError>([&] { read_cifar10_batch(dir / "cut.bin"); }),
             Contains("cut.bin") && Contains("not a whole number of 3073-byte records") &&
                 Contains("cut after 2973 bytes"));
  write_bytes(dir / "empty.bin", {});
  CHECK_THAT(error_of<IOError>([&] { read_cifar10_batch(dir / "empty.bin"); }),
             Contains("empty.bin") && Contains("0 bytes"));
  Bytes bad_label = batch(4, 0);
  bad_label[2 * 3073] = 10;
  write_bytes(dir / "label.bin", bad_label);
  CHECK_THAT(error_of<IOError>([&] { read_cifar10_batch(dir / "label.bin"); }),
             Contains("label.bin") && Contains("record 2") && Contains("label 10"));
  write_bytes(dir / "short.bin", batch(4, 0));
  CHECK_THAT(error_of<IOError>([&] { read_cifar10_batch(dir / "short.bin", 10000); }),
             Contains("short.bin") && Contains("holds 4 records") && Contains("10000"));
  CHECK_THAT(error_of<IOError>([&] { read_cifar10_batch(dir / "none.bin"); }),
             Contains("none.bin") && Contains("no such file") && Contains("cifar-10-binary.tar.gz"));
}

TEST_CASE("CIFAR10: the test and training sets from full-size files", "[data][cifar]") {
  TempDir dir;
  // The archive's layout: ROOT/cifar-10-batches-bin/*.bin
  const std::string bin = dir / "data/cifar-10-batches-bin";
  write_bytes(bin + "/test_batch.bin", batch(10000, 7));
  const CIFAR10 test(dir / "data", /*train=*/false);
  CHECK(test.size() == 10000);
  CHECK(test.images().shape() == Shape{10000, 3, 32, 32});
  CHECK_FALSE(test.train());
  for (int64_t i : {0, 1, 4999, 9999}) check_record(test.images(), test.labels(), i, 7, i);
  CHECK_THAT(test.summary(), Contains("10000 test images of 3x32x32") &&
                                 Contains("cifar-10-batches-bin"));
  // The folder itself works too.
  CHECK(CIFAR10(bin, false).size() == 10000);

  // Training: data_batch_1..5 in order. Batches 1, 2, 4, 5 link to one file, batch 3 is another.
  write_bytes(bin + "/batch_a", batch(10000, 1));
  write_bytes(bin + "/data_batch_3.bin", batch(10000, 3));
  for (int k : {1, 2, 4, 5}) {
    fs::create_symlink("batch_a", bin + "/data_batch_" + std::to_string(k) + ".bin");
  }
  const CIFAR10 train(dir / "data", /*train=*/true);
  CHECK(train.size() == 50000);
  CHECK(train.train());
  for (int64_t k : {0, 9999, 10000, 19999, 40000, 49999}) {
    check_record(train.images(), train.labels(), k, 1, k % 10000);
  }
  for (int64_t k : {20000, 25000, 29999}) {
    check_record(train.images(), train.labels(), k, 3, k - 20000);
  }
  CHECK(CIFAR10::classes() == std::vector<std::string>{"plane", "car", "bird", "cat", "deer",
                                                       "dog", "frog", "horse", "ship", "truck"});
}

TEST_CASE("CIFAR10: missing or wrong files explain where to get the binary version",
          "[data][cifar]") {
  TempDir dir;
  CHECK_THAT(error_of<IOError>([&] { CIFAR10(dir / "nowhere", true); }),
             Contains("does not exist") && Contains("cifar-10-binary.tar.gz"));
  fs::create_directories(dir / "empty");
  CHECK_THAT(error_of<IOError>([&] { CIFAR10(dir / "empty", false); }),
             Contains("no test_batch.bin") && Contains("cifar-10-batches-bin") &&
                 Contains("cifar-10-binary.tar.gz"));
  // A training set with a batch missing.
  write_bytes(dir / "partial/data_batch_1.bin", batch(10000, 1));
  CHECK_THAT(error_of<IOError>([&] { CIFAR10(dir / "partial", true); }),
             Contains("data_batch_2.bin: no such file") && Contains("cifar-10-binary.tar.gz"));
  // A file of the wrong record count.
  write_bytes(dir / "short/test_batch.bin", batch(20, 0));
  CHECK_THAT(error_of<IOError>([&] { CIFAR10(dir / "short", false); }),
             Contains("test_batch.bin") && Contains("holds 20 records") &&
                 Contains("cut short"));
  // The Python version, which torchvision downloads.
  write_bytes(dir / "py/cifar-10-batches-py/data_batch_1", {0x80, 0x02});
  CHECK_THAT(error_of<IOError>([&] { CIFAR10(dir / "py", true); }),
             Contains("Python (pickle) version") && Contains("binary version"));
  CHECK_THAT(cifar10_download_hint(), Contains("data_batch_1.bin") && Contains("test_batch.bin"));
}
