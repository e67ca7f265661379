// ember/kernels/cuda/index.cu — moving elements by an int64 index on the GPU: gather,
// scatter_add, index_select, index_add, and the range check the op cards run first.
//
// Layouts and semantics are kernels/index.h's:
//   gather       out[.., j, ..] = in[.., index[.., j, ..], ..]    (j along dim d, per "line")
//   scatter_add  out[.., index[.., j, ..], ..] += src[.., j, ..]
//   index_select out[o, i, :] = in[o, index[i], :]                ([outer, size, inner] view)
//   index_add    out[o, index[i], :] += src[o, i, :]
//
// The two adds write where the index says, so several sources may land on one destination.
// As on the CPU, both split the work by destination — every element of out is written by
// exactly one thread, which adds its sources one after the other in increasing source
// position — instead of using atomicAdd. That makes them deterministic (the same bits on every
// run, which float atomics are not, since float addition is not associative), gives the same
// bits as the CPU kernels (the same additions in the same order), and works for every numeric
// dtype (there is no 8-bit atomicAdd). The price is less parallelism than one thread per
// source element; each kernel's comment says where that shows.
#include "kernels/index.h"

#include <mutex>
#include <unordered_map>

#include "kernels/base/scalar_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/workspace.h"
#include "kernels/sort.h"

namespace ember::kernels::cuda {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned long long kNoBadPosition = ~0ULL;

// ---- first_out_of_range --------------------------------------------------------------------
//
// One thread checks positions i = its id, id + grid, id + 2 grid, ... (grid-stride over the
// index, consecutive threads reading consecutive int64 values: coalesced) and stops at its
// first bad one, which is its smallest since it visits positions in increasing order. The warp
// then takes the minimum of its 32 candidates with shuffles, and lane 0 folds it into the
// device slot `first` with atomicMin. A minimum is exact and independent of the order the
// warps arrive in, so this atomic is deterministic (unlike a float sum). No shared memory.
__global__ void first_out_of_range_kernel(const int64_t* __restrict__ index, int64_t n,
                                          int64_t size, bool has_allowed, int64_t allowed,
                                          unsigned long long* first) {
  unsigned long long mine = kNoBadPosition;
  for (const int64_t i : grid_stride(n)) {
    const int64_t v = index[i];
    const bool ok = (v >= 0 && v < size) || (has_allowed && v == allowed);
    if (!ok) {
      mine = static_cast<unsigned long long>(i);
      break;
    }
  }
  // Every thread of the block reaches this point (the loop only breaks early), so all 32 lanes
  // take part in the shuffles.
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const unsigned long long other = __shfl_xor_sync(kFullMask, mine, offset);
    mine = other < mine ? other : mine;
  }
  if (threadIdx.x % kWarp == 0 && mine != kNoBadPosition) atomicMin(first, mine);
}

// The device slot first_out_of_range_kernel reduces into: 8 bytes per device, allocated on the
// first call and kept for the life of the process (freeing it from a static destructor could
// run after the CUDA runtime has shut down). The caller holds slot_mutex() for the whole
// check, so two host threads never share a slot at the same time.
std::mutex& slot_mutex() {
  static std::mutex m;
  return m;
}
unsigned long long* device_slot() {
  static std::unordered_map<int, unsigned long long*> slots;  // guarded by slot_mutex()
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  unsigned long long*& slot = slots[device];
  if (slot == nullptr) {
    void* p = nullptr;
    EMBER_CUDA_CHECK(cudaMalloc(&p, sizeof(unsigned long long)));
    slot = static_cast<unsigned long long*>(p);
  }
  return slot;
}

