// ember/nn/conv.h — convolution and pooling layers for NCHW images (torch.nn.Conv2d,
// torch.nn.MaxPool2d, torch.nn.AvgPool2d).
//
// Seed 002's first layer and its pooling, in ember:
//
//   PyTorch                                    ember
//   self.conv1 = nn.Conv2d(1, 32, 5)           conv1 = register_module("conv1",
//                                                  std::make_shared<nn::Conv2d>(1, 32, 5));
//   F.max_pool2d(F.relu(self.conv1(x)), (2, 2))  F::max_pool2d(F::relu((*conv1)(x)), {2, 2})
//
// Sizes that PyTorch takes as "an int or a tuple" are an int (the same for height and width) or a
// braced pair {height, width}: Conv2d(3, 6, 5) and Conv2d(3, 6, {5, 3}, {1, 2}).
//
// Output size along each spatial dim, with input size H, kernel R, stride s, padding p,
// dilation d (floor division, as PyTorch):
//   P = (H + 2p - d(R - 1) - 1) / s + 1
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/ops.h"
#include "nn/module.h"

namespace ember::nn {

// (height, width): a kernel size, stride, padding or dilation.
using Size2 = std::array<int64_t, 2>;

// y[n, k] = bias[k] + sum over c of (weight[k, c] cross-correlated with x[n, c]): each of the
// out_channels filters sees the in_channels / groups input channels of its group (all of them
// for groups = 1; one for a depthwise layer, groups = in_channels).
class Conv2d : public Layer {
 public:
  // weight [out_channels, in_channels / groups, kh, kw] and bias [out_channels] start with
  // PyTorch's default initialisation (see reset_parameters), drawn from ember's global
  // generator. The arguments come in torch.nn.Conv2d's order; groups must divide both channel
  // counts.
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = {1, 1},
         Size2 padding = {0, 0}, Size2 dilation = {1, 1}, int64_t groups = 1, bool bias = true);
  // The square form: Conv2d(1, 32, 5) is a 5x5 kernel.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
         int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true);

  // x [N, in_channels, H, W] (or [in_channels, H, W]: one image) -> [N, out_channels, P, Q].
  Tensor forward(const Tensor& x) override;

  // Re-draws the parameters in place: weight kaiming_uniform_(a = sqrt(5)), i.e.
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels / groups * kh * kw, and the
  // bias from
  // the same interval (nn/init.h).
  void reset_parameters();

  std::string name() const override { return "Conv2d"; }
  // PyTorch's: "1, 32, kernel_size=(5, 5), stride=(1, 1)", then padding, dilation, groups
  // and bias=False only where they differ from the defaults.
  std::string extra_repr() const override;

  // The options this layer hands to ember::conv2d.
  Conv2dOptions options() const { return {stride, padding, dilation, groups}; }

  const int64_t in_channels;
  const int64_t out_channels;
  const Size2 kernel_size, stride, padding, dilation;
  const int64_t groups;
  // Registered as parameters "weight" and "bias" (undefined when built with bias = false).
  // Handles to the registered tensors: change their values in place, do not reassign them.
  Tensor weight;
  Tensor bias;
};

// The maximum over each kernel_size window, moved by stride (default: the kernel size, so the
// windows tile the image). Padding (at most half the kernel) never wins: it counts as -inf.
class MaxPool2d : public Layer {
 public:
  // stride {0, 0} means "the kernel size", PyTorch's stride=None. The arguments come in
  // torch.nn.MaxPool2d's order. return_indices only records the wish (it prints): forward()
  // returns the values in C++, forward_with_indices() the values and the indices.
  explicit MaxPool2d(Size2 kernel_size, Size2 stride = {0, 0}, Size2 padding = {0, 0},
                     Size2 dilation = {1, 1}, bool return_indices = false, bool ceil_mode = false);
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                     int64_t dilation = 1, bool return_indices = false, bool ceil_mode = false);

  // x [N, C, H, W] (or [C, H, W]) -> [N, C, P, Q].
  Tensor forward(const Tensor& x) override;
  // The values and, per output, the int64 flat index h * W + w of its input in the plane
  // (what MaxPool2d(return_indices=True) returns).
  ValuesIndices forward_with_indices(const Tensor& x);

  std::string name() const override { return "MaxPool2d"; }
  // "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False" — ints when built from
  // ints, "(2, 2)" pairs when built from pairs, as PyTorch prints what it was given.
  std::string extra_repr() const override;

  Pool2dOptions options() const { return {kernel_size, stride, padding, dilation, ceil_mode}; }

  const Size2 kernel_size, stride, padding;  // stride already resolved (never 0)
  const Size2 dilation;
  const bool return_indices, ceil_mode;

 private:
  bool square_;  // built from ints: print ints
};

// The mean over each window; padded positions count as zeros in the mean (PyTorch's default
// count_include_pad=True).
class AvgPool2d : public Layer {
 public:
  // torch.nn.AvgPool2d's order; count_include_pad = false divides by the taps inside the input.
  explicit AvgPool2d(Size2 kernel_size, Size2 stride = {0, 0}, Size2 padding = {0, 0},
                     bool ceil_mode = false, bool count_include_pad = true);
  explicit AvgPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true);

  Tensor forward(const Tensor& x) override;

  std::string name() const override { return "AvgPool2d"; }
  // "kernel_size=2, stride=2, padding=0", as PyTorch's AvgPool2d prints.
  std::string extra_repr() const override;

  Pool2dOptions options() const {
    return {kernel_size, stride, padding, {1, 1}, ceil_mode, count_include_pad};
  }

  const Size2 kernel_size, stride, padding;
  const bool ceil_mode, count_include_pad;

 private:
  bool square_;
};

}  // namespace ember::nn
