// ember/kernels/cuda/conv.cu — 2-d convolution on CUDA: ember's own kernels, and the routing of
// every request (kernels/cuda/conv.h) to them or to cuDNN (kernels/cuda/conv_cudnn.cu).
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, C, R, S] (= [K, CRS] in memory),
// b [K], y [N, K, P, Q]; CRS = C*R*S is the length of one filter, PQ = P*Q one output plane,
// j = (c, r, s) a filter tap. All pointers are contiguous device memory; everything is queued on
// ember's one in-order stream (launch.cuh) and returns before the GPU has finished.
//
// Two native algorithms
// ---------------------
// Im2colGemm — the CPU's method (kernels/cpu/conv.cpp) with cuBLAS for the products:
//   forward          col_n [CRS, PQ] = im2col(x[n]);  y[n] = w [K, CRS] @ col_n   (+ b)
//   input gradient   dcol_n = w^T @ dy[n];            dx[n] = col2im(dcol_n)
//   weight gradient  dw = sum_n dy[n] [K, PQ] @ col_n^T,  db = sum over n, p, q of dy
// The column matrices of a whole chunk of images are built by one launch, and the chunk's
// products run as ONE strided-batched GEMM (the weight is the same matrix for every image:
// batch stride 0). A chunk is as many images as fit kColumnBudgetBytes of scratch (all of a
// typical batch: the seed CNNs need at most ~115 MB); larger batches loop over chunks.
// For the weight gradient the sum over images is folded into the GEMM's depth instead: the
// chunk's columns are laid side by side as col [CRS, nb*PQ] and dy is transposed to
// dyT [K, nb*PQ], so dw = dyT @ col^T is one product whose depth runs over (image, pixel);
// later chunks add to it (beta = 1). A 1x1, stride-1, unpadded kernel needs no im2col at all:
// x[n] viewed as [C, H*W] already is col_n (and the GEMM writes dx[n] straight away).
//
// ImplicitGemm — one hand-written kernel, no scratch memory: implicit_gemm_kernel below
// computes the forward pass as the GEMM out[m = (n, p, q), k] = sum_j A[m, j] * w[k, j] whose
// A rows are the input windows, read straight from x while the tiles are loaded; the input
// gradient is the same kernel on the "transposed" convolution (rows are input pixels, A rows
// the windows of dy that touch them). Both index maps live in kernels/cuda/conv_index.h, where
// the CPU tests check them. The weight gradient has no implicit version: asked for it, the
// ImplicitGemm algorithm runs the im2col path for that pass.
//
// Auto picks per pass (the rules and their reasoning: choose_*_algo in conv_index.h):
//   forward          ImplicitGemm when K <= 64 and the kernel fills the GPU (or the layer is
//                    tiny), else Im2colGemm;
//   input gradient   Im2colGemm (col2im): measured faster on every seed layer;
//   weight gradient  Im2colGemm.
// For the seed CNNs (on an H100) that is the implicit kernel for every forward pass except
// cats_vs_dogs's third layer (128 filters), and im2col + cuBLAS for every gradient.
// tests/kernels/conv_cuda.cpp spells these choices out.
//
// Determinism: no atomics anywhere; every sum runs in an order fixed by the geometry (col2im
// loops over the taps in order, the bias gradient reduces with a fixed shuffle tree), so results
// repeat bit for bit (cuBLAS's default GEMMs are deterministic for a given GPU and size).
//
// Scratch memory (columns, transposed dy, bias-gradient partial sums) comes from ember's caching
// allocator as a uint8 tensor: after the first step of a training loop it is a cache hit. The
// tensor hands its block back when it goes out of scope at the end of the call, while the
// kernels using it may still be queued — which is safe because the allocator's next user is
// queued on the same in-order stream, behind them.
#include "kernels/cuda/conv.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "kernels/base/error.h"
#include "core/tensor.h"
#include "kernels/cuda/conv_cudnn.cuh"
#include "kernels/cuda/conv_index.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

// Scratch the im2col path may hold at once (see the top of the file); set_conv_column_budget
// lowers it for the chunking tests.
constexpr int64_t kDefaultColumnBudgetBytes = int64_t{256} << 20;
std::atomic<int64_t> g_column_budget{kDefaultColumnBudgetBytes};
int64_t column_budget() { return g_column_budget.load(std::memory_order_relaxed); }

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// ---- small host helpers -------------------------------------------------------------------------

