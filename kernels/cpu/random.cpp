#include "kernels/random.h"

#include <cmath>

#include "kernels/base/parallel.h"
#include "kernels/base/philox.h"

namespace ember::kernels::cpu {

namespace {
// One Philox call per element keeps the mapping element -> counter trivial to reproduce on CUDA.
template <typename T>
T uniform01(const Philox4& r) {
  if constexpr (sizeof(T) == 4) return uniform_float(r.v[0]);
  else return uniform_double(r.v[0], r.v[1]);
}
}  // namespace

void uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double low, double high) {
  EMBER_DISPATCH_FLOAT(dtype, "rand", [&] {
    auto* o = static_cast<scalar_t*>(out);
    const auto lo = static_cast<scalar_t>(low), span = static_cast<scalar_t>(high - low);
    parallel_for(0, n, 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = lo + span * uniform01<scalar_t>(philox4x32(seed, offset + i, 0));
    });
  });
}

// Box-Muller: two independent uniforms u1 in (0, 1], u2 in [0, 1) give one standard normal
// sqrt(-2 ln u1) cos(2 pi u2).
void normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std) {
  EMBER_DISPATCH_FLOAT(dtype, "randn", [&] {
    auto* o = static_cast<scalar_t*>(out);
    parallel_for(0, n, 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const Philox4 r = philox4x32(seed, offset + i, 0);
        const double u1 = 1.0 - uniform_double(r.v[0], r.v[1]);
        const double u2 = uniform_double(r.v[2], r.v[3]);
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
        o[i] = static_cast<scalar_t>(mean + std * z);
      }
    });
  });
}

void randint(int64_t* out, int64_t n, uint64_t seed, uint64_t offset, int64_t low, int64_t high) {
  const uint64_t range = static_cast<uint64_t>(high - low);
  parallel_for(0, n, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Philox4 r = philox4x32(seed, offset + i, 0);
      const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
      out[i] = low + static_cast<int64_t>(bits % range);
    }
  });
}

const RandomKernels random_kernels = {&uniform, &normal, &randint};

}  // namespace ember::kernels::cpu
