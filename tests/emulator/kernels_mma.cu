// tests/emulator/kernels_mma.cu — the kernels of tests/emulator/mma.cpp: the emulated tensor-core
// fragments (nvcuda::wmma, kernels/emulator/mma.h), what they compute and the bugs the checkers
// must report. Emulation build only; compiled like kernels/cuda/*.cu, instrumentation included.
// Every kernel is one warp (32 threads) unless it says otherwise. The launchers take device
// pointers and return the launch's error as an int; mma.cpp declares them.
#include <cuda_runtime.h>
#include <mma.h>

#include <type_traits>

#include "kernels/cuda/launch.cuh"
#include "kernels/emulator/emulator.h"

namespace ember_test::wmma_kernels {

namespace {

namespace wmma = nvcuda::wmma;
using ember::kernels::cuda::stream;

using FragAcc = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;
template <typename Layout>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, Layout>;
template <typename Layout>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, Layout>;

// As tests/emulator/kernels.cu: the launch's error, taken back in the asynchronous mode.
int last_error() {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && ember::emu::async_streams()) {
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) ember::emu::clear_device_errors();
  }
  return static_cast<int>(e);
}

// D[16 x 16] = A[16 x 8s] @ B[8s x 16] + C, s = ksteps mma_sync calls along K, straight from
// global memory. A is row-major (A[r * lda + k]) or column-major (A[k * lda + r]), B row-major
// (B[k * ldb + n]) or column-major (B[n * ldb + k]); C and D share ldc and the layout c_col.
// round: each operand element goes through __float_to_tf32 in the fragment (element-wise on x[]).
struct TileArgs {
  const float* A;
  int lda;
  const float* B;
  int ldb;
  const float* C;
  float* D;
  int ldc;
  bool c_col;
  int ksteps;
  bool round;
};

template <typename LA, typename LB>
__global__ void tile_kernel(TileArgs t) {
  constexpr bool a_row = std::is_same_v<LA, wmma::row_major>;
  constexpr bool b_row = std::is_same_v<LB, wmma::row_major>;
  const wmma::layout_t c_layout = t.c_col ? wmma::mem_col_major : wmma::mem_row_major;
  FragAcc acc;
  wmma::load_matrix_sync(acc, t.C, t.ldc, c_layout);
  for (int s = 0; s < t.ksteps; ++s) {
    FragA<LA> a;
    FragB<LB> b;
    wmma::load_matrix_sync(a, a_row ? t.A + 8 * s : t.A + 8 * s * t.lda, t.lda);
    wmma::load_matrix_sync(b, b_row ? t.B + 8 * s * t.ldb : t.B + 8 * s, t.ldb);
    if (t.round) {
      for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
      for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
    }
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(t.D, acc, t.ldc, c_layout);
}

template <typename LA, typename LB>
void launch_tile_as(const TileArgs& t) {
  EMBER_LAUNCH(1, 32, 0, stream(), tile_kernel<LA, LB>)(t);
}

// Which lane holds what: A (16 x 8), B (8 x 16) and C (16 x 16) are loaded row-major with ld 8,
// 16 and 16; lane l writes its fragments' elements to out[l * 16 + 0..3] (a), 4..7 (b), 8..15
// (accumulator).
__global__ void lanes_kernel(const float* A, const float* B, const float* C, float* out) {
  const int lane = static_cast<int>(threadIdx.x);
  FragA<wmma::row_major> a;
  FragB<wmma::row_major> b;
  FragAcc c;
  wmma::load_matrix_sync(a, A, 8);
  wmma::load_matrix_sync(b, B, 16);
  wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
  for (int i = 0; i < 4; ++i) out[lane * 16 + i] = a.x[i];
  for (int i = 0; i < 4; ++i) out[lane * 16 + 4 + i] = b.x[i];
  for (int i = 0; i < 8; ++i) out[lane * 16 + 8 + i] = c.x[i];
}

// Element-wise work on x[], whatever the mapping: D = 2 C + 1, and an accumulator filled with v.
__global__ void elementwise_kernel(const float* C, float* D, float* filled, float v) {
  FragAcc c;
  wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] = 2.0f * c.x[i] + 1.0f;
  wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
  FragAcc f;
  wmma::fill_fragment(f, v);
  wmma::store_matrix_sync(filled, f, 16, wmma::mem_col_major);
}

// out[i] = __float_to_tf32(in[i]), one element per thread (any block size).
__global__ void tf32_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = wmma::__float_to_tf32(in[i]);
}