int current_device() {
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

// Streaming multiprocessors of the current device, asked once per device (Auto's rules use it).
int sm_count() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> counts[kMaxDevices] = {};
  const int device = current_device();
  if (device < 0 || device >= kMaxDevices) return 1;
  int n = counts[device].load(std::memory_order_relaxed);
  if (n == 0) {
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    counts[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

// `bytes` of device memory from ember's caching allocator, on the current device; freed (back to
// the cache) when the returned tensor goes out of scope.
Tensor scratch(int64_t bytes) {
  return ember::empty({bytes}, TensorOptions(kUInt8).device(Device::cuda(current_device())));
}

void check_dtype(DType dtype, const char* what) {
  EMBER_CHECK(dtype == DType::Float32 || dtype == DType::Float64, what, " on CUDA: expected float32 "
              "or float64, got ", dtype_name(dtype), " (convert with .to(ember::kFloat32))");
}

void check_index_fits(const ConvGeometry& g, const char* what) {
  EMBER_CHECK(conv_index_fits(g), what, " on CUDA: the layer is too large for ember's kernels, "
              "which index one image with 32-bit integers (C*H*W = ", g.C * g.H * g.W,
              ", K*P*Q = ", g.K * g.P * g.Q, ", C*R*S*P*Q = ", g.C * g.R * g.S * g.P * g.Q,
              " must stay below 2^31); use smaller images or set_conv_backend(ConvBackend::Cudnn)");
}

int64_t chunk_or_throw(int64_t nb, const char* what) {
  EMBER_CHECK(nb > 0, what, " on CUDA: one image's column matrix has 2^31 elements or more, "
              "beyond ember's 32-bit im2col kernels; use smaller images or "
              "set_conv_backend(ConvBackend::Cudnn)");
  return nb;
}

// ---- elementwise kernels of the im2col path -----------------------------------------------------
// All use grid-stride loops over a flat index that the launchers keep below 2^31 (so the
// FastDivmod splits apply); the loop variable is 64-bit so that i += stride cannot overflow.

// im2col for `images` images: one thread per column element. Element (n, j, pq) is written to
// col[n * n_stride + j * j_stride + pq]; two layouts use it:
//   per image      n_stride = CRS*PQ, j_stride = PQ        (col_n [CRS, PQ] one after another)
//   side by side   n_stride = PQ,     j_stride = images*PQ (one [CRS, images*PQ] matrix)
// Consecutive threads take consecutive pq, so in both layouts a warp writes 32 consecutive
// elements (coalesced) and, for stride 1, reads 32 consecutive pixels of one input row.
template <typename T>
__global__ void im2col_kernel(ConvIndex g, const T* __restrict__ x, T* __restrict__ col,
                              int64_t total, int64_t n_stride, int64_t j_stride) {
  for (int64_t i = global_thread_id(); i < total; i += global_thread_count())
    im2col_element(g, x, col, static_cast<int32_t>(i), n_stride, j_stride);
}

// col2im for `images` images: one thread per INPUT pixel (n, c, h, w), which gathers every
// column element that was copied from it — for each tap (r, s), the output pixel (p, q) whose
// window put this pixel under that tap (output_tap; at most one) — and writes the sum once
// (col2im_element in conv_index.h). No two threads write the same pixel, so there are no atomics
// and the order of the additions (r, then s) is fixed. dcol is laid out per image:
// [images, CRS, PQ]. Consecutive threads take consecutive w: coalesced writes, and for stride 1
// coalesced reads of dcol rows.
template <typename T>
__global__ void col2im_kernel(ConvIndex g, const T* __restrict__ dcol, T* __restrict__ dx,
                              int64_t total) {
  for (int64_t i = global_thread_id(); i < total; i += global_thread_count())
    dx[i] = col2im_element(g, dcol, static_cast<int32_t>(i));
}

// y[n, k, p, q] += b[k] over `total` elements of a [images, K, PQ] block; one thread each.
template <typename T>
__global__ void add_bias_kernel(FastDivmod by_PQ, FastDivmod by_K, const T* __restrict__ b,
                                T* __restrict__ y, int64_t total) {
  for (int64_t i = global_thread_id(); i < total; i += global_thread_count()) {
    const int32_t row = by_PQ.div(static_cast<int32_t>(i));
    int32_t n = 0, k = 0;
    by_K.divmod(row, &n, &k);
    y[i] += b[k];
  }
}

// dyT [K, images*PQ] from a chunk dy [images, K, PQ]: dyT[k, n*PQ + pq] = dy[n, k, pq]. One
// thread per element; consecutive threads take consecutive pq, so reads and writes are both
// runs of consecutive addresses.
template <typename T>
__global__ void transpose_dy_kernel(FastDivmod by_PQ, FastDivmod by_images, int32_t K,
                                    const T* __restrict__ dy, T* __restrict__ dyT, int64_t total) {
  for (int64_t i = global_thread_id(); i < total; i += global_thread_count())
    dyT[i] = dy[transpose_dy_source(by_PQ, by_images, K, static_cast<int32_t>(i))];
}

// Bias gradient, pass 1: partial[row] = sum of the PQ contiguous elements of dy row
// row = n*K + k, in double. One warp per row (rows are walked grid-stride by warps): lane l adds
// pq = l, l + 32, ... (a warp reads 32 consecutive elements at a time), then a fixed shuffle
// tree combines the lanes. Rows are independent, so every SM gets work even for a single filter.
template <typename T>
__global__ void bias_grad_rows_kernel(const T* __restrict__ dy, int64_t rows, int64_t PQ,
                                      double* __restrict__ partial) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warp = global_thread_id() / kWarp;
  const int64_t warps = global_thread_count() / kWarp;
  for (int64_t row = warp; row < rows; row += warps) {
    const T* src = dy + row * PQ;
    double s = 0.0;
    for (int64_t pq = lane; pq < PQ; pq += kWarp) s += static_cast<double>(src[pq]);
    for (int delta = kWarp / 2; delta > 0; delta /= 2) s += __shfl_down_sync(kFullMask, s, delta);
    if (lane == 0) partial[row] = s;
  }
}

// Bias gradient, pass 2: db[k] = sum over n of partial[n*K + k], images in order. One thread per
// filter; consecutive threads read consecutive partials.
template <typename T>
__global__ void bias_grad_finish_kernel(const double* __restrict__ partial, int64_t N, int64_t K,
                                        T* __restrict__ db) {
  for (int64_t k = global_thread_id(); k < K; k += global_thread_count()) {
    double s = 0.0;
    for (int64_t n = 0; n < N; ++n) s += partial[n * K + k];
    db[k] = static_cast<T>(s);
  }
}

// ---- the implicit-GEMM kernel -------------------------------------------------------------------
//
// Computes out[m, col] = sum over j < depth of A[m, j] * B[j, col] (+ bias[col]) for one of the
// index maps of conv_index.h (ForwardGemm: m = output pixel, col = filter, j = tap; or
// BackwardDataGemm: m = input pixel, col = input channel, j = (filter, tap)). A and B exist only
// as index maps into x (or dy) and w; nothing is materialised.
//
// What a block computes: one BM x BN tile of out (BM = 128 rows, BN = 16/32/64 columns), 256
// threads. It walks the depth BK taps at a time (BK = 16 for float, 8 for double, so that both
// double-buffered tiles fit the 48 KB of static shared memory); each step multiplies the A tile
// [BM x BK] by the B tile [BK x BN], both staged in shared memory.
//
// What a thread computes: TM x TN = 8 x (BN/16) outputs in registers, the 16 x 16 threads laid
// over the tile as (tx, ty) = (t % 16, t / 16). Thread (tx, ty) owns rows tx, tx + 16, ...,
// tx + 112 (strided, not contiguous: the 16 threads of a half-warp then read 16 consecutive
// words of the A tile — no bank conflicts — and later store 16 consecutive rows of out) and the
// TN contiguous columns ty*TN .. ty*TN + TN-1. Per tap it loads TM values of A and TN of B from
// shared memory and does TM*TN multiply-adds: each value loaded feeds TN (or TM) of them.
//
// How the windows are gathered: thread t always loads row m = t % 128 of the A tile, at depth
// t / 128, t / 128 + 2, ... So it decodes its m into (image, window origin) once (Gemm::row)
// and, per tap j, only works out the tap's offset (Gemm::a_index: a few multiply-shift divisions,
// a bounds test, and a zero for the padding). The 32 threads of a warp load 32 consecutive m —
// for the forward pass 32 neighbouring output pixels, whose window taps are neighbouring input
// pixels of one row (exactly consecutive for stride 1): the reads from x coalesce, like reading
// a row of an ordinary matrix. The B tile is loaded with the tap index fastest, i.e. along a
// filter's contiguous row of w (also coalesced).
//
// Overlap: the tiles are double-buffered. While the threads multiply the tiles of step i out of
// buffer i%2, the global loads of step i+1 are already in flight into registers; they are
// written to the other buffer afterwards, and one barrier per step separates the two. (Buffer
// (i+1)%2 was last read during step i-1, which every thread finished before the previous
// barrier.)
//
// Everything is guarded: rows past `rows`, columns past `cols` and taps past `depth` load zeros
// and store nothing, so any size works (a 5x5x1 filter has depth 25: one full step and one
// partly-zero step).
constexpr int kImplicitThreads = 256;

template <typename T, typename Gemm, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__(kImplicitThreads)
    implicit_gemm_kernel(const Gemm gemm, const T* __restrict__ a, const T* __restrict__ b,
                         const T* __restrict__ bias, T* __restrict__ out) {
  constexpr int TX = BM / TM;  // threads across the tile's rows
  constexpr int TY = BN / TN;  // threads across its columns
  static_assert(TX * TY == kImplicitThreads, "the thread grid must cover the tile");
  static_assert(kImplicitThreads % BM == 0, "each thread loads A rows of one fixed m");
  constexpr int kADepthStep = kImplicitThreads / BM;  // depth rows one pass of the block loads
  static_assert(BK % kADepthStep == 0, "the A tile must split evenly over the threads");
  constexpr int kALoads = BK / kADepthStep;
  constexpr int kBLoads = (BK * BN + kImplicitThreads - 1) / kImplicitThreads;

  __shared__ T As[2][BK][BM];
  __shared__ T Bs[2][BK][BN + 1];  // +1: the stash below writes down a column (see there)

  const int t = threadIdx.x;
  const int tx = t % TX, ty = t / TX;
  const int64_t m_block = static_cast<int64_t>(blockIdx.x) * BM;
  const int32_t col_block = static_cast<int32_t>(blockIdx.y) * BN;

  // This thread's A loads: row a_m of the tile, depth a_k, a_k + kADepthStep, ...
  const int a_m = t % BM;
  const int a_k = t / BM;
  const bool a_row_live = m_block + a_m < gemm.rows;
  const typename Gemm::Row row = gemm.row(a_row_live ? static_cast<int32_t>(m_block + a_m) : 0);

  T a_next[kALoads];
  T b_next[kBLoads];
  // Global -> registers: the tiles of the step starting at tap k0.
  auto fetch = [&](int64_t k0) {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) {
      const int64_t j = k0 + a_k + l * kADepthStep;
      const int64_t idx =
          (a_row_live && j < gemm.depth) ? gemm.a_index(row, static_cast<int32_t>(j)) : -1;
      a_next[l] = idx >= 0 ? a[idx] : T(0);
    }
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) {
      const int e = t + l * kImplicitThreads;
      const int64_t j = k0 + e % BK;
      const int32_t col = col_block + e / BK;
      const bool live = e < BK * BN && j < gemm.depth && col < gemm.cols;
      b_next[l] = live ? b[gemm.b_index(static_cast<int32_t>(j), col)] : T(0);
    }
  };
  // Registers -> shared memory buffer `buf`.
  auto stash = [&](int buf) {
#pragma unroll
    for (int l = 0; l < kALoads; ++l) As[buf][a_k + l * kADepthStep][a_m] = a_next[l];
#pragma unroll
    for (int l = 0; l < kBLoads; ++l) {
      const int e = t + l * kImplicitThreads;
      // Consecutive threads write consecutive taps, i.e. down a column of Bs: the padded row
      // length BN + 1 puts them in different banks (with BN they would all hit one bank).
      if (e < BK * BN) Bs[buf][e % BK][e / BK] = b_next[l];
    }
  };

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) acc[i][jj] = T(0);
  }

  fetch(0);
  stash(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < gemm.depth; k0 += BK) {
    const bool more = k0 + BK < gemm.depth;
    if (more) fetch(k0 + BK);  // in flight while we multiply
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      T av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = As[buf][kk][tx + i * TX];
#pragma unroll
      for (int jj = 0; jj < TN; ++jj) bv[jj] = Bs[buf][kk][ty * TN + jj];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) acc[i][jj] += av[i] * bv[jj];
      }
    }
    if (more) stash(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }

  // Write the tile: for fixed (i, jj) the 16 threads of a half-warp store 16 consecutive rows.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t m = m_block + tx + i * TX;
    if (m >= gemm.rows) continue;
    const int64_t base = gemm.out_base(static_cast<int32_t>(m));
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) {
      const int32_t col = col_block + ty * TN + jj;
      if (col >= gemm.cols) continue;
      T v = acc[i][jj];
      if (bias != nullptr) v += bias[col];
      out[base + col * gemm.out_col_stride] = v;
    }
  }
}

