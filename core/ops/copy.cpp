// Op card: contiguous, clone, to_dtype — copies of a tensor.
//
// Math      out = a, in fresh row-major memory (to_dtype also converts each element).
// Backward  dL/da = dL/dout (converted back to a's dtype for to_dtype).
// Shapes    unchanged.
// Saved     nothing.
// Kernels   CPU: kernels/cpu/elementwise.cpp copy (strided gather + cast; memcpy when both sides
//           are contiguous and of one dtype).
#include "core/ops/common.h"

namespace ember {

namespace {
struct CopyBackward final : ops::Node {
  const char* label = "CloneBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.to(input_dtypes[0])}; }
};

Tensor copy_as(const Tensor& a, DType dtype, const char* label, const char* op) {
  ops::check_defined(op, a);
  ops::check_cpu(op, a);
  Tensor out = ops::new_output(a.shape(), a, dtype);
  const auto L = make_loop<2>(a.shape(), {&out, &a}, op);
  kernels::cpu::copy(dtype, a.dtype(), L, out.raw_data(), a.raw_data());
  // Converting to an integer or bool dtype ends the graph there (no gradient flows through
  // rounding), as in PyTorch.
  if (is_floating(dtype) && autograd::grad_needed({&a})) {
    auto node = std::make_shared<CopyBackward>();
    node->label = label;
    autograd::connect(node, out, {&a});
  }
  return out;
}
}  // namespace

Tensor contiguous(const Tensor& a) {
  ops::check_defined("contiguous", a);
  if (a.is_contiguous()) return a;
  return copy_as(a, a.dtype(), "ContiguousBackward", "contiguous");
}

Tensor clone(const Tensor& a) { return copy_as(a, a.dtype(), "CloneBackward", "clone"); }

Tensor to_dtype(const Tensor& a, DType dtype) {
  ops::check_defined("to", a);
  if (a.dtype() == dtype) return a;
  return copy_as(a, dtype, "ToDtypeBackward", "to");
}

}  // namespace ember
