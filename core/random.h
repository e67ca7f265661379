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
  // The counters used so far; with seed() the whole state (what a checkpoint saves).
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed; offset_ = offset; }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
// Seeds the global generator, like torch.manual_seed: same seed, same numbers.
void manual_seed(uint64_t seed);

// The global generator's state as 16 bytes (uint8 [16]: seed then offset, little-endian), and
// back — torch.get_rng_state / set_rng_state. One generator serves both devices (a CUDA randn
// draws from the same Philox stream as a CPU one, which is why a seed gives the same numbers on
// either), so this one state is the CPU's and the GPU's: restoring it replays both.
class Tensor;
Tensor get_rng_state();
void set_rng_state(const Tensor& state);

}  // namespace ember
