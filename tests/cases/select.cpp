// Op cases for comparisons and selection: eq, ne, lt, le, gt, ge, where, masked_fill.
#include "op_cases.h"

namespace ember::test {
namespace {

// Small integers (-2..2) stored as float64: many exact ties, so eq/le/ge see equal pairs, and the
// float32 copy the forward test makes compares exactly the same way.
Tensor small_ints(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  return randint(-2, 3, shape).to(kFloat64);
}

// A bool mask, true with probability about one half.
Tensor mask(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  return rand(shape, kFloat64).gt(scalar_tensor(0.5, kFloat64));
}

using T = const Tensor&;
using CompareFn = Tensor (*)(T, T);

OpCase compare_case(const std::string& op, const std::string& label, std::function<Tensor()> a,
                    std::function<Tensor()> b, CompareFn f) {
  OpCase c{op, label, [a, b] { return std::vector<Tensor>{a(), b()}; },
           [f](const std::vector<Tensor>& x) { return f(x[0], x[1]); }};
  c.differentiable = false;
  return c;
}

OpCase where_case(const std::string& label, std::function<Tensor()> cond,
                  std::function<Tensor()> a, std::function<Tensor()> b) {
  return OpCase{"where", label, [cond, a, b] { return std::vector<Tensor>{cond(), a(), b()}; },
                [](const std::vector<Tensor>& x) { return where(x[0], x[1], x[2]); }};
}

OpCase masked_fill_case(const std::string& label, std::function<Tensor()> a,
                        std::function<Tensor()> m, double value) {
  return OpCase{"masked_fill", label, [a, m] { return std::vector<Tensor>{a(), m()}; },
                [value](const std::vector<Tensor>& x) { return masked_fill(x[0], x[1], value); }};
}

// The strided and transposed views of small_ints, for non-contiguous operands.
Tensor small_ints_transposed(const Shape& shape, uint64_t seed) {
  Shape s = shape;
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return small_ints(s, seed).transpose(-1, -2);
}
Tensor small_ints_strided(const Shape& shape, uint64_t seed) {
  Shape s = shape;
  s.back() *= 2;
  return small_ints(s, seed).slice(-1, 0, s.back(), 2);
}

EMBER_OP_CASES({
    compare_case("eq", "same shape [4, 5]", [] { return small_ints({4, 5}, 201); },
                 [] { return small_ints({4, 5}, 202); }, [](T a, T b) { return eq(a, b); }),
    compare_case("eq", "broadcast [3, 1] vs [4], int64", [] { return randint(0, 3, {3, 1}); },
                 [] { return randint(0, 3, {4}); }, [](T a, T b) { return a.eq(b); }),
    compare_case("ne", "transposed [3, 6] vs [6]",
                 [] { return small_ints_transposed({3, 6}, 203); },
                 [] { return small_ints({6}, 204); }, [](T a, T b) { return ne(a, b); }),
    compare_case("lt", "broadcast [2, 1, 5] vs [3, 1]", [] { return small_ints({2, 1, 5}, 205); },
                 [] { return small_ints({3, 1}, 206); }, [](T a, T b) { return lt(a, b); }),
    compare_case("le", "strided [4, 7] vs same", [] { return small_ints_strided({4, 7}, 207); },
                 [] { return small_ints({4, 7}, 208); }, [](T a, T b) { return le(a, b); }),
    compare_case("gt", "[13] vs 0-d", [] { return small_ints({13}, 209); },
                 [] { return scalar_tensor(0.0, kFloat64); }, [](T a, T b) { return gt(a, b); }),
    compare_case("ge", "[5, 3] vs transposed [5, 3]", [] { return small_ints({5, 3}, 210); },
                 [] { return small_ints_transposed({5, 3}, 211); },
                 [](T a, T b) { return ge(a, b); }),
    compare_case("ge", "bool vs bool", [] { return mask({6}, 212); }, [] { return mask({6}, 213); },
                 [](T a, T b) { return a.ge(b); }),

    where_case("same shape [4, 5]", [] { return mask({4, 5}, 221); },
               [] { return leaf({4, 5}, 222); }, [] { return leaf({4, 5}, 223); }),
    where_case("broadcast cond [3, 1], a [4], b [3, 4]", [] { return mask({3, 1}, 224); },
               [] { return leaf({4}, 225); }, [] { return leaf({3, 4}, 226); }),
    where_case("broadcast cond [5], transposed a [2, 1, 5], 0-d b", [] { return mask({5}, 227); },
               [] { return leaf_transposed({2, 1, 5}, 228); }, [] { return leaf({}, 229); }),
    where_case("cond [2, 3, 1] grows both, strided a [3, 7]", [] { return mask({2, 3, 1}, 230); },
               [] { return leaf_strided({3, 7}, 231); }, [] { return leaf({1, 7}, 232); }),
    where_case("transposed cond and a [6, 3]", [] { return mask({3, 6}, 233).transpose(0, 1); },
               [] { return leaf_transposed({6, 3}, 234); }, [] { return leaf({6, 3}, 235); }),

    masked_fill_case("mask [3, 5] fill 0.5", [] { return leaf({3, 5}, 241); },
                     [] { return mask({3, 5}, 242); }, 0.5),
    masked_fill_case("broadcast mask [4, 1] on transposed [4, 6]",
                     [] { return leaf_transposed({4, 6}, 243); }, [] { return mask({4, 1}, 244); },
                     -2.0),
    masked_fill_case("mask [7] on strided [2, 7]", [] { return leaf_strided({2, 7}, 245); },
                     [] { return mask({7}, 246); }, 3.0),
});

}  // namespace
}  // namespace ember::test
