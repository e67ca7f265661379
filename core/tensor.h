// ember/core/tensor.h — the Tensor type.
//
// A Tensor is a handle (a shared pointer) to a TensorImpl: a Storage plus a layout
// {shape, strides, offset} and a dtype. Copying a Tensor copies the handle, exactly like
// assigning a Python variable: both names refer to the same data. Views (transpose, narrow,
// reshape of contiguous data, expand...) make a new TensorImpl over the same Storage.
//
// Autograd state lives here too: requires_grad, the accumulated .grad of a leaf, and for a
// tensor produced by an op, grad_fn — the tape node that knows how to send gradients back
// to the op's inputs (see core/autograd/node.h).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "kernels/base/dtype.h"
#include "core/scalar.h"
#include "core/shape.h"
#include "core/storage.h"

namespace ember {

namespace autograd {
class Node;
}

class Tensor;
struct ValuesIndices;  // core/ops.h: the (values, indices) pair of max, sort, topk

// How a factory should build its tensor. Converts implicitly from a DType or a Device, so
// both `zeros({2, 3}, kFloat64)` and `zeros({2, 3}, TensorOptions().device("cuda"))` read well.
struct TensorOptions {
  DType dtype_ = DType::Float32;
  Device device_ = default_device();
  bool requires_grad_ = false;
  bool pinned_ = false;  // page-locked host memory (cpu only; needs CUDA)

  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}   // NOLINT(google-explicit-constructor)
  TensorOptions(Device d) : device_(d) {}  // NOLINT(google-explicit-constructor)
  TensorOptions(const char* d) : device_(d) {}  // NOLINT(google-explicit-constructor)

  TensorOptions& dtype(DType d) { dtype_ = d; return *this; }
  TensorOptions& device(Device d) { device_ = d; return *this; }
  TensorOptions& requires_grad(bool r = true) { requires_grad_ = r; return *this; }
  TensorOptions& pinned_memory(bool p = true) { pinned_ = p; return *this; }
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  // A 0-d tensor made from a C++ number by the scalar overloads (x * 2): in type promotion it
  // weighs as a number, not as a tensor (core/promotion.h).
  bool wrapped_number = false;

  bool requires_grad = false;
  bool retains_grad = false;                   // non-leaf that keeps its .grad (retain_grad())
  std::shared_ptr<TensorImpl> grad;            // accumulated gradient (leaves, retain_grad)
  std::shared_ptr<autograd::Node> grad_fn;     // the op that produced this tensor, if tracked
  uint32_t output_nr = 0;                      // which output of grad_fn this is
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaf's AccumulateGrad, created lazily
  // Tensor::register_post_accumulate_grad_hook: (id, hook), run in registration order.
  std::vector<std::pair<int64_t, std::function<void(const Tensor&)>>> post_accumulate_grad_hooks;

