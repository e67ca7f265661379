#include "core/autograd/node.h"

#include <atomic>

#include "core/autograd/grad_mode.h"
#include "core/ops.h"

namespace ember::autograd {

namespace {
std::atomic<int64_t> g_live_nodes{0};

// The nodes being built on this thread: constructed, not yet connect()ed. Every op makes its
// node, saves tensors into it, then connects it, so a SavedTensor made in between belongs to the
// innermost node being built (an op whose forward runs another op nests them). Only a
// description is kept, for Node::saved; the storage pointer just tells connect() whether the
// saved tensor is one of the op's inputs or its output. Two flat lists that keep their capacity
// from op to op: a training step builds dozens of nodes, and this bookkeeping should cost them
// no allocation beyond the description's own shape.
struct Pending {
  const Node* owner;
  const Storage* storage;
  int64_t offset;
  SavedInfo info;
};
thread_local std::vector<const Node*> t_building;  // innermost last
thread_local std::vector<Pending> t_pending;       // in the order they were saved

// Takes `node` off the list; what it saved moves into `taken` (when given), in order, and
// leaves t_pending.
void stop_building(const Node* node, std::vector<Pending>* taken) {
  for (auto it = t_building.rbegin(); it != t_building.rend(); ++it) {
    if (*it != node) continue;
    t_building.erase(std::next(it).base());
    break;
  }
  size_t kept = 0;
  for (size_t i = 0; i < t_pending.size(); ++i) {
    if (t_pending[i].owner == node) {
      if (taken) taken->push_back(std::move(t_pending[i]));
    } else {
      if (kept != i) t_pending[kept] = std::move(t_pending[i]);
      ++kept;
    }
  }
  t_pending.resize(kept);
}

bool same_tensor(const Pending& p, const Tensor& t) {
  return t.defined() && t.storage().get() == p.storage && t.offset() == p.offset &&
         t.shape() == p.info.shape && t.dtype() == p.info.dtype;
}
}  // namespace

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  data_ = t.detach();
  saved_version_ = t.version();
  // An input that requires grad: remember where its gradient goes, for create_graph. (The op's
  // own output does not require grad yet — connect() comes after — and is found by produced().)
  if (t.requires_grad()) edge_ = gradient_edge(t);
  if (!t_building.empty())
    t_pending.push_back(
        {t_building.back(), t.storage().get(), t.offset(), {"", t.shape(), t.dtype()}});
}

SavedTensor::SavedTensor(const Tensor& data, const Tensor& source) : SavedTensor(data) {
  if (!data.defined() || !source.defined() || source.storage() == data.storage()) return;
  source_ = source.detach();
  source_version_ = source.version();
}

SavedTensor SavedTensor::private_copy_of(const Tensor& copy, const Tensor& input) {
  SavedTensor s(copy);
  if (copy.defined() && input.defined() && input.requires_grad()) s.edge_ = gradient_edge(input);
  return s;
}

Tensor SavedTensor::unpack(const Node& owner, const char* what) const {
  if (owner.released) {
    throw AutogradError(
        "backward through " + owner.name() +
        " a second time: its saved tensors were freed after the first backward(). Pass "
        "retain_graph=true to the first backward() if you need to go through the graph again, "
        "or run the forward pass again");
  }
  const bool source_changed = source_.defined() && source_.version() != source_version_;
  if ((data_.defined() && data_.version() != saved_version_) || source_changed) {
    const Tensor& changed = source_changed ? source_ : data_;
    throw AutogradError(detail::concat(
        "a tensor that ", owner.name(), " saved for backward (", what, ", shape ",
        shape_str(changed.shape()), ") was modified by an in-place operation: it was at version ",
        source_changed ? source_version_ : saved_version_, " and is now at version ",
        changed.version(),
        ". Use an out-of-place op (x = x + y instead of x.add_(y)) or clone() the tensor first"));
  }
  // create_graph: hand back an alias that is attached to the graph again, so that what the
  // backward formula computes from it is recorded with a path back to the inputs.
  if (is_grad_enabled() && data_.defined()) {
    std::shared_ptr<Node> fn;
    uint32_t nr = 0;
    if (edge_.valid()) {
      fn = edge_.fn;  // an input: its grad_fn, or a leaf's AccumulateGrad
      nr = edge_.input_nr;
    } else if (owner.produced(data_)) {
      fn = std::const_pointer_cast<Node>(owner.shared_from_this());  // owner's own output
    }
    if (fn) {
      Tensor attached = data_.detach();
      attached.impl()->grad_fn = std::move(fn);
      attached.impl()->output_nr = nr;
      attached.impl()->requires_grad = true;
      return attached;
    }
  }
  return data_;
}

bool SavedTensor::requires_grad(const Node& owner) const {
  return data_.defined() && (edge_.valid() || owner.produced(data_));
}

bool Node::produced(const Tensor& t) const {
  return output_storage_ && t.defined() && t.storage().get() == output_storage_ &&
         t.offset() == output_offset_ && t.shape() == output_shape_;
}

