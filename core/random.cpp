#include "core/random.h"

#include "kernels/base/error.h"
#include "core/tensor.h"

namespace ember {

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Tensor get_rng_state() {
  const Generator& g = default_generator();
  Tensor state = empty({16}, TensorOptions(kUInt8).device(Device::cpu()));
  uint8_t* p = state.data_ptr<uint8_t>();
  for (int i = 0; i < 8; ++i) {
    p[i] = static_cast<uint8_t>(g.seed() >> (8 * i));
    p[8 + i] = static_cast<uint8_t>(g.offset() >> (8 * i));
  }
  return state;
}

void set_rng_state(const Tensor& state) {
  EMBER_CHECK(state.defined() && state.dtype() == kUInt8 && state.shape() == Shape{16},
              "set_rng_state: expected the uint8 [16] tensor get_rng_state() returns, got ",
              state.defined() ? std::string(dtype_name(state.dtype())) + " " +
                                    shape_str(state.shape())
                              : std::string("an undefined tensor"));
  const Tensor s = state.cpu().contiguous();
  const uint8_t* p = s.data_ptr<uint8_t>();
  uint64_t seed = 0, offset = 0;
  for (int i = 7; i >= 0; --i) {
    seed = (seed << 8) | p[i];
    offset = (offset << 8) | p[8 + i];
  }
  default_generator().set_state(seed, offset);
}

}  // namespace ember
