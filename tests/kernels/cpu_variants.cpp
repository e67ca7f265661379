// The per-instruction-set CPU kernels (kernels/cpu/isa_variant.h): a portable x86-64 build
// compiles the elementwise, reduction, softmax, cross-entropy, pooling and optimizer kernels as
// baseline, avx2 and avx512, and kernels/backend.cpp hands out the tables of the instruction set
// that kernels/base/cpu_isa.h chose. Here, for every instruction set this machine can run:
//   - cpu_backend() switches with set_cpu_isa, to tables of their own where the build has them
//     (and the GEMM and convolution tables, which choose inside, stay shared);
//   - every case of the op table (tests/op_cases.h), forward and every input gradient, in float64
//     and float32, gives the same bits under avx2 as under avx512 (both have fused multiply-add
//     and no kernel sums in an order that depends on the vector width), and the baseline's
//     numbers within rounding of them (SSE2 has no fused multiply-add, and its GEMM is Eigen's);
//   - the fused optimizer steps likewise.
// The rest of the CPU suite runs under the best instruction set, and the conv2d, matmul,
// optimizer and row-kernel tests once more under each other one (tests/CMakeLists.txt,
// "cpu isa: ...").
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ember.h"
#include "cpu_isa_test_util.h"
#include "kernels/backend.h"
#include "kernels/base/cpu_isa.h"
#include "nn/nn.h"
#include "op_cases.h"
#include "optim/optim.h"

using namespace ember;
using kernels::CpuIsa;
using test::IsaScope;
using test::runnable_isas;

namespace {

// Does this build compile the kernels per instruction set? CMake says so (EMBER_CPU_VARIANTS in
// CMakeLists.txt): a portable x86-64 build does, a -march=native or aarch64 one does not.
constexpr bool kBuildHasVariants =
#if defined(EMBER_TEST_CPU_VARIANTS)
    true;
#else
    false;
#endif

// The same shape, dtype and bits: equal values with equal signs (+0 is not -0), or NaN in both.
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const bool both_nan = std::isnan(x[i]) && std::isnan(y[i]);
    if (!both_nan && (x[i] != y[i] || std::signbit(x[i]) != std::signbit(y[i]))) return false;
  }
  return true;
}

// Within rounding: |a - b| <= tol * (1 + max |b|) elementwise, NaN and infinities in the same
// places. (A sum of products rounded once per multiply-add, or twice, drifts by a few ulps of
// the largest terms; cancellation can make that large against a small result, hence the scale.)
bool close(const Tensor& a, const Tensor& b, double tol) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double scale = 0.0;
  for (double v : y)
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i]) || std::isinf(x[i]) || std::isinf(y[i])) {
      if (!(std::isnan(x[i]) && std::isnan(y[i])) && x[i] != y[i]) return false;
      continue;
    }
    if (std::fabs(x[i] - y[i]) > tol * (1.0 + scale)) return false;
  }
  return true;
}

