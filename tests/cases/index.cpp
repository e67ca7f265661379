// Op cases for indexing and joining: gather, scatter_add, index_select, index_add, cat, stack.
//
// Indices come from indices(shape, high, seed): random values in [0, high). The index tensors
// are made longer than the indexed dim on purpose, so values repeat and the scatter-style adds
// (scatter_add, index_add, and the backward of gather and index_select) must sum collisions.
#include "op_cases.h"

namespace ember::test {
namespace {

using Inputs = std::function<std::vector<Tensor>()>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

OpCase make(const std::string& op, const std::string& label, Inputs inputs, Fn fn) {
  return OpCase{op, label, std::move(inputs), std::move(fn)};
}

// gather(x[0], dim, x[1]) and index_select(x[0], dim, x[1]).
Fn gather_fn(int64_t dim) {
  return [dim](const std::vector<Tensor>& x) { return gather(x[0], dim, x[1]); };
}
Fn index_select_fn(int64_t dim) {
  return [dim](const std::vector<Tensor>& x) { return index_select(x[0], dim, x[1]); };
}
// scatter_add(x[0], dim, x[1], x[2]) and index_add(x[0], dim, x[1], x[2]).
Fn scatter_add_fn(int64_t dim) {
  return [dim](const std::vector<Tensor>& x) { return scatter_add(x[0], dim, x[1], x[2]); };
}
Fn index_add_fn(int64_t dim) {
  return [dim](const std::vector<Tensor>& x) { return index_add(x[0], dim, x[1], x[2]); };
}
Fn cat_fn(int64_t dim) {
  return [dim](const std::vector<Tensor>& x) { return cat(x, dim); };
}
Fn stack_fn(int64_t dim) {
  return [dim](const std::vector<Tensor>& x) { return stack(x, dim); };
}

EMBER_OP_CASES({
    // gather: index same rank as the input; smaller or larger than it along the gathered dim,
    // never larger along the others.
    make("gather", "dim 1, [3, 5] with index [3, 4]",
         [] { return std::vector<Tensor>{leaf({3, 5}, 101), indices({3, 4}, 5, 102)}; }, gather_fn(1)),
    make("gather", "dim 0, transposed [4, 3] with index [7, 2] (repeats, narrower)",
         [] { return std::vector<Tensor>{leaf_transposed({4, 3}, 103), indices({7, 2}, 4, 104)}; },
         gather_fn(0)),
    make("gather", "dim -1, strided [2, 3, 7] with index [2, 2, 5]",
         [] { return std::vector<Tensor>{leaf_strided({2, 3, 7}, 105), indices({2, 2, 5}, 7, 106)}; },
         gather_fn(-1)),
    make("gather", "dim 1, one pick per row [6, 4] with index [6, 1]",
         [] { return std::vector<Tensor>{leaf({6, 4}, 107), indices({6, 1}, 4, 108)}; }, gather_fn(1)),
    // scatter_add: index [6, 5] into 4 rows repeats rows; src may be larger than the index.
    make("scatter_add", "dim 0, [4, 5] += src [6, 5] with repeated rows",
         [] {
           return std::vector<Tensor>{leaf({4, 5}, 111), indices({6, 5}, 4, 112), leaf({6, 5}, 113)};
         },
         scatter_add_fn(0)),
    make("scatter_add", "dim 1, transposed [3, 6], index [3, 4], strided src [3, 5] (larger)",
         [] {
           return std::vector<Tensor>{leaf_transposed({3, 6}, 114), indices({3, 4}, 6, 115),
                                      leaf_strided({3, 5}, 116)};
         },
         scatter_add_fn(1)),
    make("scatter_add", "dim -2, [2, 3, 4], index [2, 5, 3], src [2, 5, 4]",
         [] {
           return std::vector<Tensor>{leaf({2, 3, 4}, 117), indices({2, 5, 3}, 3, 118),
                                      leaf({2, 5, 4}, 119)};
         },
         scatter_add_fn(-2)),
    // index_select: a 1-d index; the DataLoader's dim-0 case first.
    make("index_select", "dim 0, rows of [5, 4] by index [7] (repeats)",
         [] { return std::vector<Tensor>{leaf({5, 4}, 121), indices({7}, 5, 122)}; },
         index_select_fn(0)),
    make("index_select", "dim 1, transposed [4, 6] by index [3]",
         [] { return std::vector<Tensor>{leaf_transposed({4, 6}, 123), indices({3}, 6, 124)}; },
         index_select_fn(1)),
    make("index_select", "dim -2, strided [2, 3, 5] by index [4]",
         [] { return std::vector<Tensor>{leaf_strided({2, 3, 5}, 125), indices({4}, 3, 126)}; },
         index_select_fn(-2)),
    make("index_select", "dim 0, one row [1, 3] picked twice",
         [] { return std::vector<Tensor>{leaf({1, 3}, 127), indices({2}, 1, 128)}; },
         index_select_fn(0)),
    // index_add: 8 source rows into 5 destination rows must collide.
    make("index_add", "dim 0, [5, 3] += src [8, 3] with repeated rows",
         [] { return std::vector<Tensor>{leaf({5, 3}, 131), indices({8}, 5, 132), leaf({8, 3}, 133)}; },
         index_add_fn(0)),
    make("index_add", "dim 1, transposed [3, 4] += strided src [3, 6]",
         [] {
           return std::vector<Tensor>{leaf_transposed({3, 4}, 134), indices({6}, 4, 135),
                                      leaf_strided({3, 6}, 136)};
         },
         index_add_fn(1)),
    make("index_add", "dim -1, [2, 3, 4] += src [2, 3, 5]",
         [] {
           return std::vector<Tensor>{leaf({2, 3, 4}, 137), indices({5}, 4, 138), leaf({2, 3, 5}, 139)};
         },
         index_add_fn(-1)),
    // cat: three inputs of different lengths along the joined dim, one non-contiguous.
    make("cat", "dim 0, [2, 3] + [1, 3] + transposed [4, 3]",
         [] {
           return std::vector<Tensor>{leaf({2, 3}, 141), leaf({1, 3}, 142), leaf_transposed({4, 3}, 143)};
         },
         cat_fn(0)),
    make("cat", "dim -1, [2, 3, 1] + strided [2, 3, 4] + [2, 3, 2]",
         [] {
           return std::vector<Tensor>{leaf({2, 3, 1}, 144), leaf_strided({2, 3, 4}, 145),
                                      leaf({2, 3, 2}, 146)};
         },
         cat_fn(-1)),
    make("cat", "dim 1, with an empty input [3, 0]",
         [] { return std::vector<Tensor>{leaf({3, 2}, 147), leaf({3, 0}, 148), leaf({3, 5}, 149)}; },
         cat_fn(1)),
    make("cat", "the same tensor twice (gradients add)",
         [] { return std::vector<Tensor>{leaf({2, 7}, 150)}; },
         [](const std::vector<Tensor>& x) { return cat({x[0], x[0]}, 0); }),
    // stack: a new dim, at the front, at the back, and of 0-d inputs.
    make("stack", "dim 0, three [2, 3], one transposed",
         [] {
           return std::vector<Tensor>{leaf({2, 3}, 151), leaf_transposed({2, 3}, 152), leaf({2, 3}, 153)};
         },
         stack_fn(0)),
    make("stack", "dim -1, two strided [3, 5]",
         [] { return std::vector<Tensor>{leaf_strided({3, 5}, 154), leaf({3, 5}, 155)}; }, stack_fn(-1)),
    make("stack", "dim 0, three 0-d scalars",
         [] { return std::vector<Tensor>{leaf({}, 156), leaf({}, 157), leaf({}, 158)}; }, stack_fn(0)),
});

}  // namespace
}  // namespace ember::test
