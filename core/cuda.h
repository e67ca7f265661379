// ember/core/cuda.h — the CUDA runtime as ember's users see it (torch.cuda's counterpart).
//
// Everything here builds and links without CUDA. core/cuda.cpp implements it on top of the CUDA
// backend's runtime table (kernels/device_runtime.h): a CPU-only build has no such table, and
// then every question gets the answer "no GPU" and anything that would need one raises a
// DeviceError. In a CUDA build the work is done by kernels/cuda/runtime.cu (devices, streams,
// copies) and kernels/cuda/allocator.cu (the caching allocator and its statistics). CUDA graphs
// (torch.cuda.CUDAGraph) have a header of their own: core/cuda_graph.h.
//
// Device indices are those the process sees after CUDA_VISIBLE_DEVICES: with
// CUDA_VISIBLE_DEVICES=2,3, "cuda:0" is physical GPU 2 — exactly as in PyTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device.h"

namespace ember {
class Allocator;
}

namespace ember::cuda {

// ---- is there a GPU? ---------------------------------------------------------------------------
// Was this build of ember compiled with its CUDA backend (EMBER_CUDA=ON or AUTO with nvcc)?
bool is_built();
// Is there at least one usable GPU (a driver, a visible device)? Never throws: on a machine
// without a GPU or driver it is simply false, as torch.cuda.is_available().
bool is_available();
// Number of visible devices (after CUDA_VISIBLE_DEVICES); 0 without a GPU.
int device_count();
// One line explaining why is_available() is false ("no CUDA driver", "not built with CUDA"...).
const char* unavailable_reason();

// ---- which GPU -------------------------------------------------------------------------------
// The device new CUDA tensors go to when none is named ("cuda" without an index), per thread,
// as torch.cuda.current_device(). Throws DeviceError without a GPU.
int current_device();
// Makes `index` the current device of this thread. Throws DeviceError naming the valid range
// for an index that does not exist.
void set_device(int index);
// Waits until every kernel and copy queued on `index` (-1: the current device) has finished.
// Errors of earlier asynchronous kernels surface here, with the kernel that failed. A DeviceError
// during a CUDA graph capture (core/cuda_graph.h): there is nothing to wait for yet.
void synchronize(int index = -1);

// Makes a device current for one scope and restores the previous one at its end — the C++ form
// of `with torch.cuda.device(1):`. A CPU device (or a CPU-only build) leaves everything alone.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// "cuda" (no index) becomes "cuda:<current device>"; anything else is returned unchanged.
// Checks that a CUDA index exists (DeviceError otherwise).
Device resolve(Device device);

// What examples/device_query prints (cudaDeviceProp's useful fields).
struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;       // compute capability
  size_t total_memory = 0;        // bytes
  int multiprocessor_count = 0;
  int clock_rate_khz = 0;         // SM clock
  int memory_clock_rate_khz = 0;
  int memory_bus_width = 0;       // bits
  size_t l2_cache_size = 0;
  size_t shared_memory_per_block = 0;
  int max_threads_per_block = 0;
  int warp_size = 0;
  std::string pci_bus_id;
};
DeviceProperties get_device_properties(int index);
int driver_version();   // e.g. 13000 for CUDA 13.0; 0 when there is no driver
int runtime_version();  // the CUDA runtime ember was linked with
// The architectures this build carries code for, e.g. "75;80;86;90" (CMAKE_CUDA_ARCHITECTURES).
const char* built_architectures();
// Can this build run kernels on `index`? False for a GPU whose compute capability has neither
// a matching binary (same major, lower or equal minor) nor PTX it can compile; `why` then holds
// the message naming its sm, the built list and the CMake flag to rebuild with.
bool device_supported(int index, std::string* why = nullptr);

// ---- memory (kernels/cuda/allocator.cu) ---------------------------------------------------------
// Bytes held by live tensors, bytes the caching allocator holds from the driver (live + cached),
// and the peak of memory_allocated since the start (or the last reset). -1 = current device.
int64_t memory_allocated(int index = -1);
int64_t memory_reserved(int index = -1);
int64_t max_memory_allocated(int index = -1);
void reset_peak_memory_stats(int index = -1);
// Returns every cached, unused block to the driver (cudaFree). Live tensors are untouched, and so
// are the blocks of CUDA graphs' private pools (core/cuda_graph.h). A DeviceError during a
// capture, which cudaFree would break.
void empty_cache();
// How often the allocator went to the driver: in a steady training loop these stop growing
// after the first step (tests/core/cuda_device.cpp checks it).
struct AllocatorStats {
  int64_t cuda_malloc_calls = 0;
  int64_t cuda_free_calls = 0;
  int64_t cache_hits = 0;  // requests served from the cache
};
AllocatorStats allocator_stats(int index = -1);

// ---- matrix products (kernels/cuda/gemm.cu) ---------------------------------------------------
// Who computes matmul on CUDA: cuBLAS (the default on a GPU) or ember's own tiled kernel
// (kernels/cuda/gemm_tiled.cu, rung 7 of the SGEMM ladder made complete), which is also what
// the emulation build runs, since it has no cuBLAS: asking for Cublas there is a DeviceError.
// A process-wide switch, like PyTorch's backend flags.
enum class GemmBackend { Cublas, Ember };
void set_gemm_backend(GemmBackend backend);
GemmBackend gemm_backend();
const char* gemm_backend_name(GemmBackend backend);  // "cublas" / "ember"

// ---- the emulation build (kernels/emulator/, docs/emulator.md) -------------------------------
// Was ember built with -DEMBER_CUDA=EMULATE, i.e. are the "GPUs" emulated on the CPU? Then
// is_available() is true without a GPU, and timings say nothing about a real one.
bool is_emulated();

// ---- matmul precision (kernels/cuda/gemm.cu) ------------------------------------------------
// TF32 tensor-core math for float32 matmuls: ~8x the FP32 throughput on Ampere and later, with a
// 10-bit mantissa for the products. Off by default (exactness first); PyTorch's
// torch.backends.cuda.matmul.allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();

// ---- copies (used by Tensor::copy_ and to()) --------------------------------------------------
// Copies n bytes between any two of host, pinned host and device memory, in order with the
// kernels on the stream. A copy that involves the host returns when the bytes have arrived,
// unless non_blocking — which the caller may only ask for when the host side is pinned memory
// (Tensor::to does exactly that, as PyTorch). Device-to-device copies never make the host wait.
// During a CUDA graph capture only those are allowed: a copy from or to the host is a DeviceError.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t n,
                bool non_blocking);

namespace detail {
// The allocators behind Storage (core/storage.cpp): device memory through the caching
// allocator, and page-locked host memory for pin_memory(), both adapters in core/cuda.cpp over
// the runtime table's alloc and free. nullptr in a CPU-only build.
Allocator* device_allocator();
Allocator* pinned_allocator();
}  // namespace detail

}  // namespace ember::cuda