template <typename T, typename Gemm, int BN>
void launch_implicit_tile(const Gemm& gemm, const T* a, const T* b, const T* bias, T* out) {
  constexpr int BM = kImplicitTileRows;
  constexpr int BK = sizeof(T) == 4 ? 16 : 8;
  constexpr int TM = 8;
  constexpr int TN = BN / 16;
  const dim3 grid(static_cast<unsigned>((static_cast<int64_t>(gemm.rows) + BM - 1) / BM),
                  static_cast<unsigned>((static_cast<int64_t>(gemm.cols) + BN - 1) / BN));
  EMBER_LAUNCH(grid, kImplicitThreads, 0, stream(), implicit_gemm_kernel<T, Gemm, BM, BN, BK, TM, TN>)(gemm, a, b, bias, out);
  EMBER_LAUNCH_CHECK("implicit_gemm_kernel");
}

// The tile width follows the column count (implicit_tile_cols): 16, 32 or 64.
template <typename T, typename Gemm>
void launch_implicit(const Gemm& gemm, const T* a, const T* b, const T* bias, T* out) {
  if (gemm.rows == 0 || gemm.cols == 0) return;
  switch (implicit_tile_cols(gemm.cols)) {
    case 16: launch_implicit_tile<T, Gemm, 16>(gemm, a, b, bias, out); break;
    case 32: launch_implicit_tile<T, Gemm, 32>(gemm, a, b, bias, out); break;
    default: launch_implicit_tile<T, Gemm, 64>(gemm, a, b, bias, out); break;
  }
}

