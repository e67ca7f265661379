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

// Hands out raw memory on one kind of device. Three exist: plain host memory (built in), and in
// a CUDA build the caching device allocator and the pinned host allocator
// (kernels/cuda/allocator.cu, reached through core/cuda.h's cuda::detail).
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
};

// The allocator for a device (and for pinned host memory when `pinned`); throws DeviceError
// when there is none (a CUDA device in a CPU-only build, or no usable GPU).
Allocator* allocator_for(Device device, bool pinned = false);

class Storage {
 public:
  // A CUDA device without an index ("cuda") is placed on the current device; its index is
  // checked. `pinned` asks for page-locked host memory (CPU only).
  Storage(size_t nbytes, Device device, bool pinned = false);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }

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
  bool pinned_ = false;
  int64_t version_ = 0;
};

}  // namespace ember
