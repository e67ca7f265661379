// fuzz/targets/common.cpp — the shared helpers of fuzz/targets/common.h and the registry.
#include "fuzz/targets/common.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace ember::fuzz {

namespace fs = std::filesystem;

void property_failed(const char* file, int line, const std::string& what) {
  throw PropertyFailed(std::string(file) + ":" + std::to_string(line) + ": property failed: " +
                       what);
}

MemFile::MemFile(const char* name) {
  fd_ = ::memfd_create(name, MFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() { ::close(fd_); }

void MemFile::assign(const uint8_t* data, size_t n) {
  if (::ftruncate(fd_, 0) != 0) throw std::runtime_error("ftruncate failed");
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd_, data + done, n - done, static_cast<off_t>(done));
    if (w <= 0) throw std::runtime_error(std::string("pwrite: ") + std::strerror(errno));
    done += static_cast<size_t>(w);
  }
}

namespace {

struct Scratch {
  fs::path path;
  Scratch() {
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
                              ? fs::path("/dev/shm")
                              : fs::temp_directory_path();
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    path = base / ("ember_fuzz_" + std::to_string(::getpid()) + "_" + std::to_string(ticks));
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

const std::string& scratch_dir() {
  static const Scratch scratch;
  static const std::string path = scratch.path.string();
  return path;
}

void write_file(const std::string& path, const uint8_t* data, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  const bool ok = (n == 0 || std::fwrite(data, 1, n, f) == n);
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + path);
}

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> split(const uint8_t* data, size_t n, char separator) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<char>(data[i]) == separator) {
      out.emplace_back();
    } else {
      out.back().push_back(static_cast<char>(data[i]));
    }
  }
  return out;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"idx", idx, "data::read_idx, plain and gzip: accepted exactly when valid, re-serialises "
                   "to the same bytes"},
      {"cifar10", cifar10, "data::read_cifar10_batch: accepted exactly when valid, same records"},
      {"image", image, "data::decode_image (JPEG, PNG, BMP, sniffing, resize): the header's size, "
                       "deterministic output, identity resize"},
      {"resize", resize, "data::resize_area against a double-precision area filter"},
      {"image_cache", image_cache, "data::ImageFolder's cache file: never throws, never wrong"},
      {"safetensors", safetensors, "ember::load / load_metadata / save: round trip"},
      {"cmdline", cmdline, "the examples' command lines (mnist_mlp, cifar10_cnn, cats_vs_dogs)"},
  };
  return all;
}

const Target* find_target(const std::string& name) {
  for (const Target& t : targets()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace ember::fuzz