// A 16 x 16 tile through shared memory: the accumulator (C) is stored there, then lane l reads
// row l / 2's half (8 elements that other lanes stored) into out[l * 8 ..]. Without the
// __syncwarp between them that is a race: store_matrix_sync does not order the lanes' writes
// before another lane's reads.
__global__ void shared_roundtrip_kernel(const float* C, float* out, bool sync) {
  __shared__ __align__(32) float tile[16 * 16];
  const int lane = static_cast<int>(threadIdx.x);
  FragAcc c;
  wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
  wmma::store_matrix_sync(tile, c, 16, wmma::mem_row_major);
  if (sync) __syncwarp();
  for (int j = 0; j < 8; ++j) out[lane * 8 + j] = tile[lane * 8 + j];
}

// ---- planted bugs ---------------------------------------------------------------------------------

// A tile pointer `offset` floats past A (aligned: a multiple of 8), with leading dimension ldm.
__global__ void misaligned_load_kernel(const float* A, int offset, unsigned ldm, float* out) {
  FragA<wmma::row_major> a;
  wmma::load_matrix_sync(a, A + offset, ldm);
  out[threadIdx.x] = a.x[0];
}

// bug 0: lanes 16-31 return before the mma_sync; 1: they load their A fragment at another call
// site; 2: they pass another pointer (8 floats further on); anything else: no bug.
__global__ void divergent_kernel(const float* A, const float* B, float* D, int bug) {
  const int lane = static_cast<int>(threadIdx.x);
  FragA<wmma::row_major> a;
  FragB<wmma::row_major> b;
  FragAcc acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(b, B, 16);
  if (bug == 0) {
    wmma::load_matrix_sync(a, A, 8);
    if (lane >= 16) return;
  } else if (bug == 1) {
    if (lane < 16) {
      wmma::load_matrix_sync(a, A, 8);
    } else {
      wmma::load_matrix_sync(a, A, 8);  // the same arguments, but another instruction
    }
  } else if (bug == 2) {
    wmma::load_matrix_sync(a, lane < 16 ? A : A + 8, 8);
  } else {
    wmma::load_matrix_sync(a, A, 8);
  }
  wmma::mma_sync(acc, a, b, acc);
  wmma::store_matrix_sync(D, acc, 16, wmma::mem_row_major);
}

}  // namespace

int launch_tile(const float* A, bool a_col, int lda, const float* B, bool b_col, int ldb,
                const float* C, float* D, int ldc, bool c_col, int ksteps, bool round) {
  using RM = wmma::row_major;
  using CM = wmma::col_major;
  const TileArgs t{A, lda, B, ldb, C, D, ldc, c_col, ksteps, round};
  if (!a_col && !b_col) launch_tile_as<RM, RM>(t);
  if (!a_col && b_col) launch_tile_as<RM, CM>(t);
  if (a_col && !b_col) launch_tile_as<CM, RM>(t);
  if (a_col && b_col) launch_tile_as<CM, CM>(t);
  return last_error();
}

int launch_lanes(const float* A, const float* B, const float* C, float* out) {
  EMBER_LAUNCH(1, 32, 0, stream(), lanes_kernel)(A, B, C, out);
  return last_error();
}

int launch_elementwise(const float* C, float* D, float* filled, float v) {
  EMBER_LAUNCH(1, 32, 0, stream(), elementwise_kernel)(C, D, filled, v);
  return last_error();
}

int launch_tf32(const float* in, float* out, int n) {
  EMBER_LAUNCH((n + 63) / 64, 64, 0, stream(), tf32_kernel)(in, out, n);
  return last_error();
}

int launch_shared_roundtrip(const float* C, float* out, bool sync) {
  EMBER_LAUNCH(1, 32, 0, stream(), shared_roundtrip_kernel)(C, out, sync);
  return last_error();
}

int plant_misaligned_load(const float* A, int offset, unsigned ldm, float* out) {
  EMBER_LAUNCH(1, 32, 0, stream(), misaligned_load_kernel)(A, offset, ldm, out);
  return last_error();
}

int plant_divergent(const float* A, const float* B, float* D, int bug) {
  EMBER_LAUNCH(1, 32, 0, stream(), divergent_kernel)(A, B, D, bug);
  return last_error();
}

int plant_partial_warp(const float* A, float* out) {
  EMBER_LAUNCH(1, 16, 0, stream(), misaligned_load_kernel)(A, 0, 8u, out);  // aligned: 16 lanes
  return last_error();
}

}  // namespace ember_test::wmma_kernels
