// ember/kernels/cpu/conv_internal.h — internal to the CPU convolution: what its dispatcher
// (kernels/cpu/conv.cpp) and its two algorithms (kernels/cpu/conv_im2col.cpp,
// kernels/cpu/conv_implicit.cpp) share. Not part of ember's interface: include it from those
// three files only.
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q];
// CRS = C*R*S (the length of one filter), PQ = P*Q (the pixels of one output plane).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/base/dtype.h"
#include "kernels/base/parallel.h"
#include "kernels/conv_geometry.h"

namespace ember::kernels::cpu::conv_detail {

// ---- the two algorithms -------------------------------------------------------------------------
// Each has the contract of its entry point in kernels/cpu/conv.h; conv.cpp chooses between them.

// im2col + GEMM (conv_im2col.cpp): float and double, any geometry.
template <typename T>
void im2col_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y);
template <typename T>
void im2col_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx);
template <typename T>
void im2col_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db);

// Direct loops (conv_direct.cpp): float and double, any geometry, groups included (the
// dispatcher sends depthwise convolutions here).
template <typename T>
void direct_forward(const ConvGeometry& g, const T* x, const T* w, const T* b, T* y);
template <typename T>
void direct_backward_input(const ConvGeometry& g, const T* dy, const T* w, T* dx);
template <typename T>
void direct_backward_weight(const ConvGeometry& g, const T* x, const T* dy, T* dw, T* db);

// Grouped convolution through the ungrouped entry points, one group at a time
// (conv_grouped.cpp); the contract of conv2d_forward / conv2d_backward in kernels/cpu/conv.h.
void grouped_forward(DType dtype, const ConvGeometry& g, const void* x, const void* w,
                     const void* b, void* y);
void grouped_backward(DType dtype, const ConvGeometry& g, const void* x, const void* dy,
                      const void* w, void* dx, void* dw, void* db);

// Implicit GEMM (conv_implicit.cpp): float32, stride 1, at least one image, output pixel and
// filter tap, and only where ember's SIMD GEMM kernel runs (conv.cpp's use_implicit()).
void implicit_forward(const ConvGeometry& g, const float* x, const float* w, const float* b,
                      float* y);
// dy [N, K, P, Q] -> dy' [K, P, Q, N], the layout both gradients read (in the calling thread's
// Scratch::kBatchInnerGrad, so one dy' serves the two gradients of a conv2d_backward call).
const float* batch_inner_grad(const ConvGeometry& g, const float* dy);
// dyp: dy' from batch_inner_grad.
void implicit_backward_input(const ConvGeometry& g, const float* dyp, const float* w, float* dx);
void implicit_backward_weight(const ConvGeometry& g, const float* x, const float* dyp, float* dw,
                              float* db);

// ---- what both use ------------------------------------------------------------------------------

// 1x1 kernel, stride 1, no padding: col would be a copy of the image.
inline bool is_pointwise(const ConvGeometry& g) {
  return g.R == 1 && g.S == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}

// Below this many multiply-adds a task costs less than handing it to another thread does, so
// loops give each task at least this much work (bench/RESULTS.md, "Figures that were comments
// in kernels/", has what it takes on the machine it was tuned on).
constexpr int64_t kTaskMacs = int64_t(1) << 22;
// The grain for a loop whose tasks each move `elements` elements.
inline int64_t grain_for(int64_t elements) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(elements, 1));
}

// The weight gradient sums over images (im2col) or output rows (implicit) in groups, each into
// its own partial sum (Scratch::kWeightPartials), added in group order at the end; the number of
// groups is a function of the sizes only, never of the thread count. This budget caps the
// partials' memory for very large filters.
constexpr int64_t kWeightGroupBudgetBytes = int64_t(64) << 20;

