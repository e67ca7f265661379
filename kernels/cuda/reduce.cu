// ember/kernels/cuda/reduce.cu — sum, prod and max/min (with argmax/argmin) over the middle axis
// of a contiguous [outer, r, inner] block, the backward of prod and max/min, and cumsum_kernel.
//
// Element (o, j, k) sits at (o * r + j) * inner + k; output (o, k) at o * inner + k and reduces
// over j. The rules are the CPU's (kernels/reduce.h): sums accumulate in double (int64 for
// integer dtypes) and are then scaled and converted; max/min ties go to the first j; NaN wins
// for max and min alike, and its index is the first NaN's.
//
// Kernels (each handles every size, grid-stride):
//   reduce_rows_kernel     inner == 1: each output is one contiguous row of r elements; a thread
//                          per row for r <= 16, a warp per row up to kWarpRowMax, a block per
//                          row (or row segment) above.
//   reduce_columns_kernel  inner > 1: warps read 32 consecutive k (coalesced), up to 8 slices
//                          of j per block.
//   reduce_finish_kernel   when few outputs have long rows, the first two kernels leave one
//                          partial result per (output, segment of j) and this one combines them.
//   prod_backward_kernel   one thread per output (o, k), walking its r elements twice.
//   max_min_backward_kernel  one thread per element of grad_in.
//
// Many threads for few outputs. A full reduction of 10^7 elements has one output: one warp or
// one block would leave all but one SM idle. So r is cut into `splits` segments, every (output,
// segment) is one block's work (about kTargetBlocks blocks in all, enough for any current GPU),
// each block writes its partial result, and reduce_finish_kernel combines each output's
// partials — two passes instead of floating-point atomics.
//
// Determinism: which thread adds which element, and the order in which partial results are
// combined (a fixed shuffle tree, a fixed loop over shared memory, a fixed walk over the
// segments), depend only on (outer, r, inner) — not on the GPU or on timing. No atomics. So a
// sum gives the same bits on every run (not the CPU's bits: the order of the additions differs,
// which in double accumulation is far below float precision). Max/min are exact anyway.
//
// The partial results live in g_partials, a fixed device array (one per GPU, part of the
// module) rather than memory asked from the allocator per call; kMaxPartials bounds the splits.
// Pass 1 and pass 2 of a reduction are queued back to back on ember's single in-order stream,
// under a host mutex so that two host threads cannot interleave their passes on that buffer.
#include "kernels/reduce.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "kernels/base/scalar_math.h"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

constexpr int kRowWarps = 8;      // warps per block in the row and finish kernels (256 threads)
constexpr int kColumnWidth = 32;  // consecutive k per block in the column kernel (one warp)
constexpr int kColumnSlices = 8;  // j slices per block in the column kernel (256 threads)
constexpr int64_t kThreadRowMax = 16;      // rows up to this length: one thread each
constexpr int64_t kWarpRowMax = 2048;      // rows up to this length: one warp each (<= 64 per lane)
constexpr int64_t kTargetBlocks = 1024;    // split r until about this many blocks are busy...
constexpr int64_t kMinRowSegment = 4096;   // ...but keep >= 16 elements per thread of a row block
constexpr int64_t kMinColumnSegment = 64;  // ...and >= 8 j per thread of a column block
constexpr int64_t kMaxPartials = 16384;    // partial results g_partials can hold

// Scratch for the partial results of split reductions: 16 bytes per entry, enough for any
// accumulator below (a double, an int64, or a value with its int64 index). 256 KiB per GPU.
__device__ double2 g_partials[kMaxPartials];
std::mutex g_partials_mutex;

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
__host__ __device__ inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// __shfl_down_sync for every type an accumulator holds (1-byte types travel as int).
template <typename T>
__device__ inline T shfl_down(T v, int delta) {
  if constexpr (sizeof(T) == 1) {
    return static_cast<T>(__shfl_down_sync(kFullMask, static_cast<int>(v), delta));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<int64_t>(__shfl_down_sync(kFullMask, static_cast<long long>(v), delta));
  } else {
    return __shfl_down_sync(kFullMask, v, delta);
  }
}

