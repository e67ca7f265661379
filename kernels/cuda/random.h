// ember/kernels/cuda/random.h — filling device buffers from the Philox stream. Element i uses
// the same counter as on the CPU (kernels/cpu/random.cpp), so one seed gives the same numbers
// on both devices. Implemented in kernels/cuda/random.cu.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"

namespace ember::kernels::cuda {

void uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double low, double high);
void normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std);
void randint(int64_t* out, int64_t n, uint64_t seed, uint64_t offset, int64_t low, int64_t high);

}  // namespace ember::kernels::cuda
