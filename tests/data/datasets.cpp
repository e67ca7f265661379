// The data library: the IDX reader against hand-built good and broken files (plain and gzip),
// the MNIST dataset's checks, the transforms' exact values, and the DataLoader's batching,
// shuffling, prefetching, error propagation and shutdown. The last test reads the real
// Fashion-MNIST files when Debian's dataset-fashion-mnist package is installed.
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <set>
#include <string>
#include <thread>
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
using test::counting_dataset;
using test::error_of;
using test::read_bytes;
using test::write_bytes;

// A scratch folder for this file's tests.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_data_") {}
};

void put_be32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

// An IDX file: 00 00 <type> <ndims>, the dims big-endian, then the payload as given.
Bytes idx_file(const std::vector<uint32_t>& dims, const Bytes& payload, uint8_t type = 0x08) {
  Bytes b = {0x00, 0x00, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) put_be32(b, d);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// n bytes with a pattern that tells positions apart.
Bytes pattern(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return b;
}

// mode "wb" starts a file, "ab" appends a second gzip member to it.
void write_gz(const std::string& path, const Bytes& bytes, const char* mode = "wb") {
  gzFile f = gzopen(path.c_str(), mode);
  REQUIRE(f != nullptr);
  if (!bytes.empty()) {
    REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
            static_cast<int>(bytes.size()));
  }
  REQUIRE(gzclose(f) == Z_OK);
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return t.to_vector<T>();
}

// The four MNIST files in `dir` (or fewer), images n x h x w with a pattern, labels i % 10.
struct FakeMnist {
  int64_t n_train = 12, n_test = 5, h = 28, w = 28;
  bool gz = false;

  Bytes images(int64_t n) const {
    return idx_file({static_cast<uint32_t>(n), static_cast<uint32_t>(h), static_cast<uint32_t>(w)},
                    pattern(static_cast<size_t>(n * h * w)));
  }
  Bytes labels(int64_t n) const {
    Bytes y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = static_cast<uint8_t>(i % 10);
    return idx_file({static_cast<uint32_t>(n)}, y);
  }
  void write(const std::string& dir) const {
    fs::create_directories(dir);
    auto put = [&](const std::string& name, const Bytes& b) {
      if (gz) {
        write_gz((fs::path(dir) / (name + ".gz")).string(), b);
      } else {
        write_bytes((fs::path(dir) / name).string(), b);
      }
    };
    put("train-images-idx3-ubyte", images(n_train));
    put("train-labels-idx1-ubyte", labels(n_train));
    put("t10k-images-idx3-ubyte", images(n_test));
    put("t10k-labels-idx1-ubyte", labels(n_test));
  }
};

// Every batch of one epoch, copied out.
std::vector<Batch> one_epoch(DataLoader& loader) {
  std::vector<Batch> out;
  for (const Batch& b : loader) out.push_back(b);
  return out;
}

