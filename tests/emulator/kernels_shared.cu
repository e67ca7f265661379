// tests/emulator/kernels_shared.cu — the kernels of tests/emulator/shared_memory.cpp (see
// kernels_shared.h): overruns of a __shared__ array into the next one, and of a local array,
// which memcheck must stop. Compiled like kernels/cuda/*.cu in the emulation build.
#include "tests/emulator/kernels_shared.h"

#include <cuda_runtime.h>

#include "kernels/cuda/launch.cuh"
#include "kernels/emulator/emulator.h"

namespace ember_test {

namespace {

using ember::kernels::cuda::stream;

// The launch's error; in the asynchronous mode, once the kernel has run (as in kernels.cu).
int last_error() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && ember::emu::async_streams()) {
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) ember::emu::clear_device_errors();
  }
  return static_cast<int>(e);
}

// Through a pointer, as a kernel hands a tile to a helper: the compiler no longer knows the
// array's size, so only the emulator's redzones can see an overrun.
__device__ void store(float* tile, int i, float v) { tile[i] = v; }
__device__ float load(const float* tile, int i) { return tile[i]; }
__device__ void store_ints(int* p, int n) {
  for (int i = 0; i < n; ++i) p[i] = i;
}

// Each thread stages t in `first` and 100 + t in `second`; after the barrier thread t reads
// second[t] and the value its neighbour staged. On a GPU first[32] is second[0] or whatever else
// the compiler put next: the kernel would run and compute garbage.
__global__ void two_tiles_kernel(float* out, ArrayBug bug, int fill) {
  __shared__ float first[32];
  __shared__ float second[32];
  const int t = static_cast<int>(threadIdx.x);
  if (bug == ArrayBug::SharedIndexPastEnd) {
    first[t] = static_cast<float>(t);  // thread 32: first[32]
  } else if (bug == ArrayBug::SharedAtomicPastEnd) {
    if (t < 32) first[t] = 0.0f;
    __syncthreads();
    atomicAdd(first + t, static_cast<float>(t));  // thread 32: one past the end
  } else {
    store(first, t, static_cast<float>(t));  // thread 32 (SharedWritePastEnd): first[32]
  }
  if (t < 32) second[t] = 100.0f + static_cast<float>(t);
  __syncthreads();
  if (t >= 32) return;
  const int next = bug == ArrayBug::SharedReadPastEnd ? t + 1 : (t + 1) % 32;  // 31 reads [32]
  float local_sum = first[t] + second[t] + load(second, next) - static_cast<float>(next % 32);

  // A local array of 8 ints, which thread 0 fills up to `fill` (8 without a bug): -fsanitize=bounds
  // sees the overrun of the indexed loop, the stack protector the one through a pointer (when the
  // kernel returns).
  int local[8];
  const int n = t == 0 ? fill : 8;
  if (bug == ArrayBug::LocalIndexPastEnd) {
    for (int i = 0; i < n; ++i) local[i] = i;  // fill 9: local[8] is one past the end
  } else {
    store_ints(local, n);  // LocalPointerPastEnd: fill 12, 4 ints past the end
  }
  local_sum += static_cast<float>(local[t % 8] - t % 8);
  out[t] = local_sum;
}

}  // namespace

int launch_two_tiles(float* out, ArrayBug bug) {
  const bool extra = bug == ArrayBug::SharedWritePastEnd || bug == ArrayBug::SharedIndexPastEnd ||
                     bug == ArrayBug::SharedAtomicPastEnd;
  const int fill = bug == ArrayBug::LocalIndexPastEnd     ? 9
                   : bug == ArrayBug::LocalPointerPastEnd ? 12
                                                          : 8;
  EMBER_LAUNCH(1, extra ? 33 : 32, 0, stream(), two_tiles_kernel)(out, bug, fill);
  return last_error();
}

}  // namespace ember_test
