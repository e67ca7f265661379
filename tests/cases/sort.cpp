// Op cases for sort and topk: gradcheck in float64 on the CPU, and CUDA parity.
//
// Kinks: the order of two elements flips when they cross, so the gradient cases draw values
// without ties (distinct() below) that stay further apart than a finite-difference step; ties,
// NaN and the integer dtypes are forward-only cases here, and differential cases against
// PyTorch (tests/fixtures/make_differential.py).
//
// sort and topk return two tensors; a case returns both through one: the values, and the indices
// as float64, joined along the sorted dim. The gradient flows through the values only, and a
// wrong index changes the result.
#include <cmath>
#include <utility>

#include "op_cases.h"

namespace ember::test {
namespace {

using T = const Tensor&;

// Values and positions joined along dim, so one output checks both (float values keep their
// dtype and gradient; integer and bool ones are compared as int64).
Tensor both(const ValuesIndices& r, int64_t dim) {
  const DType dt = is_floating(r.values.dtype()) ? r.values.dtype() : kInt64;
  return cat({r.values.to(dt), r.indices.to(dt)}, dim);
}

// A float64 leaf of distinct values at least 0.1 apart, in a shuffled order: no ties, and no
// finite-difference step can swap two of them.
Tensor distinct(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (randperm(n, kFloat64) * 0.1 - 0.05 * double(n))
      .reshape(shape)
      .detach()
      .requires_grad_(true);
}

// The same, every other element of a buffer twice as long in the last dim: non-contiguous.
Tensor distinct_strided(const Shape& shape, uint64_t seed) {
  Shape wide_shape = shape;
  wide_shape.back() *= 2;
  Tensor view = zeros(wide_shape, kFloat64).slice(-1, 0, wide_shape.back(), 2);
  view.copy_(distinct(shape, seed).detach());
  return view.detach().requires_grad_(true);
}

// The same, laid out transposed (last two dims swapped in memory): non-contiguous.
Tensor distinct_transposed(const Shape& shape, uint64_t seed) {
  Shape s = shape;
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return distinct(s, seed).detach().transpose(-1, -2).requires_grad_(true);
}

// NaN shown as 99, so that the float32 rerun of every case (tests/core/gradcheck.cpp) can compare.
Tensor nan_as_99(const Tensor& t) { return masked_fill(t, isnan(t), 99.0); }

OpCase forward_only(const std::string& op, const std::string& label, std::function<Tensor()> input,
                    std::function<Tensor(const Tensor&)> f) {
  return unary_case(op, label, std::move(input), std::move(f), false);
}

EMBER_OP_CASES({
    // ---- sort ---------------------------------------------------------------------------------
    unary_case(
        "sort", "last dim of [3, 5], ascending",
        [] {
          return distinct({3, 5}, 701);
        },
        [](T a) { return both(sort(a), -1); }),
    unary_case(
        "sort", "dim 0 of transposed [4, 3], descending",
        [] {
          return distinct_transposed({4, 3}, 702);
        },
        [](T a) { return both(sort(a, 0, true), 0); }),
    unary_case(
        "sort", "dim 1 of strided [2, 3, 4] (inner 4)",
        [] {
          return distinct_strided({2, 3, 4}, 703);
        },
        [](T a) { return both(a.sort(1, false, true), 1); }),
    unary_case(
        "sort", "a 0-d tensor", [] { return leaf({}, 704); },
        [](T a) { return sort(a, 0).values * 2.0; }),
    unary_case(
        "sort", "37 elements, only the values used", [] { return distinct({37}, 705); },
        [](T a) { return sort(a, 0, true).values * 3.0; }),
    forward_only(
        "sort", "ties keep their order, both directions",
        [] {
          return tensor({2.0, 1.0, 2.0, -0.0, 0.0, 1.0, 2.0, 0.0}, kFloat64);
        },
        [](T a) {
          return cat({both(sort(a, 0, false, true), 0), both(sort(a, 0, true), 0)}, 0);
        }),
    forward_only(
        "sort", "NaN sorts last ascending, first descending",
        [] {
          const double nan = std::nan("");
          return tensor({1.0, nan, -3.0, nan, 0.5, -1e30}, kFloat64);
        },
        [](T a) {
          return nan_as_99(cat({both(sort(a), 0), both(sort(a, 0, true), 0)}, 0));
        }),
    forward_only(
        "sort", "int64 [3, 7] along dim 1, descending",
        [] {
          return indices({3, 7}, 9, 706) - 4;
        },
        [](T a) { return both(sort(a, 1, true, true), 1); }),
    forward_only(
        "sort", "uint8 [9] and bool [9]", [] { return indices({9}, 4, 707); },
        [](T a) {
          return cat({both(sort(a.to(kUInt8), 0, false, true), 0),
                      both(sort(a.gt(1), 0, true, true), 0)},
                     0);
        }),
    // ---- topk ---------------------------------------------------------------------------------
    unary_case(
        "topk", "k 2 of the last dim of [3, 5]",
        [] {
          return distinct({3, 5}, 711);
        },
        [](T a) { return both(topk(a, 2), -1); }),
    unary_case(
        "topk", "smallest 3 along dim 0 of transposed [5, 4]",
        [] {
          return distinct_transposed({5, 4}, 712);
        },
        [](T a) { return both(topk(a, 3, 0, false), 0); }),
    unary_case(
        "topk", "k = n along dim 1 of [2, 6, 3]",
        [] {
          return distinct({2, 6, 3}, 713);
        },
        [](T a) { return both(a.topk(6, 1), 1); }),
    unary_case(
        "topk", "k 5 of rows of 2100 (the long-line path on a GPU)",
        [] {
          return distinct({2, 2100}, 714);
        },
        [](T a) { return both(topk(a, 5), 1); }),
    unary_case(
        "topk", "k 0 gives empty outputs",
        [] {
          return distinct({3, 4}, 715);
        },
        [](T a) { return topk(a, 0, 1).values.sum() + a.sum() * 0.5; }),
    unary_case(
        "topk", "a 0-d tensor, k 1", [] { return leaf({}, 716); },
        [](T a) { return topk(a, 1).values * 2.0; }),
    forward_only(
        "topk", "NaN is the largest; ties go to the earliest",
        [] {
          const double nan = std::nan("");
          return tensor({1.0, nan, 3.0, 3.0, -2.0, nan, -2.0, 0.0}, kFloat64);
        },
        [](T a) {
          return nan_as_99(cat({both(topk(a, 4), 0), both(topk(a, 3, 0, false), 0)}, 0));
        }),
    forward_only(
        "topk", "int64 [4, 6] k 3 along dim 1, and uint8",
        [] {
          return indices({4, 6}, 50, 717);
        },
        [](T a) {
          return cat({both(topk(a, 3, 1), 1), both(topk(a.to(kUInt8), 3, 1, false), 1)}, 1);
        }),
});

}  // namespace
}  // namespace ember::test