void check_twice_differentiable(const Node& node, const char* op, const Tensor& grad_output,
                                std::initializer_list<const SavedTensor*> saved) {
  if (!is_grad_enabled()) return;  // an ordinary backward pass (no create_graph)
  bool depends = grad_output.defined() && grad_output.requires_grad();
  for (const SavedTensor* s : saved) depends = depends || (s && s->requires_grad(node));
  if (!depends) return;  // the gradient is a constant of the graph: nothing to record
  throw AutogradError(detail::concat(
      op, "'s backward is not differentiable twice in ember yet; ", node.name(),
      " computes its gradient with a kernel and records no graph, so create_graph=true cannot "
      "give a second derivative through it. Keep ",
      op,
      " out of the part you differentiate twice, or write it with differentiable ops "
      "(core/registry.cpp's twice_differentiable() lists the ops that support create_graph)"));
}

Node::Node() {
  ++g_live_nodes;
  t_building.push_back(this);
}

// A long chain of nodes (y = f(f(f(...x)))) would be destroyed recursively: each node's last
// reference to its predecessor dies inside its own destructor. 100k nodes would overflow the
// stack. So the outermost destructor takes over: inner destructors only hand their edges to a
// per-thread list, and the outermost one drains that list in a loop.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>> pending;
  thread_local bool draining = false;
  --g_live_nodes;
  if (!t_building.empty()) stop_building(this, nullptr);  // made, never connected (an op threw)
  for (auto& e : next_edges)
    if (e.fn) pending.push_back(std::move(e.fn));
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    n.reset();  // may run ~Node, which only appends to `pending`
  }
  draining = false;
}

int64_t Node::live_count() { return g_live_nodes.load(); }

namespace {
// A leaf's first .grad is a row-major copy. PyTorch lays a leaf's gradient out like the leaf
// (its "layout contract"); ember's leaves are row-major, and the fused optimizer kernels read
// .grad as one flat buffer. clone() alone keeps a transposed gradient transposed.
Tensor row_major_copy(const Tensor& g) { return g.is_contiguous() ? g.clone() : g.contiguous(); }
}  // namespace

std::vector<Tensor> AccumulateGrad::backward(const Tensor& grad_output) {
  TensorImpl* v = variable_.get();
  if (is_grad_enabled()) {
    // create_graph: .grad keeps its graph (out of place, as PyTorch does), so that a gradient
    // penalty or a Hessian-vector product can differentiate it again.
    v->grad = v->grad ? add(Tensor(v->grad), grad_output).impl_ptr()
                      : row_major_copy(grad_output).impl_ptr();
  } else if (!v->grad) {
    // Keep the incoming buffer when nobody else can see it; otherwise copy, so that a later
    // in-place accumulation cannot write into someone else's tensor.
    const bool exclusive = grad_output.impl_ptr().use_count() == 1 &&
                           grad_output.storage().use_count() == 1 && grad_output.is_contiguous() &&
                           grad_output.offset() == 0;
    v->grad = exclusive ? grad_output.detach().impl_ptr()
                        : row_major_copy(grad_output).detach().impl_ptr();
  } else {
    Tensor(v->grad).add_(grad_output);
  }
  // Post-accumulate hooks (Tensor::register_post_accumulate_grad_hook), on a copy of the list:
  // a hook may register or remove hooks.
  if (!v->post_accumulate_grad_hooks.empty()) {
    const auto hooks = v->post_accumulate_grad_hooks;
    const Tensor param(variable_);
    for (const auto& entry : hooks) entry.second(param);
  }
  return {};
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool grad_needed(std::initializer_list<const Tensor*> inputs) {
  return is_grad_enabled() && any_requires_grad(inputs);
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  TensorImpl* impl = t.impl();
  if (impl->grad_fn) return {impl->grad_fn, impl->output_nr};
  std::shared_ptr<Node> acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    stop_building(acc.get(), nullptr);  // a leaf's sink saves nothing
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

void connect_inputs(const std::shared_ptr<Node>& node, const Tensor& output,
                    const Tensor* const* inputs, size_t n_inputs) {
  node->next_edges.reserve(n_inputs);
  node->input_shapes.reserve(n_inputs);
  node->input_dtypes.reserve(n_inputs);
  for (size_t k = 0; k < n_inputs; ++k) {
    const Tensor* t = inputs[k];
    node->next_edges.push_back(t ? gradient_edge(*t) : Edge{});
    node->input_shapes.push_back(t && t->defined() ? t->shape() : Shape{});
    node->input_dtypes.push_back(t && t->defined() ? t->dtype() : DType::Float32);
  }
  thread_local std::vector<Pending> taken;  // keeps its capacity from node to node
  taken.clear();
  stop_building(node.get(), &taken);
  if (!taken.empty()) node->saved.reserve(taken.size());
  for (Pending& p : taken) {
    for (size_t i = 0; i < n_inputs && p.info.role.empty(); ++i)
      if (inputs[i] && same_tensor(p, *inputs[i])) p.info.role = "input " + std::to_string(i);
    if (p.info.role.empty() && same_tensor(p, output)) p.info.role = "output";
    node->saved.push_back(std::move(p.info));
  }
  node->output_storage_ = output.storage().get();
  node->output_offset_ = output.offset();
  node->output_shape_ = output.shape();
  TensorImpl* out = output.impl();
  out->grad_fn = node;
  out->output_nr = 0;
  out->requires_grad = true;
}

void connect(const std::shared_ptr<Node>& node, const Tensor& output,
             std::initializer_list<const Tensor*> inputs) {
  connect_inputs(node, output, inputs.begin(), inputs.size());
}

void connect(const std::shared_ptr<Node>& node, const Tensor& output,
             const std::vector<const Tensor*>& inputs) {
  connect_inputs(node, output, inputs.data(), inputs.size());
}

}  // namespace ember::autograd
