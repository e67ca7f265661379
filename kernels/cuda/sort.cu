// ember/kernels/cuda/sort.cu — the CUDA side of the sort family (kernels/sort.h): every line of
// a contiguous [outer, n, inner] block put in order with a bitonic sort, for sort and topk.
//
// Why bitonic. A GPU sorts well with a network whose every step is n/2 independent
// compare-and-swaps on fixed pairs: no thread waits for another inside a step, and the pairs do
// not depend on the data, so every thread of a warp does the same work. Bitonic sort is the
// simplest such network. Pad the line to a power of two P (padding sorts after every element);
// then for size = 2, 4, ..., P, merge runs of `size`: for stride = size/2, size/4, ..., 1,
// compare element lo with lo + stride and swap them when they are out of order, where "in
// order" means ascending in runs whose (lo & size) bit is 0 and descending in the others. Each
// merge turns two sorted runs facing opposite ways into one sorted run of twice the length; the
// last one (size = P) leaves the whole line sorted. log2(P) * (log2(P) + 1) / 2 steps,
// O(P log^2 P) comparisons: more than a merge sort's, but all in parallel.
//
// The order is kernels/sort.h's sort_before: by value, NaN largest, ties by position. The pairs
// carry (value, position), so the network, which is not stable, sorts ties by position: the
// answer is the CPU's, bit for bit.
//
// Two paths, picked per call by the line length:
//   sort_lines_shared_kernel  n <= kSharedLineMax: one block per line; the line's P values and
//                             positions live in shared memory through every step, and a
//                             __syncthreads separates the steps.
//   bitonic_step_kernel       longer lines: the pairs live in a scratch buffer in global memory
//                             (sort_load_kernel fills it, sort_store_kernel writes the first
//                             `keep`), and each step is one launch over every line's pairs: a
//                             launch boundary is the barrier that a grid has instead of
//                             __syncthreads.
#include "kernels/sort.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/workspace.h"

namespace ember::kernels::cuda {

namespace {

// Longest line sorted in shared memory: 2048 pairs of an 8-byte position and an up-to-8-byte key
// are 32 KiB, within the 48 KiB a block may have without opting in.
constexpr int64_t kSharedLineMax = 2048;

// The key a pair carries: the value itself, widened to 4 bytes for uint8 and bool. Shared memory
// is served in 4-byte words, so two threads writing neighbouring bytes of one word would touch
// the same word in one step (racecheck counts that as a race); 4-byte keys give each element a
// word of its own. Widening keeps the order: false < true and 0..255 compare the same as int32.
template <typename T>
using sort_key_t = std::conditional_t<(sizeof(T) < 4), int32_t, T>;

__host__ __device__ inline int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// sort_before, with the padding (positions >= n) after every real element.
template <typename K>
__device__ inline bool pair_before(K a, int64_t pa, K b, int64_t pb, int64_t n, bool descending) {
  if ((pa >= n) != (pb >= n)) return pb >= n;
  return sort_before(a, pa, b, pb, descending);
}

// One compare-and-swap of the network: pair i of a line's P/2 pairs in the step (size, stride).
// The pair's lower element lo is i with a 0 bit inserted at stride's place; its partner is
// lo + stride. In an ascending run (lo & size == 0) the partner must not come before lo; in a
// descending run, lo must not come before the partner.
template <typename K>
__device__ inline void compare_swap(K* key, int64_t* pos, int64_t i, int64_t size, int64_t stride,
                                    int64_t n, bool descending) {
  const int64_t lo = 2 * i - (i & (stride - 1));
  const int64_t hi = lo + stride;
  const bool ascending_run = (lo & size) == 0;
  const K key_lo = key[lo], key_hi = key[hi];
  const int64_t pos_lo = pos[lo], pos_hi = pos[hi];
  if (pair_before(key_hi, pos_hi, key_lo, pos_lo, n, descending) == ascending_run) {
    key[lo] = key_hi;
    key[hi] = key_lo;
    pos[lo] = pos_hi;
    pos[hi] = pos_lo;
  }
}

// ---- short lines: one block per line, the whole sort in shared memory -------------------------
// A block takes line (o, k), loads its n elements into shared memory (position j's key and j;
// padded slots get key 0 and a position >= n, so they sort last), runs every step of the network
// with each thread doing pairs tid, tid + blockDim.x, ... and a barrier after each step, then
// writes the first `keep`. Memory: for inner == 1 the threads of a warp read and write
// consecutive elements (coalesced); for inner > 1 a line's elements are `inner` apart, so each
// access is a separate transaction (the price of sorting in place of a transpose). Shared
// memory: the P positions (int64), then the P keys. Blocks stride over the lines, and the
// barrier at the end of a line guards the shared memory its next line reuses.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    sort_lines_shared_kernel(int64_t lines, int64_t n, int64_t inner, int64_t keep, bool descending,
                             int64_t padded, const T* in, T* values, int64_t* indices) {
  using K = sort_key_t<T>;
  EMBER_DYNAMIC_SHARED(unsigned char, shared);
  int64_t* pos = reinterpret_cast<int64_t*>(shared);  // P positions
  K* key = reinterpret_cast<K*>(pos + padded);        // P keys
  for (const int64_t line : grid_stride(blockIdx.x, lines, gridDim.x)) {
    const int64_t o = line / inner, k = line % inner;
    const T* src = in + o * n * inner + k;
    for (int64_t j = threadIdx.x; j < padded; j += blockDim.x) {
      pos[j] = j;
      key[j] = j < n ? static_cast<K>(src[j * inner]) : K(0);
    }
    __syncthreads();
    for (int64_t size = 2; size <= padded; size *= 2) {
      for (int64_t stride = size / 2; stride > 0; stride /= 2) {
        for (int64_t i = threadIdx.x; i < padded / 2; i += blockDim.x)
          compare_swap(key, pos, i, size, stride, n, descending);
        __syncthreads();
      }
    }
    T* dst_values = values + o * keep * inner + k;
    int64_t* dst_indices = indices + o * keep * inner + k;
    for (int64_t i = threadIdx.x; i < keep; i += blockDim.x) {
      dst_values[i * inner] = static_cast<T>(key[i]);
      dst_indices[i * inner] = pos[i];
    }
    __syncthreads();  // the next line's loads overwrite the keys just read
  }
}

// ---- long lines: the same network, one launch per step, pairs in global memory ----------------
// The scratch holds `lines` rows of P keys and P positions. A thread per slot fills it (strided
// reads for inner > 1, as above; consecutive writes).
template <typename T>
__global__ void __launch_bounds__(kBlock)
    sort_load_kernel(int64_t lines, int64_t n, int64_t inner, int64_t padded, const T* in,
                     sort_key_t<T>* key, int64_t* pos) {
  for (const int64_t s : grid_stride(lines * padded)) {
    const int64_t line = s / padded, j = s % padded;
    const int64_t o = line / inner, k = line % inner;
    pos[s] = j;
    key[s] = j < n ? static_cast<sort_key_t<T>>(in[(o * n + j) * inner + k]) : sort_key_t<T>(0);
  }
}

// One step (size, stride) of the network for every line: a thread per pair. Consecutive threads
// take consecutive pairs, which for stride >= 32 are consecutive slots (coalesced); for small
// strides a warp's lo and hi interleave within a few cache lines.
template <typename K>
__global__ void __launch_bounds__(kBlock)
    bitonic_step_kernel(int64_t lines, int64_t n, int64_t padded, int64_t size, int64_t stride,
                        bool descending, K* key, int64_t* pos) {
  const int64_t half = padded / 2;
  for (const int64_t p : grid_stride(lines * half)) {
    const int64_t line = p / half;
    compare_swap(key + line * padded, pos + line * padded, p % half, size, stride, n, descending);
  }
}

// The first `keep` slots of every sorted line, back in the [outer, keep, inner] layout.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    sort_store_kernel(int64_t lines, int64_t inner, int64_t keep, int64_t padded,
                      const sort_key_t<T>* key, const int64_t* pos, T* values, int64_t* indices) {
  for (const int64_t s : grid_stride(lines * keep)) {
    const int64_t line = s / keep, i = s % keep;
    const int64_t o = line / inner, k = line % inner;
    const int64_t at = (o * keep + i) * inner + k;
    values[at] = static_cast<T>(key[line * padded + i]);
    indices[at] = pos[line * padded + i];
  }
}

