// ember/kernels/base/philox.h — Philox4x32-10, the counter-based random number generator.
//
// A counter-based RNG is a pure function: (key, counter) -> four random 32-bit words. Element i
// of a random tensor uses counter i (plus the generator's running offset), so every element can
// be computed independently — by any CPU thread or any CUDA thread — and the same seed gives
// the same numbers on every device and thread count. (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC'11.)
#pragma once

#include <cstdint>

#include "kernels/base/host_device.h"

namespace ember::kernels {

struct Philox4 {
  uint32_t v[4];
};

EMBER_HOST_DEVICE inline Philox4 philox4x32(uint64_t key, uint64_t counter_lo, uint64_t counter_hi) {
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1): 24 random bits for float, 53 for double.
EMBER_HOST_DEVICE inline float uniform_float(uint32_t x) { return (x >> 8) * (1.0f / 16777216.0f); }
EMBER_HOST_DEVICE inline double uniform_double(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(bits & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace ember::kernels
