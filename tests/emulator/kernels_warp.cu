// tests/emulator/kernels_warp.cu — the kernels of tests/emulator/warp.cpp (see kernels_warp.h):
// warp and barrier details as Volta and later GPUs define them (independent thread scheduling),
// in legal patterns that must run clean and planted bugs that must be reported. Compiled like
// kernels/cuda/*.cu in the emulation build, instrumentation included.
#include "tests/emulator/kernels_warp.h"

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

// ---- barriers: the k-th __syncthreads each thread reaches is the k-th barrier -----------------

// Every thread puts v in its slot of the block's tile, and waits until all have: a helper whose
// barrier is the same code wherever it is called from, but not the same call.
__device__ __forceinline__ void publish(int* tile, int t, int v) {
  tile[t] = v;
  __syncthreads();
}

// Legal: the helper in a loop (one call, every pass), then from a second call after the loop.
// Every barrier instance finds all threads at one call.
__global__ void barrier_rounds_kernel(int* out, int rounds) {
  __shared__ int tile[256];
  const int t = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  int total = 0;
  for (int r = 0; r < rounds; ++r) {
    publish(tile, t, t + r);
    if (t == 0)
      for (int i = 0; i < n; ++i) total += tile[i];
    __syncthreads();  // thread 0 has read the tile before the next pass overwrites it
  }
  publish(tile, t, 1);
  if (t == 0) {
    for (int i = 0; i < n; ++i) total += tile[i];
    *out = total;
  }
}

// Planted: warp 0 calls the helper on one side of the `if`, warp 1 on the other. The barrier is
// one line of code, but the two warps reach it through two different calls: at their first
// barrier the threads of the block are at two different places.
__global__ void barrier_two_call_sites_kernel(int* out) {
  __shared__ int tile[64];
  const int t = static_cast<int>(threadIdx.x);
  if (t < 32) {
    publish(tile, t, t);
    out[t] = tile[t + 32];
  } else {
    publish(tile, t, -t);  // the bug: a barrier inside a branch the block does not take as one
    out[t] = 2 * tile[t - 32];
  }
}

// Planted: warp 0 takes one pass more than warp 1. Their third barriers are two different
// calls: the loop's first one for warp 0, the one after the loop for warp 1.
__global__ void barrier_extra_pass_kernel(int* out, int rounds) {
  __shared__ int tile[64];
  const int t = static_cast<int>(threadIdx.x);
  const int passes = t < 32 ? rounds + 1 : rounds;  // the bug: the trip count differs by warp
  int acc = 0;
  for (int r = 0; r < passes; ++r) {
    tile[t] = r + t;
    __syncthreads();
    acc += tile[t ^ 32];
    __syncthreads();
  }
  __syncthreads();
  out[t] = acc;
}

// ---- __activemask(): the lanes converged with the caller -----------------------------------------

// The lanes of the caller's warp that exist (the last warp of a block may be partial).
__device__ unsigned warp_lanes() {
  const unsigned first = threadIdx.x / 32 * 32;
  const unsigned lanes = blockDim.x - first;
  return lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

// Legal: each side of the branch sees its own lanes; after a __syncwarp, the whole warp.
__global__ void activemask_branches_kernel(unsigned* masks, int split) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32;
  if (lane < split) {
    masks[t] = __activemask();
  } else {
    const unsigned others = __activemask();
    masks[t] = others;
  }
  __syncwarp(warp_lanes());
  masks[64 + t] = __activemask();
}

// Legal: lane l takes l % 4 + 1 passes; each pass sees the lanes still looping.
__global__ void activemask_loop_kernel(unsigned* masks) {
  const int lane = static_cast<int>(threadIdx.x);
  for (int pass = 0; pass <= lane % 4; ++pass) masks[pass * 32 + lane] = __activemask();
}

// Legal: warp-aggregated append. The converged lanes of a branch elect their lowest lane, which
// reserves room for all of them with one atomicAdd and shares the base with a shuffle over the
// same mask. Correct for any set of lanes __activemask() returns, as it must be.
__global__ void aggregated_append_kernel(const int* keep, int* slots, int* count, int n) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (t < n && keep[t] != 0) {
    const unsigned active = __activemask();
    const int leader = __ffs(static_cast<int>(active)) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(active));
    base = __shfl_sync(active, base, leader);
    slots[base + __popc(active & ((1u << lane) - 1u))] = t;
  }
}

// Planted: a warp sum over the lanes of a branch, written as if the branch held the whole warp.
// __activemask() names only the lanes of this side; the xor offsets 16 .. 1 reach the others.
__global__ void activemask_sum_kernel(const int* in, int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const int mine = in[lane];
  if (mine > 0) {
    const unsigned mask = __activemask();
    int v = mine;
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(mask, v, d);  // the bug: d = 16
    out[lane] = v;
  }
}

// ---- several pending collectives: disjoint masks in divergent branches -------------------------