std::vector<int64_t> targets_of(const std::vector<Batch>& batches) {
  std::vector<int64_t> all;
  for (const Batch& b : batches) {
    const auto t = values<int64_t>(b.target);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

}  // namespace

// ---- IDX reader -------------------------------------------------------------------------------

TEST_CASE("read_idx: good files load with exact values, plain and gzip", "[data]") {
  TempDir dir;
  const Bytes pixels = pattern(3 * 2 * 4);
  const Bytes file = idx_file({3, 2, 4}, pixels);
  write_bytes(dir / "images", file);
  write_gz(dir / "images.gz", file);
  // Two gzip members back to back decompress to the concatenation, as with gunzip.
  const size_t half = file.size() / 2;
  write_gz(dir / "two-members.gz", Bytes(file.begin(), file.begin() + half));
  write_gz(dir / "two-members.gz", Bytes(file.begin() + half, file.end()), "ab");

  for (const char* name : {"images", "images.gz", "two-members.gz"}) {
    INFO(name);
    const Tensor t = read_idx(dir / name, IdxKind::Images);
    CHECK(t.dtype() == kUInt8);
    CHECK(t.shape() == Shape{3, 2, 4});
    CHECK(values<uint8_t>(t) == pixels);
  }
  // Labels, any rank with IdxKind::Any, and an empty array.
  write_bytes(dir / "labels", idx_file({4}, {0, 9, 3, 7}));
  CHECK(values<uint8_t>(read_idx(dir / "labels", IdxKind::Labels)) == Bytes{0, 9, 3, 7});
  write_gz(dir / "4d.gz", idx_file({2, 1, 3, 2}, pattern(12)));
  CHECK(read_idx(dir / "4d.gz").shape() == Shape{2, 1, 3, 2});
  write_bytes(dir / "empty-labels", idx_file({0}, {}));
  CHECK(read_idx(dir / "empty-labels", IdxKind::Labels).shape() == Shape{0});
  CHECK(read_maybe_gzipped(dir / "images.gz") == file);
}

TEST_CASE("read_idx: malformed files raise IOError naming the file and the problem", "[data]") {
  TempDir dir;
  auto check = [&](const std::string& name, const Bytes& bytes, const std::string& expected,
                   IdxKind kind = IdxKind::Any) {
    INFO(name << ": expecting '" << expected << "'");
    write_bytes(dir / name, bytes);
    const std::string msg = error_of<IOError>([&] { read_idx(dir / name, kind); });
    CHECK_THAT(msg, Contains(dir / name));
    CHECK_THAT(msg, Contains(expected));
  };

  Bytes bad_magic = idx_file({3, 1, 1}, {1, 2, 3});
  bad_magic[2] = 0x0a;
  check("bad-magic", bad_magic,
        "wrong magic 0x00000a03, expected 0x00000801 (labels) or 0x00000803 (images)");
  const std::string html = "<!DOCTYPE html><html>403 Forbidden</html>";
  check("html", Bytes(html.begin(), html.end()), "HTML page");
  check("float32", idx_file({2}, pattern(8), 0x0D),
        "element type 0x0D (float32, magic 0x00000d01) is not supported");
  check("zero-dims", idx_file({}, {}), "0 dimensions");
  check("empty", {}, "truncated at byte 0");
  const Bytes header = idx_file({60000, 28, 28}, {});
  check("short-header", Bytes(header.begin(), header.begin() + 10),
        "truncated at byte 10: the header of a 3-d IDX file is 16 bytes");
  // The message the brief asks for, on MNIST's real sizes (47 MB of zeros is cheap to write).
  check("truncated-images", idx_file({60000, 28, 28}, Bytes(60000 * 784 - 784, 0)),
        "truncated at byte 47039232: expected 47040000 bytes of pixel data for 60000 images of "
        "28x28 after the 16-byte header, found 47039216");
  check("truncated-labels", idx_file({10}, pattern(7)),
        "expected 10 bytes of labels for 10 items");
  check("trailing", idx_file({2, 2, 2}, pattern(8 + 5)),
        "5 bytes of trailing garbage after byte 24");
  check("swapped", idx_file({2, 2, 2}, pattern(8)), "are the labels and images files swapped?",
        IdxKind::Labels);
  check("swapped2", idx_file({4}, pattern(4)), "but images were expected", IdxKind::Images);

  // A missing file says where MNIST comes from.
  const std::string missing = error_of<IOError>([&] { read_idx(dir / "nope"); });
  CHECK_THAT(missing, Contains(dir / "nope") && Contains("no such file") &&
                          Contains("dataset-fashion-mnist"));
  CHECK_THAT(error_of<IOError>([&] { read_idx(dir.str()); }), Contains("is a directory"));
}

TEST_CASE("read_idx: corrupt and cut-short gzip streams raise IOError", "[data]") {
  TempDir dir;
  const Bytes file = idx_file({50, 8, 8}, pattern(50 * 64));
  write_gz(dir / "good.gz", file);
  const Bytes gz = read_bytes(dir / "good.gz");
  REQUIRE(gz.size() > 30);

  // Byte 10 starts the deflate data (after gzip's 10-byte header); 0xFF there declares the final
  // block with block type 3, which does not exist.
  Bytes corrupt = gz;
  corrupt[10] = 0xFF;
  write_bytes(dir / "corrupt.gz", corrupt);
  std::string msg = error_of<IOError>([&] { read_idx(dir / "corrupt.gz"); });
  CHECK_THAT(msg, Contains(dir / "corrupt.gz") && Contains("corrupt gzip data") &&
                      Contains("invalid block type"));

  // A wrong CRC-32 in the trailer: every byte inflates, the check at the end fails.
  Bytes bad_crc = gz;
  bad_crc[gz.size() - 8] ^= 0x01;
  write_bytes(dir / "bad-crc.gz", bad_crc);
  CHECK_THAT(error_of<IOError>([&] { read_idx(dir / "bad-crc.gz"); }),
             Contains("corrupt gzip data") && Contains("incorrect data check"));

  // A download cut in half.
  write_bytes(dir / "half.gz", Bytes(gz.begin(), gz.begin() + static_cast<long>(gz.size() / 2)));
  msg = error_of<IOError>([&] { read_idx(dir / "half.gz"); });
  CHECK_THAT(msg, Contains(dir / "half.gz") && Contains("gzip stream ends early"));

  // Garbage after the gzip stream.
  Bytes trailing = gz;
  trailing.insert(trailing.end(), {'j', 'u', 'n', 'k'});
  write_bytes(dir / "trailing.gz", trailing);
  CHECK_THAT(error_of<IOError>([&] { read_idx(dir / "trailing.gz"); }),
             Contains("4 bytes of garbage after the end of the gzip stream"));

  // A well-formed gzip of a truncated IDX file: positions count in the decompressed data.
  write_gz(dir / "short.gz", Bytes(file.begin(), file.end() - 3));
  CHECK_THAT(error_of<IOError>([&] { read_idx(dir / "short.gz"); }),
             Contains("truncated at byte 3213 of the decompressed data"));
}

// ---- MNIST ------------------------------------------------------------------------------------

TEST_CASE("MNIST: loads train and test splits from plain, gzip and torchvision folders",
          "[data]") {
  TempDir dir;
  FakeMnist fake;
  fake.write(dir / "plain");
  fake.gz = true;
  fake.write(dir / "gz");
  fake.write(dir / "tv/MNIST/raw");  // torchvision's download=True layout

  for (const std::string& root : {dir / "plain", dir / "gz", dir / "tv"}) {
    INFO(root);
    const MNIST train(root, true);
    CHECK(train.size() == 12);
    CHECK(train.images().dtype() == kUInt8);
    CHECK(train.images().shape() == Shape{12, 28, 28});
    CHECK(values<uint8_t>(train.images()) == pattern(12 * 28 * 28));
    CHECK(train.labels().dtype() == kInt64);
    CHECK(values<int64_t>(train.labels()) ==
          std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1});
    CHECK(train.height() == 28);
    CHECK(train.width() == 28);
    CHECK(train.train());
    CHECK_THAT(train.summary(), Contains("12 training images of 28x28 from"));

    const MNIST test(root, false);
    CHECK(test.size() == 5);
    CHECK(!test.train());
    CHECK_THAT(test.images_path(), Contains("t10k-images-idx3-ubyte"));
    CHECK(values<int64_t>(test.labels()) == std::vector<int64_t>{0, 1, 2, 3, 4});
  }

  // Other image sizes are accepted and reported.
  FakeMnist small;
  small.h = 5;
  small.w = 7;
  small.write(dir / "small");
  const MNIST s(dir / "small", true);
  CHECK(s.images().shape() == Shape{12, 5, 7});
  CHECK_THAT(s.summary(), Contains("images of 5x7"));
}