// ---- launchers of the im2col path ---------------------------------------------------------------

template <typename T>
void launch_im2col(const ConvIndex& ix, const T* x, T* col, int64_t images, int64_t n_stride,
                   int64_t j_stride) {
  const int64_t total = images * ix.CRS * ix.PQ;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), im2col_kernel<T>)(ix, x, col, total, n_stride, j_stride);
  EMBER_LAUNCH_CHECK("im2col_kernel");
}

template <typename T>
void launch_col2im(const ConvIndex& ix, const T* dcol, T* dx, int64_t images) {
  const int64_t total = images * ix.CHW;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), col2im_kernel<T>)(ix, dcol, dx, total);
  EMBER_LAUNCH_CHECK("col2im_kernel");
}

// y [images, K, PQ] += b, for images * K * PQ < 2^31.
template <typename T>
void launch_add_bias(const ConvIndex& ix, const T* b, T* y, int64_t images) {
  const int64_t total = images * ix.KPQ;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), add_bias_kernel<T>)(ix.by_PQ, ix.by_K, b, y, total);
  EMBER_LAUNCH_CHECK("add_bias_kernel");
}

// y = b broadcast (or zeros): the forward pass of a layer whose filters are empty (C*R*S == 0).
template <typename T>
void fill_with_bias(const ConvGeometry& g, const T* b, T* y) {
  const int64_t numel = g.N * g.K * g.P * g.Q;
  EMBER_CUDA_CHECK(cudaMemsetAsync(y, 0, static_cast<size_t>(numel) * sizeof(T), stream()));
  if (b == nullptr) return;
  check_index_fits(g, "conv2d");
  const ConvIndex ix = make_conv_index(g);
  const int64_t nb = chunk_or_throw(images_per_chunk(g.N, 0, ix.KPQ, sizeof(T), 0), "conv2d");
  for (int64_t n0 = 0; n0 < g.N; n0 += nb)
    launch_add_bias(ix, b, y + n0 * ix.KPQ, std::min(nb, g.N - n0));
}

