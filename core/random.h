// ember/core/random.h — the seeded generator behind rand/randn/randint/randperm and dropout.
#pragma once

#include <cstdint>

namespace ember {

// A Philox generator is just (seed, offset): each random tensor consumes `numel` counters.
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}
  void manual_seed(uint64_t seed) { seed_ = seed; offset_ = 0; }
  uint64_t seed() const { return seed_; }
  // Reserves `n` counters and returns the first.
  uint64_t advance(uint64_t n) { const uint64_t o = offset_; offset_ += n; return o; }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
// Seeds the global generator, like torch.manual_seed: same seed, same numbers.
void manual_seed(uint64_t seed);

}  // namespace ember
