// Op cases for pooling: max_pool2d, avg_pool2d (core/ops/pool2d.cpp).
//
// Geometries: the CNN tutorials' kernel 2 / stride 2; overlapping windows (kernel 3, stride 1);
// padding; non-square kernel, stride and padding; odd sizes the floor mode cuts; stride larger
// than the kernel (inputs no window covers); 3-d [C, H, W] input; strided and transposed inputs;
// ceil mode (odd sizes, windows over the right padding), dilation (max), count_include_pad =
// false (avg), and the values of max_pool2d_with_indices.
#include <array>
#include <utility>

#include "op_cases.h"

namespace ember::test {
namespace {

enum class Layout { Contiguous, Transposed, Strided };

// A float64 leaf whose values are all distinct and at least 2/numel apart (a shuffled ramp in
// [-1, 1)). max_pool2d's gradient is undefined at a tie inside a window, and a finite-difference
// step must never change which tap wins: distinct, well separated values make gradcheck valid.
Tensor distinct(const Shape& shape, uint64_t seed, Layout layout = Layout::Contiguous) {
  const bool transposed = layout == Layout::Transposed;
  Shape stored = shape;
  if (transposed) std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
  if (layout == Layout::Strided) stored.back() *= 2;
  const int64_t n = shape_numel(stored);
  manual_seed(seed);
  Tensor t = (randperm(n, kFloat64) * (2.0 / static_cast<double>(n)) - 1.0).reshape(stored);
  if (transposed) t = t.transpose(-1, -2);
  if (layout == Layout::Strided) t = t.slice(-1, 0, stored.back(), 2);
  return t.detach().requires_grad_(true);
}

Pool2dOptions pool(std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride = {0, 0},
                   std::array<int64_t, 2> padding = {0, 0},
                   std::array<int64_t, 2> dilation = {1, 1}, bool ceil_mode = false,
                   bool count_include_pad = true) {
  Pool2dOptions o;
  o.kernel_size = kernel;
  o.stride = stride;
  o.padding = padding;
  o.dilation = dilation;
  o.ceil_mode = ceil_mode;
  o.count_include_pad = count_include_pad;
  return o;
}

using T = const Tensor&;
constexpr Layout kT = Layout::Transposed;
constexpr Layout kS = Layout::Strided;

EMBER_OP_CASES({
    // max_pool2d on distinct values (no ties).
    unary_case(
        "max_pool2d", "k2 s2 (default stride) [2, 3, 6, 6]",
        [] {
          return distinct({2, 3, 6, 6}, 601);
        },
        [](T a) {
          return max_pool2d(a, pool({2, 2}));
        }),
    unary_case(
        "max_pool2d", "k3 s1 overlapping windows [1, 2, 5, 7]",
        [] {
          return distinct({1, 2, 5, 7}, 602);
        },
        [](T a) {
          return max_pool2d(a, pool({3, 3}, {1, 1}));
        }),
    unary_case(
        "max_pool2d", "k3 s2 pad 1 [2, 2, 7, 7]",
        [] {
          return distinct({2, 2, 7, 7}, 603);
        },
        [](T a) {
          return max_pool2d(a, pool({3, 3}, {2, 2}, {1, 1}));
        }),
    unary_case(
        "max_pool2d", "non-square k [2, 3] s [1, 2] pad [1, 0] [1, 3, 6, 9]",
        [] {
          return distinct({1, 3, 6, 9}, 604);
        },
        [](T a) {
          return max_pool2d(a, pool({2, 3}, {1, 2}, {1, 0}));
        }),
    unary_case(
        "max_pool2d", "odd [1, 2, 7, 5] k2 s2: floor drops the last row and column",
        [] {
          return distinct({1, 2, 7, 5}, 605);
        },
        [](T a) {
          return max_pool2d(a, pool({2, 2}));
        }),
    unary_case(
        "max_pool2d", "stride 3 > kernel 2 [1, 2, 8, 7]: uncovered inputs",
        [] {
          return distinct({1, 2, 8, 7}, 606);
        },
        [](T a) {
          return max_pool2d(a, pool({2, 2}, {3, 3}));
        }),
    unary_case(
        "max_pool2d", "3-d [3, 5, 6] k2 s1",
        [] {
          return distinct({3, 5, 6}, 607);
        },
        [](T a) {
          return max_pool2d(a, pool({2, 2}, {1, 1}));
        }),
    unary_case(
        "max_pool2d", "strided [2, 2, 6, 5] k3 s2 pad 1",
        [] {
          return distinct({2, 2, 6, 5}, 608, kS);
        },
        [](T a) {
          return max_pool2d(a, pool({3, 3}, {2, 2}, {1, 1}));
        }),
    unary_case(
        "max_pool2d", "transposed [1, 3, 5, 6] k2 s [2, 1]",
        [] {
          return distinct({1, 3, 5, 6}, 609, kT);
        },
        [](T a) {
          return max_pool2d(a, pool({2, 2}, {2, 1}));
        }),
    unary_case(
        "max_pool2d", "k1 [1, 1, 3, 4]: the identity",
        [] {
          return distinct({1, 1, 3, 4}, 610);
        },
        [](T a) {
          return max_pool2d(a, pool({1, 1}));
        }),
    unary_case(
        "max_pool2d", "ceil mode [1, 2, 7, 5] k2 s2: the last row and column pooled alone",
        [] {
          return distinct({1, 2, 7, 5}, 611);
        },
        [](T a) {
          return max_pool2d(a, pool({2, 2}, {2, 2}, {0, 0}, {1, 1}, true));
        }),
    unary_case(
        "max_pool2d", "ceil mode k3 s2 pad 1 [2, 2, 8, 8]: windows over the right padding",
        [] {
          return distinct({2, 2, 8, 8}, 612);
        },
        [](T a) {
          return max_pool2d(a, pool({3, 3}, {2, 2}, {1, 1}, {1, 1}, true));
        }),
    unary_case(
        "max_pool2d", "dilation 2 k3 s1 [1, 2, 9, 8]",
        [] {
          return distinct({1, 2, 9, 8}, 613);
        },
        [](T a) {
          return max_pool2d(a, pool({3, 3}, {1, 1}, {0, 0}, {2, 2}));
        }),
    unary_case(
        "max_pool2d", "dilation (2, 3) k [3, 2] s [2, 1] pad 1, ceil [2, 1, 10, 9]",
        [] {
          return distinct({2, 1, 10, 9}, 614);
        },
        [](T a) {
          return max_pool2d(a, pool({3, 2}, {2, 1}, {1, 1}, {2, 3}, true));
        }),
    unary_case(
        "max_pool2d", "with_indices values, dilation 2 pad 1 [1, 3, 7, 6]",
        [] {
          return distinct({1, 3, 7, 6}, 615);
        },
        [](T a) {
          return max_pool2d_with_indices(a, pool({2, 2}, {2, 1}, {1, 1}, {2, 2})).values;
        }),
    // avg_pool2d (smooth: any values).
    unary_case(
        "avg_pool2d", "k2 s2 (default stride) [2, 3, 6, 6]",
        [] {
          return leaf({2, 3, 6, 6}, 621);
        },
        [](T a) {
          return avg_pool2d(a, pool({2, 2}));
        }),
    unary_case(
        "avg_pool2d", "k3 s1 overlapping windows [1, 2, 5, 7]",
        [] {
          return leaf({1, 2, 5, 7}, 622);
        },
        [](T a) {
          return avg_pool2d(a, pool({3, 3}, {1, 1}));
        }),
    unary_case(
        "avg_pool2d", "k3 s2 pad 1 (padding counts as zeros) [2, 2, 7, 7]",
        [] {
          return leaf({2, 2, 7, 7}, 623);
        },
        [](T a) {
          return avg_pool2d(a, pool({3, 3}, {2, 2}, {1, 1}));
        }),
    unary_case(
        "avg_pool2d", "non-square k [2, 3] s [1, 2] pad [1, 0] [1, 3, 6, 9]",
        [] {
          return leaf({1, 3, 6, 9}, 624);
        },
        [](T a) {
          return avg_pool2d(a, pool({2, 3}, {1, 2}, {1, 0}));
        }),
    unary_case(
        "avg_pool2d", "odd [1, 2, 7, 5] k2 s2: floor drops the last row and column",
        [] {
          return leaf({1, 2, 7, 5}, 625);
        },
        [](T a) {
          return avg_pool2d(a, pool({2, 2}));
        }),
    unary_case(
        "avg_pool2d", "stride 3 > kernel 2 [1, 2, 8, 7]: uncovered inputs",
        [] {
          return leaf({1, 2, 8, 7}, 626);
        },
        [](T a) {
          return avg_pool2d(a, pool({2, 2}, {3, 3}));
        }),
    unary_case(
        "avg_pool2d", "3-d [3, 5, 6] k2 s1",
        [] {
          return leaf({3, 5, 6}, 627);
        },
        [](T a) {
          return avg_pool2d(a, pool({2, 2}, {1, 1}));
        }),
    unary_case(
        "avg_pool2d", "strided [2, 2, 6, 5] k3 s2 pad 1",
        [] {
          return leaf_strided({2, 2, 6, 5}, 628);
        },
        [](T a) {
          return avg_pool2d(a, pool({3, 3}, {2, 2}, {1, 1}));
        }),
    unary_case(
        "avg_pool2d", "transposed [1, 3, 5, 6] k [3, 2] s [1, 2] pad [1, 1]",
        [] {
          return leaf_transposed({1, 3, 5, 6}, 629);
        },
        [](T a) {
          return avg_pool2d(a, pool({3, 2}, {1, 2}, {1, 1}));
        }),
    unary_case(
        "avg_pool2d", "count_include_pad false k3 s2 pad 1 [2, 2, 7, 7]",
        [] {
          return leaf({2, 2, 7, 7}, 630);
        },
        [](T a) {
          return avg_pool2d(a, pool({3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false));
        }),
    unary_case(
        "avg_pool2d", "ceil mode k3 s2 pad 1 [1, 2, 8, 7]: divisor clipped to the padding",
        [] {
          return leaf({1, 2, 8, 7}, 631);
        },
        [](T a) {
          return avg_pool2d(a, pool({3, 3}, {2, 2}, {1, 1}, {1, 1}, true));
        }),
    unary_case(
        "avg_pool2d", "ceil mode, count_include_pad false k2 s2 [2, 1, 5, 7]",
        [] {
          return leaf({2, 1, 5, 7}, 632);
        },
        [](T a) {
          return avg_pool2d(a, pool({2, 2}, {2, 2}, {0, 0}, {1, 1}, true, false));
        }),
});

}  // namespace
}  // namespace ember::test
