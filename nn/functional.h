// ember/nn/functional.h — the stateless side of nn (torch.nn.functional, imported as F).
//
// Each function is a thin wrapper over core ops: the modules in nn/ hold parameters and a
// training flag and call these. Use them directly where a model needs no state, as the seed
// writes `functional.relu(self.layer_1(x))`:
//
//   namespace F = ember::nn::functional;
//   x = F::relu((*layer_1)(x));
#pragma once

#include <array>
#include <cstdint>

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

// logits [N, C], target int64 [N] of class indices (or float [N, C] class probabilities),
// optional per-class weight [C], label_smoothing in [0, 1] (core/ops/cross_entropy.cpp).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// Merges dims start_dim..end_dim into one. The defaults are torch.flatten's (everything into
// one dim); the Flatten module keeps the batch dim (start_dim = 1), as nn.Flatten does.
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);

// ---- convolution and pooling (F.conv2d, F.max_pool2d, F.avg_pool2d) ------------------------
// Sizes are braced {height, width} pairs or, in the second form of each, one int for both.
// x [N, C, H, W] or [C, H, W] (one image); see ember::conv2d / max_pool2d in core/ops.h.

// x [N, C, H, W], weight [K, C/groups, R, S], bias [K] or undefined -> [N, K, P, Q].
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              std::array<int64_t, 2> stride, std::array<int64_t, 2> padding = {0, 0},
              std::array<int64_t, 2> dilation = {1, 1}, int64_t groups = 1);
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);

// stride {0, 0} (or 0) means "the kernel size", PyTorch's stride=None. Seed 002's
// F.max_pool2d(x, (2, 2)) is F::max_pool2d(x, {2, 2}).
// The later arguments in F's order: max_pool2d(..., dilation, ceil_mode), avg_pool2d(...,
// ceil_mode, count_include_pad); return_indices=True is max_pool2d_with_indices.
Tensor max_pool2d(const Tensor& x, std::array<int64_t, 2> kernel_size,
                  std::array<int64_t, 2> stride = {0, 0}, std::array<int64_t, 2> padding = {0, 0},
                  std::array<int64_t, 2> dilation = {1, 1}, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                  int64_t dilation = 1, bool ceil_mode = false);
ValuesIndices max_pool2d_with_indices(const Tensor& x, std::array<int64_t, 2> kernel_size,
                                      std::array<int64_t, 2> stride = {0, 0},
                                      std::array<int64_t, 2> padding = {0, 0},
                                      std::array<int64_t, 2> dilation = {1, 1},
                                      bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, std::array<int64_t, 2> kernel_size,
                  std::array<int64_t, 2> stride = {0, 0}, std::array<int64_t, 2> padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d(const Tensor& x, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);

// ---- labels ----------------------------------------------------------------------------------
// Class indices -> one-hot rows: labels int64 [*] with values in [0, num_classes) becomes
// [*, num_classes] with a 1 at each label and 0 elsewhere, on the labels' device. Seed 002's
// np.eye(2)[label]. num_classes -1 takes max(labels) + 1, as F.one_hot does.
// Unlike F.one_hot (int64), the result is float32 by default — what MSELoss against a softmax
// needs; pass kInt64 for PyTorch's dtype. Checks the range of the labels (on a GPU that waits
// for them).
Tensor one_hot(const Tensor& labels, int64_t num_classes = -1, DType dtype = kFloat32);

}  // namespace ember::nn::functional

namespace ember::nn {
namespace F = functional;
}  // namespace ember::nn
