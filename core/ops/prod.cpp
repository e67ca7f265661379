// Op card: prod — multiply the elements, over all dims or along one.
//
// Math      prod(a)[] = prod of every element;  prod(a, d)[kept] = prod over dim d.
//           An empty product is 1.
// Backward  d(prod_i x_i)/dx_j = prod_{i != j} x_i, so
//             dL/da[.., j, ..] = dL/dout[..] * (product of the other elements of j's slice).
//           Computed without dividing (out / x_j would be 0/0 where x_j == 0): prefix products
//           times suffix products, so a slice with one zero sends its whole gradient to that
//           element and a slice with two zeros sends none — the exact derivative, as PyTorch's.
//           Under create_graph the same prefix-times-suffix product runs as recorded ops, so
//           the gradient can be differentiated again, zeros included: each exclusive scan is a
//           Hillis-Steele scan, log2(r) rounds of "multiply by yourself shifted k places"
//           (k = 1, 2, 4, ...), made of cat, narrow and mul.
// Shapes    prod(a): 0-d. prod(a, d, keepdim): dim d removed (kept as 1 with keepdim).
// Dtypes    a float tensor keeps its dtype (accumulated in double, rounded once); integers and
//           bools are multiplied as int64 and give int64 (wrapping on overflow), as in PyTorch.
// Saved     a (contiguous; version-checked as a itself, also when that took a copy), the
//           keepdim shape.
// Kernels   CPU: kernels/cpu/reduce.cpp reduce_prod, reduce_prod_backward.
//           CUDA: kernels/cuda/reduce.cu, the same functions.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "core/ops/reduce_util.h"
#include "kernels/reduce.h"

namespace ember {

namespace {
// The exclusive running product along dim 1 of x [outer, r, inner], with recorded ops:
//   forward:  out[j] = x[0] * ... * x[j-1]        reverse:  out[j] = x[j+1] * ... * x[r-1]
// (1 where the range is empty). Shifting x one place (a 1 comes in at the open end) turns it
// into an inclusive scan; after the round with shift k every entry holds the product of the
// 2k entries ending (starting, in reverse) at it, so log2(r) rounds cover the whole row.
// No division: a zero in x gives exact zeros and exact products elsewhere.
Tensor exclusive_cumprod(const Tensor& x, bool reverse) {
  const int64_t r = x.size(1);
  auto shifted = [&](const Tensor& t, int64_t k) {  // t moved k places, 1s coming in
    const Tensor fill = ones({t.size(0), k, t.size(2)}, t.options());
    return reverse ? cat({narrow(t, 1, k, r - k), fill}, 1)
                   : cat({fill, narrow(t, 1, 0, r - k)}, 1);
  };
  Tensor scan = shifted(x, 1);
  for (int64_t k = 1; k < r; k *= 2) scan = mul(scan, shifted(scan, k));
  return scan;
}

struct ProdBackward final : ops::Node {
  ops::SavedTensor input;  // contiguous, laid out as [outer, r, inner]
  Shape keepdim_shape;
  int64_t outer = 1, r = 1, inner = 1;
  std::string name() const override { return "ProdBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor x = input.unpack(*this, "self");
    if (is_grad_enabled()) {  // create_graph: the product of the others, recorded
      if (x.numel() == 0) return {zeros(x.shape(), x.options())};
      const Tensor x3 = reshape(x, {outer, r, inner});
      const Tensor g3 = reshape(g, {outer, 1, inner});
      const Tensor others = mul(exclusive_cumprod(x3, false), exclusive_cumprod(x3, true));
      return {reshape(mul(g3, others), x.shape())};
    }
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
    // Checked like a (PyTorch saves it); under create_graph it comes back attached to a.
    node->input = ops::SavedTensor(p.input, a);
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
