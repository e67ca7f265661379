// ember/core/autograd/to_dot.cpp — the graph behind a tensor, in Graphviz's language.
//
// The walk is the engine's first step (core/autograd/engine.cpp) with an explicit stack: from
// the root's grad_fn along next_edges, each node once. What a node knows about its inputs
// (input_shapes, input_dtypes) labels the arrows; Node::saved lists what it kept for backward.
#include "core/autograd/to_dot.h"

#include <map>
#include <sstream>

#include "core/autograd/node.h"
#include "kernels/base/error.h"

namespace ember::autograd {

namespace {

std::string describe(const Shape& shape, DType dtype) {
  return shape_str(shape) + " " + dtype_name(dtype);
}

// A DOT string literal: quotes and backslashes escaped, "\n" kept as Graphviz's line break.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') q += "\\n";
    else q += c;
  }
  return q + "\"";
}

}  // namespace

std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names) {
  // Leaves by their sink: a leaf that requires grad reaches the tape through its AccumulateGrad.
  std::map<const Node*, std::string> leaf_names;
  for (const auto& [name, t] : names)
    if (t.defined())
      if (auto acc = t.impl()->grad_accumulator.lock()) leaf_names.emplace(acc.get(), name);

  std::ostringstream out;
  out << "digraph tape {\n"
      << "  // ember::autograd::to_dot: arrows run as the forward pass ran; backward() walks them\n"
      << "  // in reverse. Boxes: nodes of the tape; blue: leaves that require grad; dashed:\n"
      << "  // inputs that need no gradient.\n"
      << "  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9];\n";

  EMBER_CHECK(root.defined(), "to_dot: the tensor is undefined");
  std::string root_name = "tensor";
  for (const auto& [name, t] : names)
    if (t.defined() && t.impl() == root.impl()) root_name = name;
  out << "  root [label=" << quoted(root_name + "\n" + describe(root.shape(), root.dtype()))
      << ", style=filled, fillcolor=\"#d9ead3\"];\n";
  const std::shared_ptr<Node>& top = root.grad_fn();
  if (!top) {  // a leaf, or a tensor made with no tape recording
    out << "}\n";
    return out.str();
  }

  // Number the nodes depth first from the root, inputs in order.
  std::map<const Node*, int> id;
  std::vector<const Node*> order, stack = {top.get()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (id.count(n)) continue;
    id[n] = static_cast<int>(order.size());
    order.push_back(n);
    for (auto e = n->next_edges.rbegin(); e != n->next_edges.rend(); ++e)
      if (e->valid() && !id.count(e->fn.get())) stack.push_back(e->fn.get());
  }

  for (const Node* n : order) {
    const std::string nid = "n" + std::to_string(id[n]);
    if (const auto* acc = dynamic_cast<const AccumulateGrad*>(n)) {
      const auto it = leaf_names.find(n);
      const TensorImpl* v = acc->variable().get();
      std::string label = it == leaf_names.end() ? "leaf" : it->second;
      label += "\n" + describe(v->shape, v->dtype) + "\nrequires_grad";
      out << "  " << nid << " [label=" << quoted(label)
          << ", style=filled, fillcolor=\"#cfe2f3\"];\n";
      continue;
    }
    std::string label = n->name();
    for (const SavedInfo& s : n->saved) {
      label += "\nsaved: ";
      label +=
          s.role.empty() ? describe(s.shape, s.dtype) : s.role + " " + describe(s.shape, s.dtype);
    }
    if (n->released && !n->saved.empty()) label += "\n(saved tensors freed by backward)";
    out << "  " << nid << " [label=" << quoted(label) << ", style=rounded];\n";
  }

  // Arrows: from each input (a node, a leaf, or a tensor that needs no gradient) into the node.
  for (const Node* n : order) {
    const std::string nid = "n" + std::to_string(id[n]);
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      std::string label = i < n->input_shapes.size()
                              ? describe(n->input_shapes[i], n->input_dtypes[i])
                              : std::string();
      if (n->next_edges.size() > 1) label = "input " + std::to_string(i) + ": " + label;
      if (e.valid()) {
        if (e.input_nr != 0) label += " (output " + std::to_string(e.input_nr) + ")";
        out << "  n" << id[e.fn.get()] << " -> " << nid << " [label=" << quoted(label) << "];\n";
      } else {
        const std::string cid = nid + "_in" + std::to_string(i);
        out << "  " << cid << " [label=" << quoted("no grad") << ", style=dashed];\n"
            << "  " << cid << " -> " << nid << " [label=" << quoted(label) << ", style=dashed];\n";
      }
    }
  }
  out << "  n0 -> root [label=" << quoted(describe(root.shape(), root.dtype())) << "];\n";
  out << "}\n";
  return out.str();
}

}  // namespace ember::autograd
