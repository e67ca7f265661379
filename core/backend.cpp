// ember/core/backend.cpp — the backend of a device (core/backend.h).
#include "core/backend.h"

#include <string>

namespace ember {

const kernels::Backend& backend_for(Device device) {
  if (!device.is_cuda()) return kernels::cpu_backend();
  const kernels::Backend* cuda_backend = kernels::cuda_backend();
  if (!cuda_backend)
    throw DeviceError("no kernels for " + device.str() + ": " + cuda::unavailable_reason() +
                      ". Use device \"cpu\"");
  return *cuda_backend;
}

}  // namespace ember
