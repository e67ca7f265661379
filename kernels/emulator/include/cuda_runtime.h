// ember/kernels/emulator/include/cuda_runtime.h — what `#include <cuda_runtime.h>` finds in
// the emulation build (-DEMBER_CUDA=EMULATE): ember's CPU implementation of the CUDA runtime and
// of the kernel language, instead of NVIDIA's header. See kernels/emulator/device.h.
#pragma once

#include "kernels/emulator/device.h"
#include "kernels/emulator/runtime_api.h"
