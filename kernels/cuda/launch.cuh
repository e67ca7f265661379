// ember/kernels/cuda/launch.cuh — what every kernel launcher in kernels/cuda/ shares: error
// checks that name the call and its place, the stream ember launches on, and grid sizing.
//
// Only .cu files include this (it needs cuda_runtime.h). The pattern of every launcher:
//
//   void relu(...) {                          // plain C++ signature from the .h
//     if (n == 0) return;                     // nothing to launch (a 0-block grid is an error)
//     EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), relu_kernel)(...);
//     EMBER_LAUNCH_CHECK("relu_kernel");     // a bad launch configuration is caught right here
//   }
//
// A launch is asynchronous: an error *inside* the kernel (an illegal address) surfaces at the
// next synchronizing call (a copy to the host, cuda::synchronize), which then reports it. (In the
// emulation build a kernel has finished when its launch returns, and its errors surface at the
// EMBER_LAUNCH_CHECK right after it.)
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace ember::kernels::cuda {

// Throws ember::DeviceError (OutOfMemoryError for cudaErrorMemoryAllocation) with the text
// "<what> failed at <file>:<line>: <CUDA's message>" when err is not cudaSuccess.
void check_error(cudaError_t err, const char* what, const char* file, int line);

// EMBER_LAUNCH(grid, block, shared_bytes, stream, kernel)(args...) launches a kernel. Compiled by
// nvcc it is exactly
//
//   kernel<<<grid, block, shared_bytes, stream>>>(args...);
//
// The macro exists for the emulation build (-DEMBER_CUDA=EMULATE), where the host compiler, which
// has no <<<>>> syntax, compiles the same kernels and the emulator (kernels/emulator/) runs
// every CUDA thread of the grid on the CPU. `kernel` must name the kernel (a template's arguments
// included, or left to be deduced from the arguments), not be a variable holding it.
#ifdef EMBER_CUDA_EMULATED
#define EMBER_LAUNCH(grid, block, shared_bytes, stream, ...)                                      \
  ::ember::emu::make_launcher((grid), (block), (shared_bytes), (stream), #__VA_ARGS__, __FILE__, \
                              __LINE__,                                                            \
                              [](auto&... ember_params) { __VA_ARGS__(ember_params...); })
#else
#define EMBER_LAUNCH(grid, block, shared_bytes, stream, ...) \
  __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#endif

// EMBER_DYNAMIC_SHARED(T, name) inside a kernel declares `name`, a T* to the block's dynamic
// shared memory (the launch's shared_bytes), 16-byte aligned. On a GPU it is the usual
// `extern __shared__` array; the emulation build maps it to its own per-block buffer.
#ifndef EMBER_CUDA_EMULATED
#define EMBER_DYNAMIC_SHARED(T, name)                           \
  extern __shared__ __align__(16) unsigned char ember_dynamic_shared_bytes[]; \
  T* name = reinterpret_cast<T*>(ember_dynamic_shared_bytes)
#endif

#define EMBER_CUDA_CHECK(call) ::ember::kernels::cuda::check_error((call), #call, __FILE__, __LINE__)
#define EMBER_LAUNCH_CHECK(kernel_name) \
  ::ember::kernels::cuda::check_error(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)

// The stream every ember kernel and copy is queued on: the calling thread's current stream.
// Eager work uses the legacy default stream (0), one in-order stream per device, so an op never
// needs an event to wait for the previous one, and memory the caching allocator hands out again
// is never still in use by a kernel queued earlier on another stream. While the thread captures
// a CUDA graph (core/cuda_graph.h, kernels/cuda/graph.cu) it is the graph's side stream instead:
// CUDA cannot capture the legacy stream. A launch on another device than the one being captured
// is a DeviceError (a graph holds the work of one device). Defined in kernels/cuda/graph.cu.
cudaStream_t stream();

// Is the calling thread capturing a CUDA graph? Then the work queued on stream() is recorded,
// not run: nothing may wait for it, read its results on the host, or allocate outside the
// graph's private memory pool (kernels/cuda/allocator.cu).
bool capturing();

// Throws DeviceError "<what> during CUDA graph capture: <advice>" when the calling thread is
// capturing; nothing otherwise. Called BEFORE the CUDA call a graph cannot hold, so that CUDA
// never sees it and the capture can still be ended cleanly. `advice` says why and what to do.
void refuse_in_capture(const char* what, const char* advice);

// Threads per block for 1-d elementwise launches: a multiple of the 32-thread warp, small
// enough that several blocks fit on one SM, large enough to hide memory latency.
constexpr int kBlock = 256;

// Blocks for one dimension of a grid that the kernel strides over (with grid_stride, below):
// `needed` blocks, but at most `limit`, and at least 1. A kernel that strides may get fewer
// blocks than its work needs: each block then takes a second pass, a third, ...
//
// In the emulation build EMBER_EMULATOR_GRID_CAP=N lowers the limit to N blocks, so that the
// tests' small tensors make every strided kernel take those extra passes (docs/emulator.md).
// Only a grid sized here is capped: a kernel with an exact grid (one block per tile, no loop)
// sizes its grid itself and keeps it. A capped launch whose kernel never reaches a grid_stride
// loop fails with a report, since the blocks it lost would have been skipped work.
inline unsigned strided_blocks(int64_t needed, int64_t limit) {
  int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(needed, limit));
#ifdef EMBER_CUDA_EMULATED
  blocks = ::ember::emu::cap_strided_blocks(blocks);
#endif
  return static_cast<unsigned>(blocks);
}

