// ember/kernels/emulator/include/mma.h — what `#include <mma.h>` finds in the emulation build
// (-DEMBER_CUDA=EMULATE): the emulator's tensor-core warp matrix operations (nvcuda::wmma),
// instead of NVIDIA's header. See kernels/emulator/mma.h.
#pragma once

#include "kernels/emulator/mma.h"
