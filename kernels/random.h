// ember/kernels/random.h — the random family: filling buffers from the Philox stream (see
// kernels/base/philox.h). Element i uses counter offset + i of the stream keyed by `seed` on
// either device, so one seed gives the same numbers on the CPU and the GPU.
//   CPU:  kernels/cpu/random.cpp.   CUDA: kernels/cuda/random.cu.
#pragma once

#include <cstdint>
#include "kernels/base/dtype.h"

namespace ember::kernels {

struct RandomKernels {
  void (*uniform)(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double low,
                  double high);
  void (*normal)(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean,
                 double std);
  void (*randint)(int64_t* out, int64_t n, uint64_t seed, uint64_t offset, int64_t low,
                  int64_t high);
};

namespace cpu {
extern const RandomKernels random_kernels;
}
namespace cuda {
extern const RandomKernels random_kernels;
}

}  // namespace ember::kernels