// ---- the two reductions, as "reducers" ---------------------------------------------------------
// A reducer says what a partial result (Acc) is, how one element becomes one, how two combine,
// and how the final one is written. The kernels below are written once for both.

// sum: Acc is the running sum, double for float dtypes and int64 for integer ones (as the CPU).
template <typename T>
struct SumReducer {
  using elem_t = T;
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

  T* out;
  double scale;

  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc from_element(T x, int64_t /*j*/) const { return static_cast<Acc>(x); }
  __device__ Acc combine(Acc a, Acc b) const { return wrapping_add(a, b); }  // int64 sums wrap
  __device__ Acc shuffle_down(Acc a, int delta) const { return shfl_down(a, delta); }
  // out = scale * sum, computed in double and converted, exactly as the CPU does; an integer sum
  // with scale 1 is stored as it is (a double would round int64 sums above 2^53).
  __device__ void store(int64_t o, Acc a) const {
    if constexpr (std::is_integral_v<Acc>) {
      if (scale == 1.0) {
        out[o] = static_cast<T>(a);
        return;
      }
    }
    out[o] = convert_value<T>(static_cast<double>(a) * scale);
  }
};

// prod: Acc is the running product, double for float dtypes and uint64 for integer ones
// (unsigned: an overflowing product wraps as int64 arithmetic does; multiplication modulo 2^64
// is associative, so any tree gives the CPU's bits). Floats: the order of the products differs
// from the CPU's, far below float precision in double.
template <typename T>
struct ProdReducer {
  using elem_t = T;
  using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

  T* out;

  __device__ Acc identity() const { return Acc(1); }
  __device__ Acc from_element(T x, int64_t /*j*/) const { return static_cast<Acc>(x); }
  __device__ Acc combine(Acc a, Acc b) const { return a * b; }
  __device__ Acc shuffle_down(Acc a, int delta) const {
    if constexpr (std::is_same_v<Acc, uint64_t>)
      return static_cast<uint64_t>(shfl_down(static_cast<int64_t>(a), delta));
    else return shfl_down(a, delta);
  }
  __device__ void store(int64_t o, Acc a) const { out[o] = static_cast<T>(a); }
};

// max/min: Acc is a candidate (value, index); index -1 means "no element seen yet".
template <typename T>
struct Candidate {
  T value;
  int64_t index;
};

template <typename T>
__device__ inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// THE combine rule of max/min: does candidate a beat candidate b?
//   - an empty candidate (index -1) never beats anything, and anything beats it;
//   - a NaN beats every number; of two NaNs the smaller index wins;
//   - of two numbers the larger (max) / smaller (min) wins; of two equal ones (including
//     -0.0 == +0.0) the smaller index wins.
// Why partial results from any threads, combined in any tree, give the CPU's answer: the rule
// ranks all (value, index) pairs of a row in one strict total order (NaN first, then by value,
// then by index; indices are all distinct, so no two pairs tie). Picking the better of two is
// then associative and commutative — the result of any combination order is the top pair of
// that order. And the top pair is what the CPU's left-to-right scan keeps: with a NaN in the row
// the scan stops at the first NaN (smallest index among NaNs); without one it replaces only on
// a strictly better value, so it keeps the first (smallest-index) occurrence of the extreme.
template <typename T>
__device__ inline bool beats(const Candidate<T>& a, const Candidate<T>& b, bool is_max) {
  if (a.index < 0) return false;
  if (b.index < 0) return true;
  const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
  if (a_nan || b_nan) return a_nan && b_nan ? a.index < b.index : a_nan;
  if (a.value == b.value) return a.index < b.index;
  return is_max ? b.value < a.value : a.value < b.value;
}

template <typename T>
struct MaxMinReducer {
  using elem_t = T;
  using Acc = Candidate<T>;

  bool is_max;  // a runtime flag: one kernel set serves max and min
  T* values;
  int64_t* indices;

