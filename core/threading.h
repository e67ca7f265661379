// ember/core/threading.h — how many CPU threads ember uses.
#pragma once

namespace ember {

// Threads for ember's CPU loops and Eigen's GEMM. Defaults to EMBER_NUM_THREADS, else
// OMP_NUM_THREADS, else the number of cores.
int get_num_threads();
void set_num_threads(int n);

}  // namespace ember