// ---- gather ----------------------------------------------------------------------------------
//
// One thread computes one element of out: element j of line l, where a line is the 1-d fiber
// along the gathered dim and `lines` walks the index shape with that dim removed.
// loop_offsets turns l into the three operands' offsets (out, index, in); then
//   out[off0 + j * ds0] = in[off2 + index[off1 + j * ds1] * ds2].
// Which of (l, j) varies fastest across consecutive threads is chosen by the launcher so that
// neighbouring threads touch neighbouring addresses of out and index (coalesced):
//   kJFast  (gathered dim is out's innermost, ds0 == 1): e = l * len + j
//   !kJFast (another dim is innermost):                   e = j * lines + l
// The reads of `in` follow the index values and are as scattered as the index is. No shared
// memory.
template <typename T, bool kJFast>
__global__ void gather_kernel(StridedLoop<3> lines, int64_t len, int64_t ds0, int64_t ds1,
                              int64_t ds2, T* __restrict__ out, const int64_t* __restrict__ index,
                              const T* __restrict__ in) {
  const int64_t n_lines = lines.numel;
  const int64_t total = n_lines * len;
  for (const int64_t e : grid_stride(total)) {
    int64_t l, j;
    if constexpr (kJFast) {
      l = e / len;
      j = e - l * len;
    } else {
      j = e / n_lines;
      l = e - j * n_lines;
    }
    int64_t off[3];
    loop_offsets(lines, l, off);
    out[off[0] + j * ds0] = in[off[2] + index[off[1] + j * ds1] * ds2];
  }
}

// ---- scatter_add ---------------------------------------------------------------------------
//
// One thread owns one line (the CPU design): it walks j = 0 .. len-1 serially and adds
// src[j] into out[index[j]] of its own line. A line only ever writes into its own line of out,
// so no two threads write one element, and repeated index values within a line are added one
// after the other, in the CPU's order. Consecutive threads own consecutive lines: when the
// scattered dim is not the innermost one, neighbouring lines are neighbouring in memory and
// each step j is a coalesced access across the warp.
// Trade-off: parallelism is the number of lines, and each thread does `len` dependent steps.
// Scattering along the innermost dim of a wide tensor (few, long lines) leaves most of the GPU
// idle and the accesses strided by len; atomics (one thread per source element) would spread
// that work but lose determinism and the 8-bit dtype. No shared memory.
template <typename T>
__global__ void scatter_add_kernel(StridedLoop<3> lines, int64_t len, int64_t ds0, int64_t ds1,
                                   int64_t ds2, T* __restrict__ out,
                                   const int64_t* __restrict__ index, const T* __restrict__ src) {
  for (const int64_t l : grid_stride(lines.numel)) {
    int64_t off[3];
    loop_offsets(lines, l, off);
    T* o = out + off[0];
    const int64_t* ix = index + off[1];
    const T* s = src + off[2];
    for (int64_t j = 0; j < len; ++j) {
      T& d = o[ix[j * ds1] * ds0];
      d = wrapping_add(d, s[j * ds2]);  // integer sums wrap, as on the CPU
    }
  }
}

// ---- index_select --------------------------------------------------------------------------
//
// One thread copies one element: e = (o * n + i) * inner + k of out, from in[o, index[i], k].
// Consecutive threads take consecutive k, so both the write of out and the read of one input
// row are contiguous runs (coalesced); index[i] is one broadcast load for the threads of a
// row. With inner == 1 the reads become a gather, as scattered as the index. No shared memory.
template <typename T>
__global__ void index_select_kernel(int64_t outer, int64_t size, int64_t inner,
                                    const T* __restrict__ in, const int64_t* __restrict__ index,
                                    int64_t n, T* __restrict__ out) {
  const int64_t total = outer * n * inner;
  for (const int64_t e : grid_stride(total)) {
    const int64_t k = e % inner;
    const int64_t t = e / inner;  // output row (o, i)
    const int64_t i = t % n;
    const int64_t o = t / n;
    out[e] = in[(o * size + index[i]) * inner + k];
  }
}

