// Op card: log — natural logarithm.
//
// Math      out = ln(a)       (a <= 0 gives -inf / nan, as in PyTorch)
// Backward  dL/da = dL/dout / a
// Shapes    unchanged.
// Dtypes    a's dtype when floating; integers and bools give float32 (the default float dtype).
// Saved     a.
// Kernels   CPU: kernels/cpu/elementwise.cpp unary(Log).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct LogBackward final : ops::Node {
  ops::SavedTensor a;
  std::string name() const override { return "LogBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {div(g, a.unpack(*this, "self"))}; }
  void release_saved() override { a.reset(); }
};
}  // namespace

Tensor log(const Tensor& a) {
  ops::check_defined("log", a);
  Tensor out = ops::unary_forward(kernels::UnaryOp::Log, a, "log", 0.0, ops::float_result(a.dtype()));
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<LogBackward>();
    node->a = ops::SavedTensor(a);
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
