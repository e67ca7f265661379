#include "kernels/reduce.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/base/scalar_math.h"
#include "kernels/cpu/isa_variant.h"  // last: what follows is compiled per variant

EMBER_CPU_VARIANT_BEGIN
namespace ember::kernels::cpu::EMBER_CPU_VARIANT {

namespace {
constexpr int64_t kColumnBlock = 256;  // inner elements one task accumulates at a time

// scale * sum, computed in double and converted; an integer sum with scale 1 is stored as it is
// (through a double, int64 sums above 2^53 would lose their low bits).
template <typename T, typename Acc>
T finish_sum(Acc acc, double scale) {
  if constexpr (std::is_integral_v<Acc>) {
    if (scale == 1.0) return static_cast<T>(acc);
  }
  return convert_value<T>(static_cast<double>(acc) * scale);
}

template <typename T>
void sum_typed(int64_t outer, int64_t r, int64_t inner, const T* in, T* out, double scale) {
  using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  if (inner == 1) {
    // One output per contiguous row of length r.
    parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(r, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o) {
                     const T* row = in + o * r;
                     acc_t acc = 0;
                     for (int64_t j = 0; j < r; ++j)
                       acc = wrapping_add(acc, static_cast<acc_t>(row[j]));
                     out[o] = finish_sum<T>(acc, scale);
                   }
                 });
    return;
  }
  // Column-style: for each (o, block of k) walk the r rows, adding a contiguous block at a time.
  for_each_column_block(outer, r, inner, kColumnBlock, [&](int64_t o, int64_t k0, int64_t kn) {
    acc_t acc[kColumnBlock] = {};
    for (int64_t j = 0; j < r; ++j) {
      const T* row = in + (o * r + j) * inner + k0;
      for (int64_t k = 0; k < kn; ++k) acc[k] = wrapping_add(acc[k], static_cast<acc_t>(row[k]));
    }
    T* dst = out + o * inner + k0;
    for (int64_t k = 0; k < kn; ++k) dst[k] = finish_sum<T>(acc[k], scale);
  });
}

// Products: one output per (o, k), accumulated in double for floats and in uint64 for integers
// (unsigned, so that an overflowing product wraps as int64 arithmetic does, with no undefined
// behaviour). Walked like the sums: a contiguous row per output for inner == 1, column blocks
// otherwise.
template <typename T>
using prod_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <typename T>
void prod_typed(int64_t outer, int64_t r, int64_t inner, const T* in, T* out) {
  using acc_t = prod_acc_t<T>;
  for_each_column_block(outer, r, inner, kColumnBlock, [&](int64_t o, int64_t k0, int64_t kn) {
    acc_t acc[kColumnBlock];
    std::fill(acc, acc + kn, acc_t(1));
    for (int64_t j = 0; j < r; ++j) {
      const T* row = in + (o * r + j) * inner + k0;
      for (int64_t k = 0; k < kn; ++k)
        acc[k] = static_cast<acc_t>(acc[k] * static_cast<acc_t>(row[k]));
    }
    T* dst = out + o * inner + k0;
    for (int64_t k = 0; k < kn; ++k) dst[k] = static_cast<T>(acc[k]);
  });
}

template <typename T>
void prod_backward_typed(int64_t outer, int64_t r, int64_t inner, const T* in, const T* grad,
                         T* grad_in) {
  // Per output (o, k): pass 1 leaves prod_{i < j} in[i] in grad_in[j]; pass 2 walks back with
  // s = prod_{i > j} in[i] and multiplies it (and the output's gradient) in.
  for_each_column_block(outer, r, inner, kColumnBlock, [&](int64_t o, int64_t k0, int64_t kn) {
    double acc[kColumnBlock];
    std::fill(acc, acc + kn, 1.0);
    for (int64_t j = 0; j < r; ++j) {
      const int64_t at = (o * r + j) * inner + k0;
      for (int64_t k = 0; k < kn; ++k) {
        grad_in[at + k] = static_cast<T>(acc[k]);
        acc[k] *= static_cast<double>(in[at + k]);
      }
    }
    std::fill(acc, acc + kn, 1.0);
    const T* g = grad + o * inner + k0;
    for (int64_t j = r - 1; j >= 0; --j) {
      const int64_t at = (o * r + j) * inner + k0;
      for (int64_t k = 0; k < kn; ++k) {
        grad_in[at + k] = static_cast<T>(static_cast<double>(grad_in[at + k]) * acc[k] *
                                         static_cast<double>(g[k]));
        acc[k] *= static_cast<double>(in[at + k]);
      }
    }
  });
}

// Does x take the place of the current best? A NaN best is never replaced and a NaN x replaces
// any number, so the first NaN of a row is what comes out. Between numbers the comparison is
// strict: of equal values the first one stays, which makes the index the smallest one.
template <MaxMin kWhich, typename T>
inline bool replaces(T x, T best) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(best)) return false;
    if (std::isnan(x)) return true;
  }
  if constexpr (kWhich == MaxMin::Max) return x > best;
  else return x < best;
}