// ---- index_add -----------------------------------------------------------------------------
//
// Each element out[o, r, k] needs the sources src[o, i, k] of every i with index[i] == r, added
// in increasing i (the CPU's order, so that the result is the CPU's, bit for bit). The CPU finds
// them by scanning the whole index in each of its few threads. This kernel did the same with a
// GPU's worth of threads until it met a long 1-d index: adding 65537 sources into a [3, 65537]
// tensor along dim 1 started about 2 x 10^5 threads that each read all 65537 index values
// (1.3 x 10^10 reads), 100 s of the emulated test suite for that one test case (7 s now). So
// the index is sorted first, and the sort does the searching:
//
//   1. sort the index values with their positions (kernels/cuda/sort.cu; ties stay in position
//      order): `sorted` holds the values in ascending order, `from` the position i of each, so
//      the sources of row r are the run of equal values in `sorted`, in increasing i;
//   2. index_add_runs_kernel: one thread per (o, j, k) for every place j of `sorted`. The thread
//      at the first place of a run owns out[o, r, k] for that run's row r: it adds the run's
//      sources one after the other; the others return at once.
//
// Each element of out still has exactly one owner, which adds in increasing i: deterministic and
// equal to the CPU without atomics. Cost: the sort (O(n log^2 n) compare-and-swaps, once,
// whatever outer and inner are) and one thread per source element. A run is added serially, so
// an index that sends most of its n sources to one row keeps one thread busy for n additions.
// Memory: consecutive threads take consecutive k, so the src row read and the out row update
// are coalesced when inner is large; for inner == 1 neighbouring threads read `sorted`
// contiguously and src where the index sends them. No shared memory.
template <typename T>
__global__ void index_add_runs_kernel(int64_t outer, int64_t size, int64_t inner,
                                      T* __restrict__ out, const int64_t* __restrict__ sorted,
                                      const int64_t* __restrict__ from, int64_t n,
                                      const T* __restrict__ src) {
  for (const int64_t e : grid_stride(outer * n * inner)) {
    const int64_t k = e % inner;
    const int64_t t = e / inner;
    const int64_t j = t % n;
    const int64_t o = t / n;
    const int64_t r = sorted[j];
    if (j > 0 && sorted[j - 1] == r) continue;  // not the first place of its run
    T* dst = out + (o * size + r) * inner + k;
    const T* s = src + o * n * inner + k;
    T acc = *dst;
    for (int64_t m = j; m < n && sorted[m] == r; ++m) acc = wrapping_add(acc, s[from[m] * inner]);
    *dst = acc;
  }
}

}  // namespace

// first_out_of_range inside a CUDA graph capture, where the host cannot wait for an answer:
// the check moves to the device. Each thread checks its grid-stride share of positions, and a
// bad value stops the kernel with __trap(), so the replay fails here, before any later kernel
// of the step reads out of bounds. On a GPU a trap is a launch failure that, like PyTorch's
// device-side asserts, leaves the CUDA context unusable (the process has to restart); the
// emulator stops the replay at this node and reports the thread.
__global__ void trap_out_of_range_kernel(const int64_t* __restrict__ index, int64_t n, int64_t size,
                                         bool has_allowed, int64_t allowed) {
  for (const int64_t i : grid_stride(n)) {
    const int64_t v = index[i];
    if (!((v >= 0 && v < size) || (has_allowed && v == allowed))) __trap();  // index out of range
  }
}

int64_t first_out_of_range(const int64_t* index, int64_t n, int64_t size, bool has_allowed,
                           int64_t allowed) {
  if (n <= 0) return -1;
  if (capturing()) {
    EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), trap_out_of_range_kernel)
    (index, n, size, has_allowed, allowed);
    EMBER_LAUNCH_CHECK("trap_out_of_range_kernel");
    return -1;  // decided on the device, at every replay
  }
  std::lock_guard<std::mutex> lock(slot_mutex());
  unsigned long long* slot = device_slot();
  // "No bad position yet" is all ones, the largest value, so atomicMin replaces it.
  EMBER_CUDA_CHECK(cudaMemsetAsync(slot, 0xFF, sizeof(unsigned long long), stream()));
  EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), first_out_of_range_kernel)
  (index, n, size, has_allowed, allowed, slot);
  EMBER_LAUNCH_CHECK("first_out_of_range_kernel");
  unsigned long long first = kNoBadPosition;
  EMBER_CUDA_CHECK(cudaMemcpyAsync(&first, slot, sizeof(first), cudaMemcpyDeviceToHost, stream()));
  // The answer is needed on the host now (to raise an error naming the bad entry before any
  // kernel reads out of bounds): wait for it.
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return first == kNoBadPosition ? -1 : static_cast<int64_t>(first);
}