  __device__ Acc identity() const { return Acc{T(0), -1}; }
  __device__ Acc from_element(T x, int64_t j) const { return Acc{x, j}; }
  __device__ Acc combine(const Acc& a, const Acc& b) const { return beats(b, a, is_max) ? b : a; }
  __device__ Acc shuffle_down(const Acc& a, int delta) const {
    return Acc{shfl_down(a.value, delta), shfl_down(a.index, delta)};
  }
  __device__ void store(int64_t o, const Acc& a) const {
    values[o] = a.value;
    indices[o] = a.index;
  }
};

// Tree reduction over the 32 lanes of a warp: after 5 steps lane 0 holds the combination of all
// 32 inputs (lanes whose partner is past lane 31 combine with themselves; that only affects lanes
// whose result is never used). Every lane of the warp must call it.
template <typename R>
__device__ inline typename R::Acc warp_reduce(const R& red, typename R::Acc a) {
  for (int delta = kWarp / 2; delta > 0; delta /= 2) a = red.combine(a, red.shuffle_down(a, delta));
  return a;
}

// Where the result of one (output, segment) goes: straight to the output when r is not split,
// else to its slot in the partials, out_index * splits + segment.
template <typename R>
__device__ inline void emit(const R& red, typename R::Acc* partials, int64_t splits,
                            int64_t out_index, int64_t segment, const typename R::Acc& a) {
  if (partials == nullptr) red.store(out_index, a);
  else partials[out_index * splits + segment] = a;
}

// ---- inner == 1: rows ----------------------------------------------------------------------------
// How the threads of reduce_rows_kernel share the rows (chosen from r by run_reduction).
enum class RowMode { ThreadPerRow, WarpPerSegment, BlockPerSegment };

// Block shape (32, kRowWarps): threadIdx.x is the lane, threadIdx.y the warp.
// The work is `outer * splits` row segments; segment s covers j in [part * chunk, part * chunk +
// chunk) of row o = s / splits, part = s % splits (splits == 1: the whole row).
//   ThreadPerRow (r <= kThreadRowMax, never split): one thread walks one whole short row, the
//     threads of the grid striding over the rows. A warp reads 32 neighbouring rows, i.e. one
//     contiguous span of 32 * r elements over its r steps, which L1 serves from the lines the
//     first steps brought in. (A warp per row would leave most lanes idle for r = 1..16.)
//   WarpPerSegment (short rows): one warp per segment, the warps of the grid striding over
//     segments. Lane l reads j = l, l + 32, ...: at each step the warp reads 32 consecutive
//     elements, one coalesced 128-byte (float) transaction. The lanes' partials are combined
//     with __shfl_down_sync, no shared memory.
//   BlockPerSegment (long rows): one block per segment, the blocks striding over segments.
//     Thread t of the 256 reads j = t, t + 256, ... — each warp still reads 32 consecutive
//     elements per step. Each warp reduces with shuffles, lane 0 puts the warp's result in
//     shared memory (smem[w], one Acc per warp), and warp 0 reduces those kRowWarps values with
//     shuffles. This is the mode that gets split when there are few rows.
template <typename R>
__global__ void __launch_bounds__(kWarp * kRowWarps)
    reduce_rows_kernel(R red, const typename R::elem_t* in, int64_t outer, int64_t r,
                       int64_t splits, int64_t chunk, RowMode mode, typename R::Acc* partials) {
  using Acc = typename R::Acc;
  __shared__ Acc smem[kRowWarps];
  const int lane = static_cast<int>(threadIdx.x);
  const int warp = static_cast<int>(threadIdx.y);
  const int t = warp * kWarp + lane;  // thread index within the block
  const int64_t segments = outer * splits;
  if (mode == RowMode::ThreadPerRow) {
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kWarp * kRowWarps + t;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarp * kRowWarps;
    for (const int64_t o : grid_stride(first, outer, stride)) {
      const typename R::elem_t* row = in + o * r;
      Acc a = red.identity();
      for (int64_t j = 0; j < r; ++j) a = red.combine(a, red.from_element(row[j], j));
      red.store(o, a);
    }
    return;
  }
  if (mode == RowMode::WarpPerSegment) {
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowWarps + warp;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kRowWarps;
    for (const int64_t s : grid_stride(first, segments, stride)) {  // uniform within the warp
      const int64_t o = s / splits, part = s % splits;
      const int64_t j0 = part * chunk, j1 = min64(r, j0 + chunk);
      const typename R::elem_t* row = in + o * r;
      Acc a = red.identity();
      for (int64_t j = j0 + lane; j < j1; j += kWarp)
        a = red.combine(a, red.from_element(row[j], j));
      a = warp_reduce(red, a);
      if (lane == 0) emit(red, partials, splits, o, part, a);
    }
    return;
  }
  for (const int64_t s : grid_stride(blockIdx.x, segments, gridDim.x)) {  // uniform in the block
    const int64_t o = s / splits, part = s % splits;
    const int64_t j0 = part * chunk, j1 = min64(r, j0 + chunk);
    const typename R::elem_t* row = in + o * r;
    Acc a = red.identity();
    for (int64_t j = j0 + t; j < j1; j += kWarp * kRowWarps)
      a = red.combine(a, red.from_element(row[j], j));
    a = warp_reduce(red, a);
    if (lane == 0) smem[warp] = a;
    __syncthreads();
    if (warp == 0) {
      a = lane < kRowWarps ? smem[lane] : red.identity();
      a = warp_reduce(red, a);
      if (lane == 0) emit(red, partials, splits, o, part, a);
    }
    __syncthreads();  // smem is rewritten by the next segment
  }
}

