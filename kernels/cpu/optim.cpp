// One-pass SGD and Adam updates. Each kernel is a plain loop over the elements, split across
// threads in contiguous chunks; every element is independent of every other.
//
// The options that change the shape of the update (weight decay on or off, momentum, nesterov,
// AdamW vs Adam, amsgrad) become template flags, so each loop body is straight-line code the
// compiler can vectorize, with no per-element branch on an option.
#include "kernels/cpu/optim.h"

#include <cmath>
#include <type_traits>

#include "kernels/cpu/parallel.h"

namespace ember::kernels::cpu {

namespace {

// x + alpha * y, rounded exactly as the elementwise Add kernel rounds its `x + alpha * y`
// (kernels/cpu/elementwise.cpp). Where the target has fused multiply-add, the compiler contracts
// that expression into one fma (one rounding); here the fma is written out. Spelling it out
// matters: in a longer expression such as b * momentum + (1 - dampening) * d the compiler could
// fuse either multiply, and fusing the other one would make this path drift from the tensor-op
// path by an ulp.
template <typename T>
inline T axpy(T x, T alpha, T y) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
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

template <typename T, bool kL2, bool kDecoupled, bool kAmsgrad>
void adam_range(int64_t begin, int64_t end, T* p, const T* g, T* m, T* v, T* vmax,
                const AdamCoeffs<T>& c) {
  for (int64_t i = begin; i < end; ++i) {
    T pi = p[i];
    T gi = g[i];
    if constexpr (kDecoupled) pi = pi * c.decay;          // AdamW: shrink the weight itself
    if constexpr (kL2) gi = axpy(gi, c.weight_decay, pi);  // Adam: an L2 term in the gradient
    const T mi = axpy(m[i] * c.beta1, c.one_minus_beta1, gi);
    T vi = axpy(v[i] * c.beta2, c.one_minus_beta2, gi * gi);
    m[i] = mi;
    v[i] = vi;
    if constexpr (kAmsgrad) {
      vi = vmax[i] >= vi ? vmax[i] : vi;  // the largest second moment seen so far
      vmax[i] = vi;
    }
    const T denom = std::sqrt(vi) / c.bias_correction2_sqrt + c.eps;
    p[i] = axpy(pi, c.neg_step_size, mi / denom);
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

}  // namespace ember::kernels::cpu
