// Op cases for matmul: 2-d, transposed and strided operands (the GEMM kernel's transpose flags
// and its copy fallback), 1-d operands, batched products with broadcast batch dims.
#include "op_cases.h"

namespace ember::test {
namespace {

OpCase mm_case(const std::string& label, std::function<Tensor()> a, std::function<Tensor()> b,
               std::function<Tensor(const Tensor&, const Tensor&)> f = nullptr) {
  if (!f) f = [](const Tensor& x, const Tensor& y) { return matmul(x, y); };
  return OpCase{"matmul", label, [a, b] { return std::vector<Tensor>{a(), b()}; },
                [f](const std::vector<Tensor>& x) { return f(x[0], x[1]); }};
}

EMBER_OP_CASES({
    // 2-d @ 2-d, every layout the kernel takes without a copy, and one it must copy.
    mm_case("[4, 6] @ [6, 5]", [] { return leaf({4, 6}, 101); }, [] { return leaf({6, 5}, 102); }),
    mm_case("odd sizes [7, 13] @ [13, 5]", [] { return leaf({7, 13}, 103); },
            [] { return leaf({13, 5}, 104); }),
    mm_case("transposed a [3, 6] @ [6, 4]", [] { return leaf_transposed({3, 6}, 105); },
            [] { return leaf({6, 4}, 106); }),
    mm_case("[3, 6] @ transposed b [6, 4]", [] { return leaf({3, 6}, 107); },
            [] { return leaf_transposed({6, 4}, 108); }),
    mm_case("both transposed [5, 3] @ [3, 7]", [] { return leaf_transposed({5, 3}, 109); },
            [] { return leaf_transposed({3, 7}, 110); }),
    mm_case("strided a [3, 5] @ strided b [5, 4] (copied)",
            [] { return leaf_strided({3, 5}, 111); }, [] { return leaf_strided({5, 4}, 112); }),
    mm_case("row slice of a bigger matrix [2:5] of [6, 4] @ [4, 3]",
            [] { return leaf({6, 4}, 113); }, [] { return leaf({4, 3}, 114); },
            [](const Tensor& x, const Tensor& y) { return matmul(x.slice(0, 2, 5), y); }),
    mm_case("expanded a [1, 4] -> [3, 4] (stride 0) @ [4, 2]", [] { return leaf({1, 4}, 115); },
            [] { return leaf({4, 2}, 116); },
            [](const Tensor& x, const Tensor& y) { return matmul(x.expand({3, 4}), y); }),
    mm_case("[1, 1] @ [1, 1]", [] { return leaf({1, 1}, 117); }, [] { return leaf({1, 1}, 118); }),
    // 1-d operands.
    mm_case("dot [7] @ [7]", [] { return leaf({7}, 119); }, [] { return leaf({7}, 120); }),
    mm_case("dot strided [5] @ [5]", [] { return leaf_strided({5}, 121); },
            [] { return leaf({5}, 122); }),
    mm_case("vector-matrix [5] @ [5, 3]", [] { return leaf({5}, 123); },
            [] { return leaf({5, 3}, 124); }),
    mm_case("matrix-vector [4, 5] @ [5]", [] { return leaf({4, 5}, 125); },
            [] { return leaf({5}, 126); }),
    mm_case("matrix-vector transposed [4, 5] @ strided [5]",
            [] { return leaf_transposed({4, 5}, 127); }, [] { return leaf_strided({5}, 128); }),
    // Batched.
    mm_case("batched [2, 3, 4] @ [2, 4, 5]", [] { return leaf({2, 3, 4}, 129); },
            [] { return leaf({2, 4, 5}, 130); }),
    mm_case("broadcast batch [2, 1, 3, 4] @ [3, 4, 2]", [] { return leaf({2, 1, 3, 4}, 131); },
            [] { return leaf({3, 4, 2}, 132); }),
    mm_case("batched [2, 3, 4] @ one matrix [4, 5] (folded rows)",
            [] { return leaf({2, 3, 4}, 133); }, [] { return leaf({4, 5}, 134); }),
    mm_case("batched transposed [2, 3, 4] @ [4, 5] (not foldable)",
            [] { return leaf_transposed({2, 3, 4}, 135); }, [] { return leaf({4, 5}, 136); }),
    mm_case("one matrix [3, 4] @ batched transposed [2, 4, 5]", [] { return leaf({3, 4}, 137); },
            [] { return leaf_transposed({2, 4, 5}, 138); }),
    mm_case("vector [4] @ batched [2, 4, 3]", [] { return leaf({4}, 139); },
            [] { return leaf({2, 4, 3}, 140); }),
    mm_case("batched strided [2, 3, 4] @ vector [4]", [] { return leaf_strided({2, 3, 4}, 141); },
            [] { return leaf({4}, 142); }),
    mm_case("batch of 1 broadcast [1, 2, 3] @ [3, 3, 2]", [] { return leaf({1, 2, 3}, 143); },
            [] { return leaf({3, 3, 2}, 144); }),
    mm_case("same tensor twice: x @ x.t() [3, 4]", [] { return leaf({3, 4}, 145); },
            [] { return leaf({3, 4}, 145); },
            [](const Tensor& x, const Tensor&) { return matmul(x, x.t()); }),
});

}  // namespace
}  // namespace ember::test
