// examples/common/device.h — how the examples pick their device, as the seeds do:
//   device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
// plus one thing the seeds cannot: a GPU this build of ember carries no code for is reported
// and the example trains on the CPU instead. An explicit --device is taken as given.
#pragma once

#include <cstdio>
#include <string>

#include "core/ember.h"

namespace examples {

using ember::Device;
namespace cuda = ember::cuda;

// `requested` is the --device flag ("" when not given); `gpu` is the device the seed names.
inline Device choose_device(const std::string& requested, const char* gpu = "cuda") {
  if (!requested.empty()) return Device(requested);
  if (!cuda::is_available()) return Device::cpu();
  std::string why;
  if (!cuda::device_supported(cuda::current_device(), &why)) {
    std::printf("device: the GPU cannot be used (%s); using cpu\n", why.c_str());
    return Device::cpu();
  }
  return Device(gpu);
}

// "device: cpu (no GPU: <reason>)" when the CPU was chosen for lack of a GPU, else "device: X".
inline void print_device(const Device& device, const std::string& requested) {
  std::printf("device: %s%s\n", device.str().c_str(),
              requested.empty() && !cuda::is_available()
                  ? (std::string(" (no GPU: ") + cuda::unavailable_reason() + ")").c_str()
                  : "");
}

}  // namespace examples
