// Op card: gather, scatter_add — pick and add along one dim with a same-rank int64 index.
//
// Math      gather(a, d, index)[p] = a[p with p_d replaced by index[p]]      (p over index's shape)
//           e.g. d = 1:  out[i][j][k] = a[i][index[i][j][k]][k]
//           scatter_add(a, d, index, src) = a copy of a, then for every p of index's shape:
//           out[p with p_d replaced by index[p]] += src[p].  Repeated index values add up.
// Backward  gather: each out[p] is a copy of one element of a, so dL/da collects dL/dout[p]
//           into the element it came from (several times if the index repeats it):
//             dL/da = scatter_add(zeros(a.shape), d, index, dL/dout)   -> GatherBackward
//           scatter_add: out = a + (src placed by index), linear in both:
//             dL/da = dL/dout;  dL/dsrc[p] = dL/dout[p with p_d = index[p]]
//                             = gather(dL/dout, d, index)               -> ScatterAddBackward
//           (zero-padded to src's shape where src is larger than index).
// Shapes    index.dim() == a.dim() (== src.dim()); index.size(k) <= a.size(k) for k != d;
//           index.size(k) <= src.size(k) for every k. gather's output has index's shape.
//           Index values in [0, a.size(d)). As in PyTorch, only the index's extent is used.
//           gather counts a 0-d a or index as one dim of size 1, as PyTorch does: a 0-d a
//           takes a 0-d or 1-d index (dim 0 or -1), a 1-d a a 0-d index; the output has
//           index's shape (0-d for a 0-d index).
// Dtypes    a's dtype (scatter_add: src of a's dtype; bool scatter_add is a logical or, counted in
//           int64); index int64.
// Saved     the index (int64, never differentiated) and d; gather also saves a, only so that
//           changing a in place before the backward is refused as in PyTorch (which saves it).
// Kernels   CPU: kernels/cpu/index.cpp gather, scatter_add (line by line along d; scatter_add
//           splits lines across threads, so repeated indices never race).
//           CUDA: kernels/cuda/index.cu, the same functions; index checks wait for the GPU.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/index.h"

