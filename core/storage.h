// ember/core/storage.h — a reference-counted buffer on one device.
//
// Many tensors (views) can share one Storage. The storage also carries the version counter
// that autograd uses to notice in-place writes to tensors it saved for backward: every
// in-place op bumps it, and a saved tensor remembers the value it saw.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/device.h"

namespace ember {

// Hands out raw device memory. The CPU allocator is built in; the CUDA backend registers its
// caching allocator when ember is built with CUDA.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
};

void register_allocator(DeviceType type, Allocator* allocator);
Allocator* allocator_for(Device device);  // throws DeviceError when the device has none

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  int64_t version() const { return version_; }
  void bump_version() { ++version_; }

  // Number of Storage objects alive and bytes they hold: tests use these to prove that
  // repeated training steps do not leak.
  static int64_t live_count();
  static int64_t live_bytes();

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  int64_t version_ = 0;
};

}  // namespace ember
