// Op card: max, min, argmax, argmin — the largest / smallest element and where it sits.
//
// Math      max(a, d) = (values, indices): values[.., k] = max_j a[.., j, .., k] over dim d and
//           indices = the j that holds it; min likewise. max(a) / min(a) reduce every element;
//           argmax / argmin return only the indices, argmax(a) / argmin(a) the position in the
//           flattened (row-major) tensor. Ties go to the first index. A NaN is larger (for max)
//           and smaller (for min) than every number, so a NaN in the reduced elements comes out,
//           as in PyTorch.
// Backward  values = a[.., idx, ..] just picks one input element, so d values / d a[.., j, ..] is
//           1 where j == idx and 0 elsewhere:
//             dL/da = zeros(a.shape) with dL/dvalues written at the picked positions.
//           At a tie the derivative does not exist; the whole gradient goes to the first index
//           (the one argmax reports), a valid subgradient. indices/argmax/argmin: no gradient.
//           max(a) / min(a) of the whole tensor return no index, and there PyTorch 1.13 shares
//           the gradient evenly among the tied elements (as amax does), and so does ember:
//             mask  = (a == out) or (a is NaN and out is NaN)
//             dL/da = mask * (dL/dout / count(mask))
//           A NaN result sends the gradient to the NaN elements, split evenly among them.
//           This backward is made of ops, so it is differentiable again (create_graph).
//           Under create_graph the one-dim form's placement runs as a recorded
//             dL/da = scatter_add(zeros(a.shape), d, indices, dL/dvalues)
//           (indices and dL/dvalues unsqueezed at d without keepdim) instead of the kernel.
// Shapes    dim d removed (kept as size 1 with keepdim); the all-elements forms give 0-d.
//           indices are int64. The reduced dim must not be empty (the max of nothing is undefined).
//           A 0-d input has one element: dim 0 or -1 names it.
// Dtypes    values keep a's dtype (every dtype, bool included); indices int64.
// Saved     indices (the forward's own int64 output) and the [outer, r, inner] sizes; for
//           max(a) / min(a), a and the output instead (PyTorch saves the same two).
// Kernels   CPU: kernels/cpu/reduce.cpp reduce_max_min (forward), reduce_max_min_backward.
//           CUDA: kernels/cuda/reduce.cu, the same functions (warp-shuffle reductions).
//
// Reducing one dim of a contiguous tensor is the [outer, r, inner] form of kernels/reduce.h
// with r = a.size(d); reducing all of them is [1, numel, 1]. Either way the input gradient, laid
// out as [outer, r, inner], is a's own contiguous layout, so the backward kernel writes it as is.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "core/ops/reduce_util.h"
#include "kernels/reduce.h"

namespace ember {

namespace {
using kernels::MaxMin;

struct MaxMinBackward final : ops::Node {
  ops::SavedTensor indices;
  int64_t outer = 1, r = 1, inner = 1;
  int64_t dim = 0;  // the reduced dim, wrapped (0 for a 0-d input)
  bool keepdim = false;
  const char* label = "MaxBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor idx = indices.unpack(*this, "indices");
    if (is_grad_enabled() && g.requires_grad()) return {recorded_backward(g, idx)};
    const Tensor gc = g.contiguous();
    Tensor ga = empty(input_shapes[0], g.options());
    KernelsOn(g)->reduce.max_min_backward(g.dtype(), outer, r, inner, gc.raw_data(),
                                          idx.data_ptr<int64_t>(), ga.raw_data());
    return {ga};
  }
  // create_graph: the same placement as a recorded scatter_add into zeros, linear in g (the
  // indices are constants of the graph), so that it can be differentiated again.
  Tensor recorded_backward(const Tensor& g, const Tensor& idx) const {
    const Shape& a_shape = input_shapes[0];
    if (a_shape.empty()) return g.reshape({});  // a 0-d input: its one element was picked
    const Tensor ix = keepdim ? idx : unsqueeze(idx, dim);
    const Tensor gk = keepdim ? g : unsqueeze(g, dim);
    return scatter_add(zeros(a_shape, g.options()), dim, ix, gk);
  }
  void release_saved() override { indices.reset(); }
};

// max(a) / min(a) of every element: the gradient shared evenly among the elements that attain
// the result (the NaNs, when it is NaN).
struct MaxMinAllBackward final : ops::Node {
  ops::SavedTensor input, result;
  const char* label = "MaxBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor a = input.unpack(*this, "self");
    const Tensor out = result.unpack(*this, "result");
    const Tensor mask = logical_or(eq(a, out), logical_and(isnan(a), isnan(out)));
    return {mul(mask, div(g, sum(mask)))};
  }
  void release_saved() override {
    input.reset();
    result.reset();
  }
};