  static int64_t live_count();
  TensorImpl();
  ~TensorImpl();
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (like an empty Python variable): defined() == false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // ---- layout -----------------------------------------------------------------------------
  const Shape& shape() const { return checked()->shape; }
  const Shape& sizes() const { return shape(); }
  int64_t size(int64_t dim) const;
  const Shape& strides() const { return checked()->strides; }
  int64_t stride(int64_t dim) const;
  int64_t offset() const { return checked()->offset; }
  int64_t dim() const { return static_cast<int64_t>(checked()->shape.size()); }
  int64_t numel() const { return shape_numel(checked()->shape); }
  DType dtype() const { return checked()->dtype; }
  Device device() const { return checked()->storage->device(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const;
  size_t element_size() const { return dtype_size(dtype()); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  const std::shared_ptr<Storage>& storage() const { return checked()->storage; }

  // Raw pointer to the first element (storage + offset). T must match the dtype.
  template <typename T> T* data_ptr() const;
  void* raw_data() const;

  // ---- element access (host copies; on CUDA these wait for the device) ----------------------
  double item() const;                      // the single value of a one-element tensor
  template <typename T> T item() const { return static_cast<T>(item()); }
  template <typename T> std::vector<T> to_vector() const;  // values in row-major order

  // ---- autograd ---------------------------------------------------------------------------
  bool requires_grad() const { return checked()->requires_grad; }
  // Marks a leaf as a parameter to differentiate; like tensor.requires_grad_() in PyTorch.
  Tensor& requires_grad_(bool r = true);
  bool is_leaf() const { return !checked()->grad_fn; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return checked()->grad_fn; }
  Tensor grad() const;           // undefined until a backward pass reaches this leaf
  void set_grad(const Tensor& g);
  void zero_grad(bool set_to_none = true);
  void retain_grad();            // keep .grad on a non-leaf tensor too
  // Reverse-mode differentiation from this tensor. Without `gradient` the tensor must hold a
  // single element (a loss). The graph is freed afterwards unless retain_graph is true.
  // create_graph records the backward pass too, so the .grad it leaves can be differentiated
  // again (higher-order gradients, docs/autograd.md); it keeps the graph (implies retain_graph).
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false,
                bool create_graph = false) const;
  // Same data, cut from the graph: the result does not require grad and has no grad_fn.
  Tensor detach() const;
  // Replaces this tensor's data (storage, layout, dtype) with src's, keeping its identity:
  // every handle to it — a Module's slot, an optimizer's list — sees the new data. Like
  // PyTorch's `param.data = src`; this is how Module::to(device) moves parameters in place.
  // Only for leaves; the .grad, if any, is converted along (dtype and device).
  void set_data(const Tensor& src) const;
  // Calls hook(*this) each time a backward pass has accumulated a gradient into this leaf's
  // .grad — after the += , so hook sees the complete .grad of this pass (plus whatever was
  // accumulated before: no zero_grad, no reset). Like PyTorch's
  // register_post_accumulate_grad_hook; DistributedDataParallel starts a gradient's all_reduce
  // from one. Hooks run on the thread that runs backward, in registration order; an exception
  // thrown by a hook leaves backward() with it. Only for leaves that require grad. Returns an
  // id for remove_post_accumulate_grad_hook.
  int64_t register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  // Removes a hook by the id registration returned; false when there is no such hook.
  bool remove_post_accumulate_grad_hook(int64_t id) const;
  int64_t version() const { return checked()->storage->version(); }
  void bump_version() const { checked()->storage->bump_version(); }

  // ---- views (share storage) --------------------------------------------------------------
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor permute(const Shape& dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(const Shape& shape) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  // Pieces along `dim`, as views (ember::split, ember::chunk: core/ops/split.cpp).
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor contiguous() const;
  Tensor clone() const;

  // ---- conversions ------------------------------------------------------------------------
  Tensor to(DType dtype) const;
  // A copy on `device` (this tensor when already there), differentiable like PyTorch's .to().
  // non_blocking: see copy_; to("cpu", true) from a GPU lands in pinned memory.
  Tensor to(Device device, bool non_blocking = false) const;
  // x.to("cuda:0"): a device string (a bare string would also fit TensorOptions).
  Tensor to(const char* device, bool non_blocking = false) const {
    return to(Device(device), non_blocking);
  }
  Tensor to(const TensorOptions& options) const;
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor cuda(int index = -1) const { return to(Device::cuda(index)); }
  // A copy in page-locked ("pinned") host memory, from which .to(cuda, non_blocking=true)
  // returns at once and the copy overlaps with the GPU's work (DataLoader's pin_memory).
  // Needs a CUDA build and a GPU; a tensor that is already pinned is returned as is.
  Tensor pin_memory() const;
  bool is_pinned() const;

  // ---- factories that keep dtype and device (seed 004: new_* and *_like) -------------------
  Tensor new_zeros(const Shape& shape) const;
  Tensor new_ones(const Shape& shape) const;
  Tensor new_full(const Shape& shape, double value) const;
  Tensor new_empty(const Shape& shape) const;
  Tensor new_tensor(const std::vector<double>& values, const Shape& shape) const;

  // ---- math (each forwards to the op card in core/ops/) -----------------------------------
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor pow(const Scalar& exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor cumsum(int64_t dim) const;
  // (values, indices) in order along dim (ember::sort, ember::topk: core/ops/sort.cpp).
  ValuesIndices sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  ValuesIndices topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor abs() const;
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor prod() const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  Tensor min(int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor ne(const Scalar& o) const;
  Tensor lt(const Scalar& o) const;
  Tensor le(const Scalar& o) const;
  Tensor gt(const Scalar& o) const;
  Tensor ge(const Scalar& o) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;

  // ---- in-place (core/ops/inplace.cpp; bump the version counter; allowed on tensors that
  //      need no grad, or under NoGradGuard — as optimizer steps are) -------------------------
  // The result is computed in the promoted dtype of this tensor and the operand and must fit
  // this tensor's dtype (an int64 tensor cannot take x.add_(0.5)). A tensor whose elements
  // share memory (an expand()ed view) cannot be written, and an operand that partly overlaps
  // this tensor's memory is refused: clone() it first. Full overlap (x.add_(x)) is fine.
  Tensor& zero_();
  Tensor& fill_(const Scalar& value);
  // Copies src's values (broadcast to this shape, converted to this dtype) from any device.
  // non_blocking: a host <-> GPU copy may return before it finishes when the host side is
  // pinned memory; otherwise (and for pageable memory) the copy has finished on return.
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& add_(const Scalar& value);
  Tensor& sub_(const Tensor& other, double alpha = 1.0);
  Tensor& sub_(const Scalar& value);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const Scalar& value);
  // rounding_mode: "" (true division), "trunc" or "floor", as div().
  Tensor& div_(const Tensor& other, const std::string& rounding_mode = "");
  Tensor& div_(const Scalar& value, const std::string& rounding_mode = "");

  std::string str() const;  // the PyTorch-like printout

 private:
  TensorImpl* checked() const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- factories ------------------------------------------------------------------------------
Tensor empty(const Shape& shape, const TensorOptions& options = {});
Tensor zeros(const Shape& shape, const TensorOptions& options = {});
Tensor ones(const Shape& shape, const TensorOptions& options = {});
Tensor full(const Shape& shape, double value, const TensorOptions& options = {});
Tensor scalar_tensor(double value, const TensorOptions& options = {});
// [start, end) with the given step; float32 by default, like torch.arange with float bounds.
Tensor arange(double end, const TensorOptions& options = {});
Tensor arange(double start, double end, double step = 1.0, const TensorOptions& options = {});
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options = {});
// The identity: ones on the main diagonal of an [n, m] matrix (m < 0: square), zeros elsewhere;
// float32 by default, like torch.eye and np.eye.
Tensor eye(int64_t n, int64_t m = -1, const TensorOptions& options = {});
// Uniform in [0, 1) and standard normal, from the global generator (see core/random.h).
Tensor rand(const Shape& shape, const TensorOptions& options = {});
Tensor randn(const Shape& shape, const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& options = kInt64);
Tensor randperm(int64_t n, const TensorOptions& options = kInt64);
// From values: the shape defaults to 1-d; the values are converted to options' dtype.
Tensor tensor(const std::vector<double>& values, const Shape& shape = {-1},
              const TensorOptions& options = {});
Tensor tensor(std::initializer_list<double> values, const TensorOptions& options = {});
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, const TensorOptions& options = {});

Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);

// Builds a tensor that views existing storage with a given layout (used by view ops).
Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset);

}  // namespace ember