// db [K] = sum over n, p, q of dy (see the two kernels).
template <typename T>
void bias_grad(const ConvGeometry& g, const T* dy, T* db) {
  const int64_t rows = g.N * g.K, PQ = g.P * g.Q;
  if (g.K == 0) return;
  if (rows * PQ == 0) {
    EMBER_CUDA_CHECK(cudaMemsetAsync(db, 0, static_cast<size_t>(g.K) * sizeof(T), stream()));
    return;
  }
  Tensor partial = scratch(rows * static_cast<int64_t>(sizeof(double)));
  double* p = static_cast<double*>(partial.raw_data());
  EMBER_LAUNCH(grid_for(rows * kWarp), kBlock, 0, stream(), bias_grad_rows_kernel<T>)(dy, rows, PQ, p);
  EMBER_LAUNCH_CHECK("bias_grad_rows_kernel");
  EMBER_LAUNCH(grid_for(g.K), kBlock, 0, stream(), bias_grad_finish_kernel<T>)(p, g.N, g.K, db);
  EMBER_LAUNCH_CHECK("bias_grad_finish_kernel");
}

// 1x1 kernel, stride 1, no padding: im2col would copy x[n] ([C, H*W]) unchanged.
bool is_pointwise(const ConvGeometry& g) {
  return g.R == 1 && g.S == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
         g.pad_w == 0;
}

