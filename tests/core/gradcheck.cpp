// Every differentiable op case (tests/cases/*.cpp) through gradcheck in float64 on the CPU.
#include <catch2/catch.hpp>

#include "op_cases.h"

using namespace ember;

TEST_CASE("gradcheck: every differentiable op case", "[gradcheck]") {
  int checked = 0;
  for (const test::OpCase& c : test::op_cases()) {
    if (!c.differentiable) continue;
    DYNAMIC_SECTION(c.op << ": " << c.label) {
      const std::vector<Tensor> inputs = c.inputs();
      GradcheckOptions o;
      o.atol = c.atol;
      o.rtol = c.rtol;
      INFO("op " << c.op << ", case " << c.label);
      CHECK_NOTHROW(gradcheck(c.fn, inputs, o));
    }
    ++checked;
  }
  CHECK(checked > 0);
}

TEST_CASE("op cases: forward runs on float32 too and matches float64", "[ops]") {
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.op << ": " << c.label) {
      const std::vector<Tensor> in64 = c.inputs();
      std::vector<Tensor> in32;
      for (const Tensor& t : in64) in32.push_back(is_floating(t.dtype()) ? t.detach().to(kFloat32) : t);
      NoGradGuard ng;
      const Tensor y64 = c.fn(in64);
      const Tensor y32 = c.fn(in32);
      REQUIRE(y64.shape() == y32.shape());
      const auto a = y64.to_vector<double>();
      const auto b = y32.to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) CHECK(b[i] == Approx(a[i]).margin(1e-4).epsilon(1e-4));
    }
  }
}
