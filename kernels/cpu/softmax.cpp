// Softmax kernels. One task handles one outer index o and a block of up to kColumnBlock inner
// positions k, and walks the D entries of the softmax axis row by row: for inner == 1 that is
// one contiguous row; for inner > 1 each step along D reads a contiguous run of the block's
// columns (rather than jumping `inner` elements per load, which would touch a new cache line
// on every read). Tasks are independent, so they are split across threads.
#include "kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/isa_variant.h"  // last: what follows is compiled per variant

EMBER_CPU_VARIANT_BEGIN
namespace ember::kernels::cpu::EMBER_CPU_VARIANT {

namespace {
constexpr int64_t kColumnBlock = 64;

template <typename T>
void forward_typed(bool log, int64_t outer, int64_t D, int64_t inner, const T* x, T* y) {
  for_each_column_block(outer, D, inner, kColumnBlock, [&](int64_t o, int64_t k0, int64_t kn) {
    const T* xb = x + o * D * inner + k0;
    T* yb = y + o * D * inner + k0;
    T m[kColumnBlock];
    double s[kColumnBlock];
    std::fill(m, m + kn, -std::numeric_limits<T>::infinity());
    std::fill(s, s + kn, 0.0);
    for (int64_t j = 0; j < D; ++j) {  // pass 1: the max of each column
      const T* row = xb + j * inner;
      for (int64_t k = 0; k < kn; ++k) m[k] = std::max(m[k], row[k]);
    }
    if (!log) {
      for (int64_t j = 0; j < D; ++j) {  // pass 2: e = exp(x - m) into y, and its sum
        const T* row = xb + j * inner;
        T* out = yb + j * inner;
        for (int64_t k = 0; k < kn; ++k) {
          const T e = std::exp(row[k] - m[k]);
          out[k] = e;
          s[k] += e;
        }
      }
      for (int64_t k = 0; k < kn; ++k) s[k] = 1.0 / s[k];
      for (int64_t j = 0; j < D; ++j) {  // pass 3: normalize
        T* out = yb + j * inner;
        for (int64_t k = 0; k < kn; ++k) out[k] = static_cast<T>(out[k] * s[k]);
      }
      return;
    }
    for (int64_t j = 0; j < D; ++j) {  // pass 2: sum of exp(x - m)
      const T* row = xb + j * inner;
      for (int64_t k = 0; k < kn; ++k) s[k] += std::exp(row[k] - m[k]);
    }
    for (int64_t k = 0; k < kn; ++k) s[k] = std::log(s[k]);
    for (int64_t j = 0; j < D; ++j) {  // pass 3: (x - m) - log(sum)
      const T* row = xb + j * inner;
      T* out = yb + j * inner;
      for (int64_t k = 0; k < kn; ++k) out[k] = static_cast<T>((row[k] - m[k]) - s[k]);
    }
  });
}

template <typename T>
void backward_typed(bool log, int64_t outer, int64_t D, int64_t inner, const T* g, const T* y,
                    T* dx) {
  for_each_column_block(outer, D, inner, kColumnBlock, [&](int64_t o, int64_t k0, int64_t kn) {
    const int64_t base = o * D * inner + k0;
    double dot[kColumnBlock];
    std::fill(dot, dot + kn, 0.0);
    // softmax: dot = sum_i g_i y_i;  log_softmax: dot = sum_i g_i.
    for (int64_t j = 0; j < D; ++j) {
      const T* gr = g + base + j * inner;
      const T* yr = y + base + j * inner;
      if (log) {
        for (int64_t k = 0; k < kn; ++k) dot[k] += gr[k];
      } else {
        for (int64_t k = 0; k < kn; ++k) dot[k] += static_cast<double>(gr[k]) * yr[k];
      }
    }
    for (int64_t j = 0; j < D; ++j) {
      const T* gr = g + base + j * inner;
      const T* yr = y + base + j * inner;
      T* out = dx + base + j * inner;
      if (log) {
        for (int64_t k = 0; k < kn; ++k) out[k] = static_cast<T>(gr[k] - std::exp(yr[k]) * dot[k]);
      } else {
        for (int64_t k = 0; k < kn; ++k) out[k] = static_cast<T>(yr[k] * (gr[k] - dot[k]));
      }
    }
  });
}
}  // namespace

void softmax_forward(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner, const void* x,
                     void* y) {
  EMBER_DISPATCH_FLOAT(dtype, log ? "log_softmax" : "softmax", [&] {
    forward_typed<scalar_t>(log, outer, D, inner, static_cast<const scalar_t*>(x),
                            static_cast<scalar_t*>(y));
  });
}

void softmax_backward(DType dtype, bool log, int64_t outer, int64_t D, int64_t inner, const void* g,
                      const void* y, void* dx) {
  EMBER_DISPATCH_FLOAT(dtype, log ? "log_softmax" : "softmax", [&] {
    backward_typed<scalar_t>(log, outer, D, inner, static_cast<const scalar_t*>(g),
                             static_cast<const scalar_t*>(y), static_cast<scalar_t*>(dx));
  });
}

const SoftmaxKernels softmax_kernels = {&softmax_forward, &softmax_backward};

}  // namespace ember::kernels::cpu::EMBER_CPU_VARIANT
EMBER_CPU_VARIANT_END
