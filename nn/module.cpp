// ember/nn/module.cpp — registration, traversal, moving and printing of modules.
#include "nn/module.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#if defined(__GNUG__)
#include <cxxabi.h>
#endif

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "kernels/base/error.h"

namespace ember::nn {

namespace {

// "ember::nn::Linear" or "(anonymous namespace)::MLP" -> "Linear", "MLP": the name a reader
// wrote in the class definition. Namespaces are stripped only before a template's '<'.
std::string class_name(const std::type_info& type) {
  std::string s = type.name();
#if defined(__GNUG__)
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status), std::free);
  if (status == 0 && demangled) s = demangled.get();
#endif
  for (const char* keyword : {"class ", "struct "}) {  // MSVC's spelling
    if (s.rfind(keyword, 0) == 0) s.erase(0, std::strlen(keyword));
  }
  const size_t angle = s.find('<');
  const size_t colons = s.rfind("::", angle);
  if (colons != std::string::npos) s.erase(0, colons + 2);
  return s;
}

// PyTorch's _addindent: every line after the first is shifted right, so a child's own
// children line up under it.
std::string indent_tail(const std::string& s, int spaces) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(static_cast<size_t>(spaces), ' ');
  }
  return out;
}

}  // namespace

// ---- registration ---------------------------------------------------------------------------

void Module::check_new_name(const std::string& name, const char* what) const {
  EMBER_CHECK(!name.empty(), this->name(), ".", what, ": the name must not be empty");
  EMBER_CHECK(name.find('.') == std::string::npos, this->name(), ".", what, "(\"", name,
              "\"): the name must not contain '.' (dots separate the levels of dotted names such "
              "as \"layer_1.weight\")");
  auto taken = [&](const auto& list) {
    for (const auto& entry : list) {
      if (entry.first == name) return true;
    }
    return false;
  };
  auto taken_slot = [&](const std::vector<Slot>& list) {
    for (const Slot& s : list) {
      if (s.name == name) return true;
    }
    return false;
  };
  EMBER_CHECK(!taken_slot(params_) && !taken_slot(buffers_) && !taken(children_), this->name(), ".",
              what, "(\"", name, "\"): this module already has a parameter, buffer or child with "
              "that name");
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  check_new_name(name, "register_parameter");
  if (t.defined()) {
    // A parameter is a leaf the optimizer updates; a tensor computed by an op is part of some
    // graph and would not be the tensor the gradients arrive at.
    EMBER_CHECK(t.is_leaf(), this->name(), ".register_parameter(\"", name, "\"): the tensor was "
                "computed by an op (grad_fn=", t.grad_fn()->name(), "); register a leaf, e.g. "
                "t.detach()");
    EMBER_CHECK(is_floating(t.dtype()), this->name(), ".register_parameter(\"", name, "\"): a "
                "parameter must be float32 or float64, got ", t.dtype());
    t.requires_grad_(true);
  }
  params_.push_back({name, t, true});
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t, bool persistent) {
  check_new_name(name, "register_buffer");
  buffers_.push_back({name, t, persistent});
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name, "register_module");
  EMBER_CHECK(child != nullptr, this->name(), ".register_module(\"", name,
              "\"): the module is null");
  EMBER_CHECK(child.get() != this, this->name(), ".register_module(\"", name, "\"): a module "
              "cannot be its own child");
  children_.emplace_back(name, std::move(child));
}

// ---- traversal ------------------------------------------------------------------------------

void Module::visit(bool recurse, bool unique,
                   const std::function<void(const std::string&, const Module&)>& fn) const {
  std::unordered_set<const Module*> seen;
  // Recursion depth is the model's nesting depth: a handful of levels.
  std::function<void(const std::string&, const Module&)> walk = [&](const std::string& prefix,
                                                                    const Module& m) {
    if (unique && !seen.insert(&m).second) return;
    fn(prefix, m);
    if (!recurse) return;
    for (const auto& [child_name, child] : m.children_) walk(prefix + child_name + ".", *child);
  };
  walk("", *this);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  std::unordered_set<const TensorImpl*> seen;
  visit(recurse, true, [&](const std::string& prefix, const Module& m) {
    for (const Slot& s : m.params_) {
      if (s.tensor.defined() && seen.insert(s.tensor.impl()).second) {
        out.emplace_back(prefix + s.name, s.tensor);
      }
    }
  });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  std::unordered_set<const TensorImpl*> seen;
  visit(recurse, true, [&](const std::string& prefix, const Module& m) {
    for (const Slot& s : m.buffers_) {
      if (s.tensor.defined() && seen.insert(s.tensor.impl()).second) {
        out.emplace_back(prefix + s.name, s.tensor);
      }
    }
  });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& entry : children_) out.push_back(entry.second);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

NamedTensors Module::state_dict() const {
  // Not deduplicated: tied weights are saved under every name, so each module can load its
  // own entries back (PyTorch does the same).
  NamedTensors out;
  visit(true, false, [&](const std::string& prefix, const Module& m) {
    for (const Slot& s : m.params_) {
      if (s.tensor.defined()) out.emplace_back(prefix + s.name, s.tensor.detach());
    }
    for (const Slot& s : m.buffers_) {
      if (s.tensor.defined() && s.persistent) out.emplace_back(prefix + s.name, s.tensor.detach());
    }
  });
  return out;
}

