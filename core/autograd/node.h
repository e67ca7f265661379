// ember/core/autograd/node.h — the tape.
//
// Every differentiable op that sees an input with requires_grad records a Node: an object
// that remembers what the backward formula needs (SavedTensor) and where each input's
// gradient must go next (Edge). The output tensor points at its Node through grad_fn. Calling
// backward() walks these nodes from the loss back to the leaves (core/autograd/engine.cpp).
//
//   x (leaf) ──► AccumulateGrad                y = x * w    z = y.sum()
//   w (leaf) ──► AccumulateGrad ◄── MulBackward ◄── SumBackward ◄── z.backward()
//
// Leaves (tensors a user created with requires_grad) end in an AccumulateGrad node, which adds
// the arriving gradient into the leaf's .grad — with +=, so gradients accumulate across calls
// until zero_grad(), exactly as in PyTorch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember::autograd {

class Node;

// Where a gradient goes: input number `input_nr` of node `fn`. An empty edge means "this input
// needs no gradient".
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return static_cast<bool>(fn); }
};

// A tensor kept for backward. It holds a detached alias (same storage, no grad_fn: saving an
// op's own output therefore creates no reference cycle) and the storage version at save time.
// unpack() refuses to hand back data that an in-place op has changed since, because the
// gradient computed from it would be silently wrong.
//
// The rule (PyTorch's, the one users know): backward raises "modified by an in-place
// operation" exactly when a tensor that PyTorch's formula for the op saves was changed in
// place after the forward — whatever its layout, and only those tensors. So an op card saves
//   - what PyTorch saves, as the user's tensor: SavedTensor(t); when the kernels need a copy
//     of it (contiguous(), a cast), SavedTensor(copy, t), which reads the copy but checks t;
//   - a tensor PyTorch saves only to check it (gather's self, max_pool2d's input), saved
//     and unpacked all the same;
//   - nothing of an input PyTorch does not save: cross_entropy's logits (PyTorch saves the
//     log-softmax it computed) are a private copy, so changing logits afterwards is allowed.
// Intermediate results an op computes on the side (row statistics, indices) are its own and
// never change. docs/autograd.md lists what each op saves.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  // `data` is what the backward reads, a copy the op made of `source`; the version check
  // follows `source` too (the gradient edge stays data's own, as the one-argument form).
  SavedTensor(const Tensor& data, const Tensor& source);
  // `copy` is a private copy the op made of its input `input`, so `input` may change in place
  // afterwards (no version check follows it); under create_graph the copy comes back attached
  // to input's gradient edge, as if it were input (cross_entropy saves its logits so).
  static SavedTensor private_copy_of(const Tensor& copy, const Tensor& input);
  // The saved tensor. In a backward pass with create_graph (grad mode on) it comes back
  // attached to the graph again — to the edge of the input it was, or to `owner` when it is
  // owner's own output — so a gradient computed from it can itself be differentiated
  // (PyTorch's SavedVariable does the same). Otherwise it is the detached alias.
  Tensor unpack(const Node& owner, const char* what) const;
  bool defined() const { return data_.defined(); }
  // Would unpack() under create_graph return a tensor that requires grad?
  bool requires_grad(const Node& owner) const;
  void reset() {
    data_ = Tensor();
    source_ = Tensor();
    edge_ = Edge{};
  }

 private:
  Tensor data_;
  int64_t saved_version_ = 0;
  Tensor source_;  // the tensor `data_` was copied from, when it is another storage
  int64_t source_version_ = 0;
  // Where a gradient of the saved tensor goes, when it required grad at save time (an input of
  // the op that is a parameter or was computed from one). Used only under create_graph.
  Edge edge_;
};

