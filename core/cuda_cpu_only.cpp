// Built only when ember has no CUDA backend (EMBER_CUDA=OFF, or AUTO without nvcc).
// The CUDA build replaces this file with kernels/cuda/runtime.cu.
#include "core/cuda.h"

namespace ember::cuda {

bool is_built() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
const char* unavailable_reason() {
  return "ember was built without CUDA (reconfigure with -DEMBER_CUDA=ON on a machine with the "
         "CUDA toolkit)";
}

}  // namespace ember::cuda