// ---- inner > 1: columns --------------------------------------------------------------------------
// Block shape (32, kColumnSlices = 8): 8 rows of 32 threads, split into `slices` j-slices of
// `groups` = 8 / slices warps each (slices is 8, or 1, 2, 4 when r < 8, so that threads are not
// left without a j). Thread (x, y) belongs to k-group g = y % groups and slice sl = y / groups.
// A block's work item is (o, a tile of 32 * groups consecutive k, a segment of j); items are
// strided over the blocks of the grid. Thread (x, y) owns output (o, k = tile * 32 * groups +
// g * 32 + x) and reads its j = j0 + sl, j0 + sl + slices, ...
// Memory: at each step the 32 threads of a warp (same y, consecutive x) read in[o, j, k..k+31],
// 32 consecutive elements — coalesced, even though one output's elements are `inner` apart.
// Shared memory smem[y][x] holds every thread's partial result; the threads of slice 0 then
// combine the slices of their k in the order sl = 0, 1, ... (fixed, so deterministic) and write
// the output or its partial. Threads with k >= inner (the last tile of a row) take part in the
// barriers only.
template <typename R>
__global__ void __launch_bounds__(kColumnWidth * kColumnSlices)
    reduce_columns_kernel(R red, const typename R::elem_t* in, int64_t outer, int64_t r,
                          int64_t inner, int slices, int64_t splits, int64_t chunk,
                          typename R::Acc* partials) {
  using Acc = typename R::Acc;
  __shared__ Acc smem[kColumnSlices][kColumnWidth];
  const int x = static_cast<int>(threadIdx.x);
  const int y = static_cast<int>(threadIdx.y);
  const int groups = kColumnSlices / slices;
  const int g = y % groups, sl = y / groups;
  const int64_t width = static_cast<int64_t>(kColumnWidth) * groups;
  const int64_t tiles = ceil_div(inner, width);
  const int64_t items = outer * tiles * splits;
  for (const int64_t item : grid_stride(blockIdx.x, items, gridDim.x)) {  // uniform in the block
    const int64_t part = item % splits;
    const int64_t tile = (item / splits) % tiles;
    const int64_t o = item / splits / tiles;
    const int64_t k = tile * width + g * kColumnWidth + x;
    const int64_t j0 = part * chunk, j1 = min64(r, j0 + chunk);
    Acc a = red.identity();
    if (k < inner) {
      const typename R::elem_t* col = in + o * r * inner + k;
      for (int64_t j = j0 + sl; j < j1; j += slices)
        a = red.combine(a, red.from_element(col[j * inner], j));
    }
    smem[y][x] = a;
    __syncthreads();
    if (sl == 0 && k < inner) {
      for (int s = 1; s < slices; ++s) a = red.combine(a, smem[g + s * groups][x]);
      emit(red, partials, splits, o * inner + k, part, a);
    }
    __syncthreads();  // smem is rewritten by the next item
  }
}

