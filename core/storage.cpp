#include "core/storage.h"

#include <cstdlib>
#include <new>
#include <string>

#include "core/cuda.h"
#include "kernels/base/error.h"
#include "core/host_memory.h"

namespace ember {

namespace {

std::atomic<int64_t> g_live_count{0};
std::atomic<int64_t> g_live_bytes{0};

// 64-byte aligned host memory (a cache line, and enough for any SIMD load Eigen issues), from
// the caching host allocator (core/host_memory.h).
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override { return host::detail::allocate(nbytes); }
  void deallocate(void* ptr, size_t nbytes, Device) override {
    host::detail::deallocate(ptr, nbytes);
  }
};

}  // namespace

Allocator* allocator_for(Device device, bool pinned) {
  if (device.is_cpu() && !pinned) {
    static CpuAllocator cpu;
    return &cpu;
  }
  Allocator* a = pinned ? cuda::detail::pinned_allocator() : cuda::detail::device_allocator();
  if (!a || !cuda::is_available()) {
    throw DeviceError(std::string(pinned ? "pin_memory" : "cannot place a tensor on " + device.str()) +
                      ": " + cuda::unavailable_reason() +
                      ". Use device \"cpu\", or pick the device with "
                      "cuda::is_available() ? \"cuda\" : \"cpu\"");
  }
  return a;
}

Storage::Storage(size_t nbytes, Device device, bool pinned)
    : nbytes_(nbytes), device_(cuda::resolve(device)), pinned_(pinned) {
  EMBER_CHECK_T(DeviceError, !(pinned && device_.is_cuda()), "pinned memory is host memory: "
                "ask for it on the cpu device (pin_memory())");
  data_ = allocator_for(device_, pinned_)->allocate(nbytes, device_);
  ++g_live_count;
  g_live_bytes += static_cast<int64_t>(nbytes);
}

Storage::~Storage() {
  allocator_for(device_, pinned_)->deallocate(data_, nbytes_, device_);
  --g_live_count;
  g_live_bytes -= static_cast<int64_t>(nbytes_);
}

int64_t Storage::live_count() { return g_live_count.load(); }
int64_t Storage::live_bytes() { return g_live_bytes.load(); }

}  // namespace ember
