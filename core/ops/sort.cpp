// Op card: sort, topk — the elements along one dim in order, and where each came from.
//
// Math      sort(a, d) = (values, indices): along dim d each line a[.., :, ..] is put in
//           ascending order (descending: the reverse), values[.., i, ..] = a[.., indices[.., i,
//           ..], ..]. topk(a, k, d) = the first k of the descending order (largest) or of the
//           ascending one (largest = false). The order puts NaN above every number, as PyTorch
//           does: last ascending, first descending, and topk's largest picks NaNs first.
//           Ties (equal values, -0.0 == 0.0, two NaNs) keep their order of position: ember's
//           sort is always stable, on the CPU and on the GPU. stable = false is accepted and
//           gives the same stable answer (PyTorch may then order ties either way); topk's
//           tied elements are the earliest ones, and sorted = false still returns them sorted
//           (PyTorch leaves the order of an unsorted topk unspecified; both are allowed).
// Backward  values[.., i, ..] is a copy of a[.., indices[.., i, ..], ..]: it is gather(a, d,
//           indices), so dL/da collects each value's gradient into the element it came from
//           and leaves 0 where topk dropped an element:
//             dL/da = scatter_add(zeros(a.shape), d, indices, dL/dvalues)
//           (no index repeats within a line, so the adds never meet). scatter_add records a
//           node of its own, so the gradient can be differentiated again. indices: none.
// Shapes    values and indices have a's shape with size k along d for topk. d in [-ndim, ndim)
//           (0 and -1 for a 0-d tensor, whose one element is its own sort, and topk's k may be
//           0 or 1 there: PyTorch returns the element for either). 0 <= k <= a.size(d).
// Dtypes    values in a's dtype, every dtype (bool: false < true); indices int64. topk refuses
//           bool, as PyTorch does.
// Saved     indices (the forward's own int64 output) and d.
// Kernels   CPU: kernels/cpu/sort.cpp sort (std::sort, std::partial_sort for topk); backward
//           kernels/cpu/index.cpp scatter_add.
//           CUDA: kernels/cuda/sort.cu sort (bitonic sorts: a block per line in shared memory,
//           or one launch per step for lines longer than 2048); backward kernels/cuda/index.cu
//           scatter_add.
//
// The kernels see the contiguous input as [outer, n, inner] with n = a.size(d) (kernels/sort.h):
// each (o, k) is one line, and the outputs come back in the same layout with n replaced by k,
// which is the outputs' own contiguous layout.
#include "kernels/sort.h"
#include "core/cuda.h"
#include "core/ops/common.h"

namespace ember {

namespace {

struct SortBackward final : ops::Node {
  int64_t dim = 0;
  ops::SavedTensor indices;
  const char* label = "SortBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor idx = indices.unpack(*this, "indices");
    return {scatter_add(zeros(input_shapes[0], g.options()), dim, idx, g)};
  }
  void release_saved() override { indices.reset(); }
};

// The first `keep` elements of each line along d in order (keep = a.size(d) for sort).
ValuesIndices sorted_lines(const Tensor& a, int64_t d, int64_t keep, bool descending,
                           const char* backward_name) {
  const Tensor x = a.contiguous();
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t i = 0; i < a.dim(); ++i) {
    if (i < d) outer *= a.shape()[i];
    else if (i == d) n = a.shape()[i];
    else inner *= a.shape()[i];
  }
  Shape out_shape = a.shape();
  out_shape[d] = keep;
  Tensor values = ops::new_output(out_shape, a);
  Tensor indices = ops::new_output(out_shape, a, kInt64);
  if (values.numel() > 0)
    KernelsOn(a)->sort.sort(a.dtype(), outer, n, inner, keep, descending, x.raw_data(),
                            values.raw_data(), indices.data_ptr<int64_t>());
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<SortBackward>();
    node->dim = d;
    node->indices = ops::SavedTensor(indices);
    node->label = backward_name;
    autograd::connect(node, values, {&a});
  }
  return {values, indices};
}

// A 0-d tensor is sorted as the 1-element line it holds; the results are 0-d again (the
// reshapes record their own nodes, so the gradient still flows).
ValuesIndices sorted_scalar(const Tensor& a, bool descending, const char* backward_name) {
  const ValuesIndices r = sorted_lines(a.reshape({1}), 0, 1, descending, backward_name);
  return {r.values.reshape({}), r.indices.reshape({})};
}

}  // namespace

ValuesIndices sort(const Tensor& a, int64_t dim, bool descending, bool stable) {
  (void)stable;  // always stable (the op card says why)
  const char* op = "sort";
  ops::check_defined(op, a);
  const int64_t d = wrap_dim(dim, a.dim(), op);
  if (a.dim() == 0) return sorted_scalar(a, descending, "SortBackward");
  return sorted_lines(a, d, a.shape()[d], descending, "SortBackward");
}

ValuesIndices topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // always sorted (the op card says why)
  const char* op = "topk";
  ops::check_defined(op, a);
  EMBER_CHECK(a.dtype() != kBool,
              "topk: not defined for bool tensors (PyTorch refuses them too): convert with "
              ".to(ember::kUInt8) first, or use sort(x, dim, /*descending=*/true)");
  const int64_t d = wrap_dim(dim, a.dim(), op);
  const int64_t size = a.dim() == 0 ? 1 : a.shape()[d];
  EMBER_CHECK(k >= 0 && k <= size, "topk: k = ", k, " is out of range for dim ", d, " of size ",
              size, " (shape ", shape_str(a.shape()), "): k must be between 0 and ", size);
  if (a.dim() == 0) return sorted_scalar(a, largest, "TopkBackward");
  return sorted_lines(a, d, k, largest, "TopkBackward");
}

}  // namespace ember
