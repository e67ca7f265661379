// ember/kernels/cuda/optim.cu — fused SGD and Adam/AdamW steps over a whole list of
// parameters ("multi-tensor apply").
//
// Why: an optimizer step is a few flops per element, so for a small model it is bound by the
// number of kernel launches, not by the arithmetic or even the memory. Here one launch updates
// up to kMaxTensorsPerLaunch parameters: the launcher packs their pointers and sizes into a
// struct passed BY VALUE as the kernel argument (it lands in the GPU's constant bank, so
// reading it costs no global-memory traffic), and the grid is the total number of chunks of
// kChunk elements over all those tensors. Block b finds which tensor its chunk belongs to
// (a short search over the prefix sums of the chunk counts) and updates that chunk. A longer
// list takes several launches; an empty list (or one whose sizes are all 0) launches nothing.
//
// The per-element math is kernels/cpu/optim.cpp's, with the same roundings, so both devices
// give the same bits:
//  * the coefficients are rounded to the element type once, on the host, as there;
//  * every `axpy(x, alpha, y)` is one fused multiply-add fma(alpha, y, x) — what the CPU's
//    axpy is in the optimized GCC build on an FMA machine (it calls std::fma there) — and
//    every other product, quotient, sum and square root is rounded on its own, written with
//    CUDA's _rn intrinsics, which nvcc never contracts or approximates whatever the flags
//    (even --use_fast_math);
//  * Adam's square root is the correctly rounded IEEE one on both devices.
// A CPU build without FMA (EMBER_NATIVE=OFF on an old target, or Clang) computes axpy as a
// separate multiply and add and may then differ from these kernels in the last ulp.
#include "kernels/optim.h"

#include <cmath>

#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

// Tensors per launch: the argument block below is ~1.4 KB, well inside the 4 KB a kernel
// argument list may hold on every architecture ember builds for.
constexpr int kMaxTensorsPerLaunch = 24;
// Elements per chunk (per block): 16 per thread of a 256-thread block, enough work to
// amortize the search for the chunk's tensor, small enough that a 4097-element tensor does
// not leave one block doing almost all the work.
constexpr int64_t kChunk = 4096;

// What one launch works on. Entry t (t < count): param[t], grad[t] and state[s][t] hold
// size[t] elements; its chunks are [chunk_start[t], chunk_start[t + 1]) of the grid's.
// SGD uses state[0] (momentum buffer); Adam state[0..2] (exp_avg, exp_avg_sq, max_exp_avg_sq).
// Unused pointers are nullptr and never read.
struct TensorChunks {
  void* param[kMaxTensorsPerLaunch];
  const void* grad[kMaxTensorsPerLaunch];
  void* state[3][kMaxTensorsPerLaunch];
  int64_t size[kMaxTensorsPerLaunch];
  int64_t chunk_start[kMaxTensorsPerLaunch + 1];
  int count;
};

// ---- rounding helpers: each is one IEEE operation, rounded to nearest -----------------------
__device__ inline float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ inline double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ inline double sqrt_rn(double a) { return __dsqrt_rn(a); }

// x + alpha * y with one rounding: the CPU axpy (kernels/cpu/optim.cpp) in the FMA build.
template <typename T>
__device__ inline T axpy(T x, T alpha, T y) {
  return fma_rn(alpha, y, x);
}

// The tensor and the element range [begin, end) of grid chunk `chunk`. The prefix array is in
// the kernel's argument block (constant memory): every thread of the block reads the same
// entries, a broadcast. A linear search over at most kMaxTensorsPerLaunch entries is as fast
// as a binary one at this size and has no edge cases.
struct ChunkRange {
  int tensor;
  int64_t begin, end;
};
__device__ inline ChunkRange find_chunk(const TensorChunks& tc, int64_t chunk) {
  int t = 0;
  while (t + 1 < tc.count && tc.chunk_start[t + 1] <= chunk) ++t;
  const int64_t begin = (chunk - tc.chunk_start[t]) * kChunk;
  const int64_t end = begin + kChunk < tc.size[t] ? begin + kChunk : tc.size[t];
  return {t, begin, end};
}

// ---- SGD -----------------------------------------------------------------------------------

template <typename T>
struct SGDCoeffs {
  T neg_lr, momentum, one_minus_dampening, weight_decay;
};
struct SGDFlags {
  bool weight_decay, momentum, first, nesterov;
};

