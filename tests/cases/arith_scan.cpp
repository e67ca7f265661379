// Op cases for the arithmetic and scan ops of issue 27's second part: where with numbers,
// pow with a tensor exponent (and a number base), fmod, remainder, cumsum, split and chunk.
//
// Kinks: fmod and remainder jump where a / b crosses an integer, and pow(a, b) has no real
// derivative in b for a <= 0. The gradient cases keep away from both: operands drawn so that
// no a / b lies within a finite-difference step of an integer (random doubles in [-1, 1] over
// |b| in [0.5, 1.5]), positive bases for pow. The edge values (zeros, negative bases, integer
// dtypes, NaN) are forward-only cases here and differential cases against PyTorch
// (tests/fixtures/make_differential.py).
//
// Ops that return several tensors (split, chunk) are checked through one tensor: the pieces
// each scaled by a different factor and joined, so a gradient sent to the wrong piece (or to
// the wrong place of the input) changes the result.
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

// A bool condition drawn from its own seed (no gradient).
Tensor condition(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  return rand(shape, kFloat64).gt(scalar_tensor(0.5, kFloat64));
}

// Pieces scaled by 1, 2, 3, ... and joined back along dim.
Tensor joined(const std::vector<Tensor>& pieces, int64_t dim) {
  std::vector<Tensor> scaled;
  for (size_t i = 0; i < pieces.size(); ++i) scaled.push_back(pieces[i] * double(i + 1));
  return cat(scaled, dim);
}

// Values that exercise the signs of remainders: integers of both signs stored as float64.
Tensor signed_ints(const Shape& shape, int64_t high, uint64_t seed) {
  return (indices(shape, 2 * high + 1, seed) - high).to(kFloat64);
}

