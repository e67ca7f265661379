// tests/test_files.h — scratch files for the data tests: a temp folder that cleans up after
// itself, byte-level file writes and reads, the pieces of hand-made files (big- and little-endian
// integers, PNG chunks), the message of an expected exception, and a small dataset whose samples
// say which they are.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <zlib.h>

#include "core/tensor.h"
#include "data/dataset.h"

namespace ember::test {

using Bytes = std::vector<uint8_t>;

// A fresh folder under the system's temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ember_test_") {
    static std::atomic<int> counter{0};
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = std::filesystem::temp_directory_path() /
            (prefix + std::to_string(ticks) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Writes `bytes` to `path`, creating its parent folders.
inline void write_bytes(const std::string& path, const Bytes& bytes) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}
inline void put_le32(Bytes& b, uint32_t v) {
  for (int s = 0; s < 32; s += 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// One PNG chunk: length, type, data, and the CRC-32 of type and data.
inline void png_chunk(Bytes& b, const char* type, const Bytes& data) {
  put_be32(b, static_cast<uint32_t>(data.size()));
  Bytes body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  b.insert(b.end(), body.begin(), body.end());
  put_be32(b, static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
}

// The message of the E that f throws (fails the test if f throws nothing).
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception, none was thrown");
  return "";
}

// A dataset of n samples: data [n, 2] int64 with row i = (10 i, 10 i + 1), targets i.
inline data::TensorDataset counting_dataset(int64_t n, data::Transform transform = {}) {
  std::vector<int64_t> d, t;
  for (int64_t i = 0; i < n; ++i) {
    d.push_back(10 * i);
    d.push_back(10 * i + 1);
    t.push_back(i);
  }
  return data::TensorDataset(from_vector<int64_t>(d, {n, 2}, kInt64),
                             from_vector<int64_t>(t, {n}, kInt64), std::move(transform));
}

}  // namespace ember::test
