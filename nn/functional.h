// ember/nn/functional.h — the stateless side of nn (torch.nn.functional, imported as F).
//
// Each function is a thin wrapper over core ops: the modules in nn/ hold parameters and a
// training flag and call these. Use them directly where a model needs no state, as the seed
// writes `functional.relu(self.layer_1(x))`:
//
//   namespace F = ember::nn::functional;
//   x = F::relu((*layer_1)(x));
#pragma once

#include "core/ops.h"
#include "core/tensor.h"

namespace ember::nn::functional {

// y = x @ weight^T + bias. x is [*, in] (any number of leading dims), weight [out, in],
// bias [out] or undefined; y is [*, out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

Tensor relu(const Tensor& x);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// During training, zeroes each element with probability p (a fresh mask from the global
// generator on every call) and scales the survivors by 1 / (1 - p), so the expected value of
// each element is unchanged and evaluation needs no rescaling. With training false (or p 0) it
// returns x itself. p must lie in [0, 1).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

// logits [N, C], target int64 [N] of class indices, optional per-class weight [C].
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// Merges dims start_dim..end_dim into one. The defaults are torch.flatten's (everything into
// one dim); the Flatten module keeps the batch dim (start_dim = 1), as nn.Flatten does.
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);

}  // namespace ember::nn::functional

namespace ember::nn {
namespace F = functional;
}  // namespace ember::nn
