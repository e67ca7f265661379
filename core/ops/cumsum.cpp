// Op card: cumsum — the running sum along one dim.
//
// Math      out[.., j, ..] = sum_{i <= j} a[.., i, ..]   along dim d (a 0-d tensor is its own
//           running sum). Float sums are accumulated in double and each output rounded once, as
//           PyTorch's CPU cumsum does; integer sums wrap around in int64.
// Backward  out_j depends on a_i (with slope 1) for every i <= j, so a_i receives the gradient
//           of every output at or after it:
//             dL/da[.., i, ..] = sum_{j >= i} dL/dout[.., j, ..]
//           the reversed running sum of the gradient (PyTorch: grad.flip(d).cumsum(d).flip(d)).
//           ember computes it with the same kernel walking j backward, and records that as a
//           node too (the reversed cumsum's own backward is the forward cumsum), so the
//           gradient can itself be differentiated.
// Shapes    unchanged; dim d in [-ndim, ndim) (0 and -1 for a 0-d tensor).
// Dtypes    a float tensor keeps its dtype; integer and bool tensors are summed as int64 and give
//           int64, as in PyTorch. The gradient in a's dtype.
// Saved     nothing but the dim (the backward needs only the gradient).
// Kernels   CPU: kernels/cpu/reduce.cpp reduce_cumsum (forward and, reversed, backward).
//           CUDA: kernels/cuda/reduce.cu reduce_cumsum (cumsum_kernel, a thread per column).
#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/reduce.h"

namespace ember {

namespace {
Tensor cumsum_impl(const Tensor& a, int64_t dim, bool reverse);

struct CumsumBackward final : ops::Node {
  int64_t dim = 0;
  bool reverse = false;  // this node's forward ran backward (it is a cumsum's gradient)
  std::string name() const override {
    return reverse ? "CumsumReversedBackward" : "CumsumBackward";
  }
  std::vector<Tensor> backward(const Tensor& g) override { return {cumsum_impl(g, dim, !reverse)}; }
};

Tensor cumsum_impl(const Tensor& a, int64_t dim, bool reverse) {
  const char* op = "cumsum";
  ops::check_defined(op, a);
  const int64_t d = wrap_dim(dim, a.dim(), op);
  // Integers and bools are summed as int64 (PyTorch's dtype for them).
  const DType dt = is_floating(a.dtype()) ? a.dtype() : kInt64;
  const Tensor x = cast_for_compute(a, dt).contiguous();
  // The kernels' [outer, r, inner] view of the contiguous input: r is dim d.
  int64_t outer = 1, r = 1, inner = 1;
  for (int64_t i = 0; i < a.dim(); ++i) {
    if (i < d) outer *= a.shape()[i];
    else if (i == d) r = a.shape()[i];
    else inner *= a.shape()[i];
  }
  Tensor out = ops::new_output(a.shape(), a, dt);
  if (out.numel() > 0)
    KernelsOn(a)->reduce.cumsum(dt, outer, r, inner, reverse, x.raw_data(), out.raw_data());
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<CumsumBackward>();
    node->dim = d;
    node->reverse = reverse;
    autograd::connect(node, out, {&a});
  }
  return out;
}
}  // namespace

Tensor cumsum(const Tensor& a, int64_t dim) { return cumsum_impl(a, dim, false); }

}  // namespace ember
