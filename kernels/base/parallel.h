// ember/kernels/base/parallel.h — multi-threading for ember's CPU kernels.
//
// One thread count governs everything ember runs on the CPU: its elementwise and reduction loops
// and its GEMM (kernels/cpu/gemm.cpp splits large products into panels) all run on ember's own
// pool (kernels/base/parallel.cpp says why it is not OpenMP). Small ranges run on the calling
// thread: for a few thousand elements waking a thread costs more than the work. A kernel must
// give the same result however its range is split (each output element written by one task, in
// an order fixed by the sizes), so results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/base/loop.h"

namespace ember::kernels {

int num_threads();
// Sets the thread count (at least 1). Call it between ops, not while another thread runs them:
// the pool is rebuilt with the new number of workers.
void set_num_threads(int n);

// True on a thread that is running a chunk of a parallel region; a parallel_for there runs on
// that thread alone.
bool in_parallel_region();

// Makes every parallel loop started on the calling thread run on that thread alone, from now
// until it is undone (`false`). The DataLoader's workers do this, as PyTorch's workers set one
// thread each: they make whole batches side by side already, and sharing the pool too would
// take it from the training loop. Results do not change (see above).
void set_this_thread_serial(bool serial);
bool this_thread_serial();

// Below this many elements an elementwise loop stays on one thread.
constexpr int64_t kGrainSize = 32768;

// A range is cut into up to this many chunks per thread, claimed one by one, so that a thread
// the OS puts aside for a while holds up only the chunk it is in.
constexpr int64_t kChunksPerThread = 4;

namespace detail {
void parallel_run(int64_t begin, int64_t end, int threads, int64_t chunks, void* ctx,
                  void (*fn)(void*, int64_t, int64_t));
}

// Calls f(chunk_begin, chunk_end) over [begin, end) split into chunks of at least `grain`
// elements (at most kChunksPerThread per thread), on up to num_threads() threads. f is called
// from several threads at once, on disjoint chunks. If f throws, no further chunk starts and the
// first exception is rethrown here once the chunks already running have finished.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), max_chunks));
  if (threads <= 1 || this_thread_serial()) {
    f(begin, end);
    return;
  }
  const int64_t chunks = std::min<int64_t>(max_chunks, threads * kChunksPerThread);
  detail::parallel_run(begin, end, threads, chunks, const_cast<F*>(&f),
                       [](void* ctx, int64_t b, int64_t e) {
    (*static_cast<const F*>(ctx))(b, e);
  });
}

// The loop of every reduction-like kernel over an [outer, r, inner] block that does not reduce the
// last dim: calls f(o, k0, kn) for each outer index o and each run [k0, k0 + kn) of at most
// `block` inner columns, in parallel. A task owns whole output runs (no two threads write one
// output element), and walking the r rows of a run reads memory forward.
template <typename F>
void for_each_column_block(int64_t outer, int64_t r, int64_t inner, int64_t block, const F& f) {
  block = std::min(block, std::max<int64_t>(inner, 1));
  const int64_t blocks = (inner + block - 1) / block;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(r * block, 1));
  parallel_for(0, outer * blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t k0 = (t % blocks) * block;
      f(t / blocks, k0, std::min(block, inner - k0));
    }
  });
}

// Walks every element of a coalesced StridedLoop. For each run along the innermost dimension it
// calls inner(offsets, n, inner_strides): offsets[k] is the element offset of operand k at the
// start of the run, n its length, inner_strides[k] the innermost stride of operand k. Runs are
// split across threads when the loop is large.
template <int N, typename Inner>
void for_each_run(const StridedLoop<N>& L, const Inner& inner, int64_t grain = kGrainSize) {
  if (L.numel == 0) return;
  const int last = L.ndim - 1;
  parallel_for(0, L.numel, grain, [&](int64_t begin, int64_t end) {
    int64_t idx[kMaxDims];
    int64_t off[N] = {};
    int64_t rem = begin;
    for (int d = last; d >= 0; --d) {
      idx[d] = rem % L.shape[d];
      rem /= L.shape[d];
      for (int k = 0; k < N; ++k) off[k] += idx[d] * L.strides[k][d];
    }
    int64_t inner_st[N];
    for (int k = 0; k < N; ++k) inner_st[k] = L.strides[k][last];
    int64_t pos = begin;
    while (pos < end) {
      const int64_t len = std::min(L.shape[last] - idx[last], end - pos);
      inner(off, len, inner_st);
      pos += len;
      idx[last] += len;
      for (int k = 0; k < N; ++k) off[k] += len * inner_st[k];
      for (int d = last; d > 0 && idx[d] == L.shape[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (int k = 0; k < N; ++k) off[k] += L.strides[k][d - 1] - L.shape[d] * L.strides[k][d];
      }
    }
  });
}

}  // namespace ember::kernels
