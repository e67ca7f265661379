// Op cases for elementwise arithmetic, math and activations.
#include "op_cases.h"

namespace ember::test {
namespace {

using T = const Tensor&;

EMBER_OP_CASES({
    binary_case("add", "same shape [3, 5]", [] { return leaf({3, 5}, 1); }, [] { return leaf({3, 5}, 2); },
                [](T a, T b) { return add(a, b); }),
    binary_case("add", "broadcast [4, 1] + [3], transposed", [] { return leaf_transposed({4, 1}, 3); },
                [] { return leaf({3}, 4); }, [](T a, T b) { return add(a, b); }),
    binary_case("add", "strided [2, 3, 7] + scalar", [] { return leaf_strided({2, 3, 7}, 5); },
                [] { return leaf({}, 6); }, [](T a, T b) { return a + b; }),
    binary_case("sub", "broadcast [2, 1, 5] - [3, 1], odd sizes", [] { return leaf({2, 1, 5}, 7); },
                [] { return leaf({3, 1}, 8); }, [](T a, T b) { return sub(a, b); }),
    binary_case("sub", "transposed [6, 4] - strided [6, 4]", [] { return leaf_transposed({6, 4}, 9); },
                [] { return leaf_strided({6, 4}, 10); }, [](T a, T b) { return a - b; }),
    binary_case("mul", "broadcast [5, 3] * [3]", [] { return leaf({5, 3}, 11); }, [] { return leaf({3}, 12); },
                [](T a, T b) { return mul(a, b); }),
    binary_case("mul", "same tensor twice (x * x)", [] { return leaf({7}, 13); }, [] { return leaf({7}, 13); },
                [](T a, T) { return a * a; }),
    binary_case("mul", "strided [3, 7] * transposed [1, 7]", [] { return leaf_strided({3, 7}, 14); },
                [] { return leaf_transposed({1, 7}, 15); }, [](T a, T b) { return a * b; }),
    binary_case("div", "broadcast [4, 3] / [4, 1]", [] { return leaf({4, 3}, 16); },
                [] { return leaf_away_from_zero({4, 1}, 17); }, [](T a, T b) { return div(a, b); }),
    binary_case("div", "scalar / strided [5, 3]", [] { return leaf({}, 18); },
                [] { return leaf_away_from_zero({5, 3}, 19); }, [](T a, T b) { return a / b; }),
    binary_case("div", "rounded toward -inf (floor): zero gradient",
                [] { return leaf({4, 3}, 32, -3, 3); }, [] { return leaf_away_from_zero({3}, 33); },
                [](T a, T b) { return div(a, b, "floor"); }),
    binary_case("div", "rounded toward zero (trunc), strided",
                [] { return leaf_strided({3, 5}, 34, -3, 3); },
                [] { return leaf_away_from_zero({3, 1}, 35); },
                [](T a, T b) { return div(a, b, "trunc"); }),
    OpCase{"floor_divide", "[3, 4] // [4], both signs",
           [] { return std::vector<Tensor>{leaf({3, 4}, 38, -5, 5), leaf_away_from_zero({4}, 39)}; },
           [](const std::vector<Tensor>& x) { return floor_divide(x[0], x[1]); }, false},
    OpCase{"floor_divide", "int64 [7] // int64 scalar -3",
           [] { return std::vector<Tensor>{indices({7}, 20, 40) - 10}; },
           [](const std::vector<Tensor>& x) { return floor_divide(x[0], -3); }, false},
    unary_case("neg", "[3, 7] transposed", [] { return leaf_transposed({3, 7}, 20); }, [](T a) { return neg(a); }),
    unary_case("pow", "x^3, [2, 9] strided", [] { return leaf_strided({2, 9}, 21); }, [](T a) { return pow(a, 3.0); }),
    unary_case("pow", "x^2, [11]", [] { return leaf({11}, 22); }, [](T a) { return a.pow(2.0); }),
    unary_case("pow", "x^-1.5 on positive [3, 3]", [] { return leaf_away_from_zero({3, 3}, 23, true); },
               [](T a) { return pow(a, -1.5); }),
    unary_case("exp", "[4, 5] transposed", [] { return leaf_transposed({4, 5}, 24); }, [](T a) { return exp(a); }),
    unary_case("log", "positive [3, 7] strided", [] { return leaf_away_from_zero({3, 7}, 25, true); },
               [](T a) { return log(a); }),
    unary_case("sqrt", "positive [13]", [] { return leaf_away_from_zero({13}, 26, true); }, [](T a) { return sqrt(a); }),
    unary_case("abs", "away from 0, [5, 3] ", [] { return leaf_away_from_zero({5, 3}, 27); }, [](T a) { return abs(a); }),
    unary_case("relu", "away from 0, [7, 3]", [] { return leaf_away_from_zero({7, 3}, 28); }, [](T a) { return relu(a); }),
    unary_case("relu", "strided [2, 5, 3]", [] { return leaf_strided({2, 5, 3}, 29); }, [](T a) { return a.relu(); }),
    unary_case("sigmoid", "[6, 5] transposed, wide range", [] { return leaf_transposed({6, 5}, 30, -4, 4); },
               [](T a) { return sigmoid(a); }),
    unary_case("tanh", "[9] wide range", [] { return leaf({9}, 31, -3, 3); }, [](T a) { return tanh(a); }),
});

}  // namespace
}  // namespace ember::test