// ---- the im2col path ----------------------------------------------------------------------------
//
// The GEMMs are row-major requests to kernels/cuda/gemm.h (gemm_plan.h explains, once, how they
// become column-major cuBLAS calls). Per chunk of `count` images starting at image n0:
//   forward   y[n] [K, PQ] = w [K, CRS] @ col_n [CRS, PQ]: gemm_batched, a = w with batch
//             stride 0 (the same filters for every image), b = the columns (stride CRS*PQ),
//             c = y[n0..] (stride K*PQ);
//   input     dcol_n [CRS, PQ] = w^T @ dy[n] [K, PQ]: trans_a, as w is stored [K, CRS];
//   weight    dw [K, CRS] (+)= dyT [K, count*PQ] @ col^T with col [CRS, count*PQ]: trans_b.

template <typename T>
void im2col_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  check_index_fits(g, "conv2d");
  const ConvIndex ix = make_conv_index(g);
  const DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  constexpr int64_t kElem = sizeof(T);
  const int64_t col_elems = static_cast<int64_t>(ix.CRS) * ix.PQ;
  const bool pointwise = is_pointwise(g);
  const int64_t nb = chunk_or_throw(
      images_per_chunk(g.N, pointwise ? 0 : col_elems, std::max(col_elems, ix.KPQ), kElem,
                       column_budget()),
      "conv2d");
  Tensor col_buffer = pointwise ? Tensor() : scratch(nb * col_elems * kElem);
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t count = std::min(nb, g.N - n0);
    const T* col = x + n0 * ix.CHW;  // pointwise: the image is its own column matrix
    if (!pointwise) {
      T* c = static_cast<T*>(col_buffer.raw_data());
      launch_im2col(ix, x + n0 * ix.CHW, c, count, col_elems, ix.PQ);
      col = c;
    }
    T* y_chunk = y + n0 * ix.KPQ;
    gemm_batched(dtype, false, false, g.K, ix.PQ, ix.CRS, 1.0, w, ix.CRS, 0, col, ix.PQ,
                 col_elems, 0.0, y_chunk, ix.PQ, ix.KPQ, count);
    if (b != nullptr) launch_add_bias(ix, b, y_chunk, count);
  }
}

template <typename T>
void im2col_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  check_index_fits(g, "conv2d backward");
  const ConvIndex ix = make_conv_index(g);
  const DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  constexpr int64_t kElem = sizeof(T);
  const int64_t col_elems = static_cast<int64_t>(ix.CRS) * ix.PQ;
  const bool pointwise = is_pointwise(g);
  const int64_t nb = chunk_or_throw(
      images_per_chunk(g.N, pointwise ? 0 : col_elems, std::max(col_elems, ix.CHW), kElem,
                       column_budget()),
      "conv2d backward");
  Tensor col_buffer = pointwise ? Tensor() : scratch(nb * col_elems * kElem);
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t count = std::min(nb, g.N - n0);
    // pointwise: dcol_n is dx[n] itself, so the GEMM writes the gradient directly.
    T* dcol = pointwise ? dx + n0 * ix.CHW : static_cast<T*>(col_buffer.raw_data());
    gemm_batched(dtype, true, false, ix.CRS, ix.PQ, g.K, 1.0, w, ix.CRS, 0, dy + n0 * ix.KPQ,
                 ix.PQ, ix.KPQ, 0.0, dcol, ix.PQ, col_elems, count);
    if (!pointwise) launch_col2im(ix, dcol, dx + n0 * ix.CHW, count);
  }
}