// One block updates one chunk of kChunk consecutive elements of one parameter (blocks stride
// over the chunks when there are more than the grid). Thread k of the block handles elements
// begin + k, begin + k + blockDim, ...: consecutive threads touch consecutive elements of p,
// g and the momentum buffer, so every load and store is coalesced. Each element is read once
// and written once. No shared memory. The option flags are the same for every thread, so their
// branches never diverge (the CPU turns them into template flags to let the compiler
// vectorize; on the GPU a uniform branch costs next to nothing in a memory-bound loop).
template <typename T>
__global__ void sgd_kernel(TensorChunks tc, int64_t total_chunks, SGDCoeffs<T> c, SGDFlags f) {
  for (const int64_t chunk : grid_stride(blockIdx.x, total_chunks, gridDim.x)) {
    const ChunkRange r = find_chunk(tc, chunk);
    T* p = static_cast<T*>(tc.param[r.tensor]);
    const T* g = static_cast<const T*>(tc.grad[r.tensor]);
    T* buf = static_cast<T*>(tc.state[0][r.tensor]);
    for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
      const T pi = p[i];
      T d = g[i];
      if (f.weight_decay) d = axpy(d, c.weight_decay, pi);  // g + wd * p
      if (f.momentum) {
        // The first buffer is the gradient itself, undamped (as in PyTorch); it is written,
        // not read, on that step.
        const T b = f.first ? d : axpy(mul_rn(buf[i], c.momentum), c.one_minus_dampening, d);
        buf[i] = b;
        d = f.nesterov ? axpy(d, c.momentum, b) : b;  // nesterov looks ahead along the velocity
      }
      p[i] = axpy(pi, c.neg_lr, d);
    }
  }
}

// ---- Adam / AdamW --------------------------------------------------------------------------

template <typename T>
struct AdamCoeffs {
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T eps, weight_decay, decay;  // decay = 1 - lr * weight_decay (AdamW)
  T bias_correction2_sqrt, neg_step_size;
};
struct AdamFlags {
  bool l2, decoupled, amsgrad;
};

// Same layout as sgd_kernel: one block per chunk, thread k on elements begin + k + j*blockDim,
// all accesses coalesced, each of p, g, m, v (and v_max) read once and written once, no shared
// memory. The CPU kernel splits the update into three passes so that its square roots
// vectorize; the arithmetic per element is the same sequence as here.
template <typename T>
__global__ void adam_kernel(TensorChunks tc, int64_t total_chunks, AdamCoeffs<T> c,
                            AdamFlags f) {
  for (const int64_t chunk : grid_stride(blockIdx.x, total_chunks, gridDim.x)) {
    const ChunkRange r = find_chunk(tc, chunk);
    T* p = static_cast<T*>(tc.param[r.tensor]);
    const T* g = static_cast<const T*>(tc.grad[r.tensor]);
    T* m = static_cast<T*>(tc.state[0][r.tensor]);
    T* v = static_cast<T*>(tc.state[1][r.tensor]);
    T* vmax = static_cast<T*>(tc.state[2][r.tensor]);
    for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
      T pi = p[i];
      T gi = g[i];
      if (f.l2) gi = axpy(gi, c.weight_decay, pi);  // Adam: an L2 term in the gradient
      const T mi = axpy(mul_rn(m[i], c.beta1), c.one_minus_beta1, gi);
      m[i] = mi;
      T vi = axpy(mul_rn(v[i], c.beta2), c.one_minus_beta2, mul_rn(gi, gi));
      v[i] = vi;
      if (f.amsgrad) {
        const T vm = vmax[i];
        vi = vm >= vi ? vm : vi;  // the largest second moment seen so far (NaN as on the CPU)
        vmax[i] = vi;
      }
      if (f.decoupled) pi = mul_rn(pi, c.decay);  // AdamW: shrink the weight itself
      const T denom = add_rn(div_rn(sqrt_rn(vi), c.bias_correction2_sqrt), c.eps);
      p[i] = axpy(pi, c.neg_step_size, div_rn(mi, denom));
    }
  }
}

// ---- the launcher: pack, launch, repeat ----------------------------------------------------

// Checks that every list the step uses has one entry per parameter.
void check_lists(const char* op, const ParamList& list, const std::vector<void*>* states[3],
                 const char* const names[3]) {
  const size_t n = list.params.size();
  EMBER_CHECK(list.grads.size() == n && list.sizes.size() == n, op, ": the parameter list has ",
              n, " params but ", list.grads.size(), " grads and ", list.sizes.size(),
              " sizes: pass one of each per parameter");
  for (int s = 0; s < 3; ++s) {
    if (states[s] == nullptr) continue;
    EMBER_CHECK(states[s]->size() == n, op, ": ", names[s], " has ", states[s]->size(),
                " buffers for ", n, " parameters: pass one per parameter");
  }
}

