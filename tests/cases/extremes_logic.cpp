// Op cases for clamping, elementwise extremes, amax/amin and the bool ops: clamp, clamp_min,
// clamp_max, maximum, minimum, amax, amin, any, all, argmin over every element, isnan, isinf,
// isfinite, logical_and, logical_or, logical_xor, logical_not.
//
// Ties: where two elements tie exactly (maximum(a, a), a row with its largest value twice), the
// central difference gradcheck takes is ((x + e) - x) / 2e = 1/2 for each of the two, which is
// exactly the half-and-half split that PyTorch's (and ember's) backward gives, so the tie cases
// below are real gradient checks of that rule.
#include <cmath>
#include <limits>

#include "op_cases.h"

namespace ember::test {
namespace {

using T = const Tensor&;

OpCase forward_only(const std::string& op, const std::string& label, std::function<Tensor()> input,
                    std::function<Tensor(const Tensor&)> f) {
  return unary_case(op, label, std::move(input), std::move(f), false);
}

OpCase binary_forward_only(const std::string& op, const std::string& label,
                           std::function<Tensor()> a, std::function<Tensor()> b,
                           std::function<Tensor(const Tensor&, const Tensor&)> f) {
  OpCase c = binary_case(op, label, std::move(a), std::move(b), std::move(f));
  c.differentiable = false;
  return c;
}

// Integers -1..1 stored as float64: many zeros (false) and ties.
Tensor small_ints(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  return randint(-1, 2, shape).to(kFloat64);
}

// A [2, 5] leaf whose rows hold their largest and their smallest value twice each (exact ties).
Tensor tied_rows() {
  return tensor({0.1, 0.7, -0.3, 0.7, -0.3, 0.5, -0.2, 0.4, 0.5, -0.2}, kFloat64)
      .reshape({2, 5})
      .requires_grad_(true);
}

// Special values: NaN, +-inf, +-0, a tiny normal number (float32 keeps it), ordinary numbers.
Tensor specials() {
  const double inf = std::numeric_limits<double>::infinity();
  return tensor({0.0, -0.0, 1.5, -2.0, inf, -inf, std::nan(""), 1e-30, 3.0}, kFloat64);
}

// NaN shown as 99: the forward test also compares a float32 run with Approx, which no NaN
// passes; the positions of the NaNs are still checked, as 99s.
Tensor nan_as_99(const Tensor& y) { return masked_fill(y, isnan(y), 99.0); }

EMBER_OP_CASES({
    // clamp: both bounds, one bound, min > max, integer input (computes in int64).
    unary_case(
        "clamp", "[-0.5, 0.5] of [4, 5]",
        [] {
          return leaf({4, 5}, 501);
        },
        [](T a) { return clamp(a, -0.5, 0.5); }),
    unary_case(
        "clamp", "min only, transposed [3, 6]",
        [] {
          return leaf_transposed({3, 6}, 502);
        },
        [](T a) { return clamp(a, 0.25, std::nullopt); }),
    unary_case(
        "clamp", "max only, strided [2, 7]",
        [] {
          return leaf_strided({2, 7}, 503);
        },
        [](T a) { return clamp(a, std::nullopt, -0.1); }),
    unary_case(
        "clamp", "min > max: every element is max", [] { return leaf({9}, 504); },
        [](T a) { return clamp(a, 0.5, -0.5); }),
    forward_only(
        "clamp", "int64 [3, 4] into [-3, 4]",
        [] {
          return indices({3, 4}, 20, 505) - 10;
        },
        [](T a) { return clamp(a, -3, 4); }),
    unary_case(
        "clamp_min", "0.1 on [5, 3]",
        [] {
          return leaf({5, 3}, 506);
        },
        [](T a) { return clamp_min(a, 0.1); }),
    unary_case(
        "clamp_max", "-0.2 on transposed [4, 3]",
        [] {
          return leaf_transposed({4, 3}, 507);
        },
        [](T a) { return clamp_max(a, -0.2); }),
    // maximum / minimum: broadcast, layouts, exact ties.
    binary_case(
        "maximum", "same shape [4, 5]",
        [] {
          return leaf({4, 5}, 511);
        },
        [] {
          return leaf({4, 5}, 512);
        },
        [](T a, T b) { return maximum(a, b); }),
    binary_case(
        "maximum", "broadcast [3, 1] with transposed [2, 3, 4]",
        [] {
          return leaf({3, 1}, 513);
        },
        [] {
          return leaf_transposed({2, 3, 4}, 514);
        },
        [](T a, T b) { return maximum(a, b); }),
    binary_case(
        "maximum", "ties: x with itself, each gets half", [] { return leaf({6}, 515); },
        [] { return leaf({6}, 515); }, [](T a, T b) { return maximum(a, b); }),
    binary_case(
        "minimum", "strided [3, 5] with 0-d",
        [] {
          return leaf_strided({3, 5}, 516);
        },
        [] { return leaf({}, 517); }, [](T a, T b) { return minimum(a, b); }),
    binary_case(
        "minimum", "ties: x with itself, broadcast over [2, 4]", [] { return leaf({4}, 518); },
        [] { return leaf({4}, 518); },
        [](T a, T b) {
          return minimum(a.expand({2, 4}), b);
        }),
    binary_forward_only(
        "maximum", "int64 with float64: promoted, with NaN", [] { return indices({9}, 5, 519); },
        [] { return specials(); }, [](T a, T b) { return nan_as_99(maximum(a, b)); }),
    binary_forward_only(
        "minimum", "bool with bool (logical and)",
        [] { return small_ints({7}, 520).ne(scalar_tensor(0.0, kFloat64)); },
        [] { return small_ints({7}, 521).ne(scalar_tensor(0.0, kFloat64)); },
        [](T a, T b) { return minimum(a, b); }),
    // amax / amin: one dim, several dims, all dims, keepdim, ties split evenly.
    unary_case(
        "amax", "dims {0, 2} of [3, 4, 5]",
        [] {
          return leaf({3, 4, 5}, 531);
        },
        [](T a) {
          return amax(a, {0, 2});
        }),
    unary_case(
        "amax", "all of transposed [4, 6]",
        [] {
          return leaf_transposed({4, 6}, 532);
        },
        [](T a) { return amax(a); }),
    unary_case(
        "amax", "ties: each row's largest twice", [] { return tied_rows(); },
        [](T a) { return amax(a, {1}); }),
    unary_case(
        "amin", "dim -1 of strided [3, 5] keepdim",
        [] {
          return leaf_strided({3, 5}, 533);
        },
        [](T a) { return amin(a, {-1}, true); }),
    unary_case(
        "amin", "ties: each row's smallest twice, keepdim", [] { return tied_rows(); },
        [](T a) { return amin(a, {1}, true); }),
    forward_only(
        "amax", "with NaN and infinities", [] { return specials(); },
        [](T a) {
          const Tensor finite = a.slice(0, 0, 6);  // no NaN: +-inf, +-0
          return nan_as_99(stack({amax(a), amax(finite), amin(finite)}));
        }),
    // any / all: whole tensor and along a dim, NaN and -0.0, an empty dim.
    forward_only(
        "any", "whole [3, 4] of -1..1",
        [] {
          return small_ints({3, 4}, 541);
        },
        [](T a) { return any(a); }),
    forward_only(
        "any", "dim 1 of transposed [4, 3]",
        [] {
          return small_ints({3, 4}, 542).transpose(0, 1);
        },
        [](T a) { return any(a, 1); }),
    forward_only(
        "any", "specials (NaN is true, -0.0 false)", [] { return specials(); },
        [](T a) { return logical_or(any(a.slice(0, 1, 2)), any(a.slice(0, 6, 7))); }),
    forward_only(
        "all", "dim 0 of [4, 5] keepdim",
        [] {
          return small_ints({4, 5}, 543);
        },
        [](T a) { return all(a, 0, true); }),
    forward_only(
        "all", "whole specials, and dim 1 of an empty [9, 0]", [] { return specials(); },
        [](T a) {
          return cat({all(a).reshape({1}), all(a.reshape({9, 1}).slice(1, 0, 0), 1)});
        }),
    // argmin over every element (argmax(a) had it already).
    forward_only(
        "argmin", "flat index of transposed [4, 3]",
        [] {
          return leaf_transposed({4, 3}, 551);
        },
        [](T a) { return argmin(a); }),
    // tests of each element
    forward_only(
        "isnan", "specials", [] { return specials(); }, [](T a) { return isnan(a); }),
    forward_only(
        "isnan", "int64 [5]: never", [] { return indices({5}, 9, 561); },
        [](T a) { return isnan(a); }),
    forward_only(
        "isinf", "specials, strided",
        [] {
          return specials().reshape({3, 3}).slice(1, 0, 3, 2);
        },
        [](T a) { return isinf(a); }),
    forward_only(
        "isfinite", "specials", [] { return specials(); }, [](T a) { return isfinite(a); }),
    forward_only(
        "isfinite", "bool [4]: always",
        [] { return small_ints({4}, 562).ne(scalar_tensor(0.0, kFloat64)); },
        [](T a) { return isfinite(a); }),
    // logical ops: broadcast, mixed dtypes, NaN
    binary_forward_only(
        "logical_and", "broadcast [3, 1] with [4]",
        [] {
          return small_ints({3, 1}, 571);
        },
        [] { return small_ints({4}, 572); }, [](T a, T b) { return logical_and(a, b); }),
    binary_forward_only(
        "logical_or", "int64 [9] with specials", [] { return indices({9}, 2, 573); },
        [] { return specials(); }, [](T a, T b) { return logical_or(a, b); }),
    binary_forward_only(
        "logical_xor", "transposed [3, 4] with [4]",
        [] {
          return small_ints({4, 3}, 574).transpose(0, 1);
        },
        [] { return small_ints({4}, 575); }, [](T a, T b) { return logical_xor(a, b); }),
    forward_only(
        "logical_not", "specials", [] { return specials(); }, [](T a) { return logical_not(a); }),
});

}  // namespace
}  // namespace ember::test
