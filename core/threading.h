// ember/core/threading.h — how many CPU threads ember uses, and which SIMD instructions.
#pragma once

#include <string>

namespace ember {

// The size of ember's CPU thread pool, which runs its loops and its GEMM panels
// (kernels/base/parallel.h). Defaults to EMBER_NUM_THREADS, else OMP_NUM_THREADS, else the
// number of cores. Set it between ops, not while other threads run them.
int get_num_threads();
void set_num_threads(int n);

// The instruction set ember's CPU kernels run: "avx512", "avx2" or "baseline"
// (kernels/base/cpu_isa.h). The best the CPU has, unless EMBER_CPU_ISA chose another;
// set_cpu_isa switches between ops (it throws for a name the CPU or build cannot run).
std::string get_cpu_isa();
void set_cpu_isa(const std::string& name);

}  // namespace ember
