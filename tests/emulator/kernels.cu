// tests/emulator/kernels.cu — the kernels of tests/emulator/emulator.cpp (see kernels.h): compiled
// exactly like kernels/cuda/*.cu in the emulation build, instrumentation included.
#include "tests/emulator/kernels.h"

#include <cuda_runtime.h>

#include "kernels/cuda/launch.cuh"
#include "kernels/emulator/emulator.h"

namespace ember_test {

namespace {

using ember::kernels::cuda::kBlock;
using ember::kernels::cuda::stream;

// The launch's error. In the asynchronous mode (EMBER_EMULATOR_ASYNC) a kernel's fault shows only
// when the work has run, and it is sticky; each of these launchers checks one launch, so it
// waits for it and takes the error back (the emulator's stand-in for a fresh process).
int last_error() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && ember::emu::async_streams()) {
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) ember::emu::clear_device_errors();
  }
  return static_cast<int>(e);
}

// ---- the language ----------------------------------------------------------------------------------

// 64 threads, two warps; lane l of warp w holds l + 100 * w.
__global__ void shuffles_kernel(int* out, int width) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const int v = lane + 100 * warp;
  out[t] = __shfl_sync(0xffffffffu, v, 5, width);
  out[64 + t] = __shfl_up_sync(0xffffffffu, v, 3, width);
  out[128 + t] = __shfl_down_sync(0xffffffffu, v, 3, width);
  out[192 + t] = __shfl_xor_sync(0xffffffffu, v, 6, width);
}

// Warp 0 votes lane % 3 == 0, warp 1 votes true everywhere.
__global__ void votes_kernel(unsigned* out) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const int p = warp == 0 ? (lane % 3 == 0) : 1;
  out[t] = __ballot_sync(0xffffffffu, p);
  out[64 + t] = static_cast<unsigned>(__any_sync(0xffffffffu, p));
  out[128 + t] = static_cast<unsigned>(__all_sync(0xffffffffu, p));
}

// A shared-memory tree sum of the thread indices, for any block size.
__global__ void block_reduce_kernel(int* out) {
  __shared__ int s[1024];
  const int t = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  s[t] = t;
  __syncthreads();
  for (int step = 1; step < n; step *= 2) {
    if (t % (2 * step) == 0 && t + step < n) s[t] += s[t + step];
    __syncthreads();
  }
  if (t == 0) out[0] = s[0];
}

__global__ void syncthreads_count_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  const int count = __syncthreads_count(t % 3 == 0);
  const int all = __syncthreads_and(t < 256);
  const int any = __syncthreads_or(t == 255);
  if (t == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = any;
  }
}

__global__ void atomics_kernel(float* fsum, int* isum, unsigned long long* max) {
  const unsigned long long id = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(fsum, 1.0f);
  atomicAdd(isum, 1);
  atomicMax(max, id);
}

// The last warp of a 40-thread block has 8 lanes: a shuffle among exactly those (in segments of
// 8 lanes, so that no lane reads one outside the mask).
__global__ void partial_warp_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  const unsigned mask = __activemask();
  out[t] = __shfl_down_sync(mask, t, 1, 8);
}

__global__ void dynamic_shared_kernel(int* out) {
  EMBER_DYNAMIC_SHARED(int, buf);
  const int t = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  buf[t] = t;
  __syncthreads();
  out[t] = buf[n - 1 - t];
}

__global__ void empty_kernel() {}

__global__ void fill_kernel(float* out, int64_t n, float value) {
  // A grid-stride loop (kernels/cuda/launch.cuh): any grid covers any n, capped or not.
  for (const int64_t i : ember::kernels::cuda::grid_stride(n)) out[i] = value;
}

__global__ void rounding_kernel(float* f, double* d, unsigned* u) {
  f[0] = __fmul_rn(f[1], f[2]);
  f[3] = __fmaf_rn(f[1], f[2], f[4]);
  f[5] = __fsqrt_rn(f[1]);
  d[0] = __dmul_rn(d[1], d[2]);
  d[3] = __fma_rn(d[1], d[2], d[4]);
  d[5] = __ddiv_rn(d[1], d[2]);
  u[0] = __umulhi(u[1], u[2]);
}