Module::LoadResult Module::load_state_dict(const NamedTensors& state, bool strict) {
  const NamedTensors own = state_dict();
  std::unordered_map<std::string, const Tensor*> given;
  std::vector<std::string> problems;
  for (const auto& [key, t] : state) {
    if (!given.emplace(key, &t).second) problems.push_back("'" + key + "' appears twice");
    else if (!t.defined()) problems.push_back("'" + key + "' is an undefined tensor");
  }
  LoadResult result;
  std::unordered_set<std::string> own_names;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source)
  for (const auto& [key, dst] : own) {
    own_names.insert(key);
    auto it = given.find(key);
    if (it == given.end()) {
      result.missing_keys.push_back(key);
      continue;
    }
    const Tensor& src = *it->second;
    if (!src.defined()) continue;
    if (src.shape() != dst.shape()) {
      problems.push_back(key + ": shape " + shape_str(src.shape()) + " in the state dict, " +
                         shape_str(dst.shape()) + " in the module");
    } else if (src.dtype() != dst.dtype()) {
      problems.push_back(key + ": dtype " + dtype_name(src.dtype()) + " in the state dict, " +
                         dtype_name(dst.dtype()) + " in the module (convert one with .to())");
    } else {
      copies.emplace_back(dst, src);
    }
  }
  for (const auto& [key, t] : state) {
    if (!own_names.count(key)) result.unexpected_keys.push_back(key);
  }
  auto join = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const std::string& k : keys) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  std::vector<std::string> all;
  if (strict && !result.missing_keys.empty()) {
    all.push_back("missing keys (in the module, not in the state dict): " +
                  join(result.missing_keys));
  }
  if (strict && !result.unexpected_keys.empty()) {
    all.push_back("unexpected keys (in the state dict, not in the module): " +
                  join(result.unexpected_keys));
  }
  all.insert(all.end(), problems.begin(), problems.end());
  if (!all.empty()) {
    std::string msg = name() + ".load_state_dict: nothing was loaded; " +
                      std::to_string(all.size()) + (all.size() == 1 ? " problem:" : " problems:");
    for (const std::string& p : all) msg += "\n  " + p;
    if (strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty())) {
      msg += "\n(load_state_dict(state, /*strict=*/false) skips missing and unexpected keys; "
             "a shape or dtype mismatch is always an error)";
    }
    throw ValueError(msg);
  }
  NoGradGuard no_grad;  // loading values is not a step of the model
  for (auto& [dst, src] : copies) {
    Tensor d = dst;
    d.copy_(src.detach());
  }
  return result;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& entry : children_) entry.second->apply(fn);
  fn(*this);
}

// ---- mode -----------------------------------------------------------------------------------

Module& Module::train(bool on) {
  training_ = on;
  for (auto& entry : children_) entry.second->train(on);
  return *this;
}

// ---- moving ---------------------------------------------------------------------------------

std::vector<Tensor> Module::all_tensors() const {
  std::vector<Tensor> out;
  std::unordered_set<const TensorImpl*> seen;
  visit(true, true, [&](const std::string&, const Module& m) {
    for (const auto* list : {&m.params_, &m.buffers_}) {
      for (const Slot& s : *list) {
        if (s.tensor.defined() && seen.insert(s.tensor.impl()).second) out.push_back(s.tensor);
      }
    }
  });
  return out;
}

namespace {
// Converts all tensors, then swaps the new data in: a conversion that throws (no GPU, out of
// memory) happens before anything changed.
template <typename Convert>
void convert_in_place(const std::vector<Tensor>& tensors, const Convert& convert) {
  std::vector<Tensor> converted;
  converted.reserve(tensors.size());
  {
    NoGradGuard no_grad;  // a conversion, not a step of the model: no graph
    for (const Tensor& t : tensors) converted.push_back(convert(t));
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!converted[i].is_same(tensors[i])) tensors[i].set_data(converted[i]);
  }
}
}  // namespace

Module& Module::to(Device device) {
  convert_in_place(all_tensors(), [&](const Tensor& t) { return t.to(device); });
  return *this;
}

Module& Module::to(DType dtype) {
  EMBER_CHECK(is_floating(dtype), name(), ".to(", dtype, "): a module can only be converted to a "
              "float dtype (float32 or float64); integer buffers keep their own dtype");
  convert_in_place(all_tensors(), [&](const Tensor& t) {
    return is_floating(t.dtype()) ? t.to(dtype) : t;
  });
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;  // zeroing a .grad in place is not part of any graph
  for (Tensor& p : parameters()) p.zero_grad(set_to_none);
}

// ---- printing -------------------------------------------------------------------------------

std::string Module::name() const { return class_name(typeid(*this)); }

std::string Module::str() const {
  // Same layout as PyTorch's Module.__repr__: "Name(extra)" on one line when there are no
  // children and the extra part is one line; otherwise one "(child): ..." line per child.
  std::vector<std::string> extra_lines;
  const std::string extra = extra_repr();
  if (!extra.empty()) {
    std::istringstream is(extra);
    for (std::string line; std::getline(is, line);) extra_lines.push_back(line);
  }
  std::vector<std::string> lines = extra_lines;
  for (const auto& [child_name, child] : children_) {
    lines.push_back("(" + child_name + "): " + indent_tail(child->str(), 2));
  }
  std::string out = name() + "(";
  if (extra_lines.size() == 1 && children_.empty()) {
    out += extra_lines[0];
  } else if (!lines.empty()) {
    for (const std::string& line : lines) out += "\n  " + line;
    out += "\n";
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.str(); }

}  // namespace ember::nn