// Blocks for n independent items, kBlock threads each. Kernels use grid-stride loops
// (for i = global id; i < n; i += total threads), so capping the grid is always correct: with
// 2^16 blocks of 256 threads every SM of any current GPU is full, and a larger n simply loops.
inline unsigned grid_for(int64_t n, int block = kBlock) {
  return strided_blocks((n + block - 1) / block, 1 << 16);
}

// The global thread id and the total thread count for grid-stride loops, in 64 bits so that
// tensors of more than 2^31 elements index correctly.
__device__ inline int64_t global_thread_id() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t global_thread_count() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// A grid-stride loop, written as a range:
//
//   for (int64_t i : grid_stride(n))                  // one thread per item
//     ...                                             // = for (i = global_thread_id(); i < n;
//                                                     //        i += global_thread_count())
//   for (int64_t s : grid_stride(blockIdx.x, segments, gridDim.x))   // one block per segment
//   for (int64_t row : grid_stride(warp, rows, warps))                // one warp per row
//
// grid_stride(first, end, step) visits first, first + step, ... while below end. Each visit is
// one *pass* of the thread (or warp, or block) over its share of the work: with a grid that
// covers the work, one pass; with a capped grid (strided_blocks), more.
//
// For nvcc this is the plain loop. In the emulation build the range also counts its passes and
// tells the emulator when the loop ends, which is how EMBER_EMULATOR_COVERAGE's table knows, for
// each kernel, how many blocks really took a second pass (docs/emulator.md). A loop that a kernel
// writes by hand instead works, but is not counted, and under EMBER_EMULATOR_GRID_CAP a capped
// launch whose kernel reaches no grid_stride loop fails.
class GridStride {
 public:
  struct End {
    int64_t end;
  };
  class Iterator {
   public:
    __device__ Iterator(int64_t i, int64_t step, int64_t* passes) : i_(i), step_(step) {
#ifdef EMBER_CUDA_EMULATED
      passes_ = passes;
#else
      (void)passes;
#endif
    }
    __device__ int64_t operator*() const { return i_; }
    __device__ Iterator& operator++() {
      i_ += step_;
      return *this;
    }
    __device__ bool operator!=(End e) const {
      const bool more = i_ < e.end;
#ifdef EMBER_CUDA_EMULATED
      if (more) ++*passes_;
#endif
      return more;
    }

   private:
    int64_t i_, step_;
#ifdef EMBER_CUDA_EMULATED
    int64_t* passes_;
#endif
  };

  __device__ GridStride(int64_t first, int64_t end, int64_t step)
      : first_(first), end_(end), step_(step) {}
#ifdef EMBER_CUDA_EMULATED
  ~GridStride() { ::ember::emu::note_stride_passes(passes_); }
#endif
  GridStride(const GridStride&) = delete;
  GridStride& operator=(const GridStride&) = delete;

  __device__ Iterator begin() { return Iterator(first_, step_, &passes_); }
  __device__ End end() const { return End{end_}; }

 private:
  int64_t first_, end_, step_;
  int64_t passes_ = 0;
};

__device__ inline GridStride grid_stride(int64_t first, int64_t end, int64_t step) {
  return GridStride(first, end, step);
}
__device__ inline GridStride grid_stride(int64_t n) {
  return GridStride(global_thread_id(), n, global_thread_count());
}

}  // namespace ember::kernels::cuda
