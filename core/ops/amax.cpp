// Op card: amax, amin — the largest / smallest value over some dims, values only.
//
// Math      amax(a, dims)[k] = max over the reduced positions j of a[.., j, ..] (dims empty:
//           every element); amin likewise. A NaN among the reduced elements comes out as NaN,
//           as in PyTorch. Unlike max(a, dim) there are no indices, several dims may be reduced
//           at once, and ties are treated alike (below).
// Backward  The output equals every element that attains it. Where several do (a tie) the
//           derivative does not exist; PyTorch 1.13 shares the gradient evenly among them, and
//           so does ember:
//             mask  = (a == amax(a) broadcast back)               which elements attain it
//             dL/da = (dL/dout broadcast back / count(mask)) * mask
//           A slice holding a NaN has out = NaN, so no element equals it: count is 0, the
//           gradient divided by 0 is inf or NaN, and times the 0 of the mask it is NaN for every
//           element of that slice. That is PyTorch's answer too, kept on purpose: a NaN must not
//           vanish from a gradient any more than from a value.
// Shapes    the reduced dims removed (kept as size 1 with keepdim). A 0-d input accepts dims
//           {}, {0} and {-1}. A dim listed twice is an error. The max of nothing is undefined:
//           reducing a dim of size 0 (or, with dims empty, an empty tensor) is an error, as in
//           PyTorch; reducing a nonzero dim of an empty tensor gives an empty result.
// Dtypes    a's dtype, every dtype (bool included: amax is "any", amin "all").
// Saved     a and the output (the backward compares them).
// Kernels   CPU: kernels/cpu/reduce.cpp reduce_max_min (the forward, its indices unused); the
//           backward reuses compare (eq), sum, div and mul.
//           CUDA: kernels/cuda/reduce.cu, the same function, and the same ops.
//
// The reduced dims are brought together by plan_reduction (core/ops/reduce_util.h) into the
// [outer, r, inner] form of kernels/reduce.h, as sum does.
#include "core/ops/common.h"
#include "core/ops/reduce_util.h"
#include "kernels/reduce.h"

namespace ember {

namespace {
using kernels::MaxMin;

struct AmaxBackward final : ops::Node {
  ops::SavedTensor input, result;
  Shape dims;           // the dims as the user gave them ({}: all)
  Shape keepdim_shape;  // the output's shape with the reduced dims kept as 1
  const char* label = "AmaxBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor a = input.unpack(*this, "self");
    const Tensor out = result.unpack(*this, "result");
    const Tensor mask = eq(a, reshape(out, keepdim_shape));
    const Tensor count = sum(mask, dims, true);  // int64, keepdim_shape
    return {mul(div(reshape(g, keepdim_shape), count), mask)};
  }
  void release_saved() override {
    input.reset();
    result.reset();
  }
};

Tensor amax_amin(const Tensor& a, const Shape& dims, bool keepdim, MaxMin which, const char* op) {
  ops::check_defined(op, a);
  const ops::ReducePlan p = ops::plan_reduction(a, dims, keepdim, op);
  if (p.r == 0) {
    EMBER_CHECK(!dims.empty(), op, ": the input has no elements (shape ", shape_str(a.shape()),
                "): the ", op,
                " of nothing is undefined; name the dims to reduce, of nonzero "
                "size");
    EMBER_CHECK(false, op, ": cannot reduce over dims ", shape_str(dims), " of shape ",
                shape_str(a.shape()), ": one has size 0, and the ", op, " of nothing is undefined");
  }
  Tensor values = ops::new_output(p.out_shape, a);
  if (values.numel() > 0) {
    // max_min also writes where each extreme sits; amax has no use for it.
    Tensor scratch = ops::new_output(p.out_shape, a, kInt64);
    KernelsOn(a)->reduce.max_min(which, a.dtype(), p.outer, p.r, p.inner, p.input.raw_data(),
                                 values.raw_data(), scratch.data_ptr<int64_t>());
  }
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<AmaxBackward>();
    node->input = ops::SavedTensor(a);
    node->result = ops::SavedTensor(values);
    node->dims = a.dim() == 0 ? Shape{} : dims;
    node->keepdim_shape = p.keepdim_shape;
    node->label = which == MaxMin::Max ? "AmaxBackward" : "AminBackward";
    autograd::connect(node, values, {&a});
  }
  return values;
}
}  // namespace

Tensor amax(const Tensor& a, const Shape& dims, bool keepdim) {
  return amax_amin(a, dims, keepdim, MaxMin::Max, "amax");
}

Tensor amin(const Tensor& a, const Shape& dims, bool keepdim) {
  return amax_amin(a, dims, keepdim, MaxMin::Min, "amin");
}

}  // namespace ember
