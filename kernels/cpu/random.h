// ember/kernels/cpu/random.h — filling buffers from the Philox stream (see kernels/base/philox.h).
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cpu {

// out[i] for i in [0, n): element i uses counter offset + i of the stream keyed by `seed`.
void uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double low, double high);
void normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std);
void randint(int64_t* out, int64_t n, uint64_t seed, uint64_t offset, int64_t low, int64_t high);

}  // namespace ember::kernels::cpu
