// One-pass SGD and Adam updates. Each kernel is a plain loop over the elements, split across
// threads in contiguous chunks; every element is independent of every other.
//
// The options that change the shape of the update (weight decay on or off, momentum, nesterov,
// AdamW vs Adam, amsgrad) become template flags, so each loop body is straight-line code the
// compiler can vectorize, with no per-element branch on an option.
#include "kernels/optim.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "kernels/base/parallel.h"
#include "kernels/cpu/isa_variant.h"  // last: what follows is compiled per variant

EMBER_CPU_VARIANT_BEGIN
namespace ember::kernels::cpu::EMBER_CPU_VARIANT {

namespace {

// x + alpha * y, rounded exactly as the elementwise Add kernel (kernels/cpu/elementwise.cpp)
// rounds its `x + alpha * y`, so that this path and the tensor-op path agree bit for bit.
// Where the target has fused multiply-add the compiler may contract that expression into one
// fma (a single rounding), and the two compilers do it differently:
//  - Clang contracts within one source expression, so the plain expression below is contracted
//    here exactly when it is there.
//  - Optimizing GCC contracts across statements after inlining: in b * momentum + c * d it may
//    fuse either multiply, and fusing the other one would drift from the tensor-op path by an
//    ulp. So for GCC the fma is written out; unoptimized GCC contracts nothing, here or there.
//    (Nor does GCC at -O1 alone: contraction comes with -fexpensive-optimizations, part of -O2,
//    which no macro reveals. A -O1 build adds that flag, as CI's sanitizer build does, .ci/run.)
// "Where the target has fused multiply-add" is the variant's target (kernels/cpu/isa_variant.h):
// the avx2 and avx512 variants have it, the baseline variant of a portable x86-64 build has not.
template <typename T>
inline T axpy(T x, T alpha, T y) {
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && EMBER_CPU_HAS_FMA
  return std::fma(alpha, y, x);
#else
  return x + alpha * y;
#endif
}

// Calls f(std::true_type) or f(std::false_type): turns a runtime option into a template flag.
template <typename F>
void with_flag(bool on, const F& f) {
  if (on) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

// ---- SGD ------------------------------------------------------------------------------------

template <typename T>
struct SGDCoeffs {
  T neg_lr, momentum, one_minus_dampening, weight_decay;
};

template <typename T, bool kWeightDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_range(int64_t begin, int64_t end, T* p, const T* g, T* buf, const SGDCoeffs<T>& c) {
  for (int64_t i = begin; i < end; ++i) {
    T d = g[i];
    if constexpr (kWeightDecay) d = axpy(d, c.weight_decay, p[i]);  // g + wd * p
    if constexpr (kMomentum) {
      T b;
      if constexpr (kFirst) {
        b = d;  // the first buffer is the gradient itself, undamped (as in PyTorch)
      } else {
        b = axpy(buf[i] * c.momentum, c.one_minus_dampening, d);
      }
      buf[i] = b;
      if constexpr (kNesterov) {
        d = axpy(d, c.momentum, b);  // look ahead along the velocity
      } else {
        d = b;
      }
    }
    p[i] = axpy(p[i], c.neg_lr, d);
  }
}

template <typename T>
void sgd_typed(int64_t n, T* p, const T* g, T* buf, const SGDStep& s) {
  const SGDCoeffs<T> c{static_cast<T>(-s.lr), static_cast<T>(s.momentum),
                       static_cast<T>(1.0 - s.dampening), static_cast<T>(s.weight_decay)};
  with_flag(s.weight_decay != 0.0, [&](auto wd) {
    with_flag(s.momentum != 0.0, [&](auto mom) {
      with_flag(s.first_step, [&](auto first) {
        with_flag(s.nesterov, [&](auto nesterov) {
          parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
            sgd_range<T, decltype(wd)::value, decltype(mom)::value, decltype(first)::value,
                      decltype(nesterov)::value>(b, e, p, g, buf, c);
          });
        });
      });
    });
  });
}

// ---- Adam / AdamW ---------------------------------------------------------------------------

template <typename T>
struct AdamCoeffs {
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T eps, weight_decay, decay;  // decay = 1 - lr * weight_decay (AdamW)
  T bias_correction2_sqrt, neg_step_size;
};

// sqrt of n contiguous values, in place, several lanes at a time. The vector instructions are
// IEEE square roots, correctly rounded like std::sqrt (and unlike Eigen's default fast-math
// sqrt). A plain std::sqrt loop would be the same math, but std::sqrt may set errno, so unless
// the library is built with -fno-math-errno the compiler keeps it one scalar sqrt (and a check)
// per element, and that scalar loop then dominates the whole Adam step (by how much:
// bench/RESULTS.md, "Figures that were comments in kernels/").
template <typename T>
void sqrt_inplace(T* x, int64_t n) {
  int64_t i = 0;
// 256-bit lanes even where AVX-512 exists: the step is mostly memory-bound, and GCC 12 warns
// (falsely, -Wmaybe-uninitialized) inside its own _mm512_sqrt_* headers.
#if EMBER_CPU_HAS_AVX
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
  } else {
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, _mm256_sqrt_pd(_mm256_loadu_pd(x + i)));
  }