void gather(DType dtype, const StridedLoop<3>& lines, int64_t len, const int64_t dim_stride[3],
            void* out, const int64_t* index, const void* in) {
  const int64_t total = lines.numel * len;
  EMBER_DISPATCH_ALL(dtype, "gather", [&] {
    if (total <= 0) return;  // nothing to launch (after the dtype check, as on the CPU)
    auto* o = static_cast<scalar_t*>(out);
    const auto* x = static_cast<const scalar_t*>(in);
    const int64_t ds0 = dim_stride[0], ds1 = dim_stride[1], ds2 = dim_stride[2];
    if (ds0 == 1 || ds0 == -1) {
      EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), gather_kernel<scalar_t, true>)
      (lines, len, ds0, ds1, ds2, o, index, x);
    } else {
      EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), gather_kernel<scalar_t, false>)
      (lines, len, ds0, ds1, ds2, o, index, x);
    }
    EMBER_LAUNCH_CHECK("gather_kernel");
  });
}

void scatter_add(DType dtype, const StridedLoop<3>& lines, int64_t len, const int64_t dim_stride[3],
                 void* out, const int64_t* index, const void* src) {
  EMBER_DISPATCH_NUMERIC(dtype, "scatter_add", [&] {
    if (lines.numel <= 0 || len <= 0) return;
    EMBER_LAUNCH(grid_for(lines.numel), kBlock, 0, stream(), scatter_add_kernel<scalar_t>)
    (lines, len, dim_stride[0], dim_stride[1], dim_stride[2], static_cast<scalar_t*>(out), index,
     static_cast<const scalar_t*>(src));
    EMBER_LAUNCH_CHECK("scatter_add_kernel");
  });
}

void index_select(DType dtype, int64_t outer, int64_t size, int64_t inner, const void* in,
                  const int64_t* index, int64_t n, void* out) {
  const int64_t total = outer * n * inner;
  EMBER_DISPATCH_ALL(dtype, "index_select", [&] {
    if (outer <= 0 || n <= 0 || inner <= 0) return;
    EMBER_LAUNCH(grid_for(total), kBlock, 0, stream(), index_select_kernel<scalar_t>)
    (outer, size, inner, static_cast<const scalar_t*>(in), index, n, static_cast<scalar_t*>(out));
    EMBER_LAUNCH_CHECK("index_select_kernel");
  });
}

void index_add(DType dtype, int64_t outer, int64_t size, int64_t inner, void* out,
               const int64_t* index, int64_t n, const void* src) {
  EMBER_DISPATCH_NUMERIC(dtype, "index_add", [&] {
    // With size == 0 there is no row to add into (and the op card has rejected any index).
    if (outer <= 0 || size <= 0 || inner <= 0 || n <= 0) return;
    // 1. The index in ascending order, and where each value came from.
    Workspace sorted(static_cast<size_t>(n) * sizeof(int64_t));
    Workspace from(static_cast<size_t>(n) * sizeof(int64_t));
    sort_kernels.sort(DType::Int64, 1, n, 1, n, /*descending=*/false, index, sorted.data(),
                      from.as<int64_t>());
    // 2. A thread per source element; the first of each run adds the run.
    EMBER_LAUNCH(grid_for(outer * n * inner), kBlock, 0, stream(), index_add_runs_kernel<scalar_t>)
    (outer, size, inner, static_cast<scalar_t*>(out), sorted.as<int64_t>(), from.as<int64_t>(), n,
     static_cast<const scalar_t*>(src));
    EMBER_LAUNCH_CHECK("index_add_runs_kernel");
  });
}

const IndexKernels index_kernels = {&first_out_of_range, &gather, &scatter_add, &index_select,
                                    &index_add};

}  // namespace ember::kernels::cuda
