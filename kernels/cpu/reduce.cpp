#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace ember::kernels::cpu {

namespace {
constexpr int64_t kColumnBlock = 256;  // inner elements one task accumulates at a time

template <typename T>
void sum_typed(int64_t outer, int64_t r, int64_t inner, const T* in, T* out, double scale) {
  using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  if (inner == 1) {
    // One output per contiguous row of length r.
    parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(r, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = in + o * r;
        acc_t acc = 0;
        for (int64_t j = 0; j < r; ++j) acc += static_cast<acc_t>(row[j]);
        out[o] = static_cast<T>(static_cast<double>(acc) * scale);
      }
    });
    return;
  }
  // Column-style: for each (o, block of k) walk the r rows, adding a contiguous block at a time.
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(r * kColumnBlock, 1));
  parallel_for(0, outer * blocks, grain, [&](int64_t b, int64_t e) {
    std::vector<acc_t> acc(static_cast<size_t>(kColumnBlock));
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks;
      const int64_t k0 = (t % blocks) * kColumnBlock;
      const int64_t kn = std::min(kColumnBlock, inner - k0);
      std::fill(acc.begin(), acc.begin() + kn, acc_t(0));
      for (int64_t j = 0; j < r; ++j) {
        const T* row = in + (o * r + j) * inner + k0;
        for (int64_t k = 0; k < kn; ++k) acc[k] += static_cast<acc_t>(row[k]);
      }
      T* dst = out + o * inner + k0;
      for (int64_t k = 0; k < kn; ++k) dst[k] = static_cast<T>(static_cast<double>(acc[k]) * scale);
    }
  });
}
}  // namespace

void reduce_sum(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out,
                double scale) {
  EMBER_DISPATCH_NUMERIC(dtype, "sum", [&] {
    sum_typed<scalar_t>(outer, r, inner, static_cast<const scalar_t*>(in), static_cast<scalar_t*>(out), scale);
  });
}

}  // namespace ember::kernels::cpu
