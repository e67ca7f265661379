// tests/op_cases.h — the table of op test cases (like PyTorch's OpInfo, ggml's test-backend-ops).
//
// Each case names a registered op, builds its inputs, and says how to call it. One table feeds
// several tests:
//   tests/core/gradcheck.cpp    every differentiable case through gradcheck in float64 on CPU;
//   tests/kernels/cuda_parity.cpp  every case on CUDA vs CPU: output and every input gradient;
//   tests/core/registry.cpp     every op in core/registry.cpp has at least one case here.
// Cases live in tests/cases/<family>.cpp and register themselves with EMBER_OP_CASES.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/ember.h"

namespace ember::test {

struct OpCase {
  std::string op;     // name in the registry
  std::string label;  // what this case covers, e.g. "broadcast [3,1] * [4], transposed a"
  // Builds float64 CPU inputs. Inputs to differentiate are leaves with requires_grad; integer
  // inputs (indices, targets) do not require grad.
  std::function<std::vector<Tensor>()> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  bool differentiable = true;  // false: forward-only (comparisons, argmax)
  double atol = 1e-5;          // gradcheck tolerances (defaults suit smooth ops)
  double rtol = 1e-3;
};

std::vector<OpCase>& op_cases();

struct CaseRegistrar {
  explicit CaseRegistrar(std::vector<OpCase> cases);
};

#define EMBER_OP_CASES_CAT2(a, b) a##b
#define EMBER_OP_CASES_CAT(a, b) EMBER_OP_CASES_CAT2(a, b)
// EMBER_OP_CASES({ OpCase{...}, OpCase{...} });
#define EMBER_OP_CASES(...) \
  static ::ember::test::CaseRegistrar EMBER_OP_CASES_CAT(ember_op_cases_, __LINE__)(__VA_ARGS__)

// One-input and two-input cases: fn(x[0]) and fn(x[0], x[1]).
OpCase unary_case(const std::string& op, const std::string& label, std::function<Tensor()> input,
                  std::function<Tensor(const Tensor&)> f, bool differentiable = true);
OpCase binary_case(const std::string& op, const std::string& label, std::function<Tensor()> a,
                   std::function<Tensor()> b, std::function<Tensor(const Tensor&, const Tensor&)> f);

// ---- input builders (float64, deterministic: a fixed seed per call site) -----------------------

// A leaf in float64 with requires_grad, values ~ U(lo, hi).
Tensor leaf(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0);
// The same, but laid out transposed in memory (last two dims swapped): non-contiguous.
Tensor leaf_transposed(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0);
// A leaf viewing every other element of a larger buffer along the last dim: non-contiguous.
Tensor leaf_strided(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0);
// Away from zero: |x| in [0.5, 1.5] with random signs (for div, log, sqrt, abs kinks).
Tensor leaf_away_from_zero(const Shape& shape, uint64_t seed, bool positive = false);
// An int64 tensor with values in [0, high).
Tensor indices(const Shape& shape, int64_t high, uint64_t seed);

}  // namespace ember::test