// Contraction (docs/emulator.md, "GPU arithmetic"): out = a * b + c as written, which nvcc
// fuses into one fma (and the emulation build too, with EMBER_EMULATOR_FMA); then the same sum
// with the product, or the sum, an _rn intrinsic, which is never fused. Three kernels, so that
// the host compiler sees each product used once (GCC fuses a product only when every use of it
// is an addition: one product shared by the three sums would stay unfused).
__global__ void contraction_plain_kernel(const float* in, float* out) {
  out[0] = in[0] * in[1] + in[2];
}
__global__ void contraction_mul_rn_kernel(const float* in, float* out) {
  out[1] = __fmul_rn(in[0], in[1]) + in[2];
}
__global__ void contraction_add_rn_kernel(const float* in, float* out) {
  out[2] = __fadd_rn(in[0] * in[1], in[2]);
}

// A __device__ variable: one per program in the emulator (see docs/emulator.md).
__device__ int g_symbol[4];

__global__ void symbol_kernel() {
  const int t = static_cast<int>(threadIdx.x);
  g_symbol[t] = g_symbol[t] * 10 + t;
}

// ---- planted bugs --------------------------------------------------------------------------------

// Writes out[0..n], one element past the end: thread n % 256 of the block makes the bad write.
__global__ void out_of_bounds_kernel(float* out, int64_t n) {
  for (int64_t i = threadIdx.x; i <= n; i += blockDim.x) out[i] = 1.0f;
}

__global__ void read_kernel(const float* in, int64_t i, float* out) { out[0] = in[i]; }

// A float4 copied from in + 1: 4-byte aligned, not 16-byte aligned. (The whole vector moves, so
// the host compiler keeps it one 16-byte load, as nvcc keeps it one ld.global.v4.)
__global__ void misaligned_kernel(const float* in, float* out) {
  *reinterpret_cast<float4*>(out) = *reinterpret_cast<const float4*>(in + 1);
}

// Thread t writes s[t] and reads s[t - 1] with no barrier between: a read-after-write hazard.
__global__ void shared_race_kernel(int* out) {
  __shared__ int s[256];
  const int t = static_cast<int>(threadIdx.x);
  s[t] = t;
  out[t] = s[(t + 255) % 256];
}

// Only threads 0..15 reach the barrier; 16..31 return.
__global__ void divergent_barrier_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  if (t < 16) __syncthreads();
  out[t] = t;
}

// Lanes 16..31 return, then lanes 0..15 shuffle with a full mask.
__global__ void exited_lane_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  if (t >= 16) return;
  out[t] = __shfl_down_sync(0xffffffffu, t, 1);
}

// ---- the grid cap (EMBER_EMULATOR_GRID_CAP) ---------------------------------------------------

// One block per segment of kSegment ints, the blocks striding over the segments: the block
// stages its segment in shared memory, and thread 0 sums it (out[s]). With `trailing_barrier`
// false the barrier that must end each pass is missing: on a block's second pass its threads
// overwrite `tile` while thread 0 may still be reading the previous segment from it. That only
// happens when a block takes a second pass, i.e. when the grid is smaller than the segments.
constexpr int kSegment = 64;
__global__ void pass_reuse_kernel(const int* in, int* out, int64_t segments,
                                  bool trailing_barrier) {
  __shared__ int tile[kSegment];
  const int t = static_cast<int>(threadIdx.x);
  for (const int64_t s : ember::kernels::cuda::grid_stride(blockIdx.x, segments, gridDim.x)) {
    tile[t] = in[s * kSegment + t];
    __syncthreads();
    if (t == 0) {
      int sum = 0;
      for (int k = 0; k < kSegment; ++k) sum += tile[k];
      out[s] = sum;
    }
    if (trailing_barrier) __syncthreads();  // tile is rewritten by the next pass
  }
}

// An exact-grid kernel (one block per item, no loop) that wrongly sizes its grid with grid_for:
// under EMBER_EMULATOR_GRID_CAP the blocks beyond the cap would never run.
__global__ void one_block_per_item_kernel(int* out, int64_t n) {
  if (blockIdx.x < n && threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(blockIdx.x) + 1;
}

}  // namespace

