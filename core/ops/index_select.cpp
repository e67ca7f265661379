// Op card: index_select, index_add — pick or add whole slabs along one dim with a 1-d index.
//
// Math      index_select(a, d, index)[.., i, ..] = a[.., index[i], ..]        (i along d)
//           index_add(a, d, index, src) = a copy of a, then for every i:
//             out[.., index[i], ..] += src[.., i, ..].  Repeated index values add up.
//           A DataLoader batch is index_select(dataset, 0, shuffled_ids); an embedding lookup
//           is index_select(weight, 0, token_ids) and its backward an index_add.
// Backward  index_select copies slab index[i] of a to slab i of out, so slab r of a receives
//           the sum of dL/dout's slabs i with index[i] == r:
//             dL/da = index_add(zeros(a.shape), d, index, dL/dout)        -> IndexSelectBackward
//           index_add is linear: out = a + (src's slabs placed by index):
//             dL/da = dL/dout;  dL/dsrc[.., i, ..] = dL/dout[.., index[i], ..]
//                             = index_select(dL/dout, d, index)          -> IndexAddBackward
// Shapes    index: 1-d int64 of length n, values in [0, a.size(d)). index_select's output is
//           a's shape with size n at d; index_add's src must have exactly that shape.
//           index_select also takes what PyTorch takes: a 0-d index (one position, n = 1) and a
//           0-d a (dim 0 or -1, an index of one entry: a 0-d output). PyTorch also returns a
//           0-d tensor for a 0-d a and a longer index; ember refuses that (docs/from_pytorch.md).
// Dtypes    a's dtype (index_add: src of a's dtype; bool index_add is a logical or); index
//           int64 or int32, as PyTorch 1.13 takes for these two ops (gather and scatter_add
//           want int64 there); an int32 index is widened to int64 before the kernels see it.
// Saved     the index and d.
// Kernels   CPU: kernels/cpu/index.cpp index_select (one memcpy per row of `inner` elements,
//           rows split across threads), index_add (threads own destination rows: no races).
//           Both see a contiguous [outer, size, inner] block; a non-contiguous input is made
//           contiguous first.
//           CUDA: kernels/cuda/index.cu, the same functions; index checks wait for the GPU.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/index.h"

