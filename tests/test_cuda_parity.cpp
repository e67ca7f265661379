// Every op case on CUDA against the CPU: the forward output and the gradient of every input.
// On a machine without a usable GPU (CI, most laptops) the test prints "SKIPPED: <reason>",
// which CTest reports as a skipped test.
#include <iostream>

#include <catch2/catch.hpp>

#include "op_cases.h"

using namespace ember;

namespace {

bool skip_without_gpu() {
  if (cuda::is_available()) return false;
  std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
  return true;
}

void require_close(const Tensor& cpu, const Tensor& gpu, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(gpu.device().is_cuda());
  REQUIRE(cpu.shape() == gpu.shape());
  REQUIRE(cpu.dtype() == gpu.dtype());
  const auto a = cpu.to_vector<double>();
  const auto b = gpu.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    CHECK(b[i] == Approx(a[i]).margin(tol).epsilon(tol));
  }
}

}  // namespace

TEST_CASE("cuda parity: every op case matches the CPU (output and input gradients)", "[cuda]") {
  if (skip_without_gpu()) return;
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.op << ": " << c.label) {
      const std::vector<Tensor> cpu_in = c.inputs();
      std::vector<Tensor> gpu_in;
      for (const Tensor& t : cpu_in) {
        Tensor g = t.detach().to(Device::cuda(0));
        if (t.requires_grad()) g.requires_grad_(true);
        gpu_in.push_back(g);
      }
      const Tensor y_cpu = c.fn(cpu_in);
      const Tensor y_gpu = c.fn(gpu_in);
      require_close(y_cpu, y_gpu, 1e-9, "forward output");
      if (!c.differentiable) continue;
      const Tensor w = ones_like(y_cpu.detach());
      (y_cpu * w).sum().backward();
      (y_gpu * w.to(Device::cuda(0))).sum().backward();
      for (size_t i = 0; i < cpu_in.size(); ++i) {
        if (!cpu_in[i].requires_grad()) continue;
        require_close(cpu_in[i].grad(), gpu_in[i].grad(), 1e-9, "gradient of input " + std::to_string(i));
      }
    }
  }
}
