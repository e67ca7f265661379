// ember/kernels/optim.h — the optim family: one-pass optimizer updates of a list of parameters.
//   CPU:  kernels/cpu/optim.cpp (each parameter in one pass over memory, blocks that stay in L1).
//   CUDA: kernels/cuda/optim.cu (the whole list in one launch: "multi-tensor apply"; on a GPU a
//         small model's step is bound by launches, and six parameters updated with tensor ops
//         are ~40 launches).
//
// Written with tensor ops, an optimizer step walks every parameter-sized buffer several times:
// SGD with momentum is buf *= m; buf += (1 - dampening) * g; p += -lr * buf — three passes, and
// Adam is seven passes with four temporaries. The step is memory-bound (a few flops per element),
// so these kernels do the whole update in one pass: each element of the parameter, its gradient
// and its state is loaded once and stored once.
//
// The arithmetic is the same sequence of roundings as the tensor-op path in optim/sgd.cpp and
// optim/adam.cpp — every `x.add_(y, alpha)` there is axpy(x, alpha, y) here, computed the way
// the elementwise Add kernel computes it — so the two paths give the same numbers
// (tests/optim/optim.cpp compares them; Adam's square root is the one exception, see
// adam_step). Coefficients arrive as doubles and are rounded to the element type once, as a
// Python float scalar is in PyTorch. Adam reads each element from memory once and writes it
// once, working in blocks that stay in L1 (kernels/cpu/optim.cpp explains its three passes).
//
// All buffers of one entry hold the same number of elements of `dtype` (float32 or float64),
// contiguous, and no two buffers overlap.
#pragma once

#include <cstdint>
#include <vector>
#include "kernels/base/dtype.h"

namespace ember::kernels {

// torch.optim.SGD for one parameter p with gradient g:
//   d = g + weight_decay * p
//   momentum != 0:  b = d on the first step, else b = momentum * b + (1 - dampening) * d
//                   d = nesterov ? d + momentum * b : b
//   p = p - lr * d
struct SGDStep {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool first_step = false;  // the momentum buffer is written, not read
};
// torch.optim.Adam / AdamW for one parameter p with gradient g, at step t (counted from 1):
//   AdamW (decoupled):   p = p * (1 - lr * weight_decay)
//   Adam (L2 penalty):   g = g + weight_decay * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   amsgrad:             v_max = max(v_max, v), and v_max stands for v below
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//   p = p - (lr / (1 - beta1^t)) * m / denom
struct AdamStep {
  double lr = 0.0;
  double beta1 = 0.0;
  double beta2 = 0.0;
  double eps = 0.0;
  double weight_decay = 0.0;
  bool decoupled_weight_decay = false;  // AdamW
  double bias_correction2_sqrt = 1.0;   // sqrt(1 - beta2^t)
  double step_size = 0.0;               // lr / (1 - beta1^t)
};
// The parameters of one optimizer step, all of one dtype, all contiguous buffers of the
// backend's device. Entry i: params[i], grads[i] and each state buffer hold sizes[i] elements.
// A state list is empty when unused (momentum_bufs without momentum, max_exp_avg_sqs without
// amsgrad).
struct ParamList {
  std::vector<void*> params;
  std::vector<const void*> grads;
  std::vector<int64_t> sizes;
};

struct OptimKernels {
  void (*sgd_step)(DType dtype, const ParamList& list, const std::vector<void*>& momentum_bufs,
                   const SGDStep& s);
  // max_exp_avg_sqs is empty unless amsgrad. The square root is the correctly rounded IEEE one
  // (std::sqrt, as PyTorch's); ember's sqrt op, which the tensor-op path uses, is Eigen's and may
  // be an ulp off it where Eigen's fast-math approximation is on.
  void (*adam_step)(DType dtype, const ParamList& list, const std::vector<void*>& exp_avgs,
                    const std::vector<void*>& exp_avg_sqs,
                    const std::vector<void*>& max_exp_avg_sqs, const AdamStep& s);
};

// The CPU tables, one per instruction set the kernel file is compiled for
// (kernels/cpu/isa_variant.h: avx2 and avx512 exist in portable x86-64 builds only).
namespace cpu::baseline {
extern const OptimKernels optim_kernels;
}
namespace cpu::avx2 {
extern const OptimKernels optim_kernels;
}
namespace cpu::avx512 {
extern const OptimKernels optim_kernels;
}
namespace cuda {
extern const OptimKernels optim_kernels;
}

}  // namespace ember::kernels