namespace ember {

namespace {

// Checks shared by both ops; returns d wrapped into [0, a.dim()).
int64_t check_select_args(const char* op, const Tensor& a, int64_t dim, const Tensor& index) {
  ops::check_defined(op, a);
  ops::check_defined(op, index, "index");
  ops::check_same_device(op, a, index);
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
              ": index must be int64 or int32, got ", index.dtype(),
              " (convert with .to(ember::kInt64))");
  EMBER_CHECK(index.dim() == 1, op, ": index must be 1-d, got shape ", shape_str(index.shape()),
              " (flatten it with .reshape({-1}), or use gather for a same-rank index)");
  EMBER_CHECK(a.dim() > 0, op, ": cannot index a 0-d tensor: reshape it to [1] first");
  return wrap_dim(dim, a.dim(), op);
}

// The index as the kernels read it: contiguous int64.
Tensor index_for_kernels(const Tensor& index) {
  return index.dtype() == kInt64 ? index.contiguous() : index.to(kInt64).contiguous();
}

// `index` contiguous: "index_select: index value 9 at position 3 is out of range for dim 0 of
// size 5".
void check_index_values(const char* op, const Tensor& index, int64_t d, int64_t size) {
  const int64_t bad = ops::first_out_of_range(index, size);
  if (bad < 0) return;
  const int64_t value = index[bad].item<int64_t>();
  throw ValueError(detail::concat(op, ": index value ", value, " at position ", bad,
                                  " is out of range for dim ", d, " of size ", size,
                                  " (valid values: 0 to ", size - 1, ")"));
}

// a viewed as [outer, size, inner] around dim d.
struct Block {
  int64_t outer = 1, size = 1, inner = 1;
};
Block block_of(const Shape& shape, int64_t d) {
  Block b;
  for (int64_t k = 0; k < d; ++k) b.outer *= shape[k];
  b.size = shape[d];
  for (int64_t k = d + 1; k < static_cast<int64_t>(shape.size()); ++k) b.inner *= shape[k];
  return b;
}

struct IndexSelectBackward final : ops::Node {
  int64_t dim = 0;
  ops::SavedTensor index;
  std::string name() const override { return "IndexSelectBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor ix = index.unpack(*this, "index");
    return {index_add(zeros(input_shapes[0], g.options()), dim, ix, g)};
  }
  void release_saved() override { index.reset(); }
};

struct IndexAddBackward final : ops::Node {
  int64_t dim = 0;
  ops::SavedTensor index;
  std::string name() const override { return "IndexAddBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gsrc;
    if (needs_input_grad(0)) ga = g;
    if (needs_input_grad(1)) gsrc = index_select(g, dim, index.unpack(*this, "index"));
    return {ga, gsrc};
  }
  void release_saved() override { index.reset(); }
};

}  // namespace

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  if (a.defined() && index.defined() && (a.dim() == 0 || index.dim() == 0)) {
    if (a.dim() == 0) {
      wrap_dim(dim, 1, "index_select");  // dim 0 or -1 names the single element
      EMBER_CHECK(index.numel() == 1,
                  "index_select: a 0-d tensor has one element, so the index "
                  "must hold exactly one position, got shape ",
                  shape_str(index.shape()),
                  " (reshape the tensor to [1] to pick it several times)");
      return index_select(a.reshape({1}), 0, index.reshape({1})).reshape({});
    }
    return index_select(a, dim, index.reshape({1}));  // a 0-d index: one position
  }
  const int64_t d = check_select_args("index_select", a, dim, index);
  const Tensor ix = index_for_kernels(index);
  check_index_values("index_select", ix, d, a.shape()[d]);
  const Tensor x = a.contiguous();  // a no-op for a dataset tensor: the fast path
  const Block b = block_of(x.shape(), d);
  Shape out_shape = a.shape();
  out_shape[d] = ix.numel();
  Tensor out = ops::new_output(out_shape, a);
  KernelsOn(a)->index.index_select(a.dtype(), b.outer, b.size, b.inner, x.raw_data(),
                                   ix.data_ptr<int64_t>(), ix.numel(), out.raw_data());
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<IndexSelectBackward>();
    node->dim = d;
    node->index = ops::SavedTensor(ix, index);
    autograd::connect(node, out, {&a});
  }
  return out;
}

Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = check_select_args("index_add", a, dim, index);
  ops::check_defined("index_add", src, "src");
  ops::check_same_device("index_add", a, src);
  ops::check_same_dtype("index_add", a, src);
  Shape want = a.shape();
  want[d] = index.numel();
  EMBER_CHECK(src.shape() == want, "index_add: src has shape ", shape_str(src.shape()),
              " but expected ", shape_str(want), " (the tensor's shape ", shape_str(a.shape()),
              " with dim ", d, " replaced by the index length ", index.numel(), ")");
  const Tensor ix = index_for_kernels(index);
  check_index_values("index_add", ix, d, a.shape()[d]);
  if (a.dtype() == kBool) {
    // bool: counted in int64, nonzero is true (a logical or, as in PyTorch).
    NoGradGuard no_grad;
    return index_add(a.to(kInt64), dim, ix, src.to(kInt64)).ne(Scalar(0));
  }

  // out starts as a contiguous copy of a; the kernel adds src's rows into it in place.
  Tensor out = ops::new_output(a.shape(), a);
  ops::copy_values(out, a, "index_add");
  const Tensor s = src.contiguous();
  const Block b = block_of(a.shape(), d);
  KernelsOn(a)->index.index_add(a.dtype(), b.outer, b.size, b.inner, out.raw_data(),
                                ix.data_ptr<int64_t>(), ix.numel(), s.raw_data());
  if (autograd::grad_needed({&a, &src})) {
    auto node = std::make_shared<IndexAddBackward>();
    node->dim = d;
    node->index = ops::SavedTensor(ix);
    autograd::connect(node, out, {&a, &src});
  }
  return out;
}

}  // namespace ember