EMBER_OP_CASES({
    // ---- where with a number on either side, or both ----------------------------------------
    binary_case(
        "where", "number 0.5 as the second value, [3, 4]",
        [] {
          return condition({3, 4}, 601);
        },
        [] {
          return leaf({3, 4}, 602);
        },
        [](T c, T x) { return where(c, x, 0.5); }),
    binary_case(
        "where", "number 2 as the first value, broadcast cond [3, 1] with transposed [3, 4]",
        [] {
          return condition({3, 1}, 603);
        },
        [] {
          return leaf_transposed({3, 4}, 604);
        },
        [](T c, T x) { return where(c, 2, x); }),
    forward_only(
        "where", "two numbers 1 and 2.5 (float32)", [] { return condition({5}, 605); },
        [](T c) { return where(c, 1, 2.5); }),
    forward_only(
        "where", "int64 tensor with number 7 stays int64", [] { return indices({6}, 9, 606); },
        [](T a) { return where(a.gt(4), a, 7); }),
    // ---- pow with a tensor exponent ----------------------------------------------------------
    binary_case(
        "pow", "tensor exponent, positive base [3, 4]",
        [] {
          return leaf_away_from_zero({3, 4}, 611, true);
        },
        [] {
          return leaf({3, 4}, 612, -2.0, 2.0);
        },
        [](T a, T b) { return pow(a, b); }),
    binary_case(
        "pow", "tensor exponent, broadcast [3, 1] ^ strided [4]",
        [] {
          return leaf_away_from_zero({3, 1}, 613, true);
        },
        [] { return leaf_strided({4}, 614, -1.5, 2.5); }, [](T a, T b) { return pow(a, b); }),
    binary_case(
        "pow", "tensor exponent, transposed base [3, 4] ^ 0-d",
        [] {
          return leaf_away_from_zero({4, 3}, 615, true)
              .transpose(0, 1)
              .detach()
              .requires_grad_(true);
        },
        [] { return leaf({}, 616); }, [](T a, T b) { return pow(a, b); }),
    unary_case(
        "pow", "number base 2.5 ^ tensor [2, 5]",
        [] {
          return leaf({2, 5}, 617, -2.0, 2.0);
        },
        [](T b) { return pow(2.5, b); }),
    binary_forward_only(
        "pow", "negative and zero bases with integer exponents",
        [] {
          return signed_ints({3, 1}, 2, 618);
        },
        [] { return signed_ints({5}, 3, 619); },
        [](T a, T b) { return masked_fill(pow(a, b), isnan(pow(a, b)), 99.0); }),
    binary_forward_only(
        "pow", "int64 ^ int64 with negative exponents",
        [] {
          return indices({4, 1}, 5, 620) - 2;
        },
        [] { return indices({6}, 7, 621) - 3; }, [](T a, T b) { return pow(a, b); }),
    // ---- fmod and remainder -------------------------------------------------------------------
    binary_case(
        "fmod", "same shape [3, 5], divisor away from zero",
        [] {
          return leaf({3, 5}, 631, -4.0, 4.0);
        },
        [] {
          return leaf_away_from_zero({3, 5}, 632);
        },
        [](T a, T b) { return fmod(a, b); }),
    binary_case(
        "fmod", "broadcast transposed [2, 3, 4] by [3, 1]",
        [] {
          return leaf_transposed({2, 3, 4}, 633, -3.0, 3.0);
        },
        [] {
          return leaf_away_from_zero({3, 1}, 634);
        },
        [](T a, T b) { return fmod(a, b); }),
    unary_case(
        "fmod", "by the number -0.7",
        [] {
          return leaf_strided({4, 3}, 635, -2.0, 2.0);
        },
        [](T a) { return fmod(a, -0.7); }),
    binary_case(
        "remainder", "same shape [3, 5], divisor away from zero",
        [] {
          return leaf({3, 5}, 636, -4.0, 4.0);
        },
        [] {
          return leaf_away_from_zero({3, 5}, 637);
        },
        [](T a, T b) { return remainder(a, b); }),
    binary_case(
        "remainder", "broadcast [4] by strided [3, 1] of mixed signs",
        [] { return leaf({4}, 638, -3.0, 3.0); },
        [] {
          return leaf_away_from_zero({3, 1}, 639);
        },
        [](T a, T b) { return remainder(a, b); }),
    unary_case(
        "remainder", "by the number 0.6",
        [] {
          return leaf_transposed({3, 4}, 640, -2.0, 2.0);
        },
        [](T a) { return remainder(a, 0.6); }),
    binary_forward_only(
        "fmod", "int64 of both signs",
        [] {
          return signed_ints({4, 1}, 9, 641).to(kInt64);
        },
        [] {
          return signed_ints({5}, 4, 642)
              .to(kInt64)
              .masked_fill(signed_ints({5}, 4, 642).eq(0.0), 3);
        },
        [](T a, T b) { return fmod(a, b); }),
    binary_forward_only(
        "remainder", "int64 of both signs",
        [] {
          return signed_ints({4, 1}, 9, 643).to(kInt64);
        },
        [] {
          return signed_ints({5}, 4, 644)
              .to(kInt64)
              .masked_fill(signed_ints({5}, 4, 644).eq(0.0), -3);
        },
        [](T a, T b) { return remainder(a, b); }),
    binary_forward_only(
        "remainder", "float64 signs, zeros and infinities",
        [] {
          const double inf = std::numeric_limits<double>::infinity();
          return tensor({5.0, -5.0, 5.0, -5.0, -0.0, 0.0, 7.0, -7.0, inf}, kFloat64);
        },
        [] {
          const double inf = std::numeric_limits<double>::infinity();
          return tensor({3.0, 3.0, -3.0, -3.0, 2.0, -2.0, inf, inf, 2.0}, kFloat64);
        },
        [](T a, T b) { return masked_fill(remainder(a, b), isnan(remainder(a, b)), 99.0); }),
    // ---- cumsum -------------------------------------------------------------------------------
    unary_case(
        "cumsum", "dim 1 of [3, 5]",
        [] {
          return leaf({3, 5}, 651);
        },
        [](T a) { return cumsum(a, 1); }),
    unary_case(
        "cumsum", "dim 0 of transposed [4, 3]",
        [] {
          return leaf_transposed({4, 3}, 652);
        },
        [](T a) { return cumsum(a, 0); }),
    unary_case(
        "cumsum", "dim -2 of strided [2, 3, 4]",
        [] {
          return leaf_strided({2, 3, 4}, 653);
        },
        [](T a) { return cumsum(a, -2); }),
    unary_case(
        "cumsum", "a 0-d tensor", [] { return leaf({}, 654); }, [](T a) { return cumsum(a, 0); }),
    unary_case(
        "cumsum", "cumsum twice", [] { return leaf({7}, 655); },
        [](T a) { return cumsum(cumsum(a, 0), 0); }),
    forward_only(
        "cumsum", "int64 [3, 6] along dim 1",
        [] {
          return indices({3, 6}, 100, 656) - 50;
        },
        [](T a) { return cumsum(a, 1); }),
    forward_only(
        "cumsum", "bool [9] gives int64", [] { return condition({9}, 657); },
        [](T a) { return cumsum(a, 0); }),
    // ---- split and chunk ----------------------------------------------------------------------
    unary_case(
        "split", "[7, 3] into pieces of 3 along dim 0 (3, 3, 1)",
        [] {
          return leaf({7, 3}, 661);
        },
        [](T a) { return joined(split(a, 3, 0), 0); }),
    unary_case(
        "split", "transposed [3, 6] into sizes {1, 0, 5} along dim 1",
        [] {
          return leaf_transposed({3, 6}, 662);
        },
        [](T a) {
          return joined(split(a, std::vector<int64_t>{1, 0, 5}, 1), 1);
        }),
    unary_case(
        "split", "only the middle piece is used",
        [] {
          return leaf({2, 8}, 663);
        },
        [](T a) { return split(a, 3, -1)[1] * 2.0; }),
    unary_case(
        "chunk", "[7] in 3 chunks (3, 3, 1)", [] { return leaf({7}, 664); },
        [](T a) { return joined(chunk(a, 3), 0); }),
    unary_case(
        "chunk", "strided [2, 6] in 4 chunks along dim 1 (three of 2)",
        [] {
          return leaf_strided({2, 6}, 665);
        },
        [](T a) { return joined(chunk(a, 4, 1), 1); }),
});

}  // namespace
}  // namespace ember::test
