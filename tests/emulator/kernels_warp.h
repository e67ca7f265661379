// tests/emulator/kernels_warp.h — the kernels of tests/emulator/warp.cpp (emulation build only):
// barriers identified by their dynamic instance, __activemask() per branch, several pending
// collectives per warp, and __syncwarp(mask) ordering the lanes it names (docs/emulator.md,
// "Warps and barriers"). Launchers take device pointers and return the launch's cudaError_t as
// an int.
#pragma once

namespace ember_test {

// ---- barriers --------------------------------------------------------------------------------
// One block of `threads` (at most 256). Legal: `rounds` passes of a loop whose barrier sits in a
// helper function, then the helper once more from another call: every thread reaches every
// barrier at the same call. *out = sum over the passes of (sum of t + pass) plus `threads`.
int launch_barrier_rounds(int* out, int threads, int rounds);
// Planted: the helper with the barrier is called on both sides of an `if` (warp 0 on one, warp 1
// on the other): two call sites at one barrier instance. 64 threads; out: 64 ints.
int plant_barrier_two_call_sites(int* out);
// Planted: warp 0 takes one pass more of a loop with barriers than warp 1, which goes on to the
// barrier after the loop. 64 threads; out: 64 ints.
int plant_barrier_extra_pass(int* out, int rounds);

// ---- __activemask ----------------------------------------------------------------------------
// Legal. One block of `threads` (33 to 64: warp 1 is partial). Lanes below `split` call
// __activemask() on one side of an `if`, the others on the other side: masks[t]; then after a
// __syncwarp every lane calls it again: masks[64 + t]. masks: 128 unsigned.
int launch_activemask_branches(unsigned* masks, int threads, int split);
// Legal. One warp; lane l takes l % 4 + 1 passes of a loop that calls __activemask() in each:
// masks[pass * 32 + l] (masks: 128 unsigned, untouched where a lane took no such pass).
int launch_activemask_loop(unsigned* masks);
// Legal. `threads` threads; those with keep[t] != 0 append t to `slots`, one atomicAdd per group
// of converged lanes (the leader is the lowest lane of __activemask()), *count: how many.
int launch_aggregated_append(const int* keep, int* slots, int* count, int threads);
// Planted. One warp; lanes with in[l] > 0 sum their values with __shfl_xor_sync over the mask
// __activemask() gave them, with offsets 16, 8, 4, 2, 1, as if the branch held the whole warp.
int plant_activemask_sum(const int* in, int* out);

// ---- several pending collectives -------------------------------------------------------------
// Legal. One warp; lanes 0-15 broadcast, reduce and vote with the mask 0x0000ffff while lanes
// 16-31, in the other branch, shift, vote and __syncwarp with 0xffff0000. out: 64 ints.
int launch_disjoint_collectives(const int* in, int* out);
// Planted. Lanes 0-15 shuffle with the mask 0x0001ffff (one bit too many: lane 16), lanes 16-31
// with 0xffff0000 (variant 0: lane 16 takes part there, then returns while lanes 0-15 wait for
// it) or with 0xffff8000 (variant 1: each shuffle waits for a lane that waits at the other).
int plant_overlapping_masks(int* out, int variant);

// ---- __syncwarp(mask) orders its lanes -------------------------------------------------------
// One warp exchanges words through shared memory and device memory (words: 32 ints): each lane
// writes its word, then reads its neighbour's within its half-warp (lane l reads l + 1, 15 reads
// 0), twice. The high half always separates the steps with __syncwarp(0xffff0000). The low half:
// variant 0 with __syncwarp(0x0000ffff) (legal), 1 with no __syncwarp (planted), 2 with
// __syncwarp(0x00007fff), which leaves lane 15 out (planted). out: 32 ints.
int launch_half_warp_exchange(int* words, int* out, int variant);
// Legal. A chain: lane 1 writes a word, __syncwarp(0x3) with lane 0, lane 0 __syncwarp(0x10001)
// with lane 16, lane 16 reads the word (out[0]). Lanes 2-15 and 17-31 do nothing.
int launch_syncwarp_chain(int* out);

}  // namespace ember_test
