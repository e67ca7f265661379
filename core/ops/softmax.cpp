// Op card: softmax, log_softmax — normalized exponentials along one dimension.
//
// Math      softmax(a, d)_j     = exp(a_j) / sum_i exp(a_i)          (i, j run along dim d)
//           log_softmax(a, d)_j = a_j - log(sum_i exp(a_i))
//           computed as exp(a_j - m) / sum_i exp(a_i - m) with m = max_i a_i, which is the same
//           number but cannot overflow (softmax of [1000, 1000] is [0.5, 0.5], not nan).
// Backward  softmax y:      dy_i/da_j = y_i ([i == j] - y_j), so
//                           dL/da_j = sum_i g_i y_i ([i == j] - y_j) = y_j (g_j - sum_i g_i y_i)
//           log_softmax y:  dy_i/da_j = [i == j] - softmax_j = [i == j] - exp(y_j), so
//                           dL/da_j = g_j - exp(y_j) sum_i g_i
//           Both need only the output y and one sum along d: one fused kernel each.
//           Under create_graph the same two formulas run as recorded ops (mul, sum, exp) on
//           the [outer, D, inner] view, so the gradient can be differentiated again; y comes
//           back attached to this node, whose own backward carries the path on to a.
// Shapes    out.shape == a.shape; d may be negative. A 0-d tensor takes d in {0, -1}.
// Dtypes    float32 or float64, kept (integers are refused, as in PyTorch).
// Saved     the output y.
// Kernels   CPU: kernels/cpu/softmax.cpp softmax_forward, softmax_backward, on the contiguous
//           [outer, D, inner] form of the tensor (a non-contiguous input is copied first).
//           CUDA: kernels/cuda/softmax.cu softmax_forward, softmax_backward.
#include <algorithm>

#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/softmax.h"

namespace ember {

namespace {

// The [outer, D, inner] sizes of a softmax over dim d of `shape`.
struct SoftmaxPlan {
  int64_t outer = 1, D = 1, inner = 1;
};

SoftmaxPlan plan_softmax(const Shape& shape, int64_t dim, const char* op) {
  SoftmaxPlan p;
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t d = wrap_dim(dim, std::max<int64_t>(nd, 1), op);
  if (nd == 0) return p;  // a scalar: one softmax of one element
  for (int64_t k = 0; k < d; ++k) p.outer *= shape[k];
  p.D = shape[d];
  for (int64_t k = d + 1; k < nd; ++k) p.inner *= shape[k];
  return p;
}

struct SoftmaxBackward final : ops::Node {
  ops::SavedTensor y;
  SoftmaxPlan plan;
  bool log = false;
  std::string name() const override { return log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor out = y.unpack(*this, "result");
    if (is_grad_enabled()) return {recorded_backward(g, out)};  // create_graph
    const Tensor gc = g.contiguous();
    Tensor ga = ops::new_output(out.shape(), out);
    KernelsOn(out)->softmax.backward(out.dtype(), log, plan.outer, plan.D, plan.inner,
                                     gc.raw_data(), out.raw_data(), ga.raw_data());
    return {ga};
  }
  void release_saved() override { y.reset(); }

  // The formulas of the top of the file with differentiable ops, along dim 1 of [outer, D, inner].
  Tensor recorded_backward(const Tensor& g, const Tensor& out) const {
    const Shape rows{plan.outer, plan.D, plan.inner};
    const Tensor g3 = reshape(g, rows), y3 = reshape(out, rows);
    const Tensor ga = log ? sub(g3, mul(exp(y3), sum(g3, {1}, true)))
                          : mul(y3, sub(g3, sum(mul(g3, y3), {1}, true)));
    return reshape(ga, out.shape());
  }
};

Tensor softmax_impl(const Tensor& a, int64_t dim, bool log, const char* op) {
  ops::check_defined(op, a);
  ops::check_float(op, a);
  const SoftmaxPlan p = plan_softmax(a.shape(), dim, op);
  const Tensor x = a.detach().contiguous();
  Tensor out = ops::new_output(a.shape(), a);
  KernelsOn(a)->softmax.forward(a.dtype(), log, p.outer, p.D, p.inner, x.raw_data(),
                                out.raw_data());
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<SoftmaxBackward>();
    node->y = ops::SavedTensor(out);
    node->plan = p;
    node->log = log;
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& a, int64_t dim) { return softmax_impl(a, dim, false, "softmax"); }

Tensor log_softmax(const Tensor& a, int64_t dim) {
  return softmax_impl(a, dim, true, "log_softmax");
}

}  // namespace ember
