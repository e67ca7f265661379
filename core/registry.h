// ember/core/registry.h — the list of every op ember has.
//
// One row per op: where its card is, the name of its backward node, and its kernels on each
// device. The test suite walks this list: an op with no gradcheck case, or no CUDA-vs-CPU case,
// fails tests/core/registry.cpp, and one without a CUDA kernel fails tests/kernels/cuda_parity.cpp
// — so an op cannot be added without its tests or without running on both devices.
#pragma once

#include <string>
#include <vector>

namespace ember {

struct OpInfo {
  const char* name;         // the public function, e.g. "add"
  const char* card;         // the op card that defines it, e.g. "core/ops/add.cpp"
  bool differentiable;      // has a backward (false: comparisons, argmax — no gradient)
  const char* backward;     // the Node's name, e.g. "AddBackward" ("" when not differentiable)
  const char* cpu_kernel;   // e.g. "kernels/cpu/elementwise.cpp binary(Add)"
  const char* cuda_kernel;  // e.g. "kernels/cuda/elementwise.cu binary(Add)"
};

const std::vector<OpInfo>& op_registry();
const OpInfo* find_op(const std::string& name);  // nullptr when unknown

// Higher-order gradients (backward or autograd::grad with create_graph, docs/autograd.md). Every
// differentiable op is in exactly one of two lists, kept in core/registry.cpp apart from the rows:
//   twice_differentiable_ops()  its backward is written with recorded ops, so it can be
//       differentiated again; tests/core/gradgrad.cpp runs every case of each through
//       gradgradcheck (core/gradcheck.h) and fails for a claimed op without a case;
//   not_yet_twice_differentiable_ops()  its backward calls kernels directly; under create_graph it
//       throws an AutogradError naming the op (autograd::check_twice_differentiable).
// tests/core/gradgrad.cpp fails for a differentiable op that is in neither list.
const std::vector<std::string>& twice_differentiable_ops();
const std::vector<std::string>& not_yet_twice_differentiable_ops();
bool twice_differentiable(const std::string& op);

}  // namespace ember
