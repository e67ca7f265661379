// tests/cpu_isa_test_util.h — what the tests of the CPU kernels' instruction sets share
// (kernels/base/cpu_isa.h): switching the kernels for a scope, and the list this machine can run.
#pragma once

#include <vector>

#include "kernels/base/cpu_isa.h"

namespace ember::test {

// Switches the CPU kernels to one instruction set for a scope, and back to the one in use.
struct IsaScope {
  kernels::CpuIsa saved = kernels::cpu_isa();
  explicit IsaScope(kernels::CpuIsa isa) { kernels::set_cpu_isa(isa); }
  ~IsaScope() { kernels::set_cpu_isa(saved); }
  IsaScope(const IsaScope&) = delete;
  IsaScope& operator=(const IsaScope&) = delete;
};

// The instruction sets this machine and build can run, best first.
inline std::vector<kernels::CpuIsa> runnable_isas() {
  using kernels::CpuIsa;
  std::vector<CpuIsa> v;
  for (CpuIsa isa : {CpuIsa::Avx512, CpuIsa::Avx2, CpuIsa::Neon, CpuIsa::Baseline}) {
    if (kernels::isa_supported(isa)) v.push_back(isa);
  }
  return v;
}

}  // namespace ember::test
