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

}  // namespace ember
