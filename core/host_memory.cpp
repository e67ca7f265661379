#include "core/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/base/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_ASAN 1
#endif
#endif
#ifdef EMBER_ASAN
#include <sanitizer/asan_interface.h>
#define EMBER_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define EMBER_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define EMBER_POISON(p, n) ((void)(p), (void)(n))
#define EMBER_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ember::host {

namespace {

// What a request of n bytes occupies: 64-byte multiples below the cache's threshold; above it,
// the next of 8 sizes per power of two (e.g. 1 MiB, 1.125 MiB, 1.25 MiB, ... 1.875 MiB, 2 MiB).
size_t size_class(size_t n) {
  const size_t rounded = std::max<size_t>(64, (n + 63) / 64 * 64);
  if (rounded < kHostCacheMinBytes) return rounded;
  size_t pow2 = kHostCacheMinBytes;
  while (pow2 * 2 <= rounded) pow2 *= 2;
  const size_t step = pow2 / 8;
  return (rounded + step - 1) / step * step;
}

size_t cache_limit_bytes() {
  if (const char* env = std::getenv("EMBER_HOST_CACHE_MAX_MB")) {
    char* end = nullptr;
    const long long mb = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && mb >= 0) return static_cast<size_t>(mb) << 20;
  }
  return size_t(2048) << 20;
}

class Cache {
 public:
  void* allocate(size_t nbytes) {
    const size_t cls = size_class(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cls >= kHostCacheMinBytes) {
        auto it = free_.find(cls);
        if (it != free_.end() && !it->second.empty()) {
          void* p = it->second.back();
          it->second.pop_back();
          cached_ -= cls;
          ++stats_.cache_hits;
          note_allocated(cls);
          EMBER_UNPOISON(p, cls);
          return p;
        }
      }
    }
    void* p = std::aligned_alloc(64, cls);
    if (p == nullptr) {
      empty_cache();
      p = std::aligned_alloc(64, cls);
    }
    if (p == nullptr) {
      throw Error("out of host memory: could not allocate " + std::to_string(nbytes) +
                  " bytes (" + std::to_string(memory_allocated() >> 20) +
                  " MiB already held by tensors); use smaller batches or free tensors you no "
                  "longer need");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (cls >= kHostCacheMinBytes) ++stats_.os_allocs;
    reserved_ += static_cast<int64_t>(cls);
    note_allocated(cls);
    return p;
  }

  void deallocate(void* p, size_t nbytes) {
    if (p == nullptr) return;
    const size_t cls = size_class(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      allocated_ -= static_cast<int64_t>(cls);
      if (cls >= kHostCacheMinBytes && cached_ + cls <= limit_) {
        free_[cls].push_back(p);
        cached_ += cls;
        EMBER_POISON(p, cls);
        return;
      }
      if (cls >= kHostCacheMinBytes) ++stats_.os_frees;
      reserved_ -= static_cast<int64_t>(cls);
    }
    std::free(p);
  }

  void empty_cache() {
    std::vector<std::pair<void*, size_t>> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [cls, list] : free_) {
        for (void* p : list) blocks.emplace_back(p, cls);
        reserved_ -= static_cast<int64_t>(cls * list.size());
        stats_.os_frees += static_cast<int64_t>(list.size());
      }
      free_.clear();
      cached_ = 0;
    }
    for (auto& [p, cls] : blocks) {
      EMBER_UNPOISON(p, cls);
      std::free(p);
    }
  }

  int64_t allocated() {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocated_;
  }
  int64_t reserved() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reserved_;
  }
  int64_t peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    return peak_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    peak_ = allocated_;
  }
  AllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  void note_allocated(size_t cls) {  // mutex_ held
    allocated_ += static_cast<int64_t>(cls);
    peak_ = std::max(peak_, allocated_);
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // size class -> cached blocks
  size_t cached_ = 0;
  const size_t limit_ = cache_limit_bytes();
  int64_t allocated_ = 0, reserved_ = 0, peak_ = 0;
  AllocatorStats stats_;
};

// Never destroyed: tensors held by static objects are released after main returns.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

}  // namespace

int64_t memory_allocated() { return cache().allocated(); }
int64_t memory_reserved() { return cache().reserved(); }
int64_t max_memory_allocated() { return cache().peak(); }
void reset_peak_memory_stats() { cache().reset_peak(); }
void empty_cache() { cache().empty_cache(); }
AllocatorStats allocator_stats() { return cache().stats(); }

namespace detail {
void* allocate(size_t nbytes) { return cache().allocate(nbytes); }
void deallocate(void* ptr, size_t nbytes) { cache().deallocate(ptr, nbytes); }
}  // namespace detail

}  // namespace ember::host
