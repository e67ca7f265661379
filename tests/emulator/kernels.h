// tests/emulator/kernels.h — CUDA kernels that test the emulator itself (emulation build only):
// what the CUDA language promises (barriers, shuffles, votes, atomics, launch limits) and one
// kernel per planted bug that each checker must report. Launchers take device pointers and
// return the launch's cudaError_t (as cudaGetLastError gives it) as an int, so that this header
// needs no CUDA header.
#pragma once

#include <cstdint>

namespace ember_test {

// ---- the language ----------------------------------------------------------------------------------
// out[i] for 64 threads (2 warps): shfl_down(16) of the lane id + 100 * warp, ... see kernels.cu.
int launch_shuffles(int* out, int width);            // out: 4 * 64 ints (index, up, down, xor)
int launch_votes(unsigned* out);                      // out: 3 * 64 (ballot, any, all)
int launch_block_reduce(int* out, int threads);      // out[0] = sum of 0..threads-1 via smem
int launch_syncthreads_count(int* out);               // out: count, and, or over 256 threads
int launch_atomics(float* fsum, int* isum, unsigned long long* max, int blocks);
int launch_partial_warp(int* out, int threads);       // lanes of a partial last warp shuffle
int launch_dynamic_shared(int* out, int threads);     // reverses via dynamic shared memory
// 64-thread blocks with a known count of global and shared accesses per thread (see kernels.cu);
// v4 and out4 hold 4 floats per thread, a, b, out one; *counter counts the threads.
int launch_traffic(const float* a, const float* b, const void* v4, float* out, void* out4,
                   int* counter, int blocks);
int launch_atomic_places(int* out, int threads);  // atomics on dynamic shared + __device__ int
int launch_with_config(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared_bytes);  // an empty kernel
int launch_fill(float* out, int64_t n, float value);  // grid-stride fill, kBlock threads
int launch_rounding(float* f, double* d, unsigned* u);  // the _rn intrinsics, see kernels.cu
int launch_contraction(const float* in, float* out);    // in: a, b, c; out: 3 floats (kernels.cu)
bool kernels_contracted();         // compiled with nvcc-like contraction (EMBER_EMULATOR_FMA)
int symbol_roundtrip(int* host4);  // host4 -> __device__ int[4] -> x * 10 + t -> host4

// ---- planted bugs: each launch must fail with a report naming kernel, block, thread, address ----
int plant_out_of_bounds(float* out, int64_t n);   // writes out[n] too (one past the end)
int plant_read(const float* in, float* out);      // reads in[0] (freed / cached / host memory)
int plant_read_at(const float* in, int64_t i, float* out);  // reads in[i]
int plant_misaligned(const float* in, float* out);  // a float4 load at in + 1
int plant_shared_race(int* out);
// 64 threads, 64 ints of dynamic shared memory; bug 0 none, 1 a race, 2 a read of unwritten
// words, 3 a write one int past the end (see kernels.cu).
int launch_dynamic_shared_bug(int* out, int bug);  // thread t reads what t - 1 wrote, no barrier
int plant_divergent_barrier(int* out);            // __syncthreads only in threads < 16
int plant_exited_lane(int* out);                  // a full-mask shuffle after lanes returned

// ---- planted bugs of the grid cap (EMBER_EMULATOR_GRID_CAP) ----------------------------------
// out[s] = sum of in[s * 64 .. s * 64 + 63], one 64-thread block per segment (grid_for), blocks
// striding over the segments. trailing_barrier = false plants a missing barrier that only matters
// when a block takes a second pass: shared memory rewritten while thread 0 still reads it.
int launch_pass_reuse(const int* in, int* out, int64_t segments, bool trailing_barrier);
// out[b] = b + 1 for b < n: one block per item without a loop, but the grid from grid_for(n, 1).
int plant_exact_grid_for(int* out, int64_t n);

// ---- the asynchronous mode (EMBER_EMULATOR_ASYNC; tests/emulator/async.cpp) -------------------
// Queue a kernel on `on_stream` (a cudaStream_t; nullptr: the legacy stream) and return the
// launch's own error at once, without waiting for the kernel.
int queue_fill(float* out, int64_t n, float value, void* on_stream);  // out[i] = value
int queue_scale(const float* in, float* out, int64_t n, float k, void* on_stream);  // k * in[i]
int queue_out_of_bounds(float* out, int64_t n);  // writes out[n] too, on the legacy stream

}  // namespace ember_test