// `dims` is {d} for one dim or {} for every element. Records the backward only when asked:
// argmax/argmin share this path but return integers.
ValuesIndices max_min_impl(const Tensor& a, const Shape& dims, bool keepdim, MaxMin which,
                           bool record_grad, const char* op) {
  ops::check_defined(op, a);
  Shape plan_dims = dims;
  if (a.dim() == 0) {
    // The single element of a 0-d tensor is "all of it"; still reject a dim like 1 or -2.
    if (!dims.empty()) wrap_dim(dims[0], 0, op);
    plan_dims = {};
  }
  const ops::ReducePlan p = ops::plan_reduction(a, plan_dims, keepdim, op);
  if (dims.empty()) {
    EMBER_CHECK(p.r > 0, op, ": the input has no elements (shape ", shape_str(a.shape()),
                "): the ", op, " of nothing is undefined; reduce over a dim of nonzero size");
  } else {
    const int64_t d = a.dim() == 0 ? 0 : wrap_dim(dims[0], a.dim(), op);
    EMBER_CHECK(p.r > 0, op, ": cannot reduce over dim ", d, " of size 0 (shape ",
                shape_str(a.shape()), "): the ", op, " of nothing is undefined");
  }
  Tensor values = ops::new_output(p.out_shape, a);
  Tensor indices = ops::new_output(p.out_shape, a, kInt64);
  KernelsOn(a)->reduce.max_min(which, a.dtype(), p.outer, p.r, p.inner, p.input.raw_data(),
                               values.raw_data(), indices.data_ptr<int64_t>());
  if (record_grad && dims.empty() && autograd::grad_needed({&a})) {
    auto node = std::make_shared<MaxMinAllBackward>();
    node->input = ops::SavedTensor(a);
    node->result = ops::SavedTensor(values);
    node->label = which == MaxMin::Max ? "MaxBackward" : "MinBackward";
    autograd::connect(node, values, {&a});
  } else if (record_grad && autograd::grad_needed({&a})) {
    auto node = std::make_shared<MaxMinBackward>();
    node->indices = ops::SavedTensor(indices);
    node->outer = p.outer;
    node->r = p.r;
    node->inner = p.inner;
    node->dim = a.dim() == 0 ? 0 : wrap_dim(dims[0], a.dim(), op);
    node->keepdim = keepdim;
    node->label = which == MaxMin::Max ? "MaxBackward" : "MinBackward";
    autograd::connect(node, values, {&a});
  }
  return {values, indices};
}
}  // namespace

ValuesIndices max(const Tensor& a, int64_t dim, bool keepdim) {
  return max_min_impl(a, {dim}, keepdim, MaxMin::Max, true, "max");
}

ValuesIndices min(const Tensor& a, int64_t dim, bool keepdim) {
  return max_min_impl(a, {dim}, keepdim, MaxMin::Min, true, "min");
}

Tensor max(const Tensor& a) { return max_min_impl(a, {}, false, MaxMin::Max, true, "max").values; }

Tensor min(const Tensor& a) { return max_min_impl(a, {}, false, MaxMin::Min, true, "min").values; }

Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) {
  return max_min_impl(a, {dim}, keepdim, MaxMin::Max, false, "argmax").indices;
}

Tensor argmin(const Tensor& a, int64_t dim, bool keepdim) {
  return max_min_impl(a, {dim}, keepdim, MaxMin::Min, false, "argmin").indices;
}

Tensor argmax(const Tensor& a) {
  return max_min_impl(a, {}, false, MaxMin::Max, false, "argmax").indices;
}

Tensor argmin(const Tensor& a) {
  return max_min_impl(a, {}, false, MaxMin::Min, false, "argmin").indices;
}

}  // namespace ember
