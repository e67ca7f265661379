// Op cases for reductions: sum, mean, sum_to, max, min, argmax, argmin.
#include "op_cases.h"

namespace ember::test {
namespace {

enum class Layout { Contiguous, Transposed, Strided };

// A float64 leaf whose values are all distinct and at least 2/numel apart (a shuffled ramp in
// [-1, 1)): max/min have no ties and no near-ties, so a finite-difference step of 1e-6 never
// changes which element wins, and the gradient check is valid.
Tensor distinct(const Shape& shape, uint64_t seed, Layout layout = Layout::Contiguous) {
  const bool transposed = layout == Layout::Transposed && shape.size() >= 2;
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

OpCase forward_only(const std::string& op, const std::string& label, std::function<Tensor()> input,
                    std::function<Tensor(const Tensor&)> f) {
  return unary_case(op, label, std::move(input), std::move(f), false);
}

using T = const Tensor&;
constexpr Layout kT = Layout::Transposed;
constexpr Layout kS = Layout::Strided;

EMBER_OP_CASES({
    // sum: one dim, several dims, scattered dims, negative dims, all dims, keepdim both ways.
    unary_case("sum", "all dims of [3, 5] -> 0-d", [] { return leaf({3, 5}, 101); },
               [](T a) { return sum(a); }),
    unary_case("sum", "dim 1 of [4, 7], transposed", [] { return leaf_transposed({4, 7}, 102); },
               [](T a) { return sum(a, {1}); }),
    unary_case("sum", "dim 0 of [5, 3] keepdim", [] { return leaf({5, 3}, 103); },
               [](T a) { return sum(a, {0}, true); }),
    unary_case("sum", "scattered dims {0, 2} of [3, 4, 5]", [] { return leaf({3, 4, 5}, 104); },
               [](T a) { return sum(a, {0, 2}); }),
    unary_case("sum", "scattered dims {0, 2} of strided [2, 3, 7] keepdim",
               [] { return leaf_strided({2, 3, 7}, 105); },
               [](T a) { return sum(a, {0, 2}, true); }),
    unary_case("sum", "negative dims {-1, -2} of [2, 3, 4]", [] { return leaf({2, 3, 4}, 106); },
               [](T a) { return a.sum({-1, -2}); }),
    unary_case("sum", "all dims listed {0, 1, 2} of transposed [3, 2, 5] keepdim",
               [] { return leaf_transposed({3, 2, 5}, 107); },
               [](T a) { return sum(a, {0, 1, 2}, true); }),
    unary_case("sum", "[1, 13] over dim 0 (size 1)", [] { return leaf({1, 13}, 108); },
               [](T a) { return sum(a, {0}); }),
    // prod: all dims, one dim, keepdim, a zero in a slice (the gradient without division).
    unary_case("prod", "all dims of [3, 4]", [] { return leaf({3, 4}, 121, 0.5, 1.5); },
               [](T a) { return prod(a); }),
    unary_case("prod", "dim 1 of transposed [4, 5]",
               [] { return leaf_transposed({4, 5}, 122, -1.5, 1.5); },
               [](T a) { return prod(a, 1); }),
    unary_case("prod", "dim 0 of strided [3, 4] keepdim",
               [] { return leaf_strided({3, 4}, 123, -1.5, 1.5); },
               [](T a) { return prod(a, 0, true); }),
    unary_case("prod", "dim -1 of [2, 3, 4] with zeros",
               [] {
                 Tensor t = leaf({2, 3, 4}, 124, -1.5, 1.5).detach();
                 t.select(2, 1).select(1, 0).zero_();  // a zero in two slices of dim 2
                 t.select(2, 2).select(1, 0).zero_();  // two zeros in one of them
                 t.select(2, 3).select(1, 2).zero_();
                 return t.requires_grad_(true);
               },
               [](T a) { return prod(a, -1); }),
    // mean
    unary_case("mean", "all dims of strided [4, 6]", [] { return leaf_strided({4, 6}, 111); },
               [](T a) { return mean(a); }),
    unary_case("mean", "dim -1 of [3, 7] keepdim", [] { return leaf({3, 7}, 112); },
               [](T a) { return a.mean({-1}, true); }),
    unary_case("mean", "scattered dims {1, 3} of [2, 3, 2, 5]",
               [] { return leaf({2, 3, 2, 5}, 113); },
               [](T a) { return mean(a, {1, 3}); }),
    unary_case("mean", "dim 0 of transposed [5, 4]", [] { return leaf_transposed({5, 4}, 114); },
               [](T a) { return mean(a, {0}); }),
    // sum_to: the reverse of broadcasting.
    unary_case("sum_to", "[2, 3, 4] -> [3, 1]", [] { return leaf({2, 3, 4}, 121); },
               [](T a) { return sum_to(a, {3, 1}); }),
    unary_case("sum_to", "[2, 3, 4] -> [4] (leading dims)", [] { return leaf({2, 3, 4}, 122); },
               [](T a) { return sum_to(a, {4}); }),
    unary_case("sum_to", "transposed [5, 3] -> [1, 3]", [] { return leaf_transposed({5, 3}, 123); },
               [](T a) { return sum_to(a, {1, 3}); }),
    unary_case("sum_to", "strided [3, 4] -> [] (0-d)", [] { return leaf_strided({3, 4}, 124); },
               [](T a) { return sum_to(a, {}); }),
    unary_case("sum_to", "[2, 7] -> same shape", [] { return leaf({2, 7}, 125); },
               [](T a) { return sum_to(a, {2, 7}); }),
    // max / min on distinct values (no ties, so finite differences are valid).
    unary_case("max", "dim 1 of [4, 7]", [] { return distinct({4, 7}, 131); },
               [](T a) { return max(a, 1).values; }),
    unary_case("max", "dim 0 of transposed [5, 3] keepdim",
               [] { return distinct({5, 3}, 132, kT); },
               [](T a) { return max(a, 0, true).values; }),
    unary_case("max", "middle dim of strided [2, 5, 3]",
               [] { return distinct({2, 5, 3}, 133, kS); },
               [](T a) { return max(a, 1).values; }),
    unary_case("max", "dim -1 of [3, 1, 13]", [] { return distinct({3, 1, 13}, 134); },
               [](T a) { return a.max(-1); }),
    unary_case("max", "all elements of transposed [6, 4] -> 0-d",
               [] { return distinct({6, 4}, 135, kT); },
               [](T a) { return max(a); }),
    unary_case("max", "dim 0 of [1, 7] (size 1)", [] { return distinct({1, 7}, 136); },
               [](T a) { return max(a, 0).values; }),
    unary_case("min", "dim 1 of [5, 6] keepdim", [] { return distinct({5, 6}, 141); },
               [](T a) { return min(a, 1, true).values; }),
    unary_case("min", "dim -3 of strided [3, 2, 4]", [] { return distinct({3, 2, 4}, 142, kS); },
               [](T a) { return min(a, -3).values; }),
    unary_case("min", "all elements of [13]", [] { return distinct({13}, 143); },
               [](T a) { return min(a); }),
    unary_case("min", "all elements of strided [3, 5]", [] { return distinct({3, 5}, 144, kS); },
               [](T a) { return a.min(); }),
    // argmax / argmin: integer results, forward only.
    forward_only("argmax", "dim 1 of [4, 7]", [] { return distinct({4, 7}, 151); },
                 [](T a) { return argmax(a, 1); }),
    forward_only("argmax", "dim 0 of transposed [5, 3] keepdim",
                 [] { return distinct({5, 3}, 152, kT); },
                 [](T a) { return argmax(a, 0, true); }),
    forward_only("argmax", "flat index of strided [3, 4, 2]",
                 [] { return distinct({3, 4, 2}, 153, kS); },
                 [](T a) { return argmax(a); }),
    forward_only("argmin", "middle dim of [2, 6, 3]", [] { return distinct({2, 6, 3}, 154); },
                 [](T a) { return argmin(a, 1); }),
    forward_only("argmin", "dim -1 of strided [4, 5] keepdim",
                 [] { return distinct({4, 5}, 155, kS); },
                 [](T a) { return a.argmin(-1, true); }),
});

}  // namespace
}  // namespace ember::test