int launch_shuffles(int* out, int width) {
  EMBER_LAUNCH(1, 64, 0, stream(), shuffles_kernel)(out, width);
  return last_error();
}
int launch_votes(unsigned* out) {
  EMBER_LAUNCH(1, 64, 0, stream(), votes_kernel)(out);
  return last_error();
}
int launch_block_reduce(int* out, int threads) {
  EMBER_LAUNCH(1, threads, 0, stream(), block_reduce_kernel)(out);
  return last_error();
}
int launch_syncthreads_count(int* out) {
  EMBER_LAUNCH(1, 256, 0, stream(), syncthreads_count_kernel)(out);
  return last_error();
}
int launch_atomics(float* fsum, int* isum, unsigned long long* max, int blocks) {
  EMBER_LAUNCH(blocks, 256, 0, stream(), atomics_kernel)(fsum, isum, max);
  return last_error();
}
int launch_partial_warp(int* out, int threads) {
  EMBER_LAUNCH(1, threads, 0, stream(), partial_warp_kernel)(out);
  return last_error();
}
int launch_dynamic_shared(int* out, int threads) {
  EMBER_LAUNCH(1, threads, threads * sizeof(int), stream(), dynamic_shared_kernel)(out);
  return last_error();
}
int launch_with_config(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared_bytes) {
  EMBER_LAUNCH(dim3(gx, gy, gz), dim3(bx, by, bz), shared_bytes, stream(), empty_kernel)();
  return last_error();
}
int launch_fill(float* out, int64_t n, float value) {
  EMBER_LAUNCH(ember::kernels::cuda::grid_for(n), kBlock, 0, stream(), fill_kernel)(out, n, value);
  return last_error();
}
int launch_rounding(float* f, double* d, unsigned* u) {
  EMBER_LAUNCH(1, 1, 0, stream(), rounding_kernel)(f, d, u);
  return last_error();
}

int launch_contraction(const float* in, float* out) {
  EMBER_LAUNCH(1, 1, 0, stream(), contraction_plain_kernel)(in, out);
  EMBER_LAUNCH(1, 1, 0, stream(), contraction_mul_rn_kernel)(in, out);
  EMBER_LAUNCH(1, 1, 0, stream(), contraction_add_rn_kernel)(in, out);
  return last_error();
}
bool kernels_contracted() {
#ifdef EMBER_EMULATOR_CONTRACTS
  return true;
#else
  return false;
#endif
}

int symbol_roundtrip(int* host4) {
  cudaError_t e = cudaMemcpyToSymbol(g_symbol, host4, 4 * sizeof(int));
  if (e != cudaSuccess) return static_cast<int>(e);
  EMBER_LAUNCH(1, 4, 0, stream(), symbol_kernel)();
  e = cudaGetLastError();
  if (e != cudaSuccess) return static_cast<int>(e);
  void* address = nullptr;
  e = cudaGetSymbolAddress(&address, g_symbol);
  if (e != cudaSuccess || address != static_cast<void*>(g_symbol)) return static_cast<int>(cudaErrorInvalidSymbol);
  return static_cast<int>(cudaMemcpyFromSymbol(host4, g_symbol, 4 * sizeof(int)));
}

int plant_out_of_bounds(float* out, int64_t n) {
  EMBER_LAUNCH(1, 256, 0, stream(), out_of_bounds_kernel)(out, n);
  return last_error();
}
int plant_read(const float* in, float* out) { return plant_read_at(in, 0, out); }
int plant_read_at(const float* in, int64_t i, float* out) {
  EMBER_LAUNCH(1, 1, 0, stream(), read_kernel)(in, i, out);
  return last_error();
}
int plant_misaligned(const float* in, float* out) {
  EMBER_LAUNCH(1, 1, 0, stream(), misaligned_kernel)(in, out);
  return last_error();
}
int plant_shared_race(int* out) {
  EMBER_LAUNCH(1, 256, 0, stream(), shared_race_kernel)(out);
  return last_error();
}
int plant_divergent_barrier(int* out) {
  EMBER_LAUNCH(1, 32, 0, stream(), divergent_barrier_kernel)(out);
  return last_error();
}
int plant_exited_lane(int* out) {
  EMBER_LAUNCH(1, 32, 0, stream(), exited_lane_kernel)(out);
  return last_error();
}

int launch_pass_reuse(const int* in, int* out, int64_t segments, bool trailing_barrier) {
  const unsigned grid = ember::kernels::cuda::grid_for(segments, 1);  // EMBER_EMULATOR_GRID_CAP
  EMBER_LAUNCH(grid, kSegment, 0, stream(), pass_reuse_kernel)(in, out, segments, trailing_barrier);
  return last_error();
}
int plant_exact_grid_for(int* out, int64_t n) {
  const unsigned grid = ember::kernels::cuda::grid_for(n, 1);  // the bug: this grid may be capped
  EMBER_LAUNCH(grid, 32, 0, stream(), one_block_per_item_kernel)(out, n);
  return last_error();
}

// ---- access counting, atomics beyond global memory, dynamic shared memory checks ------------

