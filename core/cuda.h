// ember/core/cuda.h — asking about CUDA from code that must also build without it.
#pragma once

namespace ember::cuda {

// Was this build of ember compiled with its CUDA backend (EMBER_CUDA=ON or AUTO with nvcc)?
bool is_built();
// Is there at least one usable GPU (a driver, a visible device)? Never throws: on a machine
// without a GPU or driver it is simply false, as torch.cuda.is_available().
bool is_available();
// Number of visible devices (after CUDA_VISIBLE_DEVICES); 0 without a GPU.
int device_count();
// One line explaining why is_available() is false ("no CUDA driver", "not built with CUDA"...).
const char* unavailable_reason();

}  // namespace ember::cuda