TEST_CASE("MNIST: missing folders and files explain where to get MNIST", "[data]") {
  TempDir dir;
  std::string msg = error_of<IOError>([&] { MNIST(dir / "no-such-folder", true); });
  CHECK_THAT(msg, Contains(dir / "no-such-folder") && Contains("does not exist"));
  for (const char* hint :
       {"train-images-idx3-ubyte", "t10k-labels-idx1-ubyte", "apt install dataset-fashion-mnist",
        "/usr/share/datasets/fashion-mnist", "https://ossci-datasets.s3.amazonaws.com/mnist/"}) {
    CHECK_THAT(msg, Contains(hint));
  }

  // A folder with only the labels file.
  FakeMnist fake;
  fs::create_directories(dir / "partial");
  write_bytes(dir / "partial/train-labels-idx1-ubyte", fake.labels(12));
  msg = error_of<IOError>([&] { MNIST(dir / "partial", true); });
  CHECK_THAT(msg, Contains("no train-images-idx3-ubyte[.gz] in") &&
                      Contains("dataset-fashion-mnist"));
  // The test split of a folder that only has the training files.
  fake.write(dir / "trainonly");
  fs::remove(dir / "trainonly/t10k-images-idx3-ubyte");
  fs::remove(dir / "trainonly/t10k-labels-idx1-ubyte");
  CHECK_NOTHROW(MNIST(dir / "trainonly", true));
  CHECK_THAT(error_of<IOError>([&] { MNIST(dir / "trainonly", false); }),
             Contains("no t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz]"));
  // A file where the folder should be.
  write_bytes(dir / "a-file", {1, 2, 3});
  CHECK_THAT(error_of<IOError>([&] { MNIST(dir / "a-file", true); }), Contains("is a file"));
}

