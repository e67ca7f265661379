// ember/core/cuda.cpp — core/cuda.h (torch.cuda's counterpart) on top of the CUDA backend's
// DeviceRuntime table (kernels/device_runtime.h), reached as kernels::cuda_backend()->runtime.
//
// One file for both kinds of build. With a CUDA backend (real or emulated) every function here
// turns ember's public types (Device, std::string) into the table's plain ones and forwards:
// the work, and the error messages, are in kernels/cuda/runtime.cu (devices, copies),
// allocator.cu (the caching allocator), gemm.cu (the matmul switches). In a CPU-only build
// there is no table: every question about GPUs gets the answer "none", and everything that
// would need one raises a DeviceError that says how to get a CUDA build.
//
// Also here: the two Allocators (core/storage.h) that Storage uses for device memory and for
// pinned host memory, which wrap the table's alloc and free.
#include "core/cuda.h"

#include <cstring>
#include <string>

#include "core/storage.h"
#include "kernels/backend.h"
#include "kernels/base/error.h"
#include "kernels/device_runtime.h"

namespace ember::cuda {

namespace detail {

// The CUDA backend's runtime table; nullptr in a CPU-only build (core/cuda_graph.cpp uses it
// too).
const kernels::DeviceRuntime* runtime() {
  static const kernels::DeviceRuntime* const rt = [] {
    const kernels::Backend* backend = kernels::cuda_backend();
    return backend != nullptr ? backend->runtime : nullptr;
  }();
  return rt;
}

const char* const kNotBuilt =
    "ember was built without CUDA (reconfigure with -DEMBER_CUDA=ON on a machine with the CUDA "
    "toolkit, or with -DEMBER_CUDA=EMULATE to run the CUDA kernels on the CPU)";

// What everything that needs a GPU says in a CPU-only build.
[[noreturn]] void not_built(const char* what) {
  throw DeviceError(std::string(what) + ": " + kNotBuilt + ". Use device \"cpu\"");
}

}  // namespace detail

namespace {

using detail::not_built;
using detail::runtime;

// The table, or the "not built" error naming `what`.
const kernels::DeviceRuntime& require(const char* what) {
  const kernels::DeviceRuntime* rt = runtime();
  if (rt == nullptr) not_built(what);
  return *rt;
}

kernels::MemoryStats stats_of(int index, const char* what) {
  return require(what).memory_stats(index);
}

// A CPU-only build still records the choice (there is no CUDA matmul to steer).
GemmBackend g_gemm_backend_without_cuda = GemmBackend::Cublas;

}  // namespace

// ---- is there a GPU? ---------------------------------------------------------------------------
bool is_built() { return runtime() != nullptr; }
bool is_available() { return runtime() != nullptr && runtime()->device_count() > 0; }
int device_count() { return runtime() != nullptr ? runtime()->device_count() : 0; }
const char* unavailable_reason() {
  return runtime() != nullptr ? runtime()->unavailable_reason() : detail::kNotBuilt;
}
bool is_emulated() { return runtime() != nullptr && runtime()->emulated; }

// ---- which GPU -------------------------------------------------------------------------------
int current_device() { return require("cuda::current_device").current_device(); }
void set_device(int index) { require("cuda::set_device").set_device(index); }
void synchronize(int index) { require("cuda::synchronize").synchronize(index); }

DeviceGuard::DeviceGuard(int index) {
  if (index < 0) return;
  previous_ = require("cuda::DeviceGuard").exchange_device(index);
}

namespace {
// The device a DeviceGuard(Device) makes current: none for the CPU; for "cuda" without an
// index, the current one (resolve() checks it either way).
int guard_index(Device device) {
  if (!device.is_cuda()) return -1;
  if (runtime() == nullptr) return 0;  // the int constructor says "not built"
  return resolve(device).index;
}
}  // namespace

DeviceGuard::DeviceGuard(Device device) : DeviceGuard(guard_index(device)) {}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) runtime()->restore_device(previous_);
}

Device resolve(Device device) {
  if (!device.is_cuda()) return device;
  const std::string placing = "cannot place a tensor on " + device.str();
  const kernels::DeviceRuntime& rt = require(placing.c_str());
  rt.require_gpu(placing.c_str());
  if (device.index < 0) return Device::cuda(rt.current_device());
  rt.check_device(device.index, ("placing a tensor on " + device.str()).c_str());
  return device;
}

DeviceProperties get_device_properties(int index) {
  kernels::DeviceProperties p;
  require("cuda::get_device_properties").get_properties(index, &p);
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.total_memory = p.total_memory;
  out.multiprocessor_count = p.multiprocessor_count;
  out.clock_rate_khz = p.clock_rate_khz;
  out.memory_clock_rate_khz = p.memory_clock_rate_khz;
  out.memory_bus_width = p.memory_bus_width;
  out.l2_cache_size = p.l2_cache_size;
  out.shared_memory_per_block = p.shared_memory_per_block;
  out.max_threads_per_block = p.max_threads_per_block;
  out.warp_size = p.warp_size;
  out.pci_bus_id = p.pci_bus_id;
  return out;
}

