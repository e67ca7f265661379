// ember/kernels/cuda/allocator.cu — the caching allocator for device memory, pinned host
// memory for pin_memory(), and kernels' scratch memory (Workspace, kernels/cuda/workspace.h).
//
// Who calls it: core's Storage, through the DeviceRuntime table (device_alloc / device_free,
// kernels/device_runtime.h; the Allocator adapters are in core/cuda.cpp), and kernels that need
// scratch, through Workspace. Both get the same blocks, the same statistics, and the same
// rules below.
//
// Why cache: cudaMalloc and cudaFree are slow (tens of microseconds to milliseconds) and
// cudaFree waits for the whole device to go idle. A training step allocates and frees the same
// activation and gradient sizes every iteration, so ember keeps freed blocks in a per-device
// free list and hands them out again: after the first step a steady loop makes no cudaMalloc or
// cudaFree call at all (tests/core/cuda_device.cpp counts them).
//
// Why reuse is safe without events: every ember kernel and copy is executed on one in-order
// stream per device, the legacy default stream (kernels/cuda/launch.cuh), and so are CUDA graph
// replays. A block freed by the host while a kernel that reads it is still queued can only be
// handed to a kernel queued *later* on that same stream, which runs after the first one finished.
// The one other stream is a graph's capture stream (kernels/cuda/graph.cu), and nothing runs on
// it: its work is recorded, to be replayed later on the legacy stream. What a capture allocates
// comes from the graph's private pool and stays there (kernels/cuda/graph_pool.h says why), so
// the argument holds for graphs too: eager work never receives a block a graph may touch, and a
// graph's blocks are only reused by the graph's own later nodes, which replay after the earlier
// ones on the same stream.
//
// Rounding: requests are rounded up to 512 bytes (1 MiB above 1 MiB), so near-equal sizes share
// blocks, and a cached block serves a request when it is at most a quarter larger than it. Blocks
// are never split; empty_cache() gives every unused one back to the driver. When cudaMalloc
// fails, the cache is freed and the call retried once before OutOfMemoryError is raised —
// except while a CUDA graph capture is underway anywhere in the process: cudaFree waits for the
// device, which a capture forbids, so then the OutOfMemoryError comes at once.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/cuda/graph_pool.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/workspace.h"
#ifdef EMBER_CUDA_EMULATED
#include "kernels/emulator/emulator.h"
#endif

