// ember/kernels/cpu/sort.cpp — the CPU side of the sort family (kernels/sort.h): each line put
// in order with the standard library's sorts, lines split across threads.
#include "kernels/sort.h"

#include <algorithm>
#include <vector>

#include "kernels/base/parallel.h"

namespace ember::kernels::cpu {

namespace {

// One task sorts whole lines (o, k). A line is copied into a contiguous buffer of (value,
// position) pairs first (for inner > 1 its elements are `inner` apart), and the pairs are
// ordered by sort_before: sorting the pairs themselves, not positions that point back into the
// line, keeps every comparison on memory the sort is already walking. The order is total (ties
// broken by position), so std::sort, which is not stable, still gives the stable answer, and
// std::partial_sort (topk: only the first `keep` in order, O(n log keep)) gives the first `keep`
// of that same answer.
template <typename T>
struct Entry {
  T value;
  int64_t position;
};

template <typename T>
void sort_typed(int64_t outer, int64_t n, int64_t inner, int64_t keep, bool descending, const T* in,
                T* values, int64_t* indices) {
  const int64_t lines = outer * inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
  parallel_for(0, lines, grain, [&](int64_t b, int64_t e) {
    std::vector<Entry<T>> line(static_cast<size_t>(n));
    const auto before = [descending](const Entry<T>& x, const Entry<T>& y) {
      return sort_before(x.value, x.position, y.value, y.position, descending);
    };
    for (int64_t l = b; l < e; ++l) {
      const int64_t o = l / inner, k = l % inner;
      const T* src = in + o * n * inner + k;
      for (int64_t j = 0; j < n; ++j) line[j] = Entry<T>{src[j * inner], j};
      if (keep == n) std::sort(line.begin(), line.end(), before);
      else std::partial_sort(line.begin(), line.begin() + keep, line.end(), before);
      T* dst_values = values + o * keep * inner + k;
      int64_t* dst_indices = indices + o * keep * inner + k;
      for (int64_t i = 0; i < keep; ++i) {
        dst_values[i * inner] = line[i].value;
        dst_indices[i * inner] = line[i].position;
      }
    }
  });
}

}  // namespace

void sort(DType dtype, int64_t outer, int64_t n, int64_t inner, int64_t keep, bool descending,
          const void* in, void* values, int64_t* indices) {
  EMBER_DISPATCH_ALL(dtype, "sort", [&] {
    sort_typed<scalar_t>(outer, n, inner, keep, descending, static_cast<const scalar_t*>(in),
                         static_cast<scalar_t*>(values), indices);
  });
}

const SortKernels sort_kernels = {&sort};

}  // namespace ember::kernels::cpu
