// ember/kernels/backend.cpp — the two backends, assembled from the tables at the bottom of each
// kernel file. The only place where the CPU-only build differs: it has no CUDA tables to name.
#include "kernels/backend.h"

#include "kernels/conv.h"
#include "kernels/cross_entropy.h"
#include "kernels/device_runtime.h"
#include "kernels/elementwise.h"
#include "kernels/gemm.h"
#include "kernels/index.h"
#include "kernels/optim.h"
#include "kernels/pool.h"
#include "kernels/random.h"
#include "kernels/reduce.h"
#include "kernels/softmax.h"
#include "kernels/sort.h"

namespace ember::kernels {

const Backend& cpu_backend() {
  static const Backend backend{"cpu",
                               cpu::elementwise_kernels,
                               cpu::reduce_kernels,
                               cpu::softmax_kernels,
                               cpu::cross_entropy_kernels,
                               cpu::index_kernels,
                               cpu::pool_kernels,
                               cpu::conv_kernels,
                               cpu::gemm_kernels,
                               cpu::optim_kernels,
                               cpu::random_kernels,
                               cpu::sort_kernels,
                               nullptr};
  return backend;
}

const Backend* cuda_backend() {
#if defined(EMBER_WITH_CUDA)
  static const Backend backend{"cuda",
                               cuda::elementwise_kernels,
                               cuda::reduce_kernels,
                               cuda::softmax_kernels,
                               cuda::cross_entropy_kernels,
                               cuda::index_kernels,
                               cuda::pool_kernels,
                               cuda::conv_kernels,
                               cuda::gemm_kernels,
                               cuda::optim_kernels,
                               cuda::random_kernels,
                               cuda::sort_kernels,
                               &cuda::device_runtime};
  return &backend;
#else
  return nullptr;
#endif
}

}  // namespace ember::kernels