TEST_CASE("MNIST: images and labels must agree, labels must be 0..9", "[data]") {
  TempDir dir;
  FakeMnist fake;
  fake.write(dir / "count");
  write_bytes(dir / "count/train-labels-idx1-ubyte", fake.labels(11));
  std::string msg = error_of<IOError>([&] { MNIST(dir / "count", true); });
  CHECK_THAT(msg, Contains("12 images vs 11 labels") && Contains("do not belong together"));

  fake.write(dir / "range");
  write_bytes(dir / "range/train-labels-idx1-ubyte",
              idx_file({12}, {0, 1, 2, 10, 4, 5, 6, 7, 8, 9, 0, 1}));
  msg = error_of<IOError>([&] { MNIST(dir / "range", true); });
  CHECK_THAT(msg, Contains("train-labels-idx1-ubyte: label 10 at index 3 is out of range 0..9"));

  // Swapped files: the labels reader sees a 3-d file.
  fake.write(dir / "swapped");
  fs::rename(dir / "swapped/train-images-idx3-ubyte", dir / "swapped/tmp");
  fs::rename(dir / "swapped/train-labels-idx1-ubyte", dir / "swapped/train-images-idx3-ubyte");
  fs::rename(dir / "swapped/tmp", dir / "swapped/train-labels-idx1-ubyte");
  CHECK_THAT(error_of<IOError>([&] { MNIST(dir / "swapped", true); }), Contains("swapped"));

  // A corrupt gzip inside the dataset surfaces with the file's name.
  fake.gz = true;
  fake.write(dir / "gzbad");
  Bytes gz = read_bytes(dir / "gzbad/train-images-idx3-ubyte.gz");
  gz.resize(gz.size() - 20);
  write_bytes(dir / "gzbad/train-images-idx3-ubyte.gz", gz);
  CHECK_THAT(error_of<IOError>([&] { MNIST(dir / "gzbad", true); }),
             Contains("train-images-idx3-ubyte.gz: the gzip stream ends early"));
}

// ---- transforms -------------------------------------------------------------------------------