#elif defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
  } else {
    for (; i + 2 <= n; i += 2) _mm_storeu_pd(x + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
  }
#elif defined(__aarch64__)  // NEON (every aarch64 CPU): fsqrt on 128-bit vectors
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vsqrtq_f32(vld1q_f32(x + i)));
  } else {
    for (; i + 2 <= n; i += 2) vst1q_f64(x + i, vsqrtq_f64(vld1q_f64(x + i)));
  }
#endif
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);  // the tail, and targets without those vectors
}

// Adam works through its range in blocks small enough to stay in L1: pass 1 updates the moments
// and keeps the second moment it will divide by, pass 2 takes its square roots, pass 3 moves
// the weights. Passes 1 and 3 are plain loops the compiler vectorizes.
constexpr int64_t kAdamBlock = 256;

template <typename T, bool kL2, bool kDecoupled, bool kAmsgrad>
void adam_range(int64_t begin, int64_t end, T* p, const T* g, T* m, T* v, T* vmax,
                const AdamCoeffs<T>& c) {
  T root[kAdamBlock];
  for (int64_t b = begin; b < end; b += kAdamBlock) {
    const int64_t len = std::min(kAdamBlock, end - b);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t i = b + j;
      T gi = g[i];
      if constexpr (kL2) gi = axpy(gi, c.weight_decay, p[i]);  // Adam: an L2 term in the gradient
      m[i] = axpy(m[i] * c.beta1, c.one_minus_beta1, gi);
      T vi = axpy(v[i] * c.beta2, c.one_minus_beta2, gi * gi);
      v[i] = vi;
      if constexpr (kAmsgrad) {
        vi = vmax[i] >= vi ? vmax[i] : vi;  // the largest second moment seen so far
        vmax[i] = vi;
      }
      root[j] = vi;
    }
    sqrt_inplace(root, len);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t i = b + j;
      T pi = p[i];
      if constexpr (kDecoupled) pi = pi * c.decay;  // AdamW: shrink the weight itself
      const T denom = root[j] / c.bias_correction2_sqrt + c.eps;
      p[i] = axpy(pi, c.neg_step_size, m[i] / denom);
    }
  }
}

template <typename T>
void adam_typed(int64_t n, T* p, const T* g, T* m, T* v, T* vmax, const AdamStep& s) {
  const AdamCoeffs<T> c{static_cast<T>(s.beta1),
                        static_cast<T>(1.0 - s.beta1),
                        static_cast<T>(s.beta2),
                        static_cast<T>(1.0 - s.beta2),
                        static_cast<T>(s.eps),
                        static_cast<T>(s.weight_decay),
                        static_cast<T>(1.0 - s.lr * s.weight_decay),
                        static_cast<T>(s.bias_correction2_sqrt),
                        static_cast<T>(-s.step_size)};
  const bool has_decay = s.weight_decay != 0.0;
  with_flag(has_decay && !s.decoupled_weight_decay, [&](auto l2) {
    with_flag(has_decay && s.decoupled_weight_decay, [&](auto decoupled) {
      with_flag(vmax != nullptr, [&](auto amsgrad) {
        parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
          adam_range<T, decltype(l2)::value, decltype(decoupled)::value, decltype(amsgrad)::value>(
              b, e, p, g, m, v, vmax, c);
        });
      });
    });
  });
}

}  // namespace

void sgd_step(DType dtype, int64_t n, void* param, const void* grad, void* momentum_buf,
              const SGDStep& s) {
  EMBER_DISPATCH_FLOAT(dtype, "sgd_step", [&] {
    sgd_typed<scalar_t>(n, static_cast<scalar_t*>(param), static_cast<const scalar_t*>(grad),
                        static_cast<scalar_t*>(momentum_buf), s);
  });
}

void adam_step(DType dtype, int64_t n, void* param, const void* grad, void* exp_avg,
               void* exp_avg_sq, void* max_exp_avg_sq, const AdamStep& s) {
  EMBER_DISPATCH_FLOAT(dtype, "adam_step", [&] {
    adam_typed<scalar_t>(n, static_cast<scalar_t*>(param), static_cast<const scalar_t*>(grad),
                         static_cast<scalar_t*>(exp_avg), static_cast<scalar_t*>(exp_avg_sq),
                         static_cast<scalar_t*>(max_exp_avg_sq), s);
  });
}

// The list forms of the family: one parameter after the other, each in one pass.
void sgd_list(DType dtype, const ParamList& list, const std::vector<void*>& momentum_bufs,
              const SGDStep& s) {
  for (size_t i = 0; i < list.params.size(); ++i)
    sgd_step(dtype, list.sizes[i], list.params[i], list.grads[i],
             momentum_bufs.empty() ? nullptr : momentum_bufs[i], s);
}

void adam_list(DType dtype, const ParamList& list, const std::vector<void*>& exp_avgs,
               const std::vector<void*>& exp_avg_sqs, const std::vector<void*>& max_exp_avg_sqs,
               const AdamStep& s) {
  for (size_t i = 0; i < list.params.size(); ++i)
    adam_step(dtype, list.sizes[i], list.params[i], list.grads[i], exp_avgs[i], exp_avg_sqs[i],
              max_exp_avg_sqs.empty() ? nullptr : max_exp_avg_sqs[i], s);
}

const OptimKernels optim_kernels = {&sgd_list, &adam_list};

}  // namespace ember::kernels::cpu::EMBER_CPU_VARIANT
EMBER_CPU_VARIANT_END