template <typename T>
void sort_typed(int64_t outer, int64_t n, int64_t inner, int64_t keep, bool descending, const T* in,
                T* values, int64_t* indices) {
  using K = sort_key_t<T>;
  const int64_t lines = outer * inner;
  const int64_t padded = next_pow2(n);
  if (n <= kSharedLineMax) {
    // A thread per pair up to kBlock threads (at least one warp): short lines get small blocks.
    const int threads =
        static_cast<int>(std::min<int64_t>(kBlock, std::max<int64_t>(32, padded / 2)));
    const size_t shared = static_cast<size_t>(padded) * (sizeof(int64_t) + sizeof(K));
    EMBER_LAUNCH(strided_blocks(lines, 1 << 16), threads, shared, stream(),
                 sort_lines_shared_kernel<T>)
    (lines, n, inner, keep, descending, padded, in, values, indices);
    EMBER_LAUNCH_CHECK("sort_lines_shared_kernel");
    return;
  }
  Workspace keys(static_cast<size_t>(lines * padded) * sizeof(K));
  Workspace positions(static_cast<size_t>(lines * padded) * sizeof(int64_t));
  EMBER_LAUNCH(grid_for(lines * padded), kBlock, 0, stream(), sort_load_kernel<T>)
  (lines, n, inner, padded, in, keys.as<K>(), positions.as<int64_t>());
  EMBER_LAUNCH_CHECK("sort_load_kernel");
  for (int64_t size = 2; size <= padded; size *= 2) {
    for (int64_t stride = size / 2; stride > 0; stride /= 2) {
      EMBER_LAUNCH(grid_for(lines * padded / 2), kBlock, 0, stream(), bitonic_step_kernel<K>)
      (lines, n, padded, size, stride, descending, keys.as<K>(), positions.as<int64_t>());
      EMBER_LAUNCH_CHECK("bitonic_step_kernel");
    }
  }
  EMBER_LAUNCH(grid_for(lines * keep), kBlock, 0, stream(), sort_store_kernel<T>)
  (lines, inner, keep, padded, keys.as<K>(), positions.as<int64_t>(), values, indices);
  EMBER_LAUNCH_CHECK("sort_store_kernel");
}

}  // namespace

void sort(DType dtype, int64_t outer, int64_t n, int64_t inner, int64_t keep, bool descending,
          const void* in, void* values, int64_t* indices) {
  EMBER_DISPATCH_ALL(dtype, "sort", [&] {
    if (outer * inner <= 0 || keep <= 0) return;  // nothing to write (the dtype is checked first)
    sort_typed<scalar_t>(outer, n, inner, keep, descending, static_cast<const scalar_t*>(in),
                         static_cast<scalar_t*>(values), indices);
  });
}

const SortKernels sort_kernels = {&sort};

}  // namespace ember::kernels::cuda