// Known traffic per thread, for the access counters (emulator.h, set_access_counting):
//   global reads   v4[i] (one 16-byte access), a[i], b[i], and the atomic's read: 4, 28 bytes
//   global writes  out4[i] (16 bytes), out[i], and the atomic's write:            3, 24 bytes
//   shared writes  s[t] (static), d[t] (dynamic):                                 2, 8 bytes
//   shared reads   s[t], s[63 - t], d[63 - t]:                                    3, 12 bytes
// The float4 is copied whole, so the compiler keeps it one 16-byte load and store.
__global__ void traffic_kernel(const float* a, const float* b, const float4* v4, float* out,
                               float4* out4, int* counter) {
  __shared__ float s[64];
  EMBER_DYNAMIC_SHARED(float, d);
  const int t = static_cast<int>(threadIdx.x);
  const int i = static_cast<int>(blockIdx.x * blockDim.x) + t;
  out4[i] = v4[i];
  s[t] = a[i];
  d[t] = b[i];
  __syncthreads();
  out[i] = s[t] + s[63 - t] + d[63 - t];
  atomicAdd(counter, 1);
}

// Atomics on the places besides global memory that a GPU's atomics reach: dynamic shared memory
// and a __device__ variable. One block: out[0] and out[1] end as the block's thread count.
__device__ int g_atomic_counter;

__global__ void atomic_places_kernel(int* out) {
  EMBER_DYNAMIC_SHARED(int, d);
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    d[0] = 0;
    g_atomic_counter = 0;
  }
  __syncthreads();
  atomicAdd(&d[0], 1);
  atomicAdd(&g_atomic_counter, 1);
  __syncthreads();
  if (t == 0) {
    out[0] = d[0];
    out[1] = g_atomic_counter;
  }
}

// Dynamic shared memory (EMBER_DYNAMIC_SHARED), checked like static shared memory. `bug`:
//   0  none: thread t writes d[t], a barrier, then reads d[n - 1 - t]
//   1  no barrier: thread t > 0 reads d[t - 1], which thread t - 1 wrote (racecheck)
//   2  thread t reads d[t + n / 2] first, which no thread has written yet (initcheck)
//   3  thread n - 1 also writes d[n], one int past the launch's n ints (memcheck)
__global__ void dynamic_shared_bug_kernel(int* out, int bug) {
  EMBER_DYNAMIC_SHARED(int, d);
  const int t = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  if (bug == 2) out[t] = d[(t + n / 2) % n];
  d[t] = t;
  if (bug == 3 && t == n - 1) d[n] = t;
  if (bug == 1) {
    if (t > 0) out[t] = d[t - 1];
    return;
  }
  __syncthreads();
  out[t] = d[n - 1 - t];
}

int launch_traffic(const float* a, const float* b, const void* v4, float* out, void* out4,
                   int* counter, int blocks) {
  EMBER_LAUNCH(blocks, 64, 64 * sizeof(float), stream(), traffic_kernel)
  (a, b, static_cast<const float4*>(v4), out, static_cast<float4*>(out4), counter);
  return last_error();
}
int launch_atomic_places(int* out, int threads) {
  EMBER_LAUNCH(1, threads, sizeof(int), stream(), atomic_places_kernel)(out);
  return last_error();
}
int launch_dynamic_shared_bug(int* out, int bug) {
  EMBER_LAUNCH(1, 64, 64 * sizeof(int), stream(), dynamic_shared_bug_kernel)(out, bug);
  return last_error();
}

// ---- the asynchronous mode (tests/emulator/async.cpp) ----------------------------------------
// These return cudaGetLastError() right after the launch and never wait: the point is what
// happens while the work is still queued.

// out[i] = k * in[i], a thread per element, grid-stride.
__global__ void scale_kernel(const float* in, float* out, int64_t n, float k) {
  for (const int64_t i : ember::kernels::cuda::grid_stride(n)) out[i] = k * in[i];
}

int queue_fill(float* out, int64_t n, float value, void* on_stream) {
  EMBER_LAUNCH(ember::kernels::cuda::grid_for(n), kBlock, 0, static_cast<cudaStream_t>(on_stream),
               fill_kernel)
  (out, n, value);
  return static_cast<int>(cudaGetLastError());
}
int queue_scale(const float* in, float* out, int64_t n, float k, void* on_stream) {
  EMBER_LAUNCH(ember::kernels::cuda::grid_for(n), kBlock, 0, static_cast<cudaStream_t>(on_stream),
               scale_kernel)
  (in, out, n, k);
  return static_cast<int>(cudaGetLastError());
}
int queue_out_of_bounds(float* out, int64_t n) {
  EMBER_LAUNCH(1, 256, 0, stream(), out_of_bounds_kernel)(out, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace ember_test