TEST_CASE("transforms: ToFloat, ToTensor, Normalize and Compose give exact values", "[data]") {
  const std::vector<uint8_t> raw = {0, 1, 51, 128, 200, 255, 17, 254};
  const Tensor x = from_vector<uint8_t>(raw, {2, 2, 2}, kUInt8);

  const Tensor f = ToFloat{}(x);
  CHECK(f.dtype() == kFloat32);
  CHECK(f.shape() == Shape{2, 2, 2});
  const auto fv = values<float>(f);
  for (size_t i = 0; i < raw.size(); ++i) CHECK(fv[i] == static_cast<float>(raw[i]) / 255.0f);
  // Non-byte input is only converted.
  CHECK(values<float>(ToFloat{}(tensor({2.5, -1}, kFloat64))) == std::vector<float>{2.5f, -1.f});

  const Tensor t = ToTensor{}(x);
  CHECK(t.shape() == Shape{2, 1, 2, 2});
  CHECK(values<float>(t) == fv);

  // The tutorial's pipeline, compared with torchvision's float32 arithmetic.
  const Compose pipeline({ToTensor(), Normalize(0.1307, 0.3081)});
  const Tensor n = pipeline(x);
  CHECK(n.shape() == Shape{2, 1, 2, 2});
  const auto nv = values<float>(n);
  for (size_t i = 0; i < raw.size(); ++i) {
    const float expected = (static_cast<float>(raw[i]) / 255.0f - 0.1307f) / 0.3081f;
    CHECK(nv[i] == Approx(expected).epsilon(1e-6));
  }

  // Per-channel: dim 1 is the channel.
  const Tensor rgb = ones({2, 3, 2}, kFloat64);
  const auto c = values<double>(Normalize({1, 0, 3}, {1, 2, 0.5})(rgb));
  CHECK(c == std::vector<double>{0, 0, 0.5, 0.5, -4, -4, 0, 0, 0.5, 0.5, -4, -4});
  CHECK_THAT(error_of<ValueError>([&] { Normalize({1, 0, 3}, {1, 2, 0.5})(ones({2, 2, 2})); }),
             Contains("3 channel means need a batch [B, 3, ...], got shape [2, 2, 2]"));
  CHECK_THAT(error_of<ValueError>([&] { Normalize(0.5, 0.5)(x); }),
             Contains("put ToFloat() (or ToTensor()) before Normalize"));
  CHECK_THAT(error_of<ValueError>([&] { Normalize(0.5, 0.0); }), Contains("divide by zero"));
  CHECK_THAT(error_of<ValueError>([&] { Normalize({0.5, 0.5}, {1.0}); }),
             Contains("2 means and 1 stds"));

  // Compose applies in order; an empty Compose is the identity.
  const Compose twice({[](const Tensor& a) { return a * 2.0; },
                       [](const Tensor& a) { return a + 1.0; }});
  CHECK(values<double>(twice(tensor({1, 2}, kFloat64))) == std::vector<double>{3, 5});
  CHECK(Compose(std::vector<Transform>{})(x).is_same(x));
}

// ---- TensorDataset and DataLoader -------------------------------------------------------------

TEST_CASE("TensorDataset: gathers rows, checks its tensors", "[data]") {
  const TensorDataset ds = counting_dataset(5);
  CHECK(ds.size() == 5);
  const Batch b = ds.get_batch(tensor({4, 0, 4}, kInt64));
  CHECK(values<int64_t>(b.data) == std::vector<int64_t>{40, 41, 0, 1, 40, 41});
  CHECK(values<int64_t>(b.target) == std::vector<int64_t>{4, 0, 4});
  CHECK(values<int64_t>(ds.get(2).data) == std::vector<int64_t>{20, 21});
  CHECK_THROWS_AS(ds.get(5), ValueError);
  CHECK_THAT(error_of<ValueError>([] { TensorDataset(zeros({4, 3}), zeros({5}, kInt64)); }),
             Contains("data has 4 samples (shape [4, 3]) but targets has 5"));
  // A non-contiguous data tensor is stored contiguous.
  const TensorDataset t(arange(6, kFloat64).reshape({2, 3}).t(), zeros({3}, kInt64));
  CHECK(t.data().is_contiguous());
  CHECK(values<double>(t.get(1).data) == std::vector<double>{1, 4});
}

