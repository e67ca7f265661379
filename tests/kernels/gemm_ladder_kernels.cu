// tests/kernels/gemm_ladder_kernels.cu — the rungs of the SGEMM ladder (bench/gemm/01..08) for
// tests/kernels/gemm_ladder.cpp. Compiled as CUDA by nvcc in a CUDA build, and in the emulation
// build exactly like kernels/cuda/*.cu (as C++, with the access instrumentation the checkers
// need; tests/CMakeLists.txt). Rung 08 (TF32 tensor cores through WMMA) finds CUDA's <mma.h>
// under nvcc and the emulator's (kernels/emulator/mma.h) in the emulation build.
//
// The launchers take device pointers and return the launch's error as an int (cudaSuccess is 0),
// so that the test needs no kernel code; their declarations are in gemm_ladder.cpp.
#include <cuda_runtime.h>

#include "bench/gemm/01_naive.cuh"
#include "bench/gemm/02_coalesced.cuh"
#include "bench/gemm/03_shared_tiles.cuh"
#include "bench/gemm/04_1d_register_tiles.cuh"
#include "bench/gemm/05_2d_register_tiles.cuh"
#include "bench/gemm/06_vectorized.cuh"
#include "bench/gemm/07_warp_tiles.cuh"
#include "bench/gemm/08_tf32_mma.cuh"

namespace ember_test::gemm_ladder {

// C[M, N] = A[M, K] @ B[K, N] with rung `rung` (1-8) on ember's stream, then a synchronize: an
// error inside the kernel surfaces here on a GPU too. A launch the emulator's checkers stop throws
// ember::DeviceError with the report (EMBER_LAUNCH_CHECK in the launcher), and so does rung 08 on
// a GPU older than sm_80.
int run_rung(int rung, const float* A, const float* B, float* C, int M, int N, int K) {
  namespace gemm = ember::bench::gemm;
  using Launch = void (*)(const float*, const float*, float*, int, int, int, cudaStream_t);
  static const Launch launches[] = {gemm::launch_01, gemm::launch_02, gemm::launch_03,
                                    gemm::launch_04, gemm::launch_05, gemm::launch_06,
                                    gemm::launch_07, gemm::launch_08};
  if (rung < 1 || rung > 8) return static_cast<int>(cudaErrorInvalidValue);
  const cudaStream_t s = ember::kernels::cuda::stream();
  launches[rung - 1](A, B, C, M, N, K, s);
  return static_cast<int>(cudaStreamSynchronize(s));
}

// Would rungs 06, 07 and 08 take their float4 path for these operands?
bool float4_path(const float* A, const float* B, const float* C, int N, int K) {
  return ember::bench::gemm::float4_path_ok(A, B, C, N, K);
}

}  // namespace ember_test::gemm_ladder
