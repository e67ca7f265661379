// Op cases for the layout ops: views (view, reshape, permute, transpose, narrow, slice, select,
// squeeze, unsqueeze, expand) and copies (contiguous, clone, to_dtype).
//
// A view's backward must route each gradient element back to the storage position it came
// from, so every op is also run on non-contiguous inputs (leaf_transposed, leaf_strided).
#include "op_cases.h"

namespace ember::test {
namespace {

using T = const Tensor&;

EMBER_OP_CASES({
    unary_case("view", "[3, 4] as [2, 6]", [] { return leaf({3, 4}, 201); },
               [](T a) { return view(a, {2, 6}); }),
    unary_case("view", "[2, 3, 4] as [-1, 4]", [] { return leaf({2, 3, 4}, 202); },
               [](T a) { return a.view({-1, 4}); }),
    unary_case("view", "[7] as [7, 1, 1]", [] { return leaf({7}, 203); },
               [](T a) { return view(a, {7, 1, 1}); }),

    unary_case("reshape", "contiguous [6] as [2, 3]", [] { return leaf({6}, 204); },
               [](T a) { return reshape(a, {2, 3}); }),
    unary_case("reshape", "transposed [3, 4] as [12] (copies)", [] { return leaf_transposed({3, 4}, 205); },
               [](T a) { return reshape(a, {12}); }),
    unary_case("reshape", "strided [2, 6] as [3, -1] (copies)", [] { return leaf_strided({2, 6}, 206); },
               [](T a) { return a.reshape({3, -1}); }),

    unary_case("permute", "[2, 3, 4] by (2, 0, 1)", [] { return leaf({2, 3, 4}, 207); },
               [](T a) { return permute(a, {2, 0, 1}); }),
    unary_case("permute", "transposed [3, 4] by (1, 0)", [] { return leaf_transposed({3, 4}, 208); },
               [](T a) { return a.permute({1, 0}); }),
    unary_case("permute", "strided [2, 3, 5] by (-1, 0, 1)", [] { return leaf_strided({2, 3, 5}, 209); },
               [](T a) { return permute(a, {-1, 0, 1}); }),

    unary_case("transpose", "[3, 5] (0, 1)", [] { return leaf({3, 5}, 210); },
               [](T a) { return transpose(a, 0, 1); }),
    unary_case("transpose", "strided [2, 3, 4] (0, -1)", [] { return leaf_strided({2, 3, 4}, 211); },
               [](T a) { return a.transpose(0, -1); }),

    unary_case("narrow", "[5, 4] dim 0 [1, 4)", [] { return leaf({5, 4}, 212); },
               [](T a) { return narrow(a, 0, 1, 3); }),
    unary_case("narrow", "transposed [3, 7] dim -1 from -3, length 2",
               [] { return leaf_transposed({3, 7}, 213); }, [](T a) { return a.narrow(-1, -3, 2); }),

    unary_case("slice", "[7, 3] dim 0 [1, 7) step 2", [] { return leaf({7, 3}, 214); },
               [](T a) { return slice(a, 0, 1, 7, 2); }),
    unary_case("slice", "[3, 8] dim -1 [-5, -1) step 2", [] { return leaf({3, 8}, 215); },
               [](T a) { return slice(a, -1, -5, -1, 2); }),
    unary_case("slice", "strided [4, 5] dim 1 [2, 100) clamps", [] { return leaf_strided({4, 5}, 216); },
               [](T a) { return a.slice(1, 2, 100); }),

    unary_case("select", "[4, 5] dim 1 index -1", [] { return leaf({4, 5}, 217); },
               [](T a) { return select(a, 1, -1); }),
    unary_case("select", "transposed [2, 3, 4] dim 0 index 1", [] { return leaf_transposed({2, 3, 4}, 218); },
               [](T a) { return a.select(0, 1); }),

    unary_case("squeeze", "[3, 1, 4] dim 1", [] { return leaf({3, 1, 4}, 219); },
               [](T a) { return squeeze(a, 1); }),
    unary_case("squeeze", "[3, 4] dim 0 (size 3: unchanged)", [] { return leaf({3, 4}, 220); },
               [](T a) { return squeeze(a, 0); }),
    unary_case("squeeze", "strided [5, 1] dim -1", [] { return leaf_strided({5, 1}, 221); },
               [](T a) { return a.squeeze(-1); }),

    unary_case("unsqueeze", "[3, 4] dim 0", [] { return leaf({3, 4}, 222); },
               [](T a) { return unsqueeze(a, 0); }),
    unary_case("unsqueeze", "[3, 4] dim -1", [] { return leaf({3, 4}, 223); },
               [](T a) { return unsqueeze(a, -1); }),
    unary_case("unsqueeze", "transposed [3, 4] dim 1", [] { return leaf_transposed({3, 4}, 224); },
               [](T a) { return a.unsqueeze(1); }),

    unary_case("expand", "[3, 1] to [2, 3, 4]: new leading dim + size-1 dim",
               [] { return leaf({3, 1}, 225); }, [](T a) { return expand(a, {2, 3, 4}); }),
    unary_case("expand", "[1] to [5]", [] { return leaf({1}, 226); }, [](T a) { return a.expand({5}); }),
    unary_case("expand", "transposed [1, 4] to [3, -1]", [] { return leaf_transposed({1, 4}, 227); },
               [](T a) { return expand(a, {3, -1}); }),

    unary_case("contiguous", "transposed [3, 5]", [] { return leaf_transposed({3, 5}, 228); },
               [](T a) { return contiguous(a); }),
    // On the CPU both moves return the input itself; on a GPU (the parity test) the values go
    // to the host and back, and the gradient takes the same way home.
    unary_case("to_device", "round trip through the host, transposed [4, 3]",
               [] { return leaf_transposed({4, 3}, 240); },
               [](T a) { return to_device(to_device(a, Device::cpu()), a.device()) * 2.0; }),
    unary_case("contiguous", "strided [2, 7]", [] { return leaf_strided({2, 7}, 229); },
               [](T a) { return a.contiguous(); }),
    unary_case("contiguous", "already contiguous [4] (same tensor)", [] { return leaf({4}, 230); },
               [](T a) { return contiguous(a); }),

    unary_case("clone", "[3, 4]", [] { return leaf({3, 4}, 231); }, [](T a) { return clone(a); }),
    unary_case("clone", "transposed [4, 3]", [] { return leaf_transposed({4, 3}, 232); },
               [](T a) { return a.clone(); }),

    // to_dtype into float64: the identity path under gradcheck (float64 inputs), a real
    // float32 -> float64 conversion in the float32 forward test. A float32 round trip cannot be
    // gradchecked (float32 rounding swamps a 1e-6 finite-difference step); the direct test
    // "to_dtype: gradient through float32 comes back as float64 ones" in
    // tests/core/index_layout.cpp covers ToDtypeBackward instead.
    unary_case("to_dtype", "to float64, [3, 4]", [] { return leaf({3, 4}, 233); },
               [](T a) { return to_dtype(a, kFloat64); }),
    unary_case("to_dtype", "to float64, transposed [2, 5] times 2",
               [] { return leaf_transposed({2, 5}, 234); }, [](T a) { return to_dtype(a * 2.0, kFloat64); }),
});

}  // namespace
}  // namespace ember::test
