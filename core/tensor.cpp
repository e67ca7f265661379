// ember/core/tensor.cpp — Tensor's own members: layout queries, element access, autograd
// state, conversions and the factories. Ops live in core/ops/ (the in-place updates in
// core/ops/inplace.cpp).
#include "core/tensor.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/backend.h"
#include "core/cuda.h"
#include "core/ops.h"
#include "core/random.h"
#include "kernels/base/philox.h"
#include "kernels/elementwise.h"
#include "kernels/random.h"

namespace ember {

namespace {
std::atomic<int64_t> g_live_impls{0};
}  // namespace

TensorImpl::TensorImpl() { ++g_live_impls; }
TensorImpl::~TensorImpl() { --g_live_impls; }
int64_t TensorImpl::live_count() { return g_live_impls.load(); }

TensorImpl* Tensor::checked() const {
  if (!impl_) {
    throw ValueError(
        "this tensor is undefined (default-constructed, or a .grad() that no backward pass has "
        "filled yet): check t.defined() first");
  }
  return impl_.get();
}

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

bool Tensor::is_contiguous() const {
  const TensorImpl* t = checked();
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(t->shape.size()) - 1; d >= 0; --d) {
    if (t->shape[d] == 1) continue;
    if (t->strides[d] != expected) return false;
    expected *= t->shape[d];
  }
  return true;
}

void* Tensor::raw_data() const {
  const TensorImpl* t = checked();
  return static_cast<char*>(t->storage->data()) + t->offset * static_cast<int64_t>(dtype_size(t->dtype));
}