TEST_CASE("DataLoader: batch counts, sizes, every sample once per epoch", "[data]") {
  const TensorDataset ds = counting_dataset(10);
  for (const bool shuffle : {false, true}) {
    for (const bool prefetch : {false, true}) {
      INFO("shuffle " << shuffle << " prefetch " << prefetch);
      DataLoader keep(ds, {3, shuffle, /*drop_last=*/false, /*seed=*/7, prefetch});
      CHECK(keep.size() == 4);
      for (int epoch = 0; epoch < 3; ++epoch) {
        const std::vector<Batch> batches = one_epoch(keep);
        CHECK(keep.epoch() == epoch);
        REQUIRE(batches.size() == 4);
        CHECK(batches[0].data.shape() == Shape{3, 2});
        CHECK(batches[3].data.shape() == Shape{1, 2});  // the last batch is smaller
        CHECK(batches[3].target.shape() == Shape{1});
        std::vector<int64_t> seen = targets_of(batches);
        if (!shuffle) CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
        std::sort(seen.begin(), seen.end());
        CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
        // data and target stay paired: row i is (10 i, 10 i + 1).
        for (const Batch& b : batches) {
          const auto d = values<int64_t>(b.data);
          const auto t = values<int64_t>(b.target);
          for (size_t k = 0; k < t.size(); ++k) {
            CHECK(d[2 * k] == 10 * t[k]);
            CHECK(d[2 * k + 1] == 10 * t[k] + 1);
          }
        }
      }

      DataLoader drop(ds, {3, shuffle, /*drop_last=*/true, 7, prefetch});
      CHECK(drop.size() == 3);
      const std::vector<Batch> batches = one_epoch(drop);
      REQUIRE(batches.size() == 3);
      for (const Batch& b : batches) CHECK(b.data.size(0) == 3);
      std::set<int64_t> unique;
      for (int64_t v : targets_of(batches)) unique.insert(v);
      CHECK(unique.size() == 9);  // 9 distinct samples, the 10th dropped
    }
  }

  // Exact multiples, a batch larger than the dataset, an empty dataset.
  CHECK(DataLoader(counting_dataset(9), {3}).size() == 3);
  CHECK(DataLoader(counting_dataset(9), {3, false, true}).size() == 3);
  DataLoader big(counting_dataset(5), {64});
  CHECK(big.size() == 1);
  CHECK(one_epoch(big)[0].data.size(0) == 5);
  DataLoader big_drop(counting_dataset(5), {64, false, true});
  CHECK(big_drop.size() == 0);
  CHECK(one_epoch(big_drop).empty());
  DataLoader none(counting_dataset(0), {4, true});
  CHECK(none.size() == 0);
  CHECK(one_epoch(none).empty());
  CHECK_THAT(error_of<ValueError>([] { DataLoader(counting_dataset(3), {0}); }),
             Contains("batch_size must be at least 1, got 0"));
}