// Packs the parameters with a nonzero size into TensorChunks of at most kMaxTensorsPerLaunch
// entries and calls launch(tc, total_chunks) for each full pack and for the last one.
// states[s] is nullptr for a state list the step does not use.
template <typename Launch>
void for_each_pack(const ParamList& list, const std::vector<void*>* states[3],
                   const Launch& launch) {
  TensorChunks tc{};
  int64_t chunks = 0;
  auto flush = [&] {
    if (tc.count == 0) return;
    launch(tc, chunks);
    tc = TensorChunks{};
    chunks = 0;
  };
  for (size_t i = 0; i < list.params.size(); ++i) {
    const int64_t n = list.sizes[i];
    if (n <= 0) continue;  // nothing to update; a 0-chunk entry would only confuse the search
    const int t = tc.count;
    tc.param[t] = list.params[i];
    tc.grad[t] = list.grads[i];
    for (int s = 0; s < 3; ++s) tc.state[s][t] = states[s] ? (*states[s])[i] : nullptr;
    tc.size[t] = n;
    tc.chunk_start[t] = chunks;
    chunks += (n + kChunk - 1) / kChunk;
    tc.chunk_start[t + 1] = chunks;
    tc.count = t + 1;
    if (tc.count == kMaxTensorsPerLaunch) flush();
  }
  flush();
}

// One block per chunk, capped like grid_for: the kernels' blocks stride over the chunks.
unsigned grid_for_chunks(int64_t chunks) { return grid_for(chunks, 1); }

}  // namespace

void sgd_step(DType dtype, const ParamList& list, const std::vector<void*>& momentum_bufs,
              const SGDStep& s) {
  const bool momentum = s.momentum != 0.0;
  if (momentum && s.first_step) {
    refuse_in_capture("SGD's first step with momentum",
                      "that step creates the momentum buffers from the gradients and later ones "
                      "update them, but a graph repeats the captured step's kernels exactly. Run "
                      "at least one step eagerly before capturing (warm-up), as PyTorch requires");
  }
  const std::vector<void*>* states[3] = {momentum ? &momentum_bufs : nullptr, nullptr, nullptr};
  const char* const names[3] = {"momentum_bufs", "", ""};
  check_lists("sgd_step", list, states, names);
  EMBER_DISPATCH_FLOAT(dtype, "sgd_step", [&] {
    using T = scalar_t;
    // Rounded to the element type once, exactly as kernels/cpu/optim.cpp does.
    const SGDCoeffs<T> c{static_cast<T>(-s.lr), static_cast<T>(s.momentum),
                         static_cast<T>(1.0 - s.dampening), static_cast<T>(s.weight_decay)};
    const SGDFlags f{s.weight_decay != 0.0, momentum, s.first_step, s.nesterov};
    for_each_pack(list, states, [&](const TensorChunks& tc, int64_t chunks) {
      EMBER_LAUNCH(grid_for_chunks(chunks), kBlock, 0, stream(), sgd_kernel<T>)(tc, chunks, c, f);
      EMBER_LAUNCH_CHECK("sgd_kernel");
    });
  });
}

void adam_step(DType dtype, const ParamList& list, const std::vector<void*>& exp_avgs,
               const std::vector<void*>& exp_avg_sqs, const std::vector<void*>& max_exp_avg_sqs,
               const AdamStep& s) {
  refuse_in_capture("Adam's step",
                    "its bias corrections depend on the step count, which the host works out at "
                    "every step, so a graph would repeat the captured step's corrections at every "
                    "replay. Capture forward and backward only, and call optimizer.step() "
                    "eagerly after each replay(), or use SGD in the captured step");
  // amsgrad is on exactly when its buffers are given (the CPU kernel: max_exp_avg_sq != null).
  const bool amsgrad = !max_exp_avg_sqs.empty();
  const std::vector<void*>* states[3] = {&exp_avgs, &exp_avg_sqs,
                                         amsgrad ? &max_exp_avg_sqs : nullptr};
  const char* const names[3] = {"exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"};
  check_lists("adam_step", list, states, names);
  EMBER_DISPATCH_FLOAT(dtype, "adam_step", [&] {
    using T = scalar_t;
    // Rounded to the element type once, as kernels/cpu/optim.cpp does. 1 - lr * wd is written
    // as the fma the optimized CPU build contracts it into (one rounding in double), so the
    // rounded decay is the same on both devices.
    const AdamCoeffs<T> c{static_cast<T>(s.beta1),
                          static_cast<T>(1.0 - s.beta1),
                          static_cast<T>(s.beta2),
                          static_cast<T>(1.0 - s.beta2),
                          static_cast<T>(s.eps),
                          static_cast<T>(s.weight_decay),
                          static_cast<T>(std::fma(-s.lr, s.weight_decay, 1.0)),
                          static_cast<T>(s.bias_correction2_sqrt),
                          static_cast<T>(-s.step_size)};
    const bool has_decay = s.weight_decay != 0.0;
    const AdamFlags f{has_decay && !s.decoupled_weight_decay,
                      has_decay && s.decoupled_weight_decay, amsgrad};
    for_each_pack(list, states, [&](const TensorChunks& tc, int64_t chunks) {
      EMBER_LAUNCH(grid_for_chunks(chunks), kBlock, 0, stream(), adam_kernel<T>)(tc, chunks, c, f);
      EMBER_LAUNCH_CHECK("adam_kernel");
    });
  });
}

const OptimKernels optim_kernels = {&sgd_step, &adam_step};

}  // namespace ember::kernels::cuda