// ---- pass 2 of a split reduction -----------------------------------------------------------------
// Block shape (32, kRowWarps): one warp per output, warps striding over the outputs. Lane l
// combines partials[out * splits + l], [.. + l + 32], ... (an output's partials are contiguous,
// so the warp's loads are coalesced), then the warp reduces with shuffles and lane 0 writes the
// final value. No shared memory.
template <typename R>
__global__ void __launch_bounds__(kWarp * kRowWarps)
    reduce_finish_kernel(R red, const typename R::Acc* partials, int64_t outputs, int64_t splits) {
  using Acc = typename R::Acc;
  const int lane = static_cast<int>(threadIdx.x);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.y;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kRowWarps;
  for (const int64_t out : grid_stride(first, outputs, stride)) {  // uniform within the warp
    Acc a = red.identity();
    for (int64_t s = lane; s < splits; s += kWarp) a = red.combine(a, partials[out * splits + s]);
    a = warp_reduce(red, a);
    if (lane == 0) red.store(out, a);
  }
}

// How many segments to cut r into: 1 when there are already >= kTargetBlocks work units (rows or
// column tiles) or r is short; otherwise enough to reach about kTargetBlocks, while keeping each
// segment at least min_segment long and all partials within kMaxPartials.
int64_t choose_splits(int64_t units, int64_t r, int64_t min_segment, int64_t outputs) {
  if (units >= kTargetBlocks || r <= min_segment) return 1;
  int64_t s = std::min(ceil_div(kTargetBlocks, units), ceil_div(r, min_segment));
  s = std::min(s, kMaxPartials / outputs);
  return std::max<int64_t>(1, s);
}

// Plans and launches one reduction (pass 1, and pass 2 when r is split).
template <typename R>
void run_reduction(const R& red, const typename R::elem_t* in, int64_t outer, int64_t r,
                   int64_t inner) {
  using Acc = typename R::Acc;
  static_assert(sizeof(Acc) <= sizeof(double2) && alignof(Acc) <= alignof(double2),
                "a partial result must fit a g_partials slot");
  const int64_t outputs = outer * inner;
  if (outputs <= 0) return;  // nothing to write

  // The plan: which kernel, how its threads share the work, and how many segments r is cut into.
  const bool rows = inner == 1;
  const RowMode mode = r <= kThreadRowMax ? RowMode::ThreadPerRow
                       : r <= kWarpRowMax ? RowMode::WarpPerSegment
                                          : RowMode::BlockPerSegment;
  int slices = kColumnSlices;  // j-slices of a column block: fewer when r < 8
  while (slices > 1 && slices / 2 >= r) slices /= 2;
  const int64_t tiles =
      ceil_div(inner, static_cast<int64_t>(kColumnWidth) * (kColumnSlices / slices));
  int64_t splits = 1;
  if (rows && mode == RowMode::BlockPerSegment)
    splits = choose_splits(outer, r, kMinRowSegment, outputs);
  else if (!rows) splits = choose_splits(outer * tiles, r, kMinColumnSegment, outputs);
  int64_t chunk = r;
  if (splits > 1) {
    chunk = ceil_div(r, splits);
    splits = ceil_div(r, chunk);  // no empty trailing segment
  }

  std::unique_lock<std::mutex> lock(g_partials_mutex, std::defer_lock);
  Acc* partials = nullptr;
  if (splits > 1) {
    lock.lock();
    void* p = nullptr;
    EMBER_CUDA_CHECK(cudaGetSymbolAddress(&p, g_partials));
    partials = static_cast<Acc*>(p);
  }

  if (rows) {
    const int64_t segments = outer * splits;
    const unsigned grid = mode == RowMode::ThreadPerRow     ? grid_for(outer, kWarp * kRowWarps)
                          : mode == RowMode::WarpPerSegment ? grid_for(segments, kRowWarps)
                                                            : grid_for(segments, 1);
    EMBER_LAUNCH(grid, dim3(kWarp, kRowWarps), 0, stream(), reduce_rows_kernel)
    (red, in, outer, r, splits, chunk, mode, partials);
    EMBER_LAUNCH_CHECK("reduce_rows_kernel");
  } else {
    const int64_t items = outer * tiles * splits;
    EMBER_LAUNCH(grid_for(items, 1), dim3(kColumnWidth, kColumnSlices), 0, stream(),
                 reduce_columns_kernel)
    (red, in, outer, r, inner, slices, splits, chunk, partials);
    EMBER_LAUNCH_CHECK("reduce_columns_kernel");
  }
  if (splits > 1) {
    EMBER_LAUNCH(grid_for(outputs, kRowWarps), dim3(kWarp, kRowWarps), 0, stream(),
                 reduce_finish_kernel)
    (red, partials, outputs, splits);
    EMBER_LAUNCH_CHECK("reduce_finish_kernel");
  }
}