int driver_version() { return runtime() != nullptr ? runtime()->driver_version() : 0; }
int runtime_version() { return runtime() != nullptr ? runtime()->runtime_version() : 0; }
const char* built_architectures() {
  return runtime() != nullptr ? runtime()->built_architectures() : "";
}

bool device_supported(int index, std::string* why) {
  if (runtime() == nullptr) {
    if (why) *why = detail::kNotBuilt;
    return false;
  }
  const char* reason = "";
  const bool ok = runtime()->device_supported(index, &reason);
  if (why) *why = reason;
  return ok;
}

// ---- memory ------------------------------------------------------------------------------------
int64_t memory_allocated(int index) { return stats_of(index, "cuda::memory_allocated").allocated; }
int64_t memory_reserved(int index) { return stats_of(index, "cuda::memory_reserved").reserved; }
int64_t max_memory_allocated(int index) {
  return stats_of(index, "cuda::max_memory_allocated").peak_allocated;
}
void reset_peak_memory_stats(int index) {
  require("cuda::reset_peak_memory_stats").reset_peak_memory_stats(index);
}
void empty_cache() {
  if (runtime() != nullptr) runtime()->empty_cache();
}
AllocatorStats allocator_stats(int index) {
  const kernels::MemoryStats s = stats_of(index, "cuda::allocator_stats");
  AllocatorStats out;
  out.cuda_malloc_calls = s.cuda_malloc_calls;
  out.cuda_free_calls = s.cuda_free_calls;
  out.cache_hits = s.cache_hits;
  return out;
}

// ---- matmul switches -------------------------------------------------------------------------
void set_gemm_backend(GemmBackend backend) {
  if (runtime() == nullptr) {
    g_gemm_backend_without_cuda = backend;
    return;
  }
  runtime()->set_gemm_backend(backend == GemmBackend::Cublas ? kernels::GemmBackend::Cublas
                                                             : kernels::GemmBackend::Ember);
}
GemmBackend gemm_backend() {
  if (runtime() == nullptr) return g_gemm_backend_without_cuda;
  return runtime()->gemm_backend() == kernels::GemmBackend::Cublas ? GemmBackend::Cublas
                                                                   : GemmBackend::Ember;
}
const char* gemm_backend_name(GemmBackend backend) {
  return backend == GemmBackend::Cublas ? "cublas" : "ember";
}

void set_allow_tf32(bool allow) {
  if (runtime() != nullptr) runtime()->set_allow_tf32(allow);
}
bool allow_tf32() { return runtime() != nullptr && runtime()->allow_tf32(); }

// ---- copies ------------------------------------------------------------------------------------
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t n,
                bool non_blocking) {
  const kernels::DeviceRuntime& rt = require("copy to or from a GPU");
  if (n == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, n);
    return;
  }
  const kernels::CopyKind kind = src_device.is_cpu()   ? kernels::CopyKind::HostToDevice
                                 : dst_device.is_cpu() ? kernels::CopyKind::DeviceToHost
                                                       : kernels::CopyKind::DeviceToDevice;
  // The copy is queued on the stream of the GPU it involves: the source's when both are GPUs
  // (-1, "cuda" without an index: the current device), and ordered with the destination's.
  const int device = src_device.is_cuda() ? src_device.index : dst_device.index;
  rt.copy_bytes(dst, src, n, kind, device, dst_device.index, non_blocking);
}

// ---- the allocators behind Storage (core/storage.cpp) ------------------------------------------
namespace {

// Device memory from the caching allocator (kernels/cuda/allocator.cu).
class DeviceAllocator final : public Allocator {
 public:
  explicit DeviceAllocator(const kernels::DeviceRuntime& rt) : rt_(rt) {}
  void* allocate(size_t nbytes, Device device) override {
    return rt_.device_alloc(nbytes, device.index);
  }
  void deallocate(void* ptr, size_t, Device device) override { rt_.device_free(ptr, device.index); }

 private:
  const kernels::DeviceRuntime& rt_;
};

// Page-locked host memory for pin_memory() (kernels/cuda/allocator.cu too).
class PinnedAllocator final : public Allocator {
 public:
  explicit PinnedAllocator(const kernels::DeviceRuntime& rt) : rt_(rt) {}
  void* allocate(size_t nbytes, Device) override { return rt_.pinned_alloc(nbytes); }
  void deallocate(void* ptr, size_t, Device) override { rt_.pinned_free(ptr); }

 private:
  const kernels::DeviceRuntime& rt_;
};

}  // namespace

namespace detail {
// Created on first use and never destroyed: tensors held in static variables are freed during
// process exit, possibly after every static destructor of this file has run, and must still find
// their allocator.
Allocator* device_allocator() {
  static Allocator* const a = runtime() != nullptr ? new DeviceAllocator(*runtime()) : nullptr;
  return a;
}
Allocator* pinned_allocator() {
  static Allocator* const a = runtime() != nullptr ? new PinnedAllocator(*runtime()) : nullptr;
  return a;
}
}  // namespace detail

}  // namespace ember::cuda