namespace ember::kernels::cuda {

namespace {

// Which bytes of a block a live tensor owns. On a GPU these do nothing (compute-sanitizer only
// knows whole cudaMalloc blocks); the emulator's memcheck uses them to report a read through a
// stale pointer into a cached block, or past a tensor's end into the rest of its block.
void memcheck_live(void* block, size_t bytes, size_t capacity) {
#ifdef EMBER_CUDA_EMULATED
  emu::mark_block_live(block, bytes, capacity);
#else
  (void)block, (void)bytes, (void)capacity;
#endif
}
void memcheck_cached(void* block, size_t capacity) {
#ifdef EMBER_CUDA_EMULATED
  emu::mark_block_cached(block, capacity);
#else
  (void)block, (void)capacity;
#endif
}

constexpr size_t kSmallLimit = size_t(1) << 20;

size_t round_size(size_t n) {
  const size_t granule = n < kSmallLimit ? 512 : kSmallLimit;
  return (n + granule - 1) / granule * granule;
}

std::string human_bytes(double b) {
  const char* unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", b, unit[u]);
  return buf;
}

struct DeviceCache {
  std::multimap<size_t, void*> free_blocks;   // size -> block, for best-fit lookup
  std::unordered_map<void*, size_t> live;     // block -> its (rounded) size
  std::unordered_map<void*, GraphPool*> pool_of;  // blocks a graph's pool owns
  int64_t allocated = 0, reserved = 0, peak = 0;  // pool blocks included
  struct {
    int64_t cuda_malloc_calls = 0, cuda_free_calls = 0, cache_hits = 0;
  } stats;
  bool checked = false;  // device_supported() has been asked for this device
};

}  // namespace

// A CUDA graph's private pool (kernels/cuda/graph_pool.h).
struct GraphPool {
  int device = 0;
  std::multimap<size_t, void*> free_blocks;  // size -> block: only a capture into it takes them
  std::map<const void*, size_t> blocks;      // every block it owns, live or free -> size
  int64_t reserved = 0;
};

namespace {

// The pool this thread's allocations go to while it captures (graph_pool.h), and the number of
// captures underway in the process.
thread_local GraphPool* tls_capture_pool = nullptr;
std::atomic<int> g_captures_underway{0};

// While capturing, this thread may not make "potentially unsafe" calls such as cudaMalloc (the
// capture runs in cudaStreamCaptureModeThreadLocal, kernels/cuda/graph.cu). A cudaMalloc for the
// graph's pool is safe all the same — nothing frees the block while the graph exists, so the
// graph's kernels find it at every replay — and the thread says so by switching itself to
// Relaxed for that one call (PyTorch's allocator does the same).
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(bool on) : on_(on) {
    if (on_) EMBER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode_));
  }
  ~RelaxedCaptureMode() {
    if (on_) cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  bool on_;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

class CachingAllocator {
 public:
  void* allocate(size_t nbytes, int index) {
    if (nbytes == 0) return nullptr;  // nothing to hold; kernels launch nothing for 0 elements
    std::lock_guard<std::mutex> lock(mu_);
    DeviceCache& dc = cache(index);
    if (!dc.checked) {
      const char* why = "";
      if (!device_supported(index, &why)) throw DeviceError(why);
      dc.checked = true;
    }
    const size_t size = round_size(nbytes);
    // While this thread captures a graph, the graph's pool serves it. (Memory of another device
    // would be for work the capture refuses anyway, and its cudaMalloc would break the capture.)
    EMBER_CHECK_T(DeviceError, tls_capture_pool == nullptr || tls_capture_pool->device == index,
                  "allocating memory on cuda:", index, " during a CUDA graph capture on cuda:",
                  tls_capture_pool ? tls_capture_pool->device : -1, ": a graph holds the work of "
                  "one device. Keep every tensor of the captured step on cuda:",
                  tls_capture_pool ? tls_capture_pool->device : -1,
                  ", or capture one graph per device");
    GraphPool* pool = tls_capture_pool != nullptr && tls_capture_pool->device == index
                          ? tls_capture_pool : nullptr;
    std::multimap<size_t, void*>& free_blocks = pool ? pool->free_blocks : dc.free_blocks;
    void* ptr = nullptr;
    auto it = free_blocks.lower_bound(size);
    if (it != free_blocks.end() && it->first <= size + size / 4) {
      ptr = it->second;
      dc.live[ptr] = it->first;
      dc.allocated += static_cast<int64_t>(it->first);
      free_blocks.erase(it);
      ++dc.stats.cache_hits;
    } else {
      DeviceGuard guard(index);
      const RelaxedCaptureMode relaxed(pool != nullptr);
      cudaError_t err = cudaMalloc(&ptr, size);
      ++dc.stats.cuda_malloc_calls;
      if (err == cudaErrorMemoryAllocation && g_captures_underway.load() == 0) {
        cudaGetLastError();
        release_cached(index, dc);  // give the cache back and try once more
        err = cudaMalloc(&ptr, size);
        ++dc.stats.cuda_malloc_calls;
      }
      if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw OutOfMemoryError(oom_message(index, dc, nbytes));
      }
      EMBER_CUDA_CHECK(err);
      dc.live[ptr] = size;
      dc.allocated += static_cast<int64_t>(size);
      dc.reserved += static_cast<int64_t>(size);
      if (pool) {
        pool->blocks[ptr] = size;
        pool->reserved += static_cast<int64_t>(size);
        dc.pool_of[ptr] = pool;
      }
    }
    if (dc.allocated > dc.peak) dc.peak = dc.allocated;
    // A pool block is the graph's whole: its kernels may use any part of it at a replay (a block
    // serves several tensors of the captured step in turn), so memcheck sees all of it as live.
    const size_t capacity = dc.live[ptr];
    memcheck_live(ptr, pool ? capacity : nbytes, capacity);
    return ptr;
  }

  void deallocate(void* ptr, int index) {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    DeviceCache& dc = cache(index);
    auto it = dc.live.find(ptr);
    if (it == dc.live.end()) return;  // not ours: cannot happen through Storage or Workspace
    const size_t size = it->second;
    dc.allocated -= static_cast<int64_t>(size);
    dc.live.erase(it);
    // Whose block is it now? A graph's pool keeps its own; a capturing thread's pool adopts
    // whatever it frees (a kernel recorded before the free may use the block at every replay).
    GraphPool* owner = nullptr;
    if (auto p = dc.pool_of.find(ptr); p != dc.pool_of.end()) {
      owner = p->second;
    } else if (tls_capture_pool != nullptr && tls_capture_pool->device == index) {
      owner = tls_capture_pool;
      owner->blocks[ptr] = size;
      owner->reserved += static_cast<int64_t>(size);
      dc.pool_of[ptr] = owner;
    }
    if (owner) {
      owner->free_blocks.emplace(size, ptr);  // no memcheck_cached: the graph may still touch it
    } else {
      dc.free_blocks.emplace(size, ptr);
      memcheck_cached(ptr, size);
    }
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    EMBER_CHECK_T(DeviceError, g_captures_underway.load() == 0,
                  "cuda::empty_cache() during a CUDA graph capture: giving memory back to the "
                  "driver (cudaFree) waits for the device, which a capture forbids. Call it "
                  "before capture_begin() or after capture_end()");
    for (size_t i = 0; i < caches_.size(); ++i) release_cached(static_cast<int>(i), caches_[i]);
  }

  void release_pool(GraphPool* pool) {
    std::lock_guard<std::mutex> lock(mu_);
    DeviceCache& dc = cache(pool->device);
    for (const auto& [ptr, size] : pool->blocks) dc.pool_of.erase(const_cast<void*>(ptr));
    for (const auto& [size, ptr] : pool->free_blocks) {
      dc.free_blocks.emplace(size, ptr);
      memcheck_cached(ptr, size);
    }
    delete pool;
  }

  template <typename F>
  auto with_lock(F f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f();
  }

  // Reads one device's numbers under the lock.
  template <typename F>
  auto with_cache(int index, F f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f(cache(index));
  }

 private:
  DeviceCache& cache(int index) {
    if (caches_.empty()) caches_.resize(static_cast<size_t>(device_count()));
    return caches_.at(static_cast<size_t>(index));
  }

  // cudaFree synchronizes the device, so every kernel that could still use a block is done.
  void release_cached(int index, DeviceCache& dc) {
    if (dc.free_blocks.empty()) return;
    DeviceGuard guard(index);
    for (auto& [size, ptr] : dc.free_blocks) {
      cudaFree(ptr);
      ++dc.stats.cuda_free_calls;
      dc.reserved -= static_cast<int64_t>(size);
    }
    cudaGetLastError();
    dc.free_blocks.clear();
  }

  std::string oom_message(int index, const DeviceCache& dc, size_t nbytes) {
    size_t free_b = 0, total_b = 0;
    {
      DeviceGuard guard(index);
      if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
    }
    return "CUDA out of memory on cuda:" + std::to_string(index) + ": tried to allocate " +
           human_bytes(static_cast<double>(nbytes)) + "; the device has " +
           human_bytes(static_cast<double>(free_b)) + " free of " +
           human_bytes(static_cast<double>(total_b)) + " total, and ember holds " +
           human_bytes(static_cast<double>(dc.reserved)) + " (" +
           human_bytes(static_cast<double>(dc.allocated)) +
           " in live tensors). Free tensors you no longer need, use smaller batches, or check "
           "that another process is not using the GPU (nvidia-smi)";
  }

  std::mutex mu_;
  std::vector<DeviceCache> caches_;
};