TEST_CASE("DataLoader: shuffle is reproducible, differs across epochs, leaves the global "
          "generator alone", "[data]") {
  const TensorDataset ds = counting_dataset(50);
  DataLoader a(ds, {8, true, false, /*seed=*/3});
  DataLoader b(ds, {8, true, false, /*seed=*/3});
  DataLoader other_seed(ds, {8, true, false, /*seed=*/4});

  manual_seed(123);
  const auto before = values<float>(rand({5}));
  manual_seed(123);
  const auto a0 = targets_of(one_epoch(a));
  const auto a1 = targets_of(one_epoch(a));
  CHECK(values<float>(rand({5})) == before);  // the loader drew nothing from the generator

  CHECK(a0 == targets_of(one_epoch(b)));  // same seed, same epoch 0
  CHECK(a1 == targets_of(one_epoch(b)));  // and epoch 1
  CHECK(a0 != a1);                        // a new order every epoch
  CHECK(a0 != targets_of(one_epoch(other_seed)));
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(a0 != identity);
  // The order is a pure function of (seed, epoch): set_epoch replays an epoch.
  CHECK(values<int64_t>(a.order(1)) == a1);
  CHECK(values<int64_t>(shuffled_order(50, 3, 0)) == a0);
  a.set_epoch(0);
  CHECK(targets_of(one_epoch(a)) == a0);
  CHECK(a.epoch() == 0);
  // Small cases: n = 0 and 1 are fine; every order is a permutation.
  CHECK(shuffled_order(0, 1, 0).numel() == 0);
  CHECK(values<int64_t>(shuffled_order(1, 1, 5)) == std::vector<int64_t>{0});
  auto p = values<int64_t>(shuffled_order(1000, 9, 2));
  std::sort(p.begin(), p.end());
  std::vector<int64_t> id1000(1000);
  std::iota(id1000.begin(), id1000.end(), 0);
  CHECK(p == id1000);
}

TEST_CASE("DataLoader: prefetch on and off give identical batches, transforms included",
          "[data]") {
  TempDir dir;
  FakeMnist fake;
  fake.n_train = 150;
  fake.gz = true;
  fake.write(dir.str());
  const MNIST mnist(dir.str(), true, Compose({ToTensor(), Normalize(0.1307, 0.3081)}));
  DataLoader on(mnist, {64, true, false, 11, /*prefetch=*/true});
  DataLoader off(mnist, {64, true, false, 11, /*prefetch=*/false});
  CHECK(on.size() == 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<Batch> x = one_epoch(on), y = one_epoch(off);
    REQUIRE(x.size() == 3);
    REQUIRE(y.size() == 3);
    for (size_t k = 0; k < x.size(); ++k) {
      CHECK(x[k].data.dtype() == kFloat32);
      CHECK(x[k].data.shape() == Shape{k < 2 ? 64 : 22, 1, 28, 28});
      CHECK(x[k].target.dtype() == kInt64);
      CHECK(values<float>(x[k].data) == values<float>(y[k].data));
      CHECK(values<int64_t>(x[k].target) == values<int64_t>(y[k].target));
    }
    // The transform ran on the gathered rows: compare one sample by hand.
    const int64_t first = values<int64_t>(on.order(epoch))[0];
    const auto raw = values<uint8_t>(mnist.images()[first]);
    const auto got = values<float>(x[0].data[0]);
    REQUIRE(got.size() == raw.size());
    for (size_t i = 0; i < raw.size(); i += 97) {
      CHECK(got[i] == Approx((static_cast<float>(raw[i]) / 255.0f - 0.1307f) / 0.3081f));
    }
  }
}

TEST_CASE("DataLoader: an exception while preparing a batch surfaces in the loop", "[data]") {
  // The transform fails on the batch holding sample 7: batch 2 of 4 without shuffle.
  Transform failing = [](const Tensor& d) {
    for (int64_t v : d.to_vector<int64_t>()) {
      if (v == 70) throw ValueError("transform: cannot handle sample 7");
    }
    return d;
  };
  for (const bool prefetch : {true, false}) {
    INFO("prefetch " << prefetch);
    DataLoader loader(counting_dataset(10, failing), {3, false, false, 0, prefetch});
    for (int attempt = 0; attempt < 2; ++attempt) {  // and again: a fresh epoch fails the same way
      int delivered = 0;
      const std::string msg = error_of<ValueError>([&] {
        for (const Batch& b : loader) {
          (void)b;
          ++delivered;
        }
      });
      CHECK_THAT(msg, Contains("cannot handle sample 7"));
      CHECK(delivered == 2);
    }
  }
  // A failure in the very first batch comes out of begin().
  DataLoader first(counting_dataset(10, failing), {10});
  CHECK_THROWS_AS(first.begin(), ValueError);
}

