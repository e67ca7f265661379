// tests/emulator/kernels_schedule.cu — the kernels of tests/emulator/schedule.cpp (see
// kernels_schedule.h): planted order-dependent bugs and races on device memory, and the patterns
// ember's kernels use that must not be reported. Compiled like kernels/cuda/*.cu in the emulation
// build, instrumentation included.
#include "tests/emulator/kernels_schedule.h"

#include <cuda_runtime.h>

#include "kernels/cuda/launch.cuh"
#include "kernels/emulator/emulator.h"

namespace ember_test {

namespace {

using ember::kernels::cuda::stream;

// The launch's error; in the asynchronous mode, after waiting for the kernel (as kernels.cu).
int last_error() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && ember::emu::async_streams()) {
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) ember::emu::clear_device_errors();
  }
  return static_cast<int>(e);
}

// ---- planted bugs ------------------------------------------------------------------------------

// (a) "Thread 0 arrives first." Each thread pushes its value onto a list, taking its slot with
// atomicAdd — no race there. Then thread 0 reads slot 0 as if it were its own entry. Under the
// fixed schedule thread 0 always takes slot 0, reads back its own write, and nothing is wrong.
// When another thread gets there first, thread 0 reads a word that thread wrote, with nothing
// ordering the two: out[0] is someone else's value, and globalrace reports the pair.
__global__ void first_comer_kernel(const int* values, int* list, int* top, int* out) {
  const int t = static_cast<int>(threadIdx.x);
  const int slot = atomicAdd(top, 1);
  list[slot] = values[t];
  if (t == 0) out[0] = list[0] * 10;
}

// (b) Shift left by one, in place: thread i reads x[i + 1], which thread i + 1 overwrites. With
// no barrier between them a GPU may run either first.
__global__ void shift_in_place_kernel(float* x, int n) {
  const int i = static_cast<int>(threadIdx.x);
  if (i + 1 < n) x[i] = x[i + 1];
}

// (c) Per-block sums added to one total. The tree sum in shared memory is correct; the last step
// is not when `atomic` is false: `*total += sum` is a load and a store, and two blocks that do it
// at the same time lose one of the sums on a GPU.
__global__ void block_sums_kernel(const float* in, float* total, bool atomic) {
  __shared__ float s[64];
  const int t = static_cast<int>(threadIdx.x);
  s[t] = in[blockIdx.x * 64 + t];
  __syncthreads();
  for (int half = 32; half > 0; half /= 2) {
    if (t < half) s[t] += s[t + half];
    __syncthreads();
  }
  if (t != 0) return;
  if (atomic) {
    atomicAdd(total, s[0]);
  } else {
    *total += s[0];
  }
}

// ---- no race -------------------------------------------------------------------------------------

// (d) Atomics only, from every thread of every block: concurrent atomics are what atomics are for.
__global__ void atomic_histogram_kernel(int* hist) { atomicAdd(&hist[threadIdx.x % 8], 1); }

// Atomics from every thread of a block, then a barrier, then a plain read: the barrier orders it.
__global__ void count_then_read_kernel(int* counts, int* out) {
  atomicAdd(&counts[blockIdx.x], 1);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = counts[blockIdx.x];
}

// Lane 0 of each warp writes a word, lane 1 reads it after a __syncwarp: the warp is ordered.
__global__ void warp_handoff_kernel(int* words, int* out) {
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  if (lane == 0) words[warp] = 100 + warp;
  __syncwarp();
  if (lane == 1) out[warp] = words[warp];
}

// Each element read and written by the one thread whose turn it is in a grid-stride loop.
__global__ void grid_stride_in_place_kernel(float* x, long long n) {
  for (const int64_t i : ember::kernels::cuda::grid_stride(n)) x[i] = 2.0f * x[i] + 1.0f;
}

}  // namespace

int launch_first_comer(const int* values, int* list, int* top, int* out, int threads) {
  EMBER_LAUNCH(1, threads, 0, stream(), first_comer_kernel)(values, list, top, out);
  return last_error();
}
int plant_shift_in_place(float* x, int n) {
  EMBER_LAUNCH(1, n, 0, stream(), shift_in_place_kernel)(x, n);
  return last_error();
}
int launch_block_sums(const float* in, float* total, int blocks, bool atomic) {
  EMBER_LAUNCH(blocks, 64, 0, stream(), block_sums_kernel)(in, total, atomic);
  return last_error();
}
int launch_atomic_histogram(int* hist, int blocks) {
  EMBER_LAUNCH(blocks, 256, 0, stream(), atomic_histogram_kernel)(hist);
  return last_error();
}
int launch_count_then_read(int* counts, int* out, int blocks) {
  EMBER_LAUNCH(blocks, 128, 0, stream(), count_then_read_kernel)(counts, out);
  return last_error();
}
int launch_warp_handoff(int* words, int* out, int warps) {
  EMBER_LAUNCH(1, warps * 32, 0, stream(), warp_handoff_kernel)(words, out);
  return last_error();
}
int launch_grid_stride_in_place(float* x, long long n, int blocks) {
  EMBER_LAUNCH(blocks, 64, 0, stream(), grid_stride_in_place_kernel)(x, n);
  return last_error();
}

// Every thread of one block stores into out[0]: the same value (what fill_ on an expanded view
// does, a race with no effect) or each its own index (a write-after-write race: the value left
// depends on the order).
namespace {
__global__ void same_word_kernel(int* out, bool same_value) {
  out[0] = same_value ? 7 : static_cast<int>(threadIdx.x);
}
}  // namespace

int launch_same_word(int* out, bool same_value) {
  EMBER_LAUNCH(1, 64, 0, stream(), same_word_kernel)(out, same_value);
  return last_error();
}

}  // namespace ember_test