// Page-locked host memory, cached the same way: cudaHostAlloc costs far more than a copy of a
// batch, and the DataLoader pins one batch per step. A pinned block may still be the source of
// a non-blocking copy when its tensor dies, so a freed block is stamped with an event recorded
// on the stream; it is handed out again only once that event has completed.
class PinnedAllocator {
 public:
  void* allocate(size_t nbytes) {
    if (!is_available()) {
      throw DeviceError(std::string("pin_memory: pinned host memory needs a usable CUDA device: ") +
                        unavailable_reason());
    }
    refuse_in_capture(
        "pin_memory()", "page-locked memory is allocated with cudaHostAlloc, which a capture "
        "forbids, and a graph cannot copy from the host anyway. Pin the batch before "
        "capture_begin() or after capture_end(), and copy it into the graph's static input "
        "outside the capture");
    const size_t size = round_size(nbytes == 0 ? 1 : nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = free_.lower_bound(size); it != free_.end() && it->first <= size + size / 4; ++it) {
      if (cudaEventQuery(it->second.done) != cudaSuccess) continue;  // a copy still reads it
      void* p = it->second.ptr;
      cudaEventDestroy(it->second.done);
      live_[p] = it->first;
      free_.erase(it);
      return p;
    }
    cudaGetLastError();  // cudaEventQuery's cudaErrorNotReady is not an error
    void* p = nullptr;
    EMBER_CUDA_CHECK(cudaHostAlloc(&p, size, cudaHostAllocDefault));
    live_[p] = size;
    return p;
  }

  void deallocate(void* ptr) {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;
    Block b{ptr, nullptr};
    // Copies from or to pinned memory run on the legacy stream (a capture refuses them:
    // runtime.cu's copy_bytes), so that is the stream to mark, even while this thread captures.
    if (cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(b.done, 0) != cudaSuccess) {
      // The runtime is shutting down (process exit): nothing can be reading the block any more.
      cudaGetLastError();
      cudaFreeHost(ptr);
      cudaGetLastError();
      live_.erase(it);
      return;
    }
    free_.emplace(it->second, b);
    live_.erase(it);
  }

