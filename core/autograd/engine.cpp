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
#include <string>
#include <unordered_map>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops.h"
#include "core/profile.h"

namespace ember::autograd {

void run_backward(const Tensor& root, const Tensor& grad_in, bool retain_graph) {
  if (!root.requires_grad()) {
    throw AutogradError(
        "backward(): the tensor does not require grad and has no grad_fn. Create the inputs you "
        "want gradients for with requires_grad(true) (and do not run the forward pass under "
        "NoGradGuard)");
  }
  Tensor grad = grad_in;
  if (!grad.defined()) {
    if (root.numel() != 1) {
      throw AutogradError(
          "backward(): gradient can only be implied for a tensor with one element, but this one "
          "has shape " + shape_str(root.shape()) +
          ". Reduce it to a scalar first (e.g. loss.sum() or loss.mean()), or pass the gradient "
          "explicitly: out.backward(grad)");
    }
    grad = ones_like(root);
  } else {
    EMBER_CHECK_T(AutogradError, grad.shape() == root.shape(), "backward(): gradient has shape ",
                  shape_str(grad.shape()), " but the tensor has shape ", shape_str(root.shape()));
    EMBER_CHECK_T(AutogradError, grad.dtype() == root.dtype() && grad.device() == root.device(),
                  "backward(): gradient is ", grad.dtype(), " on ", grad.device(),
                  " but the tensor is ", root.dtype(), " on ", root.device());
  }

  NoGradGuard no_grad;  // backward formulas are computed without recording a new graph

  const Edge root_edge = gradient_edge(root);
  Node* const start = root_edge.fn.get();

  // 1. Discover the graph and count incoming edges.
  std::unordered_map<Node*, int> dependencies;
  {
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

  // 2. Run nodes whose gradient is complete.
  std::unordered_map<Node*, Tensor> buffers;
  buffers[start] = grad;
  std::vector<Node*> ready{start};
  // The root's node must stay alive while we run even if the caller drops the root tensor.
  std::shared_ptr<Node> keep_root = root_edge.fn;
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

    if (auto out = node->retained_output.lock()) {
      if (out->grad) Tensor(out->grad).add_(g);
      else out->grad = g.clone().impl_ptr();
    }

    std::vector<Tensor> input_grads;
    if (profile::nvtx_enabled()) {
      const profile::Range range(node->name().c_str());  // one NVTX range per backward node
      input_grads = node->backward(g);
    } else {
      input_grads = node->backward(g);
    }
    g = Tensor();
    if (!retain_graph) {
      node->release_saved();
      node->released = true;  // a later unpack() of its saved tensors will fail clearly
    }

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
}

}  // namespace ember::autograd
