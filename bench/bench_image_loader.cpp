// bench/bench_image_loader — how fast data::ImageFolder turns a cats-vs-dogs sized folder of
// JPEGs into 50x50 grayscale tensors, without the cache and with it.
//
// Seed 002 decodes Kaggle's 25,000 photos (about 500x375, 30 KB each) with a Python loop of
// cv2.imread + cv2.resize, about 20 minutes; issue 5 asks for at most 10 s on 2 cores. The photos
// cannot be downloaded here, so the bench writes look-alikes once: 500x375 JPEGs at quality 90
// (libjpeg, 4:2:0 chroma, like camera and web photos) with smooth shapes, stripes and noise, tuned to
// about the real files' size in bytes, since decoding time follows the compressed size. They go
// to --dir (half in Cat/, half in Dog/) and are reused by later runs.
//
//   bench_image_loader [--dir DIR] [--n 25000] [--threads 2] [--repeats 3] [--evict]
//
// Rows: "cold" decodes every file (use_cache = false), "cold + write cache" is a first run that
// also writes the cache, "warm" reads the cache (a second run). --evict adds a cold row with the
// files dropped from the OS page cache first (posix_fadvise DONTNEED), so that they come from
// the disk. Times are the median of --repeats runs.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
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

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A photo look-alike, as a uint8 tensor [3, h, w]: a smooth background (a random 3x3 colour grid, bilinearly interpolated),
// a few soft-edged ellipses, some with stripes ("fur"), and pixel noise. Deterministic per index.
Tensor fake_photo(int w, int h, uint32_t index) {
  std::mt19937 rng(index * 2654435761u + 12345u);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  float grid[3][3][3];
  for (auto& row : grid) {
    for (auto& cell : row) {
      for (float& ch : cell) ch = 40.f + 180.f * u(rng);
    }
  }
  struct Blob {
    float cx, cy, rx, ry, col[3], stripe, phase;
  };
  std::vector<Blob> blobs(3 + rng() % 4);
  for (Blob& b : blobs) {
    b.cx = w * u(rng);
    b.cy = h * u(rng);
    b.rx = w * (0.08f + 0.25f * u(rng));
    b.ry = h * (0.08f + 0.25f * u(rng));
    for (float& c : b.col) c = 255.f * u(rng);
    b.stripe = u(rng) < 0.5f ? 0.f : 0.15f + 0.5f * u(rng);  // spatial frequency, rad/pixel
    b.phase = 6.28f * u(rng);
  }
  Tensor photo = empty({3, h, w}, kUInt8);
  uint8_t* px = photo.data_ptr<uint8_t>();
  const size_t plane = static_cast<size_t>(w) * h;
  std::uniform_int_distribution<int> noise(-7, 7);
  for (int y = 0; y < h; ++y) {
    const float gy = 2.f * y / (h - 1);
    const int iy = std::min(1, static_cast<int>(gy));
    const float fy = gy - iy;
    for (int x = 0; x < w; ++x) {
      const float gx = 2.f * x / (w - 1);
      const int ix = std::min(1, static_cast<int>(gx));
      const float fx = gx - ix;
      float c[3];
      for (int k = 0; k < 3; ++k) {
        c[k] = (1 - fy) * ((1 - fx) * grid[iy][ix][k] + fx * grid[iy][ix + 1][k]) +
               fy * ((1 - fx) * grid[iy + 1][ix][k] + fx * grid[iy + 1][ix + 1][k]);
      }
      for (const Blob& b : blobs) {
        const float dx = (x - b.cx) / b.rx, dy = (y - b.cy) / b.ry;
        const float r2 = dx * dx + dy * dy;
        if (r2 >= 1.2f) continue;
        const float a = std::min(1.f, (1.2f - r2) * 5.f);  // soft edge
        const float s = b.stripe > 0 ? 30.f * std::sin(b.stripe * (x + 0.5f * y) + b.phase) : 0.f;
        for (int k = 0; k < 3; ++k) c[k] = (1 - a) * c[k] + a * (b.col[k] + s);
      }
      for (int k = 0; k < 3; ++k) {
        px[k * plane + static_cast<size_t>(y) * w + x] =
            static_cast<uint8_t>(std::clamp(c[k] + noise(rng), 0.f, 255.f));
      }
    }
  }
  return photo;
}

// Writes n photos into dir/Cat and dir/Dog unless a previous run did (a stamp file records what
// was generated). Returns the total bytes of the files.
uint64_t ensure_images(const std::string& dir, int n, int w, int h, int quality) {
  const std::string stamp_name = ".bench-libjpeg-" + std::to_string(n) + "-" +
                                 std::to_string(w) + "x" + std::to_string(h) + "-q" +
                                 std::to_string(quality);
  const fs::path stamp = fs::path(dir) / stamp_name;
  auto total_bytes = [&] {
    uint64_t total = 0;
    for (const char* cls : {"Cat", "Dog"}) {
      for (const auto& e : fs::directory_iterator(fs::path(dir) / cls)) total += e.file_size();
    }
    return total;
  };
  if (fs::exists(stamp)) return total_bytes();

  std::printf("generating %d JPEGs of %dx%d (quality %d) in %s ...\n", n, w, h, quality,
              dir.c_str());
  std::fflush(stdout);
  fs::remove_all(dir);
  fs::create_directories(fs::path(dir) / "Cat");
  fs::create_directories(fs::path(dir) / "Dog");
  const auto t0 = Clock::now();
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    try {
      for (int i = next++; i < n && !failed; i = next++) {
        const std::vector<uint8_t> jpg =
            data::encode_jpeg(fake_photo(w, h, static_cast<uint32_t>(i)), quality);
        // Kaggle's names: Cat/0.jpg ... Cat/12499.jpg, Dog/0.jpg ...
        const fs::path path =
            fs::path(dir) / (i % 2 ? "Dog" : "Cat") / (std::to_string(i / 2) + ".jpg");
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(jpg.data()),
                  static_cast<std::streamsize>(jpg.size()));
        if (!out) failed = true;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_image_loader: %s\n", e.what());
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < std::max(1u, std::thread::hardware_concurrency()); ++k) {
    pool.emplace_back(worker);
  }
  for (std::thread& t : pool) t.join();
  if (failed) throw IOError("bench_image_loader: could not write the images to " + dir);
  std::ofstream(stamp) << "generated by bench_image_loader\n";
  std::printf("generated in %.1f s\n", seconds_since(t0));
  return total_bytes();
}