// ---- backward of prod ----------------------------------------------------------------------------
// One thread per output (o, k), grid-stride: pass 1 writes the prefix products prod_{i < j} in[i]
// into grad_in[j]; pass 2 walks back with the suffix product s = prod_{i > j} in[i] and writes
// grad_in[j] = prefix * s * grad[o, k] — the product of the other elements, with no division, so
// zeros in the slice are exact (as kernels/reduce.h describes). Accumulated in double.
// Memory: for inner > 1 consecutive threads own consecutive k, so each step of the walk reads
// and writes 32 consecutive elements per warp (coalesced); for inner == 1 each thread walks its
// own row (strided across the warp, cached in L1/L2 between the passes). No shared memory.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    prod_backward_kernel(int64_t outer, int64_t r, int64_t inner, const T* in, const T* grad,
                         T* grad_in) {
  const int64_t outputs = outer * inner;
  for (const int64_t out : grid_stride(outputs)) {
    const int64_t o = out / inner, k = out % inner;
    const int64_t base = o * r * inner + k;
    double acc = 1.0;
    for (int64_t j = 0; j < r; ++j) {
      grad_in[base + j * inner] = static_cast<T>(acc);
      acc *= static_cast<double>(in[base + j * inner]);
    }
    acc = 1.0;
    const double g = static_cast<double>(grad[out]);
    for (int64_t j = r - 1; j >= 0; --j) {
      const int64_t at = base + j * inner;
      grad_in[at] = static_cast<T>(static_cast<double>(grad_in[at]) * acc * g);
      acc *= static_cast<double>(in[at]);
    }
  }
}

// ---- backward of max/min -------------------------------------------------------------------------
// One thread per element e = (o, j, k) of grad_in, grid-stride: grad_in[e] = grad[o, k] if
// indices[o, k] == j, else 0. Every element is written (zeros included), so grad_in needs no
// separate clearing. Memory: consecutive threads write consecutive grad_in elements (coalesced);
// their grad/indices reads are consecutive in k (inner > 1) or the same cached value (inner == 1,
// r threads in a row share one output). No shared memory.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    max_min_backward_kernel(int64_t total, int64_t r, int64_t inner, const T* grad,
                            const int64_t* indices, T* grad_in) {
  for (const int64_t e : grid_stride(total)) {
    const int64_t k = e % inner;
    const int64_t oj = e / inner;
    const int64_t j = oj % r;
    const int64_t out = (oj / r) * inner + k;
    grad_in[e] = indices[out] == j ? grad[out] : T(0);
  }
}

// ---- cumsum: a running sum along j ------------------------------------------------------------
// One thread per column (o, k), walking its r elements in order (backward for `reverse`) and
// writing each running total: the simplest correct scan, and the additions happen in exactly the
// CPU's order (double accumulators for floats, int64 for integers), so the answers are the
// CPU's bits. Memory: for inner > 1 consecutive threads own consecutive k, so each step reads
// and writes 32 consecutive elements per warp (coalesced); for inner == 1 (a scan along the last
// dim) each thread walks its own row, strided across the warp. A parallel scan (Blelloch's
// up-sweep/down-sweep, or a warp-shuffle scan per block) would use far more threads on a few
// long rows, at the price of another order of additions. No shared memory.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    cumsum_kernel(int64_t outer, int64_t r, int64_t inner, bool reverse, const T* in, T* out) {
  using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  const int64_t columns = outer * inner;
  for (const int64_t c : grid_stride(columns)) {
    const int64_t o = c / inner, k = c % inner;
    const int64_t base = o * r * inner + k;
    acc_t acc = 0;
    for (int64_t step = 0; step < r; ++step) {
      const int64_t at = base + (reverse ? r - 1 - step : step) * inner;
      acc = wrapping_add(acc, static_cast<acc_t>(in[at]));
      out[at] = static_cast<T>(acc);
    }
  }
}

}  // namespace

