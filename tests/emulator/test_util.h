// The emulator tests' shared helpers (tests/emulator/*.cpp): device buffers, the checkers for one
// scope, and a substring test for the reports.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "kernels/emulator/emulator.h"

namespace ember_test {

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Device memory from cudaMalloc, zeroed, freed at the end of the scope.
template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), count * sizeof(T)) == cudaSuccess);
    clear();
  }
  explicit DeviceBuffer(const std::vector<T>& v) : DeviceBuffer(v.size()) { set(v); }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void clear() { REQUIRE(cudaMemset(p, 0, n * sizeof(T)) == cudaSuccess); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
  void set(const std::vector<T>& v) {
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
};

// Sets the emulator's checkers for one scope.
struct Checks {
  unsigned saved;
  explicit Checks(unsigned mask) : saved(ember::emu::checks()) { ember::emu::set_checks(mask); }
  ~Checks() { ember::emu::set_checks(saved); }
};

}  // namespace ember_test
