// Op card: cat, stack — join tensors along a dimension.
//
// Math      cat(t_0, ..., t_{n-1}; d): the inputs laid end to end along d; input i occupies
//           the window [o_i, o_i + t_i.size(d)) of dim d, where o_i = sum_{j<i} t_j.size(d).
//           stack(t_0, ..., t_{n-1}; d) = cat(unsqueeze(t_i, d) ...; d): a new dim d of size n.
// Backward  out's window i is a copy of t_i, so dL/dt_i = narrow(dL/dout, d, o_i, t_i.size(d))
//           (a view of the incoming gradient: nothing is copied). stack is a composite of
//           unsqueeze and cat and needs no backward of its own.
// Shapes    all inputs: one device, one rank, equal sizes except in d (stack: equal shapes);
//           out.size(d) = sum of the inputs' sizes in d. d may be negative. PyTorch's legacy
//           rule is kept: a 1-d tensor of size 0 (shape [0]) among others is skipped (it still
//           counts for the result dtype, and gets an empty gradient).
// Dtypes    result_type of all inputs (int64 and float32 parts give float32); each gradient in
//           its input's dtype.
// Saved     d and each input's size in d.
// Kernels   CPU: kernels/cpu/elementwise.cpp copy, once per input, from the input (any layout)
//           into its window of the freshly allocated output.
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include "core/ops/common.h"

namespace ember {

namespace {
struct CatBackward final : ops::Node {
  int64_t dim = 0;
  std::vector<int64_t> sizes;  // each input's size along dim; -1 for a skipped [0] tensor
  std::string name() const override { return "CatBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    std::vector<Tensor> grads(sizes.size());
    int64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0) {
        if (needs_input_grad(i)) grads[i] = zeros({0}, g.options());
        continue;
      }
      if (needs_input_grad(i)) grads[i] = narrow(g, dim, offset, sizes[i]);
      offset += sizes[i];
    }
    return grads;
  }
};

bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.shape()[0] == 0; }

// "cat: tensor 2 has shape [3, 5] but tensor 0 has shape [3, 4]: sizes must match except in
// dim 0 (dim 1: 5 vs 4)". `ref` is the tensor the others are compared with.
void check_cat_inputs(const std::vector<Tensor>& tensors, const std::vector<bool>& skipped,
                      size_t ref, int64_t d) {
  const Tensor& first = tensors[ref];
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK_T(DeviceError, t.device() == first.device(), "cat: tensor ", i, " is on ",
                  t.device(), " but tensor ", ref, " is on ", first.device(),
                  ": move them to one device with .to()");
    if (skipped[i] || i == ref) continue;
    EMBER_CHECK(t.dim() == first.dim(), "cat: tensor ", i, " has ", t.dim(), " dims (shape ",
                shape_str(t.shape()), ") but tensor ", ref, " has ", first.dim(), " (shape ",
                shape_str(first.shape()), ")");
    for (int64_t k = 0; k < first.dim(); ++k) {
      EMBER_CHECK(k == d || t.shape()[k] == first.shape()[k], "cat: tensor ", i, " has shape ",
                  shape_str(t.shape()), " but tensor ", ref, " has shape ",
                  shape_str(first.shape()), ": sizes must match except in dim ", d, " (dim ", k,
                  ": ", t.shape()[k], " vs ", first.shape()[k], ")");
    }
  }
}
}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "cat: expected at least one tensor, got an empty list");
  for (size_t i = 0; i < tensors.size(); ++i)
    EMBER_CHECK(tensors[i].defined(), "cat: tensor ", i, " is an undefined tensor");
  // PyTorch skips a legacy empty tensor (shape [0]) among tensors of another shape; the first
  // tensor that is not one sets the shape the others must match.
  size_t ref = 0;
  while (ref < tensors.size() && is_legacy_empty(tensors[ref])) ++ref;
  if (ref == tensors.size()) ref = 0;  // all of them [0]: an ordinary cat
  std::vector<bool> skipped(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    skipped[i] = i != ref && is_legacy_empty(tensors[i]) && !is_legacy_empty(tensors[ref]);
  const Tensor& first = tensors[ref];
  EMBER_CHECK(first.dim() > 0, "cat: tensor ", ref,
              " is 0-d and has no dim to join along: use "
              "stack(), or unsqueeze(0) each tensor");
  const int64_t d = wrap_dim(dim, first.dim(), "cat");
  check_cat_inputs(tensors, skipped, ref, d);

  Shape out_shape = first.shape();
  out_shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!skipped[i]) out_shape[d] += tensors[i].shape()[d];
  Tensor out = ops::new_output(out_shape, first, result_type(tensors));

  // Each input lands in its own window of out. The copy kernel is called directly rather than
  // through copy_(): copy_ refuses a source that requires grad while the tape records, and
  // here the tape is CatBackward itself.
  int64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (skipped[i]) continue;
    const Tensor& t = tensors[i];
    const int64_t n = t.shape()[d];
    const Tensor window = narrow(out, d, offset, n);
    ops::copy_values(window, t, "cat");
    offset += n;
  }

  if (is_grad_enabled() && autograd::any_requires_grad(tensors)) {
    auto node = std::make_shared<CatBackward>();
    node->dim = d;
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < tensors.size(); ++i) {
      node->sizes.push_back(skipped[i] ? -1 : tensors[i].shape()[d]);
      inputs.push_back(&tensors[i]);
    }
    autograd::connect(node, out, inputs);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "stack: expected at least one tensor, got an empty list");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "stack: tensor ", i, " is an undefined tensor");
    EMBER_CHECK(tensors[i].shape() == tensors[0].shape(), "stack: tensor ", i, " has shape ",
                shape_str(tensors[i].shape()), " but tensor 0 has shape ",
                shape_str(tensors[0].shape()), ": stack needs tensors of one shape (cat joins "
                "tensors that differ along the joined dim)");
  }
  const int64_t d = wrap_insert_dim(dim, tensors[0].dim(), "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(unsqueeze(t, d));
  return cat(parts, d);
}

}  // namespace ember