template <typename T>
void im2col_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  check_index_fits(g, "conv2d backward");
  const ConvIndex ix = make_conv_index(g);
  const DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  constexpr int64_t kElem = sizeof(T);
  const int64_t col_elems = static_cast<int64_t>(ix.CRS) * ix.PQ;
  // Per image: its columns and its slice of dyT. Both kernels (and the GEMM's depth count*PQ)
  // index at most count * max(CRS*PQ, K*PQ) elements.
  const int64_t nb = chunk_or_throw(
      images_per_chunk(g.N, col_elems + ix.KPQ, std::max(col_elems, ix.KPQ), kElem,
                       column_budget()),
      "conv2d backward");
  Tensor col_buffer = scratch(nb * col_elems * kElem);
  Tensor dyT_buffer = scratch(nb * ix.KPQ * kElem);
  T* col = static_cast<T*>(col_buffer.raw_data());
  T* dyT = static_cast<T*>(dyT_buffer.raw_data());
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t count = std::min(nb, g.N - n0);
    const int64_t depth = count * ix.PQ;  // the GEMM sums over (image, output pixel)
    launch_im2col(ix, x + n0 * ix.CHW, col, count, ix.PQ, depth);
    const int64_t total = count * ix.KPQ;
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), transpose_dy_kernel<T>)(
        ix.by_PQ, FastDivmod(count), ix.K, dy + n0 * ix.KPQ, dyT, total);
    EMBER_LAUNCH_CHECK("transpose_dy_kernel");
    gemm(dtype, false, true, g.K, ix.CRS, depth, 1.0, dyT, depth, col, depth, n0 == 0 ? 0.0 : 1.0,
         dw, ix.CRS);
  }
}

// ---- the implicit path --------------------------------------------------------------------------

template <typename T>
void implicit_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y) {
  EMBER_CHECK(implicit_forward_fits(g), "conv2d on CUDA (implicit GEMM): the layer is too large "
              "for the implicit-GEMM kernel's 32-bit indexing (N*P*Q = ", g.N * g.P * g.Q,
              ", K = ", g.K, ", C*R*S = ", g.C * g.R * g.S, "); use ConvAlgo::Auto or "
              "ConvAlgo::Im2colGemm");
  launch_implicit<T>(make_forward_gemm(g), x, w, b, y);
}

template <typename T>
void implicit_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  EMBER_CHECK(implicit_backward_input_fits(g), "conv2d backward on CUDA (implicit GEMM): the "
              "layer is too large for the implicit-GEMM kernel's 32-bit indexing (N*H*W = ",
              g.N * g.H * g.W, ", C = ", g.C, ", K*R*S = ", g.K * g.R * g.S, "); use "
              "ConvAlgo::Auto or ConvAlgo::Im2colGemm");
  launch_implicit<T>(make_backward_data_gemm(g), dy, w, static_cast<const T*>(nullptr), dx);
}

// ---- one pass, typed ----------------------------------------------------------------------------

template <typename T>
void forward_typed(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y,
                   ConvAlgo algo) {
  if (g.N * g.K * g.P * g.Q == 0) return;  // nothing to write
  if (g.C * g.R * g.S == 0) {              // empty filters: y = b
    fill_with_bias(g, b, y);
    return;
  }
  if (algo == ConvAlgo::Auto) algo = choose_forward_algo(g, sm_count());
  if (algo == ConvAlgo::ImplicitGemm) implicit_forward(g, x, w, b, y);
  else im2col_forward(g, x, w, b, y);
}