// ---- scratch buffers ----------------------------------------------------------------------------
// Each thread keeps one buffer per Scratch name and element type between calls: a conv layer runs
// the same sizes every step, and a fresh buffer of megabytes per task would go back to the OS each
// time and page-fault in again. A buffer only grows, and is not cleared (every user writes what it
// reads first). A name is shared only by users that never need it at the same time; a pass uses
// names that differ from one another, so its buffers never overlap.
enum class Scratch {
  kColumns,           // col (forward, weight gradient) or dcol (input gradient) of a batch of G
                      // images side by side: CRS * G*PQ elements (im2col)
  kBatchPlanes,       // a batch's K output planes before they go to y, or its dy gathered side by
                      // side: K * G*PQ elements (im2col, G > 1)
  kFilters,           // the filters laid out again: wT [CRS, K] (forward, both algorithms) or
                      // wd [S, R, K, C] (implicit input gradient): K*CRS elements
  kBatchInnerInput,   // x' [C, H + 2*pad_h, W + 2*pad_w, N]: x batch innermost, zero border
                      // (implicit)
  kBatchInnerGrad,    // dy' [K, P, Q, N]: dy batch innermost (implicit gradients)
  kBatchInnerResult,  // y' [K, P, Q, N] (implicit forward) or dx' [C, H, W, N] (implicit input
                      // gradient), before they go to y or dx
  kWeightPartials,    // the weight gradient's partial sums, one [CRS, K] per group:
                      // groups * CRS*K elements (both algorithms)
};

// This thread's buffer `S` for elements of type T, at least n of them.
template <Scratch S, typename T>
T* scratch_buffer(int64_t n) {
  thread_local std::unique_ptr<T[]> buf;
  thread_local int64_t capacity = 0;
  if (n > capacity) {
    buf.reset();
    buf = std::unique_ptr<T[]>(new T[static_cast<size_t>(std::max<int64_t>(n, 1))]);
    capacity = n;
  }
  return buf.get();
}

// ---- helpers of both algorithms -----------------------------------------------------------------

// w [K, CRS] -> wT [CRS, K], once per forward call, into the calling thread's Scratch::kFilters.
// The forward GEMM then reads the filter bank as op(A) = wT^T: the 12 filters a register tile
// of the CPU GEMM kernel needs at each step of the sum lie side by side, which it reads a little
// faster than 12 rows of w.
template <typename T>
const T* transposed_weights(const ConvGeometry& g, const T* w) {
  const int64_t CRS = g.C * g.R * g.S;
  T* wT = scratch_buffer<Scratch::kFilters, T>(g.K * CRS);
  // Row i of wT gathers column i of w; neighbouring i read the same cache lines of w.
  parallel_for(0, CRS, grain_for(g.K), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      for (int64_t k = 0; k < g.K; ++k) wT[i * g.K + k] = w[k * CRS + i];
    }
  });
  return wT;
}

// sum of v[0..n) in double, in a fixed order: kLanes running sums (independent additions the
// compiler can put in one vector register, where a single sum would wait on each add), then
// those sums in order.
template <typename T>
double row_sum(const T* v, int64_t n) {
  constexpr int64_t kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lane[l] += v[i + l];
  }
  for (; i < n; ++i) lane[i % kLanes] += v[i];
  double s = 0.0;
  for (int64_t l = 0; l < kLanes; ++l) s += lane[l];
  return s;
}

// dw[k, i] = the groups' partial[i, k] ([CRS, K] each, groups of them one after another) added
// in group order. Each element is independent, so the loop over i may be split freely; a row of
// partials is summed into `row`, then scattered.
template <typename T>
void reduce_transposed_partials(const T* partial, int64_t groups, int64_t CRS, int64_t K, T* dw) {
  parallel_for(0, CRS, grain_for(K * groups), [&](int64_t i0, int64_t i1) {
    std::vector<T> row(static_cast<size_t>(K));
    for (int64_t i = i0; i < i1; ++i) {
      const T* first = partial + i * K;
      std::copy(first, first + K, row.begin());
      for (int64_t grp = 1; grp < groups; ++grp) {
        const T* part = partial + grp * CRS * K + i * K;
        for (int64_t k = 0; k < K; ++k) row[k] += part[k];
      }
      for (int64_t k = 0; k < K; ++k) dw[k * CRS + i] = row[k];
    }
  });
}

}  // namespace ember::kernels::cpu::conv_detail
