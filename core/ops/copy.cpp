// Op card: contiguous, clone, to_dtype, to_device — copies of a tensor.
//
// Math      out = a, in fresh row-major memory (to_dtype also converts each element; to_device
//           puts the copy on another device). clone keeps a's strides instead when they tile
//           memory without gaps or overlap (a transpose, a permute), as PyTorch's default
//           memory_format=preserve_format does; anything else (a stepped slice, an expand)
//           clones to row-major. So a clone of a transposed tensor is transposed too, and
//           .view() refuses it as PyTorch does: call .contiguous() for a row-major buffer.
// Backward  dL/da = dL/dout, converted back to a's dtype (to_dtype) or moved back to a's device
//           (to_device): a copy is the identity, so only the place of the gradient changes.
// Shapes    unchanged.
// Dtypes    contiguous and clone keep a's dtype; to_dtype converts (floats to integers toward
//           zero, out-of-range values as an x86 CPU converts them, like PyTorch there; to bool:
//           nonzero is true). A gradient goes back in a's dtype.
// Saved     nothing (to_device keeps a's device).
// Kernels   CPU: kernels/cpu/elementwise.cpp copy (strided gather + cast; memcpy when both sides
//           are contiguous and of one dtype). CUDA: kernels/cuda/elementwise.cu copy.
//           Between devices: Tensor::copy_ (core/tensor.cpp) moves contiguous bytes with
//           cuda::copy_bytes (kernels/cuda/runtime.cu, cudaMemcpyAsync).
#include <algorithm>
#include <vector>

#include "core/cuda.h"
#include "core/ops/common.h"
#include "core/overlap.h"
#include "kernels/elementwise.h"

namespace ember {

namespace {
struct CopyBackward final : ops::Node {
  const char* label = "CloneBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.to(input_dtypes[0])}; }
};

struct ToDeviceBackward final : ops::Node {
  Device source;
  std::string name() const override { return "ToDeviceBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.to(source)}; }
};

// Strides that lay out a's shape densely in a's order of strides (largest stride outermost;
// ties keep the dims' order): a's own strides when a is non-overlapping and dense.
Shape dense_strides_like(const Tensor& a) {
  std::vector<int64_t> order(static_cast<size_t>(a.dim()));
  for (int64_t d = 0; d < a.dim(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return a.strides()[x] > a.strides()[y]; });
  Shape strides(static_cast<size_t>(a.dim()));
  int64_t step = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = step;
    step *= std::max<int64_t>(a.shape()[*it], 1);
  }
  return strides;
}

Tensor copy_as(const Tensor& a, DType dtype, const char* label, const char* op,
               bool keep_strides = false) {
  ops::check_defined(op, a);
  Tensor out = ops::new_output(a.shape(), a, dtype);
  if (keep_strides && a.numel() > 0 && !a.is_contiguous() && is_non_overlapping_and_dense(a))
    out.impl()->strides = dense_strides_like(a);  // the same storage, a permuted layout
  const auto L = make_loop<2>(a.shape(), {&out, &a}, op);
  KernelsOn(a)->elementwise.copy(dtype, a.dtype(), L, out.raw_data(), a.raw_data());
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

Tensor clone(const Tensor& a) {
  return copy_as(a, a.dtype(), "CloneBackward", "clone", /*keep_strides=*/true);
}

Tensor to_dtype(const Tensor& a, DType dtype) {
  ops::check_defined("to", a);
  if (a.dtype() == dtype) return a;
  return copy_as(a, dtype, "ToDtypeBackward", "to");
}

Tensor to_device(const Tensor& a, Device device, bool non_blocking) {
  ops::check_defined("to", a);
  const Device d = cuda::resolve(device);
  if (d == a.device()) return a;
  Tensor out;
  {
    NoGradGuard no_grad;  // the copy itself is not recorded; the edge is added below
    // A non-blocking copy to the host lands in pinned memory, or it could not be asynchronous.
    const bool pinned = non_blocking && d.is_cpu();
    out = empty(a.shape(), TensorOptions(a.dtype()).device(d).pinned_memory(pinned));
    out.copy_(a, non_blocking);
  }
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<ToDeviceBackward>();
    node->source = a.device();
    autograd::connect(node, out, {&a});
  }
  return out;
}

}  // namespace ember