template <typename T>
T* Tensor::data_ptr() const {
  EMBER_CHECK(dtype() == dtype_of<T>::value, "data_ptr: tensor is ", dtype(), " but ",
              dtype_of<T>::value, " was asked for");
  return static_cast<T*>(raw_data());
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template int32_t* Tensor::data_ptr<int32_t>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;
template bool* Tensor::data_ptr<bool>() const;

double Tensor::item() const {
  EMBER_CHECK(numel() == 1, "item: only a tensor with one element can be converted to a number, "
              "this one has shape ", shape_str(shape()));
  const Tensor host = device().is_cpu() ? *this : cpu();
  return EMBER_DISPATCH_ALL(dtype(), "item", [&] {
    return static_cast<double>(*static_cast<const scalar_t*>(host.raw_data()));
  });
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = device().is_cpu() ? *this : cpu();
  host = host.to(dtype_of<T>::value).contiguous();
  std::vector<T> out(static_cast<size_t>(host.numel()));
  if (!out.empty()) std::memcpy(out.data(), host.raw_data(), out.size() * sizeof(T));
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

// ---- autograd -------------------------------------------------------------------------------

Tensor& Tensor::requires_grad_(bool r) {
  TensorImpl* t = checked();
  if (!r && t->grad_fn) {
    throw AutogradError("requires_grad_(false) on a tensor computed by an op (grad_fn=" +
                        t->grad_fn->name() + "): use detach() to get a copy cut from the graph");
  }
  if (r && !is_floating(t->dtype)) {
    throw ValueError(std::string("requires_grad_: only float tensors can require gradients, this one is ") +
                     dtype_name(t->dtype));
  }
  t->requires_grad = r;
  return *this;
}

Tensor Tensor::grad() const { return Tensor(checked()->grad); }

void Tensor::set_grad(const Tensor& g) {
  // PyTorch refuses a .grad of another dtype, shape or device ("assigned grad has data of a
  // different type"): accumulation and the optimizers would carry the mismatch along.
  if (g.defined()) {
    EMBER_CHECK(g.shape() == shape(), "set_grad: gradient shape ", shape_str(g.shape()),
                " does not match the tensor's shape ", shape_str(shape()));
    EMBER_CHECK(g.dtype() == dtype(), "set_grad: the gradient is ", g.dtype(),
                " but the tensor is ", dtype(), ": convert it first, set_grad(grad.to(", dtype(),
                "))");
    EMBER_CHECK_T(DeviceError, g.device() == device(), "set_grad: the gradient is on ", g.device(),
                  " but the tensor is on ", device(), ": move it first, set_grad(grad.to(",
                  device(), "))");
  }
  checked()->grad = g.impl_ptr();
}

void Tensor::zero_grad(bool set_to_none) {
  TensorImpl* t = checked();
  if (!t->grad) return;
  if (set_to_none) {
    t->grad.reset();
  } else {
    Tensor(t->grad).zero_();
  }
}

int64_t Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  static std::atomic<int64_t> next_id{1};
  TensorImpl* t = checked();
  EMBER_CHECK_T(AutogradError, !t->grad_fn, "register_post_accumulate_grad_hook: only leaf tensors "
                "accumulate gradients, this one was computed by ", t->grad_fn ? t->grad_fn->name() : "",
                ": register the hook on the parameter it was computed from");
  EMBER_CHECK_T(AutogradError, t->requires_grad, "register_post_accumulate_grad_hook: the tensor "
                "does not require grad, so no gradient will ever be accumulated into it: call "
                "requires_grad_() first");
  EMBER_CHECK(static_cast<bool>(hook), "register_post_accumulate_grad_hook: the hook is empty");
  const int64_t id = next_id++;
  t->post_accumulate_grad_hooks.emplace_back(id, std::move(hook));
  return id;
}

bool Tensor::remove_post_accumulate_grad_hook(int64_t id) const {
  auto& hooks = checked()->post_accumulate_grad_hooks;
  for (auto it = hooks.begin(); it != hooks.end(); ++it) {
    if (it->first == id) {
      hooks.erase(it);
      return true;
    }
  }
  return false;
}

void Tensor::retain_grad() {
  TensorImpl* t = checked();
  EMBER_CHECK_T(AutogradError, t->requires_grad, "retain_grad: the tensor does not require grad");
  if (!t->grad_fn) return;  // leaves keep their grad anyway
  t->retains_grad = true;
  t->grad_fn->retained_output = impl_;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  autograd::run_backward(*this, gradient, retain_graph, create_graph);
}

void Tensor::set_data(const Tensor& src) const {
  TensorImpl* t = checked();
  EMBER_CHECK_T(AutogradError, !t->grad_fn, "set_data: only leaf tensors can have their data "
                "replaced (this one has grad_fn=", t->grad_fn ? t->grad_fn->name() : "", ")");
  EMBER_CHECK(src.defined(), "set_data: the source tensor is undefined");
  EMBER_CHECK(!t->requires_grad || is_floating(src.dtype()), "set_data: a tensor that requires "
              "grad must keep a float dtype, not ", src.dtype());
  const TensorImpl* s = src.impl();
  t->storage = s->storage;
  t->shape = s->shape;
  t->strides = s->strides;
  t->offset = s->offset;
  t->dtype = s->dtype;
  t->grad_accumulator.reset();  // a graph built before refers to the old data
  if (t->grad) {
    const Tensor g(t->grad);
    t->grad = g.to(src.dtype()).to(src.device()).impl_ptr();
  }
}

Tensor Tensor::detach() const {
  const TensorImpl* t = checked();
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t->storage;
  impl->shape = t->shape;
  impl->strides = t->strides;
  impl->offset = t->offset;
  impl->dtype = t->dtype;
  return Tensor(std::move(impl));
}

// ---- views and copies: the differentiable versions live in core/ops/view_ops.cpp -----------

Tensor Tensor::view(const Shape& s) const { return ember::view(*this, s); }
Tensor Tensor::reshape(const Shape& s) const { return ember::reshape(*this, s); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  const int64_t nd = dim();
  if (nd == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, nd, "flatten");
  end_dim = wrap_dim(end_dim, nd, "flatten");
  EMBER_CHECK(start_dim <= end_dim, "flatten: start_dim ", start_dim, " is after end_dim ", end_dim);
  Shape s(shape().begin(), shape().begin() + start_dim);
  int64_t mid = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) mid *= shape()[d];
  s.push_back(mid);
  s.insert(s.end(), shape().begin() + end_dim + 1, shape().end());
  return reshape(s);
}
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return ember::transpose(*this, d0, d1); }
Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, "t: expects a tensor with at most 2 dimensions, got ", shape_str(shape()),
              "; use transpose(dim0, dim1)");
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::permute(const Shape& dims) const { return ember::permute(*this, dims); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  return ember::split(*this, split_size, d);
}
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t d) const {
  return ember::split(*this, sizes, d);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  return ember::chunk(*this, chunks, d);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return ember::narrow(*this, d, start, length);
}
Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  return ember::slice(*this, d, start, end, step);
}
Tensor Tensor::select(int64_t d, int64_t index) const { return ember::select(*this, d, index); }
Tensor Tensor::squeeze() const {
  Tensor r = *this;
  for (int64_t d = dim() - 1; d >= 0; --d)
    if (shape()[d] == 1) r = ember::squeeze(r, d);
  return r;
}
Tensor Tensor::squeeze(int64_t d) const { return ember::squeeze(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return ember::unsqueeze(*this, d); }
Tensor Tensor::expand(const Shape& s) const { return ember::expand(*this, s); }
Tensor Tensor::contiguous() const { return is_contiguous() ? *this : ember::contiguous(*this); }
Tensor Tensor::clone() const { return ember::clone(*this); }

Tensor Tensor::to(DType dt) const { return dt == dtype() ? *this : to_dtype(*this, dt); }

Tensor Tensor::to(Device d, bool non_blocking) const { return to_device(*this, d, non_blocking); }

Tensor Tensor::pin_memory() const {
  EMBER_CHECK_T(DeviceError, device().is_cpu(), "pin_memory: only host (cpu) tensors can be "
                "pinned, this one is on ", device());
  if (is_pinned()) return *this;
  NoGradGuard no_grad;
  Tensor out = empty(shape(), TensorOptions(dtype()).device(Device::cpu()).pinned_memory());
  out.copy_(*this);
  if (requires_grad()) out.requires_grad_(true);
  return out;
}

bool Tensor::is_pinned() const { return storage()->pinned(); }

Tensor Tensor::to(const TensorOptions& o) const { return to(o.dtype_).to(o.device_); }

// ---- new_* keep dtype and device ------------------------------------------------------------

Tensor Tensor::new_zeros(const Shape& s) const { return zeros(s, options()); }
Tensor Tensor::new_ones(const Shape& s) const { return ones(s, options()); }
Tensor Tensor::new_full(const Shape& s, double v) const { return full(s, v, options()); }
Tensor Tensor::new_empty(const Shape& s) const { return empty(s, options()); }
Tensor Tensor::new_tensor(const std::vector<double>& values, const Shape& s) const {
  return tensor(values, s, options());
}

// ---- math methods ---------------------------------------------------------------------------

Tensor Tensor::neg() const { return ember::neg(*this); }
Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::pow(const Scalar& e) const { return ember::pow(*this, e); }
Tensor Tensor::pow(const Tensor& e) const { return ember::pow(*this, e); }
Tensor Tensor::fmod(const Tensor& o) const { return ember::fmod(*this, o); }
Tensor Tensor::fmod(const Scalar& o) const { return ember::fmod(*this, o); }
Tensor Tensor::remainder(const Tensor& o) const { return ember::remainder(*this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return ember::remainder(*this, o); }
Tensor Tensor::cumsum(int64_t d) const { return ember::cumsum(*this, d); }
ValuesIndices Tensor::sort(int64_t d, bool descending, bool stable) const {
  return ember::sort(*this, d, descending, stable);
}
ValuesIndices Tensor::topk(int64_t k, int64_t d, bool largest, bool sorted) const {
  return ember::topk(*this, k, d, largest, sorted);
}
Tensor Tensor::relu() const { return ember::relu(*this); }
Tensor Tensor::sigmoid() const { return ember::sigmoid(*this); }
Tensor Tensor::tanh() const { return ember::tanh(*this); }
Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::sum() const { return ember::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return ember::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return ember::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return ember::mean(*this, dims, keepdim); }
Tensor Tensor::prod() const { return ember::prod(*this); }
Tensor Tensor::prod(int64_t d, bool keepdim) const { return ember::prod(*this, d, keepdim); }
Tensor Tensor::max() const { return ember::max(*this); }
Tensor Tensor::max(int64_t d, bool keepdim) const { return ember::max(*this, d, keepdim).values; }
Tensor Tensor::min() const { return ember::min(*this); }
Tensor Tensor::min(int64_t d, bool keepdim) const { return ember::min(*this, d, keepdim).values; }
Tensor Tensor::argmax() const { return ember::argmax(*this); }
Tensor Tensor::argmax(int64_t d, bool keepdim) const { return ember::argmax(*this, d, keepdim); }
Tensor Tensor::argmin(int64_t d, bool keepdim) const { return ember::argmin(*this, d, keepdim); }
Tensor Tensor::matmul(const Tensor& o) const { return ember::matmul(*this, o); }
Tensor Tensor::softmax(int64_t d) const { return ember::softmax(*this, d); }
Tensor Tensor::log_softmax(int64_t d) const { return ember::log_softmax(*this, d); }
Tensor Tensor::eq(const Tensor& o) const { return ember::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return ember::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return ember::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return ember::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return ember::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return ember::ge(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return ember::eq(*this, o); }
Tensor Tensor::ne(const Scalar& o) const { return ember::ne(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return ember::lt(*this, o); }
Tensor Tensor::le(const Scalar& o) const { return ember::le(*this, o); }
Tensor Tensor::gt(const Scalar& o) const { return ember::gt(*this, o); }
Tensor Tensor::ge(const Scalar& o) const { return ember::ge(*this, o); }
Tensor Tensor::masked_fill(const Tensor& m, const Scalar& v) const { return ember::masked_fill(*this, m, v); }
Tensor Tensor::gather(int64_t d, const Tensor& i) const { return ember::gather(*this, d, i); }
Tensor Tensor::index_select(int64_t d, const Tensor& i) const { return ember::index_select(*this, d, i); }

// ---- factories ------------------------------------------------------------------------------

Tensor empty(const Shape& shape, const TensorOptions& o) {
  for (int64_t s : shape) {
    EMBER_CHECK(s >= 0, "empty: negative dimension ", s, " in shape ", shape_str(shape));
  }
  EMBER_CHECK(!o.requires_grad_ || is_floating(o.dtype_),
              "requires_grad: only float tensors can require gradients, not ", o.dtype_);
  EMBER_CHECK_T(DeviceError, !o.pinned_ || o.device_.is_cpu(), "pinned_memory: pinned memory is "
                "host memory, but the options ask for ", o.device_);
  auto impl = std::make_shared<TensorImpl>();
  // The Storage resolves "cuda" to the current device and checks the index.
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(o.dtype_),
                                            o.device_, o.pinned_);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = o.dtype_;
  impl->requires_grad = o.requires_grad_;
  return Tensor(std::move(impl));
}

Tensor full(const Shape& shape, double value, const TensorOptions& o) {
  TensorOptions no_grad = o;
  no_grad.requires_grad_ = false;
  Tensor t = empty(shape, no_grad);
  if (t.device().is_cpu() && value == 0.0) {
    std::memset(t.raw_data(), 0, static_cast<size_t>(t.numel()) * t.element_size());
  } else {
    t.fill_(value);
  }
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}

Tensor zeros(const Shape& shape, const TensorOptions& o) { return full(shape, 0.0, o); }
Tensor ones(const Shape& shape, const TensorOptions& o) { return full(shape, 1.0, o); }
Tensor scalar_tensor(double value, const TensorOptions& o) { return full({}, value, o); }

Tensor arange(double end, const TensorOptions& o) { return arange(0.0, end, 1.0, o); }

Tensor arange(double start, double end, double step, const TensorOptions& o) {
  EMBER_CHECK(step != 0.0, "arange: step must be nonzero");
  EMBER_CHECK((end - start) / step >= 0, "arange: the range [", start, ", ", end,
              ") is empty or runs against step ", step);
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  // Computed where it will live (in place on a GPU: no host staging).
  TensorOptions no_grad = o;
  no_grad.requires_grad_ = false;
  Tensor t = empty({n}, no_grad);
  KernelsOn(t)->elementwise.arange(t.dtype(), t.raw_data(), n, start, step);
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}

Tensor linspace(double start, double end, int64_t steps, const TensorOptions& o) {
  EMBER_CHECK(steps >= 0, "linspace: steps must be non-negative, got ", steps);
  std::vector<double> v(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i)
    v[static_cast<size_t>(i)] = steps == 1 ? start : start + (end - start) * static_cast<double>(i) / static_cast<double>(steps - 1);
  return tensor(v, {steps}, o);
}

Tensor eye(int64_t n, int64_t m, const TensorOptions& o) {
  if (m < 0) m = n;
  EMBER_CHECK(n >= 0, "eye: n must be non-negative, got ", n);
  std::vector<double> v(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) v[static_cast<size_t>(i * m + i)] = 1.0;
  return tensor(v, {n, m}, o);
}

namespace {
// Random factories fill the tensor where it lives: element i takes counter (offset + i) of the
// generator's Philox stream on either device, so a seed gives the same numbers on CPU and GPU.
template <typename Fill>
Tensor random_tensor(const Shape& shape, const TensorOptions& o, const Fill& fill) {
  TensorOptions no_grad = o;
  no_grad.requires_grad_ = false;
  Tensor t = empty(shape, no_grad);
  Generator& g = default_generator();
  const uint64_t seed = g.seed(), offset = g.advance(static_cast<uint64_t>(t.numel()));
  fill(KernelsOn(t)->random, t, seed, offset);
  if (o.requires_grad_) t.requires_grad_(true);
  return t;
}
}  // namespace

Tensor rand(const Shape& shape, const TensorOptions& o) {
  return random_tensor(shape, o,
                       [](const kernels::RandomKernels& k, Tensor& t, uint64_t seed, uint64_t off) {
                         k.uniform(t.dtype(), t.raw_data(), t.numel(), seed, off, 0.0, 1.0);
                       });
}

Tensor randn(const Shape& shape, const TensorOptions& o) {
  return random_tensor(shape, o,
                       [](const kernels::RandomKernels& k, Tensor& t, uint64_t seed, uint64_t off) {
                         k.normal(t.dtype(), t.raw_data(), t.numel(), seed, off, 0.0, 1.0);
                       });
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& o) {
  EMBER_CHECK(high > low, "randint: high (", high, ") must be greater than low (", low, ")");
  TensorOptions as_int64 = o;
  as_int64.dtype_ = kInt64;
  as_int64.requires_grad_ = false;
  Tensor t =
      random_tensor(shape, as_int64,
                    [&](const kernels::RandomKernels& k, Tensor& x, uint64_t seed, uint64_t off) {
                      k.randint(x.data_ptr<int64_t>(), x.numel(), seed, off, low, high);
                    });
  return t.to(o.dtype_);
}

// Fisher-Yates driven by Philox: the swap partner of position i comes from counter offset + i.
Tensor randperm(int64_t n, const TensorOptions& o) {
  EMBER_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  Tensor t = empty({n}, TensorOptions(kInt64).device(Device::cpu()));  // filled on the host
  int64_t* p = t.data_ptr<int64_t>();
  std::iota(p, p + n, int64_t{0});
  Generator& g = default_generator();
  const uint64_t seed = g.seed(), off = g.advance(static_cast<uint64_t>(n));
  for (int64_t i = n - 1; i > 0; --i) {
    const kernels::Philox4 r = kernels::philox4x32(seed, off + static_cast<uint64_t>(i), 0);
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    std::swap(p[i], p[bits % static_cast<uint64_t>(i + 1)]);
  }
  return t.to(o.dtype_).to(o.device_);
}

Tensor tensor(const std::vector<double>& values, const Shape& shape, const TensorOptions& o) {
  const Shape s = infer_size(shape, static_cast<int64_t>(values.size()), "tensor");
  return from_vector<double>(values, s, o);
}

Tensor tensor(std::initializer_list<double> values, const TensorOptions& o) {
  return tensor(std::vector<double>(values), {static_cast<int64_t>(values.size())}, o);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, const TensorOptions& o) {
  EMBER_CHECK(shape_numel(shape) == static_cast<int64_t>(values.size()), "from_vector: ",
              values.size(), " values do not fill shape ", shape_str(shape), " (",
              shape_numel(shape), " elements)");
  // Staged on the host whatever the default device is, then moved where the options say.
  Tensor src = empty(shape, TensorOptions(dtype_of<T>::value).device(Device::cpu()));
  if (!values.empty()) std::memcpy(src.raw_data(), values.data(), values.size() * sizeof(T));
  Tensor r = src.to(o.dtype_).to(o.device_);
  if (o.requires_grad_) r.requires_grad_(true);
  return r;
}
template Tensor from_vector<float>(const std::vector<float>&, const Shape&, const TensorOptions&);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&, const TensorOptions&);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, const Shape&, const TensorOptions&);
template Tensor from_vector<int32_t>(const std::vector<int32_t>&, const Shape&,
                                     const TensorOptions&);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, const Shape&, const TensorOptions&);

Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.options()); }
Tensor full_like(const Tensor& t, double v) { return full(t.shape(), v, t.options()); }
Tensor rand_like(const Tensor& t) { return rand(t.shape(), t.options()); }
Tensor randn_like(const Tensor& t) { return randn(t.shape(), t.options()); }

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

}  // namespace ember
