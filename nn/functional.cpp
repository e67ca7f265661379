// ember/nn/functional.cpp — thin wrappers over core ops; the checks here are the ones the
// core ops cannot phrase in nn's terms (features, weights, dropout probability).
#include "nn/functional.h"

#include "kernels/base/error.h"

namespace ember::nn::functional {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  EMBER_CHECK(weight.dim() == 2, "linear: the weight must be 2-d [out_features, in_features], "
              "got shape ", shape_str(weight.shape()));
  const int64_t out_features = weight.size(0), in_features = weight.size(1);
  EMBER_CHECK(x.dim() >= 1, "linear: the input must have at least 1 dimension (its features), "
              "got a 0-d tensor");
  EMBER_CHECK(x.size(-1) == in_features, "linear: the input of shape ", shape_str(x.shape()),
              " has ", x.size(-1), " features in its last dimension but the weight ",
              shape_str(weight.shape()), " expects ", in_features);
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_features),
              "linear: the bias must have shape [", out_features, "] to match the weight ",
              shape_str(weight.shape()), ", got ", shape_str(bias.shape()));
  // weight.t() is a free view; matmul hands it to the GEMM as a transposed operand, and a
  // [B, T, in] input becomes one [B*T, in] GEMM (see core/ops/matmul.cpp).
  const Tensor y = x.matmul(weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor relu(const Tensor& x) { return ember::relu(x); }

Tensor softmax(const Tensor& x, int64_t dim) { return ember::softmax(x, dim); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return ember::log_softmax(x, dim); }

Tensor dropout(const Tensor& x, double p, bool training) {
  EMBER_CHECK(p >= 0.0 && p < 1.0, "dropout: p is the probability of zeroing an element and must "
              "lie in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  EMBER_CHECK(is_floating(x.dtype()), "dropout: expected a float32 or float64 input, got ",
              x.dtype(), " (convert with .to(ember::kFloat32))");
  // u ~ U[0, 1) is >= p with probability 1 - p: that element is kept. The mask and its scale
  // need no gradient, so the only recorded op is the multiplication with x.
  const Tensor u = rand(x.shape(), x.options());
  const Tensor keep = ge(u, full({}, p, x.options()));
  const Tensor scale = keep.to(x.dtype()) * (1.0 / (1.0 - p));
  return x * scale;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     Reduction reduction, int64_t ignore_index, double label_smoothing) {
  return ember::cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return ember::mse_loss(input, target, reduction);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  return x.flatten(start_dim, end_dim);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
              std::array<int64_t, 2> dilation, int64_t groups) {
  Conv2dOptions options;
  options.stride = stride;
  options.padding = padding;
  options.dilation = dilation;
  options.groups = groups;
  // ember::conv2d takes a batch; one image [C, H, W] goes through as a batch of one, as
  // F.conv2d accepts it.
  if (x.defined() && x.dim() == 3) {
    return ember::conv2d(x.unsqueeze(0), weight, bias, options).squeeze(0);
  }
  return ember::conv2d(x, weight, bias, options);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups) {
  return conv2d(x, weight, bias, {stride, stride}, {padding, padding}, {dilation, dilation},
                groups);
}

Tensor max_pool2d(const Tensor& x, std::array<int64_t, 2> kernel_size,
                  std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                  std::array<int64_t, 2> dilation, bool ceil_mode) {
  return ember::max_pool2d(x, Pool2dOptions{kernel_size, stride, padding, dilation, ceil_mode});
}

Tensor max_pool2d(const Tensor& x, int64_t kernel_size, int64_t stride, int64_t padding,
                  int64_t dilation, bool ceil_mode) {
  return max_pool2d(x, {kernel_size, kernel_size}, {stride, stride}, {padding, padding},
                    {dilation, dilation}, ceil_mode);
}

ValuesIndices max_pool2d_with_indices(const Tensor& x, std::array<int64_t, 2> kernel_size,
                                      std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                                      std::array<int64_t, 2> dilation, bool ceil_mode) {
  return ember::max_pool2d_with_indices(x, Pool2dOptions{kernel_size, stride, padding, dilation,
                                                         ceil_mode});
}

Tensor avg_pool2d(const Tensor& x, std::array<int64_t, 2> kernel_size,
                  std::array<int64_t, 2> stride, std::array<int64_t, 2> padding, bool ceil_mode,
                  bool count_include_pad) {
  return ember::avg_pool2d(
      x, Pool2dOptions{kernel_size, stride, padding, {1, 1}, ceil_mode, count_include_pad});
}

Tensor avg_pool2d(const Tensor& x, int64_t kernel_size, int64_t stride, int64_t padding,
                  bool ceil_mode, bool count_include_pad) {
  return avg_pool2d(x, {kernel_size, kernel_size}, {stride, stride}, {padding, padding}, ceil_mode,
                    count_include_pad);
}

Tensor one_hot(const Tensor& labels, int64_t num_classes, DType dtype) {
  EMBER_CHECK(labels.defined(), "one_hot: the labels are undefined");
  EMBER_CHECK(labels.dtype() == kInt64, "one_hot: expected int64 class indices, got ",
              labels.dtype(), " (convert with .to(ember::kInt64))");
  EMBER_CHECK(num_classes >= 1 || num_classes == -1, "one_hot: num_classes must be at least 1 "
              "(or -1: max(labels) + 1), got ", num_classes);
  if (labels.numel() > 0) {
    const auto lo = static_cast<int64_t>(ember::min(labels).item());
    const auto hi = static_cast<int64_t>(ember::max(labels).item());
    EMBER_CHECK(lo >= 0, "one_hot: class indices must not be negative, got ", lo);
    if (num_classes == -1) num_classes = hi + 1;
    EMBER_CHECK(hi < num_classes, "one_hot: class index ", hi, " is out of range for ",
                num_classes, " classes (indices run from 0 to ", num_classes - 1, ")");
  }
  EMBER_CHECK(num_classes >= 1, "one_hot: with no labels, num_classes must be given");
  // Row i compares labels[i] with every class number 0..C-1: true exactly at the label.
  const Tensor classes = arange(static_cast<double>(num_classes),
                                TensorOptions(kInt64).device(labels.device()));
  return eq(labels.unsqueeze(-1), classes).to(dtype);
}

}  // namespace ember::nn::functional
