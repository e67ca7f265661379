// ember/kernels/cuda/conv_bias.cu — the bias of ember's native CUDA convolutions, the same for
// every algorithm: added to the output (the im2col path after its GEMM, and a layer with empty
// filters; the implicit kernel adds it itself), and its gradient db[k] = sum over n, p, q of
// dy[n, k, p, q], which the dispatcher (kernels/cuda/conv.cu) computes before it hands dw to an
// algorithm.
//
// Determinism: no atomics; the bias gradient reduces each row with a fixed shuffle tree and adds
// the rows in image order, so it repeats bit for bit. Scratch (the rows' partial sums) comes from
// scratch() in conv_internal.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/base/error.h"
#include "kernels/cuda/conv_index.h"
#include "kernels/cuda/conv_internal.cuh"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda::conv_detail {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// All kernels use grid-stride loops; the loop variable is 64-bit so that i += stride cannot
// overflow.

// y[n, k, p, q] += b[k] over `total` elements of a [images, K, PQ] block; one thread each.
template <typename T>
__global__ void add_bias_kernel(FastDivmod by_PQ, FastDivmod by_K, const T* __restrict__ b,
                                T* __restrict__ y, int64_t total) {
  for (const int64_t i : grid_stride(total)) {
    const int32_t row = by_PQ.div(static_cast<int32_t>(i));
    int32_t n = 0, k = 0;
    by_K.divmod(row, &n, &k);
    y[i] += b[k];
  }
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
  for (const int64_t row : grid_stride(warp, rows, warps)) {
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
  for (const int64_t k : grid_stride(K)) {
    double s = 0.0;
    for (int64_t n = 0; n < N; ++n) s += partial[n * K + k];
    db[k] = static_cast<T>(s);
  }
}

}  // namespace

// y [images, K, PQ] += b, for images * K * PQ < 2^31.
template <typename T>
void launch_add_bias(const ConvIndex& ix, const T* b, T* y, int64_t images) {
  const int64_t total = images * ix.KPQ;
  if (total == 0) return;
  EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), add_bias_kernel<T>)
  (ix.by_PQ, ix.by_K, b, y, total);
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
  Workspace partial = scratch(rows * static_cast<int64_t>(sizeof(double)));
  double* p = static_cast<double*>(partial.data());
  EMBER_LAUNCH(grid_for(rows * kWarp), kBlock, 0, stream(), bias_grad_rows_kernel<T>)
  (dy, rows, PQ, p);
  EMBER_LAUNCH_CHECK("bias_grad_rows_kernel");
  EMBER_LAUNCH(grid_for(g.K), kBlock, 0, stream(), bias_grad_finish_kernel<T>)(p, g.N, g.K, db);
  EMBER_LAUNCH_CHECK("bias_grad_finish_kernel");
}

template void launch_add_bias<float>(const ConvIndex&, const float*, float*, int64_t);
template void launch_add_bias<double>(const ConvIndex&, const double*, double*, int64_t);
template void fill_with_bias<float>(const ConvGeometry&, const float*, float*);
template void fill_with_bias<double>(const ConvGeometry&, const double*, double*);
template void bias_grad<float>(const ConvGeometry&, const float*, float*);
template void bias_grad<double>(const ConvGeometry&, const double*, double*);

}  // namespace ember::kernels::cuda::conv_detail