void reduce_sum(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out,
                double scale) {
  EMBER_DISPATCH_NUMERIC(dtype, "sum", [&] {
    run_reduction(SumReducer<scalar_t>{static_cast<scalar_t*>(out), scale},
                  static_cast<const scalar_t*>(in), outer, r, inner);
  });
}

void reduce_prod(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out) {
  EMBER_DISPATCH_NUMERIC(dtype, "prod", [&] {
    run_reduction(ProdReducer<scalar_t>{static_cast<scalar_t*>(out)},
                  static_cast<const scalar_t*>(in), outer, r, inner);
  });
}

void reduce_prod_backward(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in,
                          const void* grad, void* grad_in) {
  const int64_t outputs = outer * inner;
  EMBER_DISPATCH_FLOAT(dtype, "prod backward", [&] {
    if (outputs <= 0 || r <= 0) return;
    EMBER_LAUNCH(grid_for(outputs), kBlock, 0, stream(), prod_backward_kernel<scalar_t>)
    (outer, r, inner, static_cast<const scalar_t*>(in), static_cast<const scalar_t*>(grad),
     static_cast<scalar_t*>(grad_in));
    EMBER_LAUNCH_CHECK("prod_backward_kernel");
  });
}

void reduce_max_min(MaxMin which, DType dtype, int64_t outer, int64_t r, int64_t inner,
                    const void* in, void* values, int64_t* indices) {
  const char* name = which == MaxMin::Max ? "max" : "min";
  if (outer * inner <= 0) return;
  EMBER_CHECK(r >= 1, name, ": cannot reduce over an empty dimension (size 0); there is no ", name,
              " of no elements");
  EMBER_DISPATCH_ALL(dtype, name, [&] {
    run_reduction(MaxMinReducer<scalar_t>{which == MaxMin::Max, static_cast<scalar_t*>(values),
                                          indices},
                  static_cast<const scalar_t*>(in), outer, r, inner);
  });
}

void reduce_max_min_backward(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* grad,
                             const int64_t* indices, void* grad_in) {
  const int64_t total = outer * r * inner;
  EMBER_DISPATCH_FLOAT(dtype, "max/min backward", [&] {
    if (total <= 0) return;  // nothing to write (the dtype is checked first)
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), max_min_backward_kernel<scalar_t>)
    (total, r, inner, static_cast<const scalar_t*>(grad), indices, static_cast<scalar_t*>(grad_in));
    EMBER_LAUNCH_CHECK("max_min_backward_kernel");
  });
}

void reduce_cumsum(DType dtype, int64_t outer, int64_t r, int64_t inner, bool reverse,
                   const void* in, void* out) {
  const int64_t columns = outer * inner;
  EMBER_DISPATCH_NUMERIC(dtype, "cumsum", [&] {
    if (columns <= 0 || r <= 0) return;  // nothing to write (the dtype is checked first)
    EMBER_LAUNCH(grid_for(columns), kBlock, 0, stream(), cumsum_kernel<scalar_t>)
    (outer, r, inner, reverse, static_cast<const scalar_t*>(in), static_cast<scalar_t*>(out));
    EMBER_LAUNCH_CHECK("cumsum_kernel");
  });
}

const ReduceKernels reduce_kernels = {
    &reduce_sum,   &reduce_prod, &reduce_prod_backward, &reduce_max_min, &reduce_max_min_backward,
    &reduce_cumsum};

}  // namespace ember::kernels::cuda
