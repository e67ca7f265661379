// ember/kernels/cuda/optim.h — fused optimizer updates for many parameters in one launch.
//
// On the GPU a training step of a small model is bound by kernel launches, not by arithmetic:
// updating six parameters with tensor ops is ~40 launches. These kernels take the whole list of
// parameters at once ("multi-tensor apply"): the launcher packs up to kMaxTensorsPerLaunch
// (pointer, size) entries into the kernel's argument block, and each CUDA block works on one
// chunk of one tensor. The per-element math is exactly kernels/cpu/optim.h's (SGDStep,
// AdamStep are the same structs), so both devices produce the same numbers up to the last ulp
// of exp/sqrt.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/base/dtype.h"
#include "kernels/cpu/optim.h"

namespace ember::kernels::cuda {

using cpu::AdamStep;
using cpu::SGDStep;

// The parameters of one optimizer step, all of one dtype, all contiguous device buffers.
// Entry i: params[i], grads[i] and each state buffer hold sizes[i] elements. A state list is
// empty when unused (momentum_bufs without momentum, max_exp_avg_sqs without amsgrad).
struct ParamList {
  std::vector<void*> params;
  std::vector<const void*> grads;
  std::vector<int64_t> sizes;
};

void sgd_step(DType dtype, const ParamList& list, const std::vector<void*>& momentum_bufs,
              const SGDStep& s);
void adam_step(DType dtype, const ParamList& list, const std::vector<void*>& exp_avgs,
               const std::vector<void*>& exp_avg_sqs, const std::vector<void*>& max_exp_avg_sqs,
               const AdamStep& s);

}  // namespace ember::kernels::cuda
