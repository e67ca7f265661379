// bench/bench_dataloader — images per second through a DataLoader that decodes JPEGs on the fly
// (data::LazyImageFolder), for num_workers 0, 1, 2, without and with augmentation.
//
// The pipeline is the one a torchvision training script runs per epoch:
//   read the file -> decode + resize to --size (RGB) -> [RandomCrop(--crop, padding 4) ->
//   RandomHorizontalFlip(0.5)] -> ToFloat -> batches of --batch
// bench/pytorch/bench_dataloader.py runs the same with torch.utils.data.DataLoader and PIL on the
// same folder, so the two tables can be put side by side.
//
//   bench_dataloader [--dir DIR] [--n 2000] [--batch 64] [--size 64] [--crop 56]
//                    [--workers 0,1,2] [--epochs 3]
//
// Without --dir the images are generated (once) under the system's temporary folder: --n
// photo-like JPEGs of 500x375 at quality 90 (smooth colours, edges and noise), half in Cat/,
// half in Dog/. A row's time is the median of --epochs full epochs after one warm-up epoch (which
// also brings the files into the page cache). "num_workers 0" is the loop's own thread (prefetch
// off), so it is the serial baseline.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "data/data.h"

using namespace ember;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// A 500x375-ish photo look-alike [3, h, w]: a diagonal colour ramp, a few rectangles and disks,
// and pixel noise, so that the JPEG is about as large as a real photo of that size.
Tensor fake_photo(int w, int h, uint32_t seed) {
  std::mt19937 rng(seed * 2246822519u + 7u);
  std::uniform_int_distribution<int> c(0, 255), noise(-12, 12);
  const int base[3] = {c(rng), c(rng), c(rng)};
  struct Disk {
    int x, y, r, col[3];
  };
  std::vector<Disk> disks(4);
  for (Disk& d : disks) {
    d = {static_cast<int>(rng() % w), static_cast<int>(rng() % h),
         static_cast<int>(20 + rng() % (h / 3)), {c(rng), c(rng), c(rng)}};
  }
  Tensor photo = empty({3, h, w}, kUInt8);
  uint8_t* p = photo.data_ptr<uint8_t>();
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int v[3];
      for (int k = 0; k < 3; ++k) v[k] = (base[k] + (x + y) * (k + 1) / 8) % 256;
      for (const Disk& d : disks) {
        if ((x - d.x) * (x - d.x) + (y - d.y) * (y - d.y) < d.r * d.r) {
          for (int k = 0; k < 3; ++k) v[k] = d.col[k];
        }
      }
      for (int k = 0; k < 3; ++k) {
        p[(static_cast<size_t>(k) * h + y) * w + x] =
            static_cast<uint8_t>(std::clamp(v[k] + noise(rng), 0, 255));
      }
    }
  }
  return photo;
}

// Writes n photos to dir/Cat, dir/Dog unless a stamp file says an earlier run did.
void ensure_images(const std::string& dir, int n) {
  const fs::path stamp = fs::path(dir) / (".bench-dataloader-" + std::to_string(n));
  if (fs::exists(stamp)) return;
  std::printf("generating %d JPEGs of 500x375 in %s ...\n", n, dir.c_str());
  std::fflush(stdout);
  fs::remove_all(dir);
  for (const char* cls : {"Cat", "Dog"}) fs::create_directories(fs::path(dir) / cls);
  for (int i = 0; i < n; ++i) {
    const fs::path path = fs::path(dir) / (i % 2 ? "Dog" : "Cat") / (std::to_string(i / 2) + ".jpg");
    data::write_jpeg(path.string(), fake_photo(500, 375, static_cast<uint32_t>(i)), 90);
  }
  std::FILE* f = std::fopen(stamp.string().c_str(), "w");
  if (f) std::fclose(f);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: DataLoader throughput with on-the-fly JPEG decoding, by num_workers"};
  std::string dir;
  int n = 2000, batch = 64, size = 64, crop = 56, epochs = 3;
  std::vector<int> workers = {0, 1, 2};
  app.add_option("--dir", dir, "an ImageFolder layout (ROOT/<class>/<image>); default: generated");
  app.add_option("--n", n, "images to generate when --dir is not given")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--size", size, "decoded images are size x size RGB")->check(CLI::PositiveNumber);
  app.add_option("--crop", crop, "RandomCrop size (padding 4) in the augmented rows")
      ->check(CLI::PositiveNumber);
  app.add_option("--workers", workers, "num_workers values to time")->delimiter(',');
  app.add_option("--epochs", epochs, "timed epochs per row (the median is shown)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  if (dir.empty()) {
    dir = (fs::temp_directory_path() / ("ember-bench-dataloader-" + std::to_string(n))).string();
    ensure_images(dir, n);
  }
  data::ImageFolderOptions o;
  o.height = size;
  o.width = size;
  o.grayscale = false;
  const data::Augmentation augment = data::ComposeAugmentations(
      {data::RandomCrop{crop, crop, 4, /*seed=*/1}, data::RandomHorizontalFlip{0.5, /*seed=*/2}});

  std::printf("ember DataLoader, LazyImageFolder %s: decode to %dx%d RGB, batch %d, median of %d "
              "epochs, %u hardware threads\n",
              dir.c_str(), size, size, batch, epochs, std::thread::hardware_concurrency());
  std::printf("| pipeline | num_workers | images/s | epoch (s) |\n|---|---:|---:|---:|\n");
  for (const bool augmented : {false, true}) {
    const data::LazyImageFolder ds(dir, o, data::ToFloat{}, augmented ? augment : data::Augmentation{});
    for (const int w : workers) {
      data::DataLoaderOptions lo;
      lo.batch_size = batch;
      lo.shuffle = true;
      lo.num_workers = w;
      lo.prefetch = false;  // num_workers 0: everything on this thread
      lo.persistent_workers = w > 0;
      data::DataLoader loader(ds, lo);
      std::vector<double> seconds;
      int64_t images = 0;
      for (int e = 0; e <= epochs; ++e) {
        const auto t0 = Clock::now();
        int64_t seen = 0;
        for (const data::Batch& b : loader) seen += b.data.size(0);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (e > 0) seconds.push_back(s);  // epoch 0 warms up
        images = seen;
      }
      const double s = median(seconds);
      std::printf("| decode%s | %d | %.0f | %.2f |\n",
                  augmented ? " + crop + flip" : "", w, static_cast<double>(images) / s, s);
      std::fflush(stdout);
    }
  }
  return 0;
}
