// ember/nn/module.h — Module, the base of every layer, model and loss (torch.nn.Module).
//
// A Module owns three ordered, named collections:
//   parameters  tensors the optimizer trains (they require grad): Linear's weight and bias
//   buffers     state that is not trained but belongs to the module and moves with it: a loss's
//               class weights, a batch norm's running mean
//   children    sub-modules: a model's layers
// Registration order is kept everywhere, so parameters(), state_dict() and the printout list
// things in the order the model's constructor created them — as in PyTorch.
//
// Modules are held by std::shared_ptr (a child is shared by its parent and by whoever built
// it) and are not copyable: a copy would share the parameters silently.
//
// Moving a module (to, cuda, cpu) converts every parameter and buffer IN PLACE with
// Tensor::set_data, so every handle to them — the layer's own `weight` member, an optimizer
// built before the move — sees the new data. That is seed 004's point: `module.cuda()` moves
// the module itself and returns it, while `tensor.cuda()` returns a copy.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/profile.h"
#include "core/tensor.h"

namespace ember::nn {

// (name, tensor) pairs in registration order; names are dotted paths such as "layer_1.weight".
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- registration (a subclass calls these from its constructor) -------------------------
  // Makes `t` a parameter: it is set to require grad and returned (the same handle), so a
  // layer can keep it in a member: `weight = register_parameter("weight", empty({out, in}));`.
  // An undefined tensor registers an absent parameter (Linear without bias), skipped by
  // parameters() and state_dict().
  Tensor register_parameter(const std::string& name, Tensor t);
  // A buffer moves with the module but is not trained. Non-persistent buffers are left out of
  // state_dict(). An undefined tensor registers an absent buffer (a loss without class weights).
  Tensor register_buffer(const std::string& name, Tensor t, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of<Module, M>::value,
                  "register_module: M must derive from nn::Module");
    add_child(name, module);
    return module;
  }

  // ---- what it holds -----------------------------------------------------------------------
  // With recurse, this module's own entries come first, then each child's, depth-first. A
  // tensor shared by two modules (tied weights) is listed once, under its first name.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // Every parameter and persistent buffer by dotted name, each module's parameters before its
  // buffers (PyTorch's order). The tensors are detached aliases: same storage, no graph.
  NamedTensors state_dict() const;

  // Copies the values of `state` (e.g. ember::load("mlp.safetensors"), or a PyTorch
  // state_dict saved with safetensors) into the parameters and buffers of the same names, on
  // the module's devices. Every entry is checked before anything is copied, and all problems
  // are reported together in one ValueError: the missing keys and the unexpected ones (with
  // strict; without it they are only returned), and every shape or dtype mismatch (always an
  // error). Like PyTorch's, the result lists the keys that were missing and unexpected.
  struct LoadResult {
    std::vector<std::string> missing_keys;     // in the module, not in `state`
    std::vector<std::string> unexpected_keys;  // in `state`, not in the module
  };
  LoadResult load_state_dict(const NamedTensors& state, bool strict = true);

  // Calls fn on every descendant and then on this module (children first, like
  // module.apply(fn) — handy for custom initialisation).
  void apply(const std::function<void(Module&)>& fn);

  // ---- mode: Dropout and friends behave differently in training and evaluation ------------
  Module& train(bool on = true);  // recursive
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }

  // ---- moving, in place (seed 004) ---------------------------------------------------------
  // Every tensor is converted first and only then swapped in, so a failure (no GPU: the core
  // DeviceError) leaves the module untouched.
  Module& to(Device device);
  // Floating-point parameters and buffers only (integer buffers keep their dtype, as in
  // PyTorch); `dtype` itself must be float32 or float64.
  Module& to(DType dtype);
  Module& cuda(int index = -1) { return to(Device::cuda(index)); }
  Module& cpu() { return to(Device::cpu()); }

  // Clears every parameter's .grad (set_to_none) or fills it with zeros.
  void zero_grad(bool set_to_none = true);

  // ---- printing ----------------------------------------------------------------------------
  // The class name shown in the printout ("Linear"). Built-in modules return it explicitly;
  // the default is the C++ class name without namespaces, so `struct MLP : nn::Module` prints
  // as "MLP" without writing anything.
  virtual std::string name() const;
  // The part between the parentheses: "in_features=784, out_features=512, bias=True".
  virtual std::string extra_repr() const { return ""; }
  // The module tree, formatted exactly like PyTorch's repr(module).
  std::string str() const;

 private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };

  void check_new_name(const std::string& name, const char* what) const;
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  // Calls fn(prefix, module) on this module (prefix "") and, with recurse, on every descendant
  // in pre-order (prefix "layer_1." ...). With unique, a module reachable twice is visited once.
  void visit(bool recurse, bool unique,
             const std::function<void(const std::string&, const Module&)>& fn) const;
  // Every distinct defined parameter and buffer of the tree: what to() converts.
  std::vector<Tensor> all_tensors() const;

  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

// A module with one tensor in and one tensor out: what Sequential chains. Models written like
// the seed's FullyNeuralNetwork derive from it too, so `(*model)(x)` reads like `model(x)`.
class Layer : public Module {
 public:
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) {
    if (profile::nvtx_enabled()) {  // the module's name as an NVTX range (core/profile.h)
      const profile::Range range(name().c_str());
      return forward(x);
    }
    return forward(x);
  }
};

}  // namespace ember::nn
