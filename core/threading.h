// ember/core/threading.h — how many CPU threads ember uses.
#pragma once

namespace ember {

// The size of ember's CPU thread pool, which runs its loops and its GEMM panels
// (kernels/base/parallel.h). Defaults to EMBER_NUM_THREADS, else OMP_NUM_THREADS, else the
// number of cores. Set it between ops, not while other threads run them.
int get_num_threads();
void set_num_threads(int n);

}  // namespace ember
