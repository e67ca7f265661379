// The caching host allocator (core/host_memory.h): large blocks are reused, statistics add up,
// empty_cache gives memory back, and a steady training loop stops asking the OS for memory.
#include <catch2/catch.hpp>

#include "core/ember.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;

TEST_CASE("host allocator: a released large block serves the next request of its size class",
          "[memory]") {
  host::empty_cache();
  const int64_t n = (int64_t(1) << 20) / 4 + 1000;  // just over 1 MiB of float32
  const host::AllocatorStats s0 = host::allocator_stats();
  const int64_t allocated0 = host::memory_allocated();
  const void* first = nullptr;
  {
    Tensor a = empty({n});
    first = a.data_ptr<float>();
    const host::AllocatorStats s1 = host::allocator_stats();
    CHECK(s1.os_allocs == s0.os_allocs + 1);
    // Counted at its class: 1.125 MiB, the next of 8 sizes per power of two above 1 MiB.
    CHECK(host::memory_allocated() - allocated0 == (int64_t(9) << 17));
    CHECK(host::memory_reserved() >= host::memory_allocated());
  }
  CHECK(host::memory_allocated() == allocated0);
  {
    // A slightly different size of the same class gets the same block back, from the cache.
    Tensor b = empty({n + 5000});
    CHECK(b.data_ptr<float>() == first);
    const host::AllocatorStats s2 = host::allocator_stats();
    CHECK(s2.os_allocs == s0.os_allocs + 1);
    CHECK(s2.cache_hits == s0.cache_hits + 1);
    // A reused block holds whatever was there: empty() promises nothing, zeros() clears it.
    Tensor c = zeros({n + 5000});
    CHECK(c.sum().item() == 0.0);
  }
  const int64_t reserved = host::memory_reserved();
  host::empty_cache();
  CHECK(host::memory_reserved() <= reserved - (int64_t(9) << 17));
  CHECK(host::allocator_stats().os_frees >= s0.os_frees + 2);  // b's and c's blocks
}

// glibc gives the top of its heap back to the OS past 128 KiB free, so mid-size buffers freed at
// the end of a step would fault in again the next (core/host_memory.h): they are cached too.
TEST_CASE("host allocator: a mid-size block (48 KiB) is reused from the cache", "[memory]") {
  host::empty_cache();
  const int64_t n = 12 * 1024;  // 48 KiB of float32: below malloc's mmap size, above ours
  const host::AllocatorStats s0 = host::allocator_stats();
  const void* first = nullptr;
  {
    Tensor a = empty({n});
    first = a.data_ptr<float>();
    CHECK(host::allocator_stats().os_allocs == s0.os_allocs + 1);
  }
  {
    Tensor b = empty({n});
    CHECK(b.data_ptr<float>() == first);
    const host::AllocatorStats s1 = host::allocator_stats();
    CHECK(s1.os_allocs == s0.os_allocs + 1);
    CHECK(s1.cache_hits == s0.cache_hits + 1);
  }
  // Just below the threshold: straight to malloc, never counted.
  {
    Tensor c = empty({int64_t(host::kHostCacheMinBytes / 4) - 64});
    CHECK(host::allocator_stats().os_allocs == s0.os_allocs + 1);
  }
}

TEST_CASE("host allocator: small tensors bypass the cache, peaks are tracked", "[memory]") {
  const host::AllocatorStats s0 = host::allocator_stats();
  host::reset_peak_memory_stats();
  const int64_t base = host::max_memory_allocated();
  CHECK(base == host::memory_allocated());
  {
    Tensor small = ones({1000});
    CHECK(host::allocator_stats().os_allocs == s0.os_allocs);  // below kHostCacheMinBytes
    Tensor big = ones({int64_t(1) << 20});                     // 4 MiB
    CHECK(host::max_memory_allocated() >= base + (int64_t(4) << 20));
  }
  CHECK(host::max_memory_allocated() >= base + (int64_t(4) << 20));
  host::reset_peak_memory_stats();
  CHECK(host::max_memory_allocated() == host::memory_allocated());
}

TEST_CASE("host allocator: a steady training loop takes no new large blocks after its first steps",
          "[memory][e2e]") {
  manual_seed(3);
  nn::Sequential model(std::make_shared<nn::Conv2d>(3, 16, 3), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Flatten>(),
                       std::make_shared<nn::Linear>(16 * 30 * 30, 64), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(64, 10));
  optim::SGD opt(model.parameters(), {0.01, 0.9});
  nn::CrossEntropyLoss criterion;
  const Tensor x = randn({32, 3, 32, 32});
  const Tensor y = (rand({32}) * 10.0).to(kInt64);
  auto step = [&] {
    opt.zero_grad();
    criterion(model(x), y).backward();
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step();
  const host::AllocatorStats before = host::allocator_stats();
  const int64_t reserved = host::memory_reserved();
  for (int i = 0; i < 10; ++i) step();
  const host::AllocatorStats after = host::allocator_stats();
  CHECK(after.os_allocs == before.os_allocs);
  CHECK(after.cache_hits > before.cache_hits);  // the large blocks come from the cache
  CHECK(host::memory_reserved() == reserved);
}
