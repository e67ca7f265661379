// tests/emulator/kernels_schedule.h — the kernels of tests/emulator/schedule.cpp (emulation build
// only): randomized schedules (EMBER_EMULATOR_SCHEDULE) and globalrace, the checker of races on
// device memory. Launchers take device pointers and return the launch's cudaError_t as an int.
#pragma once

namespace ember_test {

// One block of `threads` threads. Each thread takes a slot with atomicAdd(top, 1) and writes
// values[t] there (list: `threads` ints, *top zero before the launch); thread 0 then reads slot 0
// back as "its own" value: out[0] = list[0] * 10. Planted bug (a): that holds only when thread 0
// comes first, which the fixed schedule always makes true. With threads = 64 and globalrace off,
// list is the order the threads arrived in.
int launch_first_comer(const int* values, int* list, int* top, int* out, int threads);

// Planted bug (b), a race within a block: x[i] = x[i + 1] in place, one thread per element, one
// block of n threads (n <= 1024), no barrier between thread i's read and thread i + 1's write.
int plant_shift_in_place(float* x, int n);

// `blocks` blocks of 64 threads; block b sums in[b * 64 .. b * 64 + 63] in shared memory, and
// thread 0 adds the sum to *total: with atomicAdd when `atomic`, else with a plain
// read-modify-write, planted bug (c), a race between blocks (and a lost update on a GPU).
int launch_block_sums(const float* in, float* total, int blocks, bool atomic);

// No race, by the rules globalrace applies (each returns cudaSuccess under every checker):
// every thread of `blocks` blocks of 256 adds 1 to hist[t % 8] with atomicAdd (d); in each block,
// every thread adds 1 to counts[b] with atomicAdd, then after a __syncthreads thread 0 reads it
// (out[b] = counts[b]); lane 0 of each warp writes a word that lane 1 reads after a __syncwarp;
// a grid-stride loop in place (x[i] = 2 * x[i] + 1) over n elements.
int launch_atomic_histogram(int* hist, int blocks);
int launch_count_then_read(int* counts, int* out, int blocks);
int launch_warp_handoff(int* words, int* out, int warps);
int launch_grid_stride_in_place(float* x, long long n, int blocks);

// 64 threads of one block store into out[0]: 7 each (no race in effect: no report), or each its
// own index (a write-after-write race: a report, once the second, different value is stored).
int launch_same_word(int* out, bool same_value);

}  // namespace ember_test