template <typename T>
void backward_input_typed(const ConvGeometry& g, const T* dy, const T* w, T* dx, ConvAlgo algo) {
  if (g.N * g.C * g.H * g.W == 0) return;
  if (g.K * g.R * g.S * g.P * g.Q == 0) {  // no output pixel, or no filter: dx = 0
    EMBER_CUDA_CHECK(cudaMemsetAsync(dx, 0, static_cast<size_t>(g.N * g.C * g.H * g.W) * sizeof(T),
                                     stream()));
    return;
  }
  if (algo == ConvAlgo::Auto) algo = choose_backward_input_algo(g, sm_count());
  if (algo == ConvAlgo::ImplicitGemm) implicit_backward_input(g, dy, w, dx);
  else im2col_backward_input(g, dy, w, dx);
}

template <typename T>
void backward_weight_typed(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db) {
  if (db != nullptr) bias_grad(g, dy, db);
  const int64_t dw_numel = g.K * g.C * g.R * g.S;
  if (dw_numel == 0) return;
  if (g.N * g.P * g.Q == 0) {  // no output pixel: dw = 0
    EMBER_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(dw_numel) * sizeof(T), stream()));
    return;
  }
  // Every native algorithm (Auto, Im2colGemm, ImplicitGemm) computes dw with im2col + cuBLAS:
  // choose_backward_weight_algo() in conv_index.h says why.
  im2col_backward_weight(g, x, dy, dw);
}

// Throws for Cudnn in a build without it, before any work is queued.
void check_algo(ConvAlgo algo, const char* what) {
  if (algo == ConvAlgo::Cudnn && !cudnn_built())
    throw DeviceError(detail::concat(what, ": this build has no cuDNN: ConvAlgo::Cudnn needs "
                                           "ember configured with cuDNN installed (EMBER_CUDNN=ON); "
                                           "use ConvAlgo::Auto for ember's own kernels"));
}

}  // namespace

// ---- the entry points (kernels/cuda/conv.h) ------------------------------------------------------

void set_conv_column_budget(int64_t bytes) {
  g_column_budget.store(bytes > 0 ? bytes : kDefaultColumnBudgetBytes, std::memory_order_relaxed);
}

void conv2d_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                    const void* b, void* y, ConvAlgo algo) {
  check_dtype(dtype, "conv2d");
  check_algo(algo, "conv2d");
  if (algo == ConvAlgo::Cudnn && g.N * g.K * g.P * g.Q > 0 && g.C * g.R * g.S > 0) {
    cudnn_conv2d_forward(dtype, g, x, w, b, y);
    return;
  }
  // (Cudnn with an empty layer falls through: there is nothing for cuDNN to compute.)
  if (dtype == DType::Float32)
    forward_typed(g, static_cast<const float*>(x), static_cast<const float*>(w),
                  static_cast<const float*>(b), static_cast<float*>(y), algo);
  else
    forward_typed(g, static_cast<const double*>(x), static_cast<const double*>(w),
                  static_cast<const double*>(b), static_cast<double*>(y), algo);
}

void conv2d_backward_input(DType dtype, const ConvGeometry& g, const void* dy, const void* w,
                           void* dx, ConvAlgo algo) {
  check_dtype(dtype, "conv2d backward");
  check_algo(algo, "conv2d backward");
  if (algo == ConvAlgo::Cudnn && g.N * g.C * g.H * g.W > 0 && g.K * g.R * g.S * g.P * g.Q > 0) {
    cudnn_conv2d_backward_input(dtype, g, dy, w, dx);
    return;
  }
  if (dtype == DType::Float32)
    backward_input_typed(g, static_cast<const float*>(dy), static_cast<const float*>(w),
                         static_cast<float*>(dx), algo);
  else
    backward_input_typed(g, static_cast<const double*>(dy), static_cast<const double*>(w),
                         static_cast<double*>(dx), algo);
}

void conv2d_backward_weight(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                            void* dw, void* db, ConvAlgo algo) {
  check_dtype(dtype, "conv2d backward");
  check_algo(algo, "conv2d backward");
  if (algo == ConvAlgo::Cudnn && g.K * g.C * g.R * g.S > 0 && g.N * g.P * g.Q > 0) {
    cudnn_conv2d_backward_weight(dtype, g, x, dy, dw, db);
    return;
  }
  if (dtype == DType::Float32)
    backward_weight_typed(g, static_cast<const float*>(x), static_cast<const float*>(dy),
                          static_cast<float*>(dw), static_cast<float*>(db));
  else
    backward_weight_typed(g, static_cast<const double*>(x), static_cast<const double*>(dy),
                          static_cast<double*>(dw), static_cast<double*>(db));
}

}  // namespace ember::kernels::cuda