template <MaxMin kWhich, typename T>
void max_min_typed(int64_t outer, int64_t r, int64_t inner, const T* in, T* values,
                   int64_t* indices) {
  if (inner == 1) {
    // One output per contiguous row of length r: a plain scan.
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(r, 1));
    parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = in + o * r;
        T best = row[0];
        int64_t arg = 0;
        for (int64_t j = 1; j < r; ++j) {
          if (replaces<kWhich>(row[j], best)) {
            best = row[j];
            arg = j;
          }
        }
        values[o] = best;
        indices[o] = arg;
      }
    });
    return;
  }
  // Column-style, as in reduce_sum: the outputs themselves hold the running best. Row 0 of each
  // [r, inner] slab seeds a block of them, then every further row is compared against the block,
  // so all loads walk memory forward. Each task owns whole output blocks: no two threads write
  // the same element.
  for_each_column_block(outer, r, inner, kColumnBlock, [&](int64_t o, int64_t k0, int64_t kn) {
    const T* slab = in + o * r * inner + k0;
    T* best = values + o * inner + k0;
    int64_t* arg = indices + o * inner + k0;
    for (int64_t k = 0; k < kn; ++k) {
      best[k] = slab[k];
      arg[k] = 0;
    }
    for (int64_t j = 1; j < r; ++j) {
      const T* row = slab + j * inner;
      for (int64_t k = 0; k < kn; ++k) {
        if (replaces<kWhich>(row[k], best[k])) {
          best[k] = row[k];
          arg[k] = j;
        }
      }
    }
  });
}

template <typename T>
void max_min_backward_typed(int64_t outer, int64_t r, int64_t inner, const T* grad,
                            const int64_t* indices, T* grad_in) {
  // One task per slab [r, inner] of grad_in: zero it, then drop each output's gradient on the
  // row its index names. The indices come from the forward, so they are in [0, r).
  const int64_t slab = r * inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(slab, 1));
  parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      T* dst = grad_in + o * slab;
      std::fill(dst, dst + slab, T(0));
      const T* g = grad + o * inner;
      const int64_t* idx = indices + o * inner;
      for (int64_t k = 0; k < inner; ++k) dst[idx[k] * inner + k] = g[k];
    }
  });
}
// Running sums (cumsum) along j of [outer, r, inner]. One task per slab [r, inner]; inside it
// a row of `inner` accumulators walks j forward (or backward), so every load and store is a
// contiguous row: the same order of additions, hence the same bits, for any thread count.
template <typename T>
void cumsum_typed(int64_t outer, int64_t r, int64_t inner, bool reverse, const T* in, T* out) {
  using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  const int64_t slab = r * inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(slab, 1));
  parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
    std::vector<acc_t> acc(static_cast<size_t>(inner));
    for (int64_t o = b; o < e; ++o) {
      std::fill(acc.begin(), acc.end(), acc_t(0));
      for (int64_t step = 0; step < r; ++step) {
        const int64_t j = reverse ? r - 1 - step : step;
        const T* x = in + o * slab + j * inner;
        T* y = out + o * slab + j * inner;
        for (int64_t k = 0; k < inner; ++k) {
          acc[k] = wrapping_add(acc[k], static_cast<acc_t>(x[k]));
          y[k] = static_cast<T>(acc[k]);
        }
      }
    }
  });
}
}  // namespace

void reduce_sum(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out,
                double scale) {
  EMBER_DISPATCH_NUMERIC(dtype, "sum", [&] {
    sum_typed<scalar_t>(outer, r, inner, static_cast<const scalar_t*>(in),
                        static_cast<scalar_t*>(out), scale);
  });
}

void reduce_prod(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out) {
  EMBER_DISPATCH_NUMERIC(dtype, "prod", [&] {
    prod_typed<scalar_t>(outer, r, inner, static_cast<const scalar_t*>(in),
                         static_cast<scalar_t*>(out));
  });
}

void reduce_prod_backward(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in,
                          const void* grad, void* grad_in) {
  EMBER_DISPATCH_FLOAT(dtype, "prod backward", [&] {
    prod_backward_typed<scalar_t>(outer, r, inner, static_cast<const scalar_t*>(in),
                                  static_cast<const scalar_t*>(grad),
                                  static_cast<scalar_t*>(grad_in));
  });
}

void reduce_max_min(MaxMin which, DType dtype, int64_t outer, int64_t r, int64_t inner,
                    const void* in, void* values, int64_t* indices) {
  EMBER_DISPATCH_ALL(dtype, which == MaxMin::Max ? "max" : "min", [&] {
    const auto* x = static_cast<const scalar_t*>(in);
    auto* v = static_cast<scalar_t*>(values);
    if (which == MaxMin::Max) max_min_typed<MaxMin::Max>(outer, r, inner, x, v, indices);
    else max_min_typed<MaxMin::Min>(outer, r, inner, x, v, indices);
  });
}

void reduce_max_min_backward(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* grad,
                             const int64_t* indices, void* grad_in) {
  EMBER_DISPATCH_FLOAT(dtype, "max/min backward", [&] {
    max_min_backward_typed<scalar_t>(outer, r, inner, static_cast<const scalar_t*>(grad), indices,
                                     static_cast<scalar_t*>(grad_in));
  });
}

void reduce_cumsum(DType dtype, int64_t outer, int64_t r, int64_t inner, bool reverse,
                   const void* in, void* out) {
  EMBER_DISPATCH_NUMERIC(dtype, "cumsum", [&] {
    cumsum_typed<scalar_t>(outer, r, inner, reverse, static_cast<const scalar_t*>(in),
                           static_cast<scalar_t*>(out));
  });
}

const ReduceKernels reduce_kernels = {
    &reduce_sum,   &reduce_prod, &reduce_prod_backward, &reduce_max_min, &reduce_max_min_backward,
    &reduce_cumsum};

}  // namespace ember::kernels::cpu::EMBER_CPU_VARIANT
EMBER_CPU_VARIANT_END
