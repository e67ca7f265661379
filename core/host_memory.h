// ember/core/host_memory.h — the caching allocator for host (CPU) tensors, and its statistics.
//
// A training loop allocates the same large buffers every step: activations, gradients, im2col
// scratch. Handed back to malloc, a buffer of a megabyte or more is returned to the OS (glibc
// serves such sizes with mmap), and the next step's buffer page-faults in again, a fault per
// 4 KiB page. So host tensors of at least kHostCacheMinBytes are kept on free lists by size
// class when released and handed out again, as the CUDA caching allocator does for device memory
// (core/cuda.h): in a steady loop, after the first step, no large allocation reaches the OS.
// "Large" starts at 32 KiB, not at malloc's own mmap size: glibc also gives back the top of its
// heap once more than 128 KiB lies free there (its trim threshold), so a step whose last few
// mid-size buffers are freed together hands them to the OS and faults them in again the next
// step. Whether that happens depends on how the heap happens to be laid out: the cifar10_cnn
// step at batch 4 took 14,575 page faults in 2,200 steps in one build of ember and 775 in an
// earlier one, and 645 with these sizes cached (bench/RESULTS.md, "A step's page faults").
// Smaller tensors go straight to malloc, which serves them from its own free lists.
//
// Size classes: a request is rounded up to one of 8 sizes per power of two (at most 12.5%
// more), and a class's cached blocks serve only requests of that class. Cached memory is capped
// (EMBER_HOST_CACHE_MAX_MB, default 2048): a block released past the cap goes back to the OS.
// When the OS refuses memory, the cache is emptied and the allocation tried once more. Under
// AddressSanitizer, cached blocks are poisoned, so a use after free is still reported.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::host {

// Requests below this size bypass the cache.
constexpr size_t kHostCacheMinBytes = size_t(32) << 10;

// Bytes held by live host tensors (counted at their size class), bytes the allocator holds from
// the OS (live + cached), the peak of memory_allocated since the start (or the last reset).
int64_t memory_allocated();
int64_t memory_reserved();
int64_t max_memory_allocated();
void reset_peak_memory_stats();
// Returns every cached, unused block to the OS. Live tensors are untouched.
void empty_cache();

// How often the allocator went to the OS for blocks of at least kHostCacheMinBytes: in a steady
// training loop these stop growing after the first step.
struct AllocatorStats {
  int64_t os_allocs = 0;   // large blocks taken from the OS
  int64_t os_frees = 0;    // large blocks given back
  int64_t cache_hits = 0;  // requests served from the cache
};
AllocatorStats allocator_stats();

namespace detail {
// The allocator behind Storage for plain host memory (core/storage.cpp).
void* allocate(size_t nbytes);
void deallocate(void* ptr, size_t nbytes);
}  // namespace detail

}  // namespace ember::host
