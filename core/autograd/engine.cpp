// ember/core/autograd/engine.cpp — the backward pass.
//
// 1. Collect every node reachable from the root's grad_fn with an explicit stack (no recursion:
//    a 100k-op chain must not overflow) and count, for each node, how many edges point at it.
// 2. Process nodes in topological order (Kahn's algorithm): a node runs only when every node
//    that feeds it a gradient has run, so its incoming gradient is complete. Gradients arriving
//    over several edges are summed — that is the `+=` of the chain rule when a tensor is used
//    more than once.
//    Every gradient is converted to its input's dtype on the way (ops promote mixed dtypes).
// 3. Unless retain_graph, each node drops its saved tensors right after it ran; a second
//    backward through it then fails with a clear message instead of reading freed data.
//
// One walk serves two callers. Tensor::backward() (run_backward) runs every node and the leaves'
// AccumulateGrad nodes add into .grad. autograd::grad() names the tensors it wants gradients for:
// the walk then captures the gradient arriving at each of them, runs only the nodes that lead to
// one, and never runs an AccumulateGrad — no .grad changes. With create_graph the backward
// formulas run with grad mode on, so every gradient is itself recorded on the tape.
#include <string>
#include <unordered_map>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops.h"
#include "core/profile.h"

namespace ember::autograd {

namespace {

// A starting point of the walk: a node and the gradient of the tensor it produced.
struct Root {
  Edge edge;
  Tensor grad;
};

// The walk. `targets` empty: backward() mode (run everything). Otherwise grad() mode: returns,
// for every target node that received a gradient, the sum of what arrived.
std::unordered_map<Node*, Tensor> execute(const std::vector<Root>& roots, bool retain_graph,
                                          bool create_graph, const std::vector<Node*>& targets) {
  // The backward formulas are recorded only under create_graph (grad mode on while they run).
  const bool previous_mode = is_grad_enabled();
  set_grad_enabled(create_graph);
  struct RestoreMode {
    bool mode;
    ~RestoreMode() { set_grad_enabled(mode); }
  } restore{previous_mode};
  const bool keep_graph = retain_graph || create_graph;
  const bool capture = !targets.empty();

  // 1. Discover the graph and count incoming edges.
  // A root already found from an earlier one has its edges counted already.
  std::unordered_map<Node*, int> dependencies;
  for (const Root& r : roots) {
    Node* const start = r.edge.fn.get();
    if (dependencies.count(start)) continue;
    std::vector<Node*> stack{start};
    dependencies[start] = 0;
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges) {
        if (!e.fn) continue;
        auto [it, inserted] = dependencies.try_emplace(e.fn.get(), 0);
        ++it->second;
        if (inserted) stack.push_back(e.fn.get());
      }
    }
  }

  // grad() mode: which nodes lead to a target? Walk a topological order backwards (children
  // first): a node is needed when it is a target or one of its children is needed. Only nodes
  // with a needed child run their backward formula.
  std::unordered_map<Node*, bool> needed;
  if (capture) {
    std::unordered_map<Node*, int> count = dependencies;
    std::vector<Node*> order, queue;
    for (const auto& [n, c] : count)
      if (c == 0) queue.push_back(n);
    while (!queue.empty()) {
      Node* n = queue.back();
      queue.pop_back();
      order.push_back(n);
      for (const Edge& e : n->next_edges)
        if (e.fn && --count[e.fn.get()] == 0) queue.push_back(e.fn.get());
    }
    for (Node* t : targets) needed[t] = true;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      bool& need = needed[*it];
      for (const Edge& e : (*it)->next_edges)
        if (e.fn && needed[e.fn.get()]) need = true;
    }
  }
  auto runs = [&](Node* n) {
    if (!capture) return true;
    for (const Edge& e : n->next_edges)
      if (e.fn && needed[e.fn.get()]) return true;
    return false;
  };
  std::unordered_map<Node*, bool> is_target;
  for (Node* t : targets) is_target[t] = true;
  std::unordered_map<Node*, Tensor> captured;

  // 2. Run nodes whose gradient is complete.
  std::unordered_map<Node*, Tensor> buffers;
  std::vector<Node*> ready;
  // The roots' nodes must stay alive while we run even if the caller drops the root tensors.
  std::vector<std::shared_ptr<Node>> keep_roots;
  for (const Root& r : roots) {
    Node* n = r.edge.fn.get();
    keep_roots.push_back(r.edge.fn);
    auto it = buffers.find(n);
    if (it == buffers.end()) {
      buffers[n] = r.grad;
      if (dependencies[n] == 0) ready.push_back(n);
    } else {
      it->second = add(it->second, r.grad);  // the same tensor given twice: gradients add up
    }
  }
  // Called once per edge into `n` after the edge's source ran. When the last edge is in, `n` is
  // ready — or, if no path delivered a gradient to it, it is skipped and its own inputs are
  // released in turn.
  auto release_edge = [&](Node* n) {
    std::vector<Node*> cut{n};
    while (!cut.empty()) {
      Node* c = cut.back();
      cut.pop_back();
      if (--dependencies[c] != 0) continue;
      auto it = buffers.find(c);
      if (it != buffers.end() && it->second.defined()) {
        ready.push_back(c);
      } else {
        for (const Edge& e : c->next_edges)
          if (e.fn) cut.push_back(e.fn.get());
      }
    }
  };
  while (!ready.empty()) {
    Node* node = ready.back();
    ready.pop_back();
    Tensor g = std::move(buffers[node]);
    buffers.erase(node);

    if (capture && is_target[node]) captured[node] = g;  // grad(): this input's gradient
    if (!capture) {
      if (auto out = node->retained_output.lock()) {
        if (create_graph)
          out->grad = (out->grad ? add(Tensor(out->grad), g) : g.clone()).impl_ptr();
        else if (out->grad) Tensor(out->grad).add_(g);
        else out->grad = g.clone().impl_ptr();
      }
    }

    std::vector<Tensor> input_grads;
    if (runs(node)) {
      if (profile::nvtx_enabled()) {
        const profile::Range range(node->name().c_str());  // one NVTX range per backward node
        input_grads = node->backward(g);
      } else {
        input_grads = node->backward(g);
      }
      if (!keep_graph) {
        node->release_saved();
        node->released = true;  // a later unpack() of its saved tensors will fail clearly
      }
    }
    g = Tensor();

    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.fn) continue;
      Node* next = e.fn.get();
      if (i < input_grads.size() && input_grads[i].defined()) {
        Tensor& ig = input_grads[i];
        if (ig.shape() != node->input_shapes[i]) {
          throw AutogradError(detail::concat("internal error: ", node->name(),
                                             " returned a gradient of shape ", shape_str(ig.shape()),
                                             " for input ", i, " of shape ",
                                             shape_str(node->input_shapes[i])));
        }
        // Each gradient in its input's dtype: a float32 weight used in a float64 product (type
        // promotion, core/promotion.h) gets a float32 gradient, as in PyTorch.
        if (ig.dtype() != node->input_dtypes[i]) ig = ig.to(node->input_dtypes[i]);
        auto it = buffers.find(next);
        if (it == buffers.end() || !it->second.defined()) buffers[next] = std::move(ig);
        else it->second = add(it->second, ig);
      }
      release_edge(next);
    }
  }
  return captured;
}

