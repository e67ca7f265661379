// Op card: prod — multiply the elements, over all dims or along one.
//
// Math      prod(a)[] = prod of every element;  prod(a, d)[kept] = prod over dim d.
//           An empty product is 1.
// Backward  d(prod_i x_i)/dx_j = prod_{i != j} x_i, so
//             dL/da[.., j, ..] = dL/dout[..] * (product of the other elements of j's slice).
//           Computed without dividing (out / x_j would be 0/0 where x_j == 0): prefix products
//           times suffix products, so a slice with one zero sends its whole gradient to that
//           element and a slice with two zeros sends none — the exact derivative, as PyTorch's.
// Shapes    prod(a): 0-d. prod(a, d, keepdim): dim d removed (kept as 1 with keepdim).
// Dtypes    a float tensor keeps its dtype (accumulated in double, rounded once); integers and
//           bools are multiplied as int64 and give int64 (wrapping on overflow), as in PyTorch.
// Saved     a (contiguous), the keepdim shape.
// Kernels   CPU: kernels/cpu/reduce.cpp reduce_prod, reduce_prod_backward.
//           CUDA: kernels/cuda/reduce.cu, the same functions.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "core/ops/reduce_util.h"
#include "kernels/reduce.h"

namespace ember {

namespace {
struct ProdBackward final : ops::Node {
  ops::SavedTensor input;  // contiguous, laid out as [outer, r, inner]
  Shape keepdim_shape;
  int64_t outer = 1, r = 1, inner = 1;
  std::string name() const override { return "ProdBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    autograd::check_twice_differentiable(*this, "prod", g, {&input});
    const Tensor x = input.unpack(*this, "self");
    const Tensor gc = reshape(g, keepdim_shape).contiguous();
    Tensor gx = ops::new_output(x.shape(), x);
    KernelsOn(x)->reduce.prod_backward(x.dtype(), outer, r, inner, x.raw_data(), gc.raw_data(),
                                       gx.raw_data());
    return {gx};
  }
  void release_saved() override { input.reset(); }
};

Tensor reduce_prod(const Tensor& a, const Shape& dims, bool keepdim) {
  const char* op = "prod";
  ops::check_defined(op, a);
  if (!is_floating(a.dtype()) && a.dtype() != kInt64)
    return reduce_prod(cast_for_compute(a, kInt64), dims, keepdim);
  // One dim or all dims: the reduced dims are one run, so plan_reduction keeps a's order and
  // the kernels' [outer, r, inner] input is a itself, made contiguous.
  const ops::ReducePlan p = ops::plan_reduction(a, dims, keepdim, op);
  Tensor out = ops::new_output(p.out_shape, a);
  KernelsOn(a)->reduce.prod(a.dtype(), p.outer, p.r, p.inner, p.input.raw_data(), out.raw_data());
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<ProdBackward>();
    node->input = ops::SavedTensor(p.input.detach());
    node->keepdim_shape = p.keepdim_shape;
    node->outer = p.outer;
    node->r = p.r;
    node->inner = p.inner;
    autograd::connect(node, out, {&a});
  }
  return out;
}
}  // namespace

Tensor prod(const Tensor& a) { return reduce_prod(a, {}, false); }

Tensor prod(const Tensor& a, int64_t dim, bool keepdim) {
  return reduce_prod(a, {dim}, keepdim);
}

}  // namespace ember
