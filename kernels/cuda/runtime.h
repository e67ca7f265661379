// ember/kernels/cuda/runtime.h — the CUDA runtime's entry points inside kernels/cuda: the
// functions the DeviceRuntime table (kernels/device_runtime.h) points at, for the .cu files that
// need a device, the allocator or a switch without going through core.
//
// Plain C++ (no cuda_runtime.h): the stream and the launch helpers are in launch.cuh. Which file
// defines what:
//   runtime.cu    devices, the guard, properties, copies, and the table itself
//   allocator.cu  the caching allocator and pinned memory (and Workspace, workspace.h)
//   gemm.cu       the matmul backend and TF32 switches
//   graph.cu      CUDA graphs, and the calling thread's stream (launch.cuh)
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/device_runtime.h"

namespace ember::kernels::cuda {

// ---- devices (runtime.cu) ----------------------------------------------------------------------
bool is_available();  // at least one visible device; never throws
int device_count();
const char* unavailable_reason();
// DeviceError "<what>: no CUDA device is usable: <reason>. Use device "cpu" ..." without a GPU.
void require_gpu(const char* what);
// require_gpu, then a DeviceError naming the valid range when `index` is not a visible device.
void check_device(int index, const char* what);
int current_device();
void set_device(int index);
int exchange_device(int index);
void restore_device(int previous) noexcept;
void synchronize(int index);
void get_properties(int index, DeviceProperties* out);
int driver_version();
int runtime_version();
const char* built_architectures();
bool device_supported(int index, const char** why);
void copy_bytes(void* dst, const void* src, size_t n, CopyKind kind, int device, int dst_device,
                bool non_blocking);

// Makes `index` current for one scope (nothing for index < 0) and puts the previous device back
// at its end.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) : previous_(index < 0 ? -1 : exchange_device(index)) {}
  ~DeviceGuard() {
    if (previous_ >= 0) restore_device(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

// ---- memory (allocator.cu) ---------------------------------------------------------------------
void* device_alloc(size_t nbytes, int device);
void device_free(void* ptr, int device);
void* pinned_alloc(size_t nbytes);
void pinned_free(void* ptr);
MemoryStats memory_stats(int index);
void reset_peak_memory_stats(int index);
void empty_cache();

// ---- matmul switches (gemm.cu) -----------------------------------------------------------------
void set_gemm_backend(GemmBackend backend);
GemmBackend gemm_backend();
void set_allow_tf32(bool allow);
bool allow_tf32();

// ---- CUDA graphs (graph.cu) --------------------------------------------------------------------
DeviceGraph* graph_create();
void graph_destroy(DeviceGraph* graph) noexcept;
void graph_capture_begin(DeviceGraph* graph);
void graph_capture_end(DeviceGraph* graph);
void graph_abandon_capture(DeviceGraph* graph);
void graph_replay(DeviceGraph* graph);
void graph_reset(DeviceGraph* graph);
GraphInfo graph_info(const DeviceGraph* graph);
bool graph_pool_owns(const DeviceGraph* graph, const void* ptr);
// (whether the calling thread captures: capturing(), launch.cuh)

}  // namespace ember::kernels::cuda