// Asks the kernel to drop the files' pages from its cache (so the next read comes from disk).
void evict_from_page_cache(const std::string& dir) {
  for (const char* cls : {"Cat", "Dog"}) {
    for (const auto& e : fs::directory_iterator(fs::path(dir) / cls)) {
      const int fd = ::open(e.path().c_str(), O_RDONLY);
      if (fd < 0) continue;
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  }
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// CPU seconds (user + system) this process has used so far, on all its threads.
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: ImageFolder loading speed on a cats-vs-dogs sized folder of JPEGs"};
  std::string dir = (fs::temp_directory_path() / "ember-bench-images").string();
  int n = 25000, threads = 2, repeats = 3, width = 500, height = 375, quality = 90;
  bool evict = false;
  app.add_option("--dir", dir, "where the generated JPEGs are (made on the first run)");
  app.add_option("--n", n, "number of images")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "decoding threads")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed runs per row (the median is shown)")
      ->check(CLI::PositiveNumber);
  app.add_option("--width", width, "generated image width")->check(CLI::PositiveNumber);
  app.add_option("--height", height, "generated image height")->check(CLI::PositiveNumber);
  app.add_option("--quality", quality, "JPEG quality of the generated images")
      ->check(CLI::Range(1, 100));
  app.add_flag("--evict", evict, "also time a cold load with the files evicted from the page cache");
  CLI11_PARSE(app, argc, argv);

  try {
    const uint64_t bytes = ensure_images(dir, n, width, height, quality);
    const std::string cache_dir = (fs::path(dir) / ".ember-cache").string();
    std::printf("ember bench_image_loader: %d JPEGs of %dx%d, %.1f MB (%.1f KB each) -> 50x50 "
                "grayscale, %d threads\n", n, width, height, bytes / 1e6, bytes / 1e3 / n, threads);
    std::printf("CPU: %s, %u cores\n\n", cpu_name().c_str(), std::thread::hardware_concurrency());

    data::ImageFolderOptions o;
    o.height = 50;
    o.width = 50;
    o.grayscale = true;
    o.threads = threads;
    o.verbose = false;  // the default cache folder, dir/.ember-cache

    struct Row {
      std::string what;
      double wall, cpu;  // medians, seconds
    };
    auto time_load = [&](const std::string& what, bool use_cache, bool remove_cache_first,
                         bool evict_first, bool expect_cache) {
      std::vector<double> times, cpus;
      for (int r = 0; r < repeats; ++r) {
        if (remove_cache_first) fs::remove_all(cache_dir);
        if (evict_first) evict_from_page_cache(dir);
        data::ImageFolderOptions oo = o;
        oo.use_cache = use_cache;
        const auto t0 = Clock::now();
        const double c0 = cpu_seconds();
        const data::ImageFolder pets(dir, oo);
        times.push_back(seconds_since(t0));
        cpus.push_back(cpu_seconds() - c0);
        if (pets.size() != n || pets.from_cache() != expect_cache) {
          throw Error("bench_image_loader: loaded " + std::to_string(pets.size()) + " images (" +
                      std::to_string(pets.skipped()) + " skipped), from_cache " +
                      std::to_string(pets.from_cache()) + ": not what the bench expects");
        }
      }
      return Row{what, median(times), median(cpus)};
    };

    std::vector<Row> rows;
    rows.push_back(time_load("cold: decode every file (no cache)", false, false, false, false));
    if (evict) {
      rows.push_back(time_load("cold, files evicted from the page cache", false, false, true, false));
    }
    rows.push_back(time_load("first run: decode + write the cache", true, true, false, false));
    rows.push_back(time_load("warm: read the cache", true, false, false, true));

    // CPU time is reported next to wall time because a busy machine stretches the wall time;
    // with `threads` idle cores the wall time of a decode is about cpu / threads.
    std::printf("| load | wall (median of %d) | images/s | CPU time, all threads |\n"
                "|---|---|---|---|\n", repeats);
    for (const Row& r : rows) {
      std::printf("| %s | %.3f s | %.0f | %.3f s |\n", r.what.c_str(), r.wall, n / r.wall, r.cpu);
    }
    double load1 = 0;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &load1) != 1) load1 = 0;
      std::fclose(f);
    }
    std::printf("\nload average (1 min) at the end: %.2f\n", load1);
    std::printf("goal (issue 5): 25,000 images cold in at most 10 s on 2 threads\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_image_loader: %s\n", e.what());
    return 1;
  }
  return 0;
}
