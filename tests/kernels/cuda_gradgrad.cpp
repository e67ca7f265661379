// Second derivatives on CUDA against the CPU. Under create_graph the backward of softmax,
// log_softmax, conv2d, max_pool2d, avg_pool2d, prod, max/min, cross_entropy and scatter_add runs
// as recorded ops (the recorded gradients of conv2d and avg_pool2d call their CUDA kernels again,
// max_pool2d's and max/min's a scatter_add, prod's a scan of cat/narrow/mul, cross_entropy's a
// softmax): for every case of these ops in the op table
// (tests/cases/*.cpp) the first-order gradient and a Hessian-vector product are computed on
// both devices and compared, in float64.
//
// Without a usable GPU each test prints "SKIPPED: <reason>"; in the emulation build
// (-DEMBER_CUDA=EMULATE) the CUDA kernels run under the emulator and its checkers.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda_test_util.h"
#include "op_cases.h"

using namespace ember;

namespace {

// A copy of `t` on device d with t's layout (the same view of a copy of its whole buffer), so
// a strided CPU case runs the strided CUDA path too.
Tensor twin_on(const Tensor& t, Device d) {
  const auto storage_numel = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  const Tensor moved = make_view(t, {storage_numel}, {1}, 0).detach().to(d);
  Tensor v = make_view(moved, t.shape(), t.strides(), t.offset());
  if (t.requires_grad()) v.requires_grad_(true);
  return v;
}

// Fixed values of `shape` (no generator involved), the same on every device.
Tensor wave(const Shape& shape, double phase, Device d) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> values(static_cast<size_t>(n));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = std::sin(phase + 0.37 * static_cast<double>(i));
  return from_vector<double>(values, shape, TensorOptions(kFloat64)).to(d);
}

struct SecondOrder {
  std::vector<Tensor> grads;  // dL/dx_i with L = <fn(x), v>, recorded
  // d<grads, u>/dx_i (the Hessian of L times u) and, last, d<grads, u>/dv (for the pools, whose
  // gradient is linear in v and constant in x, the only nonzero part).
  std::vector<Tensor> hvp;
};

SecondOrder second_order(const test::OpCase& c, Device d) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : c.inputs()) inputs.push_back(t.defined() ? twin_on(t, d) : Tensor());
  std::vector<Tensor> wrt;
  for (const Tensor& x : inputs)
    if (x.defined() && x.requires_grad()) wrt.push_back(x);
  const Tensor y = c.fn(inputs);
  const Tensor v = wave(y.shape(), 0.5, d).requires_grad_(true);
  SecondOrder out;
  out.grads = autograd::grad({y}, wrt, {v}, /*retain_graph=*/true, /*create_graph=*/true,
                             /*allow_unused=*/true);
  // <grads, u>: a scalar whose gradient is the Hessian-vector product.
  Tensor dot = zeros({}, TensorOptions(kFloat64).device(d));
  for (size_t i = 0; i < wrt.size(); ++i)
    if (out.grads[i].defined() && out.grads[i].requires_grad())
      dot = add(dot, sum(mul(out.grads[i], wave(wrt[i].shape(), 1.5 + double(i), d))));
  wrt.push_back(v);
  out.hvp = autograd::grad({dot}, wrt, {}, false, false, /*allow_unused=*/true);
  return out;
}

void require_same(const Tensor& cpu, const Tensor& dev, const std::string& what) {
  INFO(what);
  REQUIRE(cpu.defined() == dev.defined());
  if (!cpu.defined()) return;
  REQUIRE(dev.device().is_cuda());
  const std::vector<double> a = cpu.to_vector<double>();
  const std::vector<double> b = dev.to(Device::cpu()).to_vector<double>();
  REQUIRE(a.size() == b.size());
  int64_t bad = 0;
  for (size_t k = 0; k < a.size(); ++k)
    if (!(std::abs(a[k] - b[k]) <= 1e-10 + 1e-8 * std::abs(a[k]))) ++bad;
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("cuda gradgrad: Hessian-vector products of the recorded backwards match the CPU",
          "[cuda][gradgrad]") {
  if (test::skip_without_gpu()) return;
  const std::vector<std::string> ops = {"softmax",       "log_softmax", "conv2d", "max_pool2d",
                                        "avg_pool2d",    "prod",        "max",    "min",
                                        "cross_entropy", "scatter_add"};
  int checked = 0;
  for (const test::OpCase& c : test::op_cases()) {
    bool wanted = false;
    for (const std::string& op : ops) wanted = wanted || op == c.op;
    if (!wanted || !c.differentiable) continue;
    DYNAMIC_SECTION(c.op << ": " << c.label) {
      const SecondOrder cpu = second_order(c, Device::cpu());
      const SecondOrder dev = second_order(c, test::kCuda0);
      REQUIRE(cpu.grads.size() == dev.grads.size());
      for (size_t i = 0; i < cpu.grads.size(); ++i)
        require_same(cpu.grads[i], dev.grads[i], "gradient of input " + std::to_string(i));
      REQUIRE(cpu.hvp.size() == dev.hvp.size());
      for (size_t i = 0; i < cpu.hvp.size(); ++i)
        require_same(cpu.hvp[i], dev.hvp[i], "Hessian-vector product, input " + std::to_string(i));
      // Not all zeros: a second derivative was really computed (except where the output is a
      // constant: softmax over a dim of size 1 is 1 whatever its input, and so cross_entropy
      // over one class is 0).
      double largest = 0.0;
      for (const Tensor& h : cpu.hvp)
        if (h.defined()) largest = std::max(largest, sum(abs(h)).item());
      if (c.label.find("dim of size 1") == std::string::npos &&
          c.label.find("one class") == std::string::npos)
        CHECK(largest > 0.0);
    }
    ++checked;
  }
  CHECK(checked >= 40);  // every case of the ten ops
}
