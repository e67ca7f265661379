// ember/kernels/cuda/runtime.cu — asking the CUDA runtime what is there.
//
// cudaGetDeviceCount is the one call that tells "no driver", "no device" and "N devices" apart
// without crashing; everything else in ember's CUDA backend starts from here. The answer is
// computed once: the set of visible devices (CUDA_VISIBLE_DEVICES) is fixed when the runtime
// first initialises, exactly as in PyTorch.
#include <cuda_runtime.h>

#include <string>

#include "core/cuda.h"

namespace ember::cuda {

namespace {
struct Probe {
  int count = 0;
  std::string reason;
  Probe() {
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      count = 0;
      reason = std::string("the CUDA runtime found no usable GPU: ") + cudaGetErrorString(err);
      cudaGetLastError();  // clear the sticky error so later calls start clean
    } else if (count == 0) {
      reason = "the CUDA runtime reports 0 devices (check CUDA_VISIBLE_DEVICES)";
    }
  }
};
const Probe& probe() {
  static Probe p;
  return p;
}
}  // namespace

bool is_built() { return true; }
bool is_available() { return probe().count > 0; }
int device_count() { return probe().count; }
const char* unavailable_reason() {
  return probe().count > 0 ? "" : probe().reason.c_str();
}

}  // namespace ember::cuda
