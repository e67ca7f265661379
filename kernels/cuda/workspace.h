// ember/kernels/cuda/workspace.h — scratch device memory for one kernel call: a column matrix
// for im2col, cuDNN's workspace, a partial-sum buffer.
//
//   Workspace cols(bytes);       // on the current device, from the caching allocator
//   EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), im2col_kernel<T>)(x, cols.as<T>(), ...);
//   gemm(..., cols.as<T>(), ...);
//                                // end of scope: the block goes back to the cache
//
// The memory comes from the caching allocator (kernels/cuda/allocator.cu) like a tensor's, so a
// kernel's scratch costs no cudaMalloc after the first step, and it counts in memory_allocated().
// Why the block may go back to the cache at the end of the scope, while the kernels queued on it
// have not run yet: every ember kernel runs on the one stream of its device (launch.cuh), so the
// next owner of the block is a kernel queued later on that stream, which starts after these
// have finished (allocator.cu says this at length). During a CUDA graph capture the block comes
// from the graph's private pool and stays there, as a tensor's would.
//
// A Workspace of 0 bytes holds nothing (data() is nullptr) and never touches the allocator, as
// does a default-constructed one: `Workspace ws = pointwise ? Workspace() : Workspace(bytes);`.
// Allocating throws OutOfMemoryError (kernels/base/error.h) when the device is full.
#pragma once

#include <cstddef>

namespace ember::kernels::cuda {

class Workspace {
 public:
  Workspace() = default;
  // `bytes` of device memory on the calling thread's current device.
  explicit Workspace(size_t bytes);
  ~Workspace();
  Workspace(Workspace&& other) noexcept;
  Workspace& operator=(Workspace&& other) noexcept;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }  // -1 when it holds nothing

 private:
  void release() noexcept;

  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
};

}  // namespace ember::kernels::cuda
