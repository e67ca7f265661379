// fuzz/targets/image_cache.cpp — the cache file of data::ImageFolder, through the real load: a
// small image folder (classes a and b, two BMPs and a file that is not an image, with fixed
// modification times so that a cache file made on one machine matches on another) whose cache
// file is replaced by the input before each load.
//
// Properties: a load never throws, whatever the cache holds (a damaged cache means decoding the
// folder again); a load that did not use the cache returns exactly what decoding gives and leaves
// a cache that the next load uses and that gives the same tensors; a load that used the cache
// returns tensors of the right shapes with one label per decoded file, each the label of its
// class folder.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "core/ops.h"
#include "data/image_folder.h"
#include "fuzz/targets/common.h"

namespace ember::fuzz {

namespace {

namespace fs = std::filesystem;

// A 24-bit BMP of w x h pixels, bottom-up rows padded to 4 bytes, pixel (x, y) = f(x, y, seed).
Bytes bmp(int w, int h, int seed) {
  const int row = (w * 3 + 3) / 4 * 4;
  const uint32_t size = 54 + static_cast<uint32_t>(row * h);
  Bytes b(size, 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * k));
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(w));
  put32(22, static_cast<uint32_t>(h));
  b[26] = 1;
  b[28] = 24;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w * 3; ++x) b[54 + y * row + x] = static_cast<uint8_t>(seed * 71 + x * 13 + y * 29);
  }
  return b;
}

void place(const fs::path& path, const Bytes& bytes) {
  fs::create_directories(path.parent_path());
  write_file(path.string(), bytes.data(), bytes.size());
  const struct timespec times[2] = {{1000000000, 123456789}, {1000000000, 123456789}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) throw std::runtime_error("utimensat");
}

data::ImageFolderOptions options(bool cache) {
  data::ImageFolderOptions o;
  o.height = 4;
  o.width = 4;
  o.grayscale = true;
  o.threads = 1;
  o.verbose = false;
  o.use_cache = cache;
  return o;
}

struct Fixture {
  std::string root, cache;
  Tensor images, labels;  // what decoding gives
  std::vector<std::string> skipped;
  Fixture() {
    root = (fs::path(scratch_dir()) / "image_cache_root").string();
    place(fs::path(root) / "a" / "0.bmp", bmp(3, 2, 1));
    place(fs::path(root) / "a" / "1.txt", Bytes{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'g'});
    place(fs::path(root) / "b" / "0.bmp", bmp(2, 5, 2));
    const data::ImageFolder truth(root, options(false));
    images = truth.images().contiguous();
    labels = truth.labels().contiguous();
    for (const auto& s : truth.skipped_files()) skipped.push_back(s.path);
    cache = (fs::path(root) / ".ember-cache" / "imagefolder-4x4-gray.bin").string();
    fs::create_directories(fs::path(cache).parent_path());
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.numel()) * x.element_size()) == 0;
}

data::ImageFolder load(const Fixture& f) {
  try {
    return data::ImageFolder(f.root, options(true));
  } catch (const std::exception& e) {
    property_failed(__FILE__, __LINE__, std::string("a load threw: ") + e.what());
  }
}

}  // namespace

Bytes image_cache_seed() {
  const Fixture& f = fixture();
  std::error_code ec;
  fs::remove(f.cache, ec);
  (void)load(f);
  return read_file(f.cache);
}

void image_cache(const uint8_t* data, size_t n) {
  const Fixture& f = fixture();
  write_file(f.cache, data, n);
  const data::ImageFolder d = load(f);
  FUZZ_CHECK((d.classes() == std::vector<std::string>{"a", "b"}), "classes");
  const int64_t k = d.images().size(0);
  FUZZ_CHECK(d.images().shape() == Shape({k, 1, 4, 4}) && d.images().dtype() == kUInt8,
             "images " + shape_str(d.images().shape()));
  FUZZ_CHECK(d.labels().shape() == Shape({k}) && k + d.skipped() == 3,
             std::to_string(k) + " images and " + std::to_string(d.skipped()) + " skipped of 3 files");
  if (!d.from_cache()) {
    FUZZ_CHECK(same(d.images(), f.images) && same(d.labels(), f.labels), "decoded tensors differ");
    std::vector<std::string> skipped;
    for (const auto& s : d.skipped_files()) skipped.push_back(s.path);
    FUZZ_CHECK(skipped == f.skipped, "skipped files differ");
    const data::ImageFolder again = load(f);
    FUZZ_CHECK(again.from_cache(), "the cache written after a rebuild is not used by the next load");
    FUZZ_CHECK(same(again.images(), f.images) && same(again.labels(), f.labels),
               "the rewritten cache gives other tensors");
  } else {
    // A cache is trusted when its checksum matches, so its pixels may be anything; its labels
    // were checked against the folder's listing.
    const auto* y = static_cast<const int64_t*>(d.labels().contiguous().raw_data());
    for (int64_t i = 0; i < k; ++i) FUZZ_CHECK(y[i] == 0 || y[i] == 1, "label " + std::to_string(y[i]));
    for (int64_t i = 1; i < k; ++i) FUZZ_CHECK(y[i - 1] <= y[i], "labels out of class order");
  }
}

}  // namespace ember::fuzz