 private:
  struct Block {
    void* ptr;
    cudaEvent_t done;
  };
  std::mutex mu_;
  std::multimap<size_t, Block> free_;
  std::unordered_map<void*, size_t> live_;
};

// Created on first use and never destroyed: tensors held in static variables are freed during
// process exit, possibly after the CUDA runtime itself has shut down, and must still find their
// allocator (they only return blocks to its map then).
CachingAllocator& caching() {
  static CachingAllocator* a = new CachingAllocator();
  return *a;
}
PinnedAllocator& pinned() {
  static PinnedAllocator* a = new PinnedAllocator();
  return *a;
}

int pick(int index) { return index < 0 ? current_device() : index; }

void check_stats_index(int index) {
  if (!is_available()) throw DeviceError(std::string("cuda memory statistics: ") + unavailable_reason());
  if (index < 0 || index >= device_count()) {
    throw DeviceError("cuda memory statistics: cuda:" + std::to_string(index) +
                      " does not exist (this process sees " + std::to_string(device_count()) +
                      " device(s))");
  }
}

template <typename F>
auto stat(int index, F f) {
  index = pick(index);
  check_stats_index(index);
  return caching().with_cache(index, f);
}

}  // namespace

// ---- the DeviceRuntime entries (kernels/device_runtime.h) ----------------------------------------
void* device_alloc(size_t nbytes, int device) { return caching().allocate(nbytes, device); }
void device_free(void* ptr, int device) { caching().deallocate(ptr, device); }
void* pinned_alloc(size_t nbytes) { return pinned().allocate(nbytes); }
void pinned_free(void* ptr) { pinned().deallocate(ptr); }

MemoryStats memory_stats(int index) {
  return stat(index, [](DeviceCache& c) {
    MemoryStats s;
    s.allocated = c.allocated;
    s.reserved = c.reserved;
    s.peak_allocated = c.peak;
    s.cuda_malloc_calls = c.stats.cuda_malloc_calls;
    s.cuda_free_calls = c.stats.cuda_free_calls;
    s.cache_hits = c.stats.cache_hits;
    return s;
  });
}
void reset_peak_memory_stats(int index) {
  stat(index, [](DeviceCache& c) {
    c.peak = c.allocated;
    return 0;
  });
}
void empty_cache() {
  if (is_available()) caching().empty_cache();
}

// ---- graph pools (kernels/cuda/graph_pool.h) ----------------------------------------------------
GraphPool* create_graph_pool(int device) {
  auto* pool = new GraphPool();
  pool->device = device;
  return pool;
}
void begin_allocating_to(GraphPool* pool) {
  caching().with_lock([pool] {
    tls_capture_pool = pool;
    g_captures_underway.fetch_add(1);
    return 0;
  });
}
void end_allocating_to() {
  caching().with_lock([] {
    tls_capture_pool = nullptr;
    g_captures_underway.fetch_sub(1);
    return 0;
  });
}
void release_graph_pool(GraphPool* pool) {
  if (pool != nullptr) caching().release_pool(pool);
}
int64_t graph_pool_reserved(const GraphPool* pool) {
  return caching().with_lock([pool] { return pool->reserved; });
}
bool graph_pool_owns(const GraphPool* pool, const void* ptr) {
  return caching().with_lock([pool, ptr] {
    auto it = pool->blocks.upper_bound(ptr);
    if (it == pool->blocks.begin()) return false;
    --it;
    const auto* p = static_cast<const char*>(ptr);
    const auto* b = static_cast<const char*>(it->first);
    return p >= b && p < b + it->second;
  });
}
int captures_underway() { return g_captures_underway.load(); }

// ---- Workspace (kernels/cuda/workspace.h) -------------------------------------------------------
Workspace::Workspace(size_t bytes) {
  if (bytes == 0) return;
  const int device = current_device();
  ptr_ = caching().allocate(bytes, device);
  bytes_ = bytes;
  device_ = device;
}

Workspace::~Workspace() { release(); }

Workspace::Workspace(Workspace&& other) noexcept
    : ptr_(other.ptr_), bytes_(other.bytes_), device_(other.device_) {
  other.ptr_ = nullptr;
  other.bytes_ = 0;
  other.device_ = -1;
}

Workspace& Workspace::operator=(Workspace&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    device_ = other.device_;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
    other.device_ = -1;
  }
  return *this;
}

void Workspace::release() noexcept {
  if (ptr_ == nullptr) return;
  try {
    caching().deallocate(ptr_, device_);
  } catch (...) {
    // deallocate only touches the cache's maps; nothing in it talks to the driver.
  }
  ptr_ = nullptr;
  bytes_ = 0;
  device_ = -1;
}

}  // namespace ember::kernels::cuda