// The gradient a root starts with: the given one (checked), or 1 for a one-element tensor.
// A given gradient of another dtype is converted to the root's, as PyTorch 1.13 does (it
// accepts any dtype there, integers and bool included); its shape and device must match.
Tensor root_gradient(const char* api, const Tensor& root, const Tensor& grad_in) {
  if (!grad_in.defined()) {
    if (root.numel() != 1) {
      throw AutogradError(
          std::string(api) +
          ": gradient can only be implied for a tensor with one element, but "
          "this one has shape " +
          shape_str(root.shape()) +
          ". Reduce it to a scalar first (e.g. loss.sum() or loss.mean()), or pass the gradient "
          "explicitly: out.backward(grad)");
    }
    return ones_like(root);
  }
  EMBER_CHECK_T(AutogradError, grad_in.shape() == root.shape(), api, ": gradient has shape ",
                shape_str(grad_in.shape()), " but the tensor has shape ", shape_str(root.shape()));
  EMBER_CHECK_T(AutogradError, grad_in.device() == root.device(), api, ": gradient is on ",
                grad_in.device(), " but the tensor is on ", root.device(),
                ": move the gradient with .to(", root.device(), ")");
  return grad_in.dtype() == root.dtype() ? grad_in : grad_in.to(root.dtype());
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_in, bool retain_graph, bool create_graph) {
  if (!root.requires_grad()) {
    throw AutogradError(
        "backward(): the tensor does not require grad and has no grad_fn. Create the inputs you "
        "want gradients for with requires_grad(true) (and do not run the forward pass under "
        "NoGradGuard)");
  }
  const Tensor grad = root_gradient("backward()", root, grad_in);
  execute({Root{gradient_edge(root), grad}}, retain_graph, create_graph, {});
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool create_graph, bool allow_unused) {
  EMBER_CHECK_T(AutogradError, !outputs.empty(), "grad(): no outputs to differentiate");
  EMBER_CHECK_T(AutogradError, !inputs.empty(),
                "grad(): no inputs to differentiate with respect to");
  EMBER_CHECK_T(AutogradError, grad_outputs.empty() || grad_outputs.size() == outputs.size(),
                "grad(): ", grad_outputs.size(), " grad_outputs for ", outputs.size(),
                " outputs: give one per output (an undefined Tensor() for a one-element output)");
  std::vector<Root> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    EMBER_CHECK_T(AutogradError, out.defined() && out.requires_grad(), "grad(): output ", i,
                  " does not require grad and has no grad_fn (was the forward pass run under "
                  "NoGradGuard, or on inputs that do not require grad?)");
    const Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    roots.push_back({gradient_edge(out), root_gradient("grad()", out, g)});
  }
  // Each input is known by the edge a gradient of it would travel: a leaf's AccumulateGrad, or
  // the node that produced it (ember's nodes have one output each).
  std::vector<Node*> targets;
  std::vector<std::shared_ptr<Node>> keep;  // a leaf's accumulator lives only as long as we hold it
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    EMBER_CHECK_T(AutogradError, x.defined() && x.requires_grad(), "grad(): input ", i,
                  " does not require grad: only tensors that require grad (leaves created with "
                  "requires_grad, or results computed from them) can be differentiated against");
    const Edge e = gradient_edge(x);
    keep.push_back(e.fn);
    targets.push_back(e.fn.get());
  }
  std::unordered_map<Node*, Tensor> captured = execute(roots, retain_graph, create_graph, targets);
  std::vector<Tensor> result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = captured.find(targets[i]);
    Tensor g = it == captured.end() ? Tensor() : it->second;
    if (!g.defined() && !allow_unused) {
      throw AutogradError(detail::concat(
          "grad(): input ", i, " (shape ", shape_str(inputs[i].shape()),
          ") was not used in the graph of the outputs. Pass allow_unused=true to get an undefined "
          "gradient for it instead"));
    }
    result.push_back(std::move(g));
  }
  return result;
}

}  // namespace ember::autograd
