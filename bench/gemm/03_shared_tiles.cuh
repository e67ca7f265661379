// bench/gemm/03_shared_tiles.cuh — rung 3: a block loads tiles of A and B into shared memory once
// and all its threads reuse them.
//
// C[M, N] = A[M, K] @ B[K, N], float32, row-major, alpha = 1, beta = 0.
//
// What changes from 02_coalesced: in 02 each of the 32 x 32 threads of a block loaded its own
// row of A and column of B from global memory, so every element of A was loaded 32 times by
// the block (once per column it meets) and every element of B 32 times. Here the block walks
// along K in steps of 32: it copies a 32 x 32 tile of A and a 32 x 32 tile of B into shared
// memory (each thread copies ONE element of each), waits, and then every thread runs 32
// multiply-adds out of shared memory. Global traffic drops 32-fold; shared memory is on-chip
// (an SM's L1), with ~20-30 cycles latency instead of ~500 for DRAM.
//
// What one thread computes: one element C[row, col] (as in 02). A block covers a 32 x 32 square.
//
// Memory access:
//   global loads: thread (ty, tx) loads A[row, k0 + tx] and B[k0 + ty, col]; a warp (fixed ty,
//     tx = 0..31) reads 32 consecutive floats of one row of each: coalesced.
//   shared reads: As[ty][k] is the same address for the whole warp (a broadcast), Bs[k][tx] is
//     32 consecutive floats in 32 different banks: no bank conflicts.
//   Tiles that stick out past M, N or K are filled with zeros (which add nothing to the dot
//   product), so the inner loop needs no bounds checks; only the final store is guarded.
// Why it is still far from cuBLAS: each FMA needs two shared-memory loads (As[ty][k], Bs[k][tx]),
// so the kernel is limited by shared-memory bandwidth and load-instruction issue, not by the FMA
// units. Measured on an H200 at 4096: 17.1% of cuBLAS (bench/RESULTS.md).
//
// The next rung (04_1d_register_tiles.cuh) makes each thread compute several outputs, so one
// shared-memory load feeds several FMAs.
#pragma once

#include <cuda_runtime.h>

#include "kernels/base/error.h"
#include "kernels/cuda/launch.cuh"

namespace ember::bench::gemm {

namespace rung03 {
constexpr int kTile = 32;  // the block is kTile x kTile threads; tiles of A, B and C are kTile^2
}

__global__ void sgemm_shared_tiles_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K) {
  using rung03::kTile;
  __shared__ float As[kTile][kTile];  // A[blockRow + 0..31, k0 + 0..31]
  __shared__ float Bs[kTile][kTile];  // B[k0 + 0..31, blockCol + 0..31]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty;
  const int col = blockIdx.x * kTile + tx;
  // No early return for out-of-range threads: they still load their share of the tiles and
  // take part in __syncthreads().
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<size_t>(row) * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<size_t>(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the tiles are complete
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc;
}

// ---- launcher: grid arithmetic and checks
inline void launch_03(const float* A, const float* B, float* C, int M, int N, int K,
                      cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  using rung03::kTile;
  const dim3 block(kTile, kTile);
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
  EMBER_CHECK(grid.y <= 65535, "launch_03: M = ", M, " needs more than 65535 blocks in y");
  EMBER_LAUNCH(grid, block, 0, stream, sgemm_shared_tiles_kernel)(A, B, C, M, N, K);
  EMBER_LAUNCH_CHECK("sgemm_shared_tiles_kernel");
}

}  // namespace ember::bench::gemm