// One op case run under the instruction set in force, on fresh leaves copied from `inputs` (one
// draw for every instruction set: some cases draw from the global generator): its output, then
// the gradient of each input that requires one, with float64 inputs converted to `dtype`.
std::vector<Tensor> run_case(const test::OpCase& c, const std::vector<Tensor>& inputs,
                             DType dtype) {
  std::vector<Tensor> in;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      in.push_back(t);
      continue;
    }
    Tensor u = is_floating(t.dtype()) ? t.detach().to(dtype).clone() : t.detach().clone();
    if (t.requires_grad()) u.requires_grad_(true);
    in.push_back(u);
  }
  const Tensor y = c.fn(in);
  std::vector<Tensor> out{y.detach()};
  if (c.differentiable && y.requires_grad()) {
    manual_seed(0x15a);
    y.backward((rand(y.shape(), kFloat64) * 2.0 - 1.0).to(y.dtype()));
    for (const Tensor& t : in) {
      if (t.defined() && t.requires_grad()) out.push_back(t.grad());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("cpu variants: each instruction set gets its own elementwise, row and optimizer kernels",
          "[cpu-isa]") {
  const kernels::Backend& best = kernels::cpu_backend();
  for (CpuIsa isa : runnable_isas()) {
    IsaScope scope(isa);
    CAPTURE(kernels::isa_name(isa));
    const kernels::Backend& b = kernels::cpu_backend();
    const std::string variant = kernels::cpu_backend_variant();
    CHECK(std::string(b.name) == "cpu");
    // The families that choose their instruction set inside are the same tables everywhere.
    CHECK(&b.gemm == &best.gemm);
    CHECK(&b.conv == &best.conv);
    if (kBuildHasVariants && (isa == CpuIsa::Avx2 || isa == CpuIsa::Avx512)) {
      CHECK(variant == kernels::isa_name(isa));
    } else {
      CHECK(variant == "baseline");
    }
  }
  // Distinct variants are distinct tables, and the same variant the same one.
  for (CpuIsa a : runnable_isas()) {
    for (CpuIsa b : runnable_isas()) {
      std::string va, vb;
      const kernels::Backend *ba, *bb;
      {
        IsaScope s(a);
        va = kernels::cpu_backend_variant();
        ba = &kernels::cpu_backend();
      }
      {
        IsaScope s(b);
        vb = kernels::cpu_backend_variant();
        bb = &kernels::cpu_backend();
      }
      CAPTURE(va, vb);
      CHECK((va == vb) == (ba == bb));
      CHECK((va == vb) == (&ba->elementwise == &bb->elementwise));
      CHECK((va == vb) == (&ba->optim == &bb->optim));
      CHECK((va == vb) == (&ba->softmax == &bb->softmax));
    }
  }
}

TEST_CASE("cpu variants: every op case gives the same bits under avx2 and avx512, and the "
          "baseline's within rounding",
          "[cpu-isa]") {
  const std::vector<CpuIsa> isas = runnable_isas();
  const bool both = std::count(isas.begin(), isas.end(), CpuIsa::Avx512) &&
                    std::count(isas.begin(), isas.end(), CpuIsa::Avx2);
  if (isas.size() < 2) {
    WARN("SKIPPED: this machine runs one CPU instruction set only");
    return;
  }
  for (DType dtype : {kFloat64, kFloat32}) {
    for (const test::OpCase& c : test::op_cases()) {
      DYNAMIC_SECTION(c.op << ": " << c.label << " (" << dtype_name(dtype) << ")") {
        const std::vector<Tensor> inputs = c.inputs();
        std::vector<std::vector<Tensor>> results;
        for (CpuIsa isa : isas) {
          IsaScope scope(isa);
          results.push_back(run_case(c, inputs, dtype));
        }
        const std::vector<Tensor>& ref = results.front();  // the best instruction set's
        for (size_t k = 1; k < isas.size(); ++k) {
          CAPTURE(kernels::isa_name(isas.front()), kernels::isa_name(isas[k]));
          REQUIRE(results[k].size() == ref.size());
          for (size_t i = 0; i < ref.size(); ++i) {
            CAPTURE(i);  // 0: the output, then each input's gradient
            REQUIRE(results[k][i].defined() == ref[i].defined());
            if (!ref[i].defined()) continue;
            if (both && isas[k] == CpuIsa::Avx2) {
              CHECK(same_bits(results[k][i], ref[i]));
            } else {
              CHECK(close(results[k][i], ref[i], dtype == kFloat32 ? 2e-5 : 1e-12));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("cpu variants: the fused SGD and Adam steps give the same bits under avx2 and avx512",
          "[cpu-isa]") {
  const std::vector<CpuIsa> isas = runnable_isas();
  if (isas.size() < 2) {
    WARN("SKIPPED: this machine runs one CPU instruction set only");
    return;
  }
  // Five steps on a parameter of odd length (every vector width leaves a tail), with every option
  // that changes the loops' shape.
  auto trajectory = [](DType dtype, bool adam) {
    manual_seed(7);
    Tensor p = (rand({1037}, kFloat64) * 2.0 - 1.0).to(dtype).requires_grad_(true);
    std::unique_ptr<optim::Optimizer> opt;
    if (adam) {
      optim::AdamOptions o;
      o.lr = 1e-2;
      o.weight_decay = 1e-2;
      o.amsgrad = true;
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, o);
    } else {
      optim::SGDOptions o;
      o.lr = 0.1;
      o.momentum = 0.9;
      o.weight_decay = 1e-3;
      o.nesterov = true;
      opt = std::make_unique<optim::SGD>(std::vector<Tensor>{p}, o);
    }
    for (int step = 0; step < 5; ++step) {
      opt->zero_grad();
      (p * p * p).sum().backward();
      opt->step();
    }
    return p.detach();
  };
  for (DType dtype : {kFloat64, kFloat32}) {
    for (bool adam : {false, true}) {
      CAPTURE(dtype_name(dtype), adam);
      std::vector<Tensor> r;
      for (CpuIsa isa : isas) {
        IsaScope scope(isa);
        r.push_back(trajectory(dtype, adam));
      }
      for (size_t k = 1; k < isas.size(); ++k) {
        CAPTURE(kernels::isa_name(isas[k]));
        if (isas.front() == CpuIsa::Avx512 && isas[k] == CpuIsa::Avx2) {
          CHECK(same_bits(r[k], r.front()));
        } else {
          CHECK(close(r[k], r.front(), dtype == kFloat32 ? 1e-5 : 1e-12));
        }
      }
    }
  }
}
