// ember/kernels/device_runtime.h — devices, streams, memory and graphs: what core/cuda.h
// (torch.cuda's counterpart) and core/cuda_graph.h ask of a GPU backend, as one table.
//
// The CUDA backend fills the table at the bottom of kernels/cuda/runtime.cu, and a Backend hands
// it out as `runtime` (kernels/backend.h): kernels::cuda_backend()->runtime. The CPU has none,
// and the CPU-only build has no CUDA backend at all, so core/cuda.cpp answers every question of
// core/cuda.h from one test — is there a table? — instead of from a stub per function.
//
// Plain types only: device indices are ints (-1 means "the current device" where a function
// says so), memory is void* and size_t, errors are the exceptions of kernels/base/error.h
// (DeviceError, OutOfMemoryError), and the few structs and enums the table needs are declared
// here. core/ turns them into its public types (Device, std::string, cuda::DeviceProperties).
//
// Where each entry lives:
//   devices, copies                      kernels/cuda/runtime.cu
//   the caching allocator, pinned memory kernels/cuda/allocator.cu
//   matmul switches (backend, TF32)      kernels/cuda/gemm.cu
//   CUDA graphs                          kernels/cuda/graph.cu
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::kernels {

// Who computes a CUDA matmul: cuBLAS, or ember's own tiled kernel (kernels/cuda/gemm_tiled.cu).
enum class GemmBackend { Cublas, Ember };

// Which sides of a copy are host memory. The copy is queued on the stream of the one GPU it
// involves (the source's, for device to device).
enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };

// cudaDeviceProp's useful fields (examples/device_query prints them).
struct DeviceProperties {
  char name[256] = {};
  int major = 0, minor = 0;  // compute capability
  size_t total_memory = 0;   // bytes
  int multiprocessor_count = 0;
  int clock_rate_khz = 0;  // SM clock
  int memory_clock_rate_khz = 0;
  int memory_bus_width = 0;  // bits
  size_t l2_cache_size = 0;
  size_t shared_memory_per_block = 0;
  int max_threads_per_block = 0;
  int warp_size = 0;
  char pci_bus_id[64] = {};
};

// One device's caching-allocator numbers (kernels/cuda/allocator.cu).
struct MemoryStats {
  int64_t allocated = 0;       // bytes held by live blocks (tensors, workspaces)
  int64_t reserved = 0;        // bytes the allocator holds from the driver: live + cached
  int64_t peak_allocated = 0;  // the highest `allocated` since the start or the last reset
  int64_t cuda_malloc_calls = 0;
  int64_t cuda_free_calls = 0;
  int64_t cache_hits = 0;  // requests served from the cache
};

// A CUDA graph as the runtime holds it (kernels/cuda/graph.cu): opaque to everyone else.
struct DeviceGraph;

struct GraphInfo {
  bool captured = false;      // holds a graph to replay
  bool capturing = false;     // between capture begin and end
  int device = -1;            // the device it captures / replays on (-1 before the first capture)
  int64_t nodes = 0;          // kernels and copies the capture recorded
  int64_t pool_reserved = 0;  // bytes of device memory its private pool holds
};

struct DeviceRuntime {
  // ---- devices (kernels/cuda/runtime.cu) -------------------------------------------------------
  bool emulated;  // the "GPUs" are the emulator's (kernels/emulator/, -DEMBER_CUDA=EMULATE)
  // Visible devices (after CUDA_VISIBLE_DEVICES), asked once; 0 without a driver or GPU. Never
  // throws. unavailable_reason says why there are none ("" when there are).
  int (*device_count)();
  const char* (*unavailable_reason)();
  // Throw a DeviceError starting with `what` when no GPU is usable / when `index` is not a
  // visible device (naming the valid range).
  void (*require_gpu)(const char* what);
  void (*check_device)(int index, const char* what);
  int (*current_device)();  // the calling thread's current device
  void (*set_device)(int index);
  // DeviceGuard's two halves: make `index` current and return the device that was current;
  // later put that one back (never throws: it runs in a destructor).
  int (*exchange_device)(int index);
  void (*restore_device)(int previous) noexcept;
  // Waits for everything queued on `index` (-1: the current device); refused during a capture.
  void (*synchronize)(int index);
  void (*get_properties)(int index, DeviceProperties* out);
  int (*driver_version)();               // 0 when there is no driver
  int (*runtime_version)();              // the CUDA runtime linked in
  const char* (*built_architectures)();  // "75;80;86;90": CMAKE_CUDA_ARCHITECTURES
  // Whether this build carries code for `index`; when not, *why (if why is not null) points to
  // a message naming its sm and the CMake flag to rebuild with. The text lives as long as the
  // process.
  bool (*device_supported)(int index, const char** why);
  // Copies n bytes, in order with the kernels on `device`'s stream (-1: the current device);
  // `dst_device` is the destination's GPU of a DeviceToDevice copy (-1: the current device),
  // whose stream the copy is ordered with too. A copy that involves the host returns when the
  // bytes have arrived, unless non_blocking (the host side must then be pinned). During a graph
  // capture only DeviceToDevice is allowed.
  void (*copy_bytes)(void* dst, const void* src, size_t n, CopyKind kind, int device,
                     int dst_device, bool non_blocking);

  // ---- memory (kernels/cuda/allocator.cu) ------------------------------------------------------
  // The caching allocator: nbytes on `device` (a valid index), nullptr for 0 bytes. A freed
  // block is reused by later work on the same stream without waiting (see allocator.cu); during
  // a graph capture both go through the graph's private pool. OutOfMemoryError when the driver
  // has no more, even after the cache was given back.
  void* (*device_alloc)(size_t nbytes, int device);
  void (*device_free)(void* ptr, int device);
  // Page-locked host memory (pin_memory()), cached likewise.
  void* (*pinned_alloc)(size_t nbytes);
  void (*pinned_free)(void* ptr);
  MemoryStats (*memory_stats)(int index);  // -1: the current device
  void (*reset_peak_memory_stats)(int index);
  void (*empty_cache)();  // every cached, unused block back to the driver

  // ---- matmul switches (kernels/cuda/gemm.cu), process-wide ------------------------------------
  void (*set_gemm_backend)(GemmBackend backend);  // Cublas is a DeviceError when emulated
  GemmBackend (*gemm_backend)();
  void (*set_allow_tf32)(bool allow);  // TF32 tensor-core math for float32 (cuBLAS, cuDNN)
  bool (*allow_tf32)();

  // ---- CUDA graphs (kernels/cuda/graph.cu) -----------------------------------------------------
  DeviceGraph* (*graph_create)();  // no CUDA call yet: that waits for the first capture
  void (*graph_destroy)(DeviceGraph* graph) noexcept;  // ends a capture, resets, frees
  void (*graph_capture_begin)(DeviceGraph* graph);     // on the calling thread's current device
  void (*graph_capture_end)(DeviceGraph* graph);
  void (*graph_abandon_capture)(DeviceGraph* graph);
  void (*graph_replay)(DeviceGraph* graph);
  void (*graph_reset)(DeviceGraph* graph);
  GraphInfo (*graph_info)(const DeviceGraph* graph);
  bool (*graph_pool_owns)(const DeviceGraph* graph, const void* ptr);
  bool (*is_capturing)();  // is the calling thread capturing a graph?
};

namespace cuda {
// The CUDA backend's table: defined at the bottom of kernels/cuda/runtime.cu, built only when
// ember has a CUDA backend (real or emulated).
extern const DeviceRuntime device_runtime;
}  // namespace cuda

}  // namespace ember::kernels