TEST_CASE("DataLoader: leaving early, restarting and destroying do not hang", "[data]") {
  const TensorDataset ds = counting_dataset(1000);
  {
    DataLoader loader(ds, {1, true});
    int n = 0;
    for (const Batch& b : loader) {
      (void)b;
      if (++n == 2) break;  // the worker has a full queue and waits
    }
    // A new loop ends the old epoch and starts over.
    CHECK(one_epoch(loader).size() == 1000);
    for (const Batch& b : loader) {
      (void)b;
      break;
    }
  }  // destroyed mid-epoch: the worker is stopped and joined

  // An iterator that outlives its epoch says so instead of hanging.
  DataLoader::Iterator stale = [&] {
    DataLoader loader(ds, {10});
    DataLoader::Iterator it = loader.begin();
    CHECK(values<int64_t>(it->target)[0] == 0);
    ++it;
    CHECK(values<int64_t>((*it).target)[0] == 10);
    return it;
  }();
  CHECK_THAT(error_of<Error>([&] { ++stale; }), Contains("epoch was ended"));
  CHECK_THAT(error_of<Error>([&] { (void)*stale; }), Contains("epoch was ended"));

  DataLoader loader(ds, {10});
  DataLoader::Iterator old = loader.begin();
  DataLoader::Iterator fresh = loader.begin();
  CHECK_THROWS_AS(++old, Error);
  CHECK(values<int64_t>(fresh->target)[0] == 0);
  CHECK(loader.epoch() == 1);

  // Many short epochs with a slow consumer and with a fast one.
  DataLoader small(counting_dataset(20), {2, true});
  for (int epoch = 0; epoch < 50; ++epoch) {
    int k = 0;
    for (const Batch& b : small) {
      (void)b;
      if (epoch % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (epoch % 3 == 0 && ++k == 3) break;
    }
  }
  // A moved loader keeps working; the moved-from one is only destroyed.
  DataLoader moved = std::move(small);
  CHECK(one_epoch(moved).size() == 10);
}

// ---- the real data, when installed ------------------------------------------------------------

TEST_CASE("MNIST: Debian's Fashion-MNIST loads with 60000/10000 images of 28x28", "[data]") {
  if (!fs::exists(kFashionMnistDir)) {
    std::cout << "SKIPPED: " << kFashionMnistDir
              << " not found (install it with: apt install dataset-fashion-mnist)\n";
    return;
  }
  for (const bool train : {true, false}) {
    const MNIST ds(kFashionMnistDir, train);
    const int64_t n = train ? 60000 : 10000;
    INFO(ds.summary());
    CHECK(ds.size() == n);
    CHECK(ds.images().shape() == Shape{n, 28, 28});
    CHECK(ds.labels().shape() == Shape{n});
    // Fashion-MNIST is balanced: every class has a tenth of the samples.
    std::vector<int64_t> per_class(10, 0);
    int64_t out_of_range = 0;
    for (int64_t y : values<int64_t>(ds.labels())) {
      if (y < 0 || y > 9) {
        ++out_of_range;
      } else {
        ++per_class[static_cast<size_t>(y)];
      }
    }
    CHECK(out_of_range == 0);
    CHECK(per_class == std::vector<int64_t>(10, n / 10));
  }
  // The tutorial's pipeline on it: 938 batches of 64 (the last one 32).
  DataLoader loader(MNIST(kFashionMnistDir, true, Compose({ToTensor(), Normalize(0.1307, 0.3081)})),
                    {64, true});
  CHECK(loader.size() == 938);
  const Batch& b = *loader.begin();
  CHECK(b.data.shape() == Shape{64, 1, 28, 28});
  CHECK(b.target.shape() == Shape{64});
}