// A description of one tensor a node saved for backward, kept for to_dot()
// (core/autograd/to_dot.h): `role` names it as one of the op's tensors ("input 0", "output"),
// or is empty for a tensor the op computed on the side (cross-entropy's softmax statistics).
struct SavedInfo {
  std::string role;
  Shape shape;
  DType dtype = DType::Float32;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // "MulBackward", shown by grad_fn printing and in error messages.
  virtual std::string name() const = 0;
  // Given dL/d(output), returns dL/d(input_i) for every input (one per next_edges entry).
  // Entries for inputs that need no gradient (needs_input_grad(i) == false) may be undefined.
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;
  // Drops saved tensors; called after a backward pass that did not ask to retain the graph.
  virtual void release_saved() {}

  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }

  std::vector<Edge> next_edges;     // one per input of the forward op
  std::vector<Shape> input_shapes;  // to check what backward returns
  std::vector<DType> input_dtypes;
  bool released = false;
  std::weak_ptr<TensorImpl> retained_output;  // set by Tensor::retain_grad()
  // What the op saved, described: every SavedTensor made between the node's construction and
  // connect() (the order every op follows), filled in by connect(). Never used by backward.
  std::vector<SavedInfo> saved;
  // Is `t` this node's output (same storage, offset and shape)? Set up by connect(); lets a
  // saved output re-attach to its node under create_graph (SavedTensor::unpack).
  bool produced(const Tensor& t) const;

  static int64_t live_count();

 private:
  friend void connect_inputs(const std::shared_ptr<Node>&, const Tensor&, const Tensor* const*,
                             size_t);
  const Storage* output_storage_ = nullptr;
  int64_t output_offset_ = 0;
  Shape output_shape_;
};

// The sink of a leaf: adds arriving gradients into the leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> variable) : variable_(std::move(variable)) {}
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> backward(const Tensor& grad_output) override;
  const std::shared_ptr<TensorImpl>& variable() const { return variable_; }  // the leaf

 private:
  std::shared_ptr<TensorImpl> variable_;
};

// Does any of these tensors need a gradient while the tape is recording?
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
inline bool any_requires_grad(const std::vector<Tensor>& inputs) {
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}
bool grad_needed(
    std::initializer_list<const Tensor*> inputs);  // is_grad_enabled() && any_requires_grad

// The edge to follow for a gradient of `t`: its grad_fn, or its leaf accumulator, or none.
Edge gradient_edge(const Tensor& t);

// Wires `node` into the tape: one edge per input, and `output` gets grad_fn = node.
// Call only when grad_needed(...) is true. (The list form is what an op card writes,
// connect(node, out, {&a, &b}); the vector form is for a variable number of inputs.)
void connect(const std::shared_ptr<Node>& node, const Tensor& output,
             std::initializer_list<const Tensor*> inputs);
void connect(const std::shared_ptr<Node>& node, const Tensor& output,
             const std::vector<const Tensor*>& inputs);

// Called first by a backward formula that calls kernels directly (so it records no tape): in a
// backward pass with create_graph, when the gradient it would return depends on something that
// requires grad (grad_output, or one of `saved`), it throws an AutogradError naming `op`
// ("max_pool2d's backward is not differentiable twice in ember yet; ...") instead of returning a
// gradient without a graph — a silently wrong second derivative.
void check_twice_differentiable(const Node& node, const char* op, const Tensor& grad_output,
                                std::initializer_list<const SavedTensor*> saved = {});

// Runs the backward pass (core/autograd/engine.cpp). With create_graph the backward formulas run
// with grad mode on, so the gradients are recorded on the tape too and can be differentiated
// again; the graph is then kept as if retain_graph were set.
void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph,
                  bool create_graph = false);

// torch.autograd.grad: the gradients of `outputs` with respect to `inputs`, returned (one per
// input, in order) instead of accumulated into any .grad — no leaf's .grad changes.
//   outputs       the tensors to differentiate; each needs a grad_output, which may be left out
//                 (grad_outputs empty, or an undefined entry) only for a one-element output.
//   grad_outputs  dL/d(output) for each output (the vector of a vector-Jacobian product).
//   retain_graph  keep the saved tensors for another pass (implied by create_graph).
//   create_graph  record the backward pass, so the gradients can be differentiated again.
//   allow_unused  an input the outputs do not depend on gets an undefined Tensor; without it,
//                 such an input is an error (as in PyTorch).
// Errors (AutogradError): an output or an input that does not require grad, a non-scalar output
// without its grad_output, an unused input without allow_unused.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false);

}  // namespace ember::autograd