namespace ember {

namespace {

// Checks shared by gather and scatter_add; returns d wrapped into [0, a.dim()).
int64_t check_index_args(const char* op, const Tensor& a, int64_t dim, const Tensor& index) {
  ops::check_defined(op, a);
  ops::check_defined(op, index, "index");
  ops::check_same_device(op, a, index);
  EMBER_CHECK(index.dtype() == kInt64, op, ": index must be int64, got ", index.dtype(),
              " (convert with .to(ember::kInt64))");
  EMBER_CHECK(a.dim() > 0, op, ": cannot index a 0-d tensor: reshape it to [1] first");
  EMBER_CHECK(index.dim() == a.dim(), op, ": index has ", index.dim(), " dims (shape ",
              shape_str(index.shape()), ") but the tensor has ", a.dim(), " (shape ",
              shape_str(a.shape()), "): they need the same number of dims");
  const int64_t d = wrap_dim(dim, a.dim(), op);
  for (int64_t k = 0; k < a.dim(); ++k) {
    EMBER_CHECK(k == d || index.shape()[k] <= a.shape()[k], op, ": index of shape ",
                shape_str(index.shape()), " is larger than the tensor of shape ",
                shape_str(a.shape()), " in dim ", k, " (", index.shape()[k], " > ",
                a.shape()[k], "); only the indexed dim ", d, " may be larger");
  }
  return d;
}

// `index` contiguous: names the first bad value with its position, e.g.
// "gather: index value 5 at position [1, 2] is out of range for dim 1 of size 4".
void check_index_values(const char* op, const Tensor& index, int64_t d, int64_t size) {
  const int64_t bad = ops::first_out_of_range(index, size);
  if (bad < 0) return;
  const int64_t value = index.reshape({-1})[bad].item<int64_t>();
  Shape pos(index.dim());
  for (int64_t k = index.dim() - 1, rem = bad; k >= 0; --k) {
    pos[k] = rem % index.shape()[k];
    rem /= index.shape()[k];
  }
  throw ValueError(detail::concat(op, ": index value ", value, " at position ", shape_str(pos),
                                  " is out of range for dim ", d, " of size ", size,
                                  " (valid values: 0 to ", size - 1, ")"));
}

// The iteration the kernels take: every line along d of the index's extent. Each operand is
// viewed with index's shape minus dim d (its own strides), and its stride along d is kept aside.
struct Lines {
  kernels::StridedLoop<3> loop;
  int64_t len = 0;
  int64_t dim_stride[3] = {};
};

Lines make_lines(const Tensor& out, const Tensor& index, const Tensor& in, int64_t d,
                 const char* op) {
  Shape shape = index.shape();
  shape.erase(shape.begin() + d);
  auto without_d = [&](const Tensor& t) {
    Shape strides = t.strides();
    strides.erase(strides.begin() + d);
    return make_view(t, shape, strides, t.offset());
  };
  const Tensor vo = without_d(out), vi = without_d(index), vx = without_d(in);
  Lines l;
  l.loop = make_loop<3>(shape, {&vo, &vi, &vx}, op);
  l.len = index.shape()[d];
  l.dim_stride[0] = out.strides()[d];
  l.dim_stride[1] = index.strides()[d];
  l.dim_stride[2] = in.strides()[d];
  return l;
}

struct GatherBackward final : ops::Node {
  int64_t dim = 0;
  ops::SavedTensor index, self;  // self: only version-checked (PyTorch's rule, autograd/node.h)
  std::string name() const override { return "GatherBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor ix = index.unpack(*this, "index");
    self.unpack(*this, "self");
    return {scatter_add(zeros(input_shapes[0], g.options()), dim, ix, g)};
  }
  void release_saved() override {
    index.reset();
    self.reset();
  }
};

struct ScatterAddBackward final : ops::Node {
  int64_t dim = 0;
  ops::SavedTensor index;
  std::string name() const override { return "ScatterAddBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga, gsrc;
    if (needs_input_grad(0)) ga = g;
    if (needs_input_grad(1)) {
      gsrc = gather(g, dim, index.unpack(*this, "index"));
      const Shape& src_shape = input_shapes[1];
      // Where src reaches past the index's extent, its elements were never added: gradient 0,
      // zeros appended dim by dim (recorded ops, so create_graph can differentiate it again).
      for (int64_t k = 0; k < gsrc.dim(); ++k) {
        const int64_t missing = src_shape[k] - gsrc.shape()[k];
        if (missing == 0) continue;
        Shape pad_shape = gsrc.shape();
        pad_shape[k] = missing;
        gsrc = cat({gsrc, zeros(pad_shape, g.options())}, k);
      }
    }
    return {ga, gsrc};
  }
  void release_saved() override { index.reset(); }
};

}  // namespace

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  if (a.defined() && index.defined() && (a.dim() == 0 || index.dim() == 0)) {
    // A 0-d tensor counts as one dim of size 1 (PyTorch's rule); the reshapes carry the
    // gradient back to a's own shape.
    const Tensor out = gather(a.dim() == 0 ? a.reshape({1}) : a, dim,
                              index.dim() == 0 ? index.reshape({1}) : index);
    return index.dim() == 0 ? out.reshape({}) : out;
  }
  const int64_t d = check_index_args("gather", a, dim, index);
  const Tensor ix = index.contiguous();
  check_index_values("gather", ix, d, a.shape()[d]);
  Tensor out = ops::new_output(ix.shape(), a);
  const Lines l = make_lines(out, ix, a, d, "gather");
  KernelsOn(a)->index.gather(a.dtype(), l.loop, l.len, l.dim_stride, out.raw_data(),
                             ix.data_ptr<int64_t>(), a.raw_data());
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<GatherBackward>();
    node->dim = d;
    node->index = ops::SavedTensor(ix, index);
    node->self = ops::SavedTensor(a);
    autograd::connect(node, out, {&a});
  }
  return out;
}

Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = check_index_args("scatter_add", a, dim, index);
  ops::check_defined("scatter_add", src, "src");
  ops::check_same_device("scatter_add", a, src);
  ops::check_same_dtype("scatter_add", a, src);
  EMBER_CHECK(src.dim() == index.dim(), "scatter_add: src has ", src.dim(), " dims (shape ",
              shape_str(src.shape()), ") but index has ", index.dim(), " (shape ",
              shape_str(index.shape()), "): they need the same number of dims");
  for (int64_t k = 0; k < src.dim(); ++k) {
    EMBER_CHECK(index.shape()[k] <= src.shape()[k], "scatter_add: index of shape ",
                shape_str(index.shape()), " is larger than src of shape ", shape_str(src.shape()),
                " in dim ", k, " (", index.shape()[k], " > ", src.shape()[k],
                "): every index position needs a src value");
  }
  const Tensor ix = index.contiguous();
  check_index_values("scatter_add", ix, d, a.shape()[d]);
  if (a.dtype() == kBool) {
    // bool: the sums counted in int64 (so that no count wraps to 0), nonzero is true: a logical
    // or, as in PyTorch.
    NoGradGuard no_grad;
    return scatter_add(a.to(kInt64), dim, ix, src.to(kInt64)).ne(Scalar(0));
  }

  // out starts as a copy of a; the kernel then adds src into it in place.
  Tensor out = ops::new_output(a.shape(), a);
  ops::copy_values(out, a, "scatter_add");
  const Lines l = make_lines(out, ix, src, d, "scatter_add");
  KernelsOn(a)->index.scatter_add(a.dtype(), l.loop, l.len, l.dim_stride, out.raw_data(),
                                  ix.data_ptr<int64_t>(), src.raw_data());
  if (autograd::grad_needed({&a, &src})) {
    auto node = std::make_shared<ScatterAddBackward>();
    node->dim = d;
    node->index = ops::SavedTensor(ix, index);
    autograd::connect(node, out, {&a, &src});
  }
  return out;
}

}  // namespace ember