// Legal: each half of the warp works with its own mask, at the same time.
__global__ void disjoint_collectives_kernel(const int* in, int* out) {
  const int lane = static_cast<int>(threadIdx.x);
  const int v = in[lane];
  if (lane < 16) {
    const int third = __shfl_sync(0x0000ffffu, v, 3);
    int sum = v;
    for (int d = 8; d > 0; d /= 2) sum += __shfl_xor_sync(0x0000ffffu, sum, d);
    const unsigned odd = __ballot_sync(0x0000ffffu, v & 1);
    out[lane] = third;
    out[32 + lane] = sum + static_cast<int>(odd);
  } else {
    const int next = __shfl_down_sync(0xffff0000u, v, 1);
    const int any_big = __any_sync(0xffff0000u, v > 100);
    __syncwarp(0xffff0000u);
    out[lane] = next;
    out[32 + lane] = any_big;
  }
}

// Planted: the low half's mask has 17 bits. Lane 16, on the other side, is named by both masks
// and takes part in its own half's shuffle only (variant 0); with variant 1 the high half's mask
// names lane 15 as well, and the two shuffles wait for each other.
__global__ void overlapping_masks_kernel(int* out, int variant) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane;
  if (lane < 16) {
    v += __shfl_xor_sync(0x0001ffffu, v, 1);  // the bug: 0x0001ffff, not 0x0000ffff
  } else {
    v += __shfl_xor_sync(variant == 0 ? 0xffff0000u : 0xffff8000u, v, 1);
  }
  out[lane] = v;
}

// ---- __syncwarp(mask) orders the lanes its mask names ------------------------------------------

// Two steps of a neighbour exchange within each half-warp, in shared and in device memory. A
// lane's words must be written before its neighbour reads them, and read before it overwrites
// them in the next step: each half separates the steps with a __syncwarp of its own lanes.
__global__ void half_warp_exchange_kernel(int* words, int* out, int variant) {
  __shared__ int tile[32];
  const int lane = static_cast<int>(threadIdx.x);
  const bool low = lane < 16;
  const unsigned half = low ? 0x0000ffffu : 0xffff0000u;
  const int next = (lane & 16) | ((lane + 1) & 15);  // the neighbour within the half-warp
  tile[lane] = 0;
  words[lane] = 0;
  __syncwarp();  // every word starts written, and ordered before what follows
  int got = 0;
  for (int step = 1; step <= 2; ++step) {
    tile[lane] = 100 * step + lane;
    words[lane] = 1000 * step + lane;
    if (!low || variant == 0) __syncwarp(half);
    else if (variant == 2 && lane != 15) __syncwarp(0x00007fffu);  // planted: lane 15 left out
    // (variant 1, planted: the low half has no __syncwarp at all)
    got += tile[next] + words[next];
    if (!low || variant == 0) __syncwarp(half);
    else if (variant == 2 && lane != 15) __syncwarp(0x00007fffu);
  }
  out[lane] = got;
}

// Legal: the order passes along a chain of partial __syncwarps, 1 -> 0 -> 16.
__global__ void syncwarp_chain_kernel(int* out) {
  __shared__ int word;
  const int lane = static_cast<int>(threadIdx.x);
  if (lane == 1) {
    word = 42;
    __syncwarp(0x3u);
  } else if (lane == 0) {
    __syncwarp(0x3u);
    __syncwarp(0x10001u);
  } else if (lane == 16) {
    __syncwarp(0x10001u);
    out[0] = word;
  }
}

}  // namespace

int launch_barrier_rounds(int* out, int threads, int rounds) {
  EMBER_LAUNCH(1, threads, 0, stream(), barrier_rounds_kernel)(out, rounds);
  return last_error();
}
int plant_barrier_two_call_sites(int* out) {
  EMBER_LAUNCH(1, 64, 0, stream(), barrier_two_call_sites_kernel)(out);
  return last_error();
}
int plant_barrier_extra_pass(int* out, int rounds) {
  EMBER_LAUNCH(1, 64, 0, stream(), barrier_extra_pass_kernel)(out, rounds);
  return last_error();
}
int launch_activemask_branches(unsigned* masks, int threads, int split) {
  EMBER_LAUNCH(1, threads, 0, stream(), activemask_branches_kernel)(masks, split);
  return last_error();
}
int launch_activemask_loop(unsigned* masks) {
  EMBER_LAUNCH(1, 32, 0, stream(), activemask_loop_kernel)(masks);
  return last_error();
}
int launch_aggregated_append(const int* keep, int* slots, int* count, int threads) {
  EMBER_LAUNCH((threads + 63) / 64, 64, 0, stream(), aggregated_append_kernel)
  (keep, slots, count, threads);
  return last_error();
}
int plant_activemask_sum(const int* in, int* out) {
  EMBER_LAUNCH(1, 32, 0, stream(), activemask_sum_kernel)(in, out);
  return last_error();
}
int launch_disjoint_collectives(const int* in, int* out) {
  EMBER_LAUNCH(1, 32, 0, stream(), disjoint_collectives_kernel)(in, out);
  return last_error();
}
int plant_overlapping_masks(int* out, int variant) {
  EMBER_LAUNCH(1, 32, 0, stream(), overlapping_masks_kernel)(out, variant);
  return last_error();
}
int launch_half_warp_exchange(int* words, int* out, int variant) {
  EMBER_LAUNCH(1, 32, 0, stream(), half_warp_exchange_kernel)(words, out, variant);
  return last_error();
}
int launch_syncwarp_chain(int* out) {
  EMBER_LAUNCH(1, 32, 0, stream(), syncwarp_chain_kernel)(out);
  return last_error();
}

}  // namespace ember_test
