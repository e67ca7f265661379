// ember/nn/conv.cpp — Conv2d, MaxPool2d, AvgPool2d: checks that name the layer, PyTorch's
// initialisation and printing; the work is ember::conv2d / max_pool2d / avg_pool2d
// (core/ops/conv2d.cpp, core/ops/pool2d.cpp) through nn::functional.
#include "nn/conv.h"

#include "kernels/base/error.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace ember::nn {

namespace {

// "(5, 5)", as Python prints a tuple.
std::string pair_str(const Size2& s) {
  return "(" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ")";
}

// "2" for a layer built from ints (both entries are then equal), else "(2, 2)".
std::string size_str(const Size2& s, bool square) {
  return square ? std::to_string(s[0]) : pair_str(s);
}

// A pooling layer's padding: as size_str, except that the default (none) prints as PyTorch's
// default argument "0" also when the kernel was given as a pair — MaxPool2d((2, 2)) prints
// "padding=0".
std::string padding_str(const Size2& s, bool square) {
  return s == Size2{0, 0} ? "0" : size_str(s, square);
}

// The checks every size of a layer must pass, in the layer's own words. `what` is the
// argument's name; `min` its smallest allowed value.
void check_size(const char* layer, const char* what, const Size2& s, int64_t min) {
  EMBER_CHECK(s[0] >= min && s[1] >= min, layer, ": ", what, " must be at least ", min,
              " in both dims, got ", pair_str(s));
}

Size2 resolve_stride(const Size2& stride, const Size2& kernel) {
  return {stride[0] == 0 ? kernel[0] : stride[0], stride[1] == 0 ? kernel[1] : stride[1]};
}

// The pooling layers' constructor checks (the op checks again, per call).
void check_pool(const char* layer, const Size2& kernel, const Size2& stride,
                const Size2& padding) {
  check_size(layer, "kernel_size", kernel, 1);
  check_size(layer, "stride", stride, 0);
  check_size(layer, "padding", padding, 0);
  for (int k = 0; k < 2; ++k) {
    EMBER_CHECK(2 * padding[k] <= kernel[k], layer, ": padding ", pair_str(padding),
                " must be at most half of kernel_size ", pair_str(kernel),
                " (PyTorch's rule), so that no window lies in the padding alone");
  }
}

// The input checks a pooling layer makes before calling the op: a clear message for the
// common mistake of a missing channel or batch dimension.
void check_pool_input(const Layer& layer, const Tensor& x) {
  EMBER_CHECK(x.defined(), layer.str(), ": the input is undefined");
  EMBER_CHECK(x.dim() == 3 || x.dim() == 4, layer.str(), ": expected a 4-d [N, C, H, W] or 3-d "
              "[C, H, W] input, got shape ", shape_str(x.shape()),
              x.dim() == 2 ? " (one grayscale image: x.view({1, 1, H, W}))" : "");
}

}  // namespace

// ---- Conv2d ---------------------------------------------------------------------------------

Conv2d::Conv2d(int64_t in, int64_t out, Size2 kernel, Size2 stride_, Size2 padding_,
               Size2 dilation_, int64_t groups_, bool with_bias)
    : in_channels(in),
      out_channels(out),
      kernel_size(kernel),
      stride(stride_),
      padding(padding_),
      dilation(dilation_),
      groups(groups_) {
  EMBER_CHECK(in >= 1 && out >= 1, "Conv2d(in_channels=", in, ", out_channels=", out,
              "): both channel counts must be at least 1");
  EMBER_CHECK(groups_ >= 1, "Conv2d: groups must be at least 1, got ", groups_,
              " (the argument after dilation is groups, as in torch.nn.Conv2d; bias comes "
              "after it)");
  EMBER_CHECK(in % groups_ == 0 && out % groups_ == 0, "Conv2d(in_channels=", in,
              ", out_channels=", out, ", groups=", groups_,
              "): groups must divide both channel "
              "counts (depthwise: groups = in_channels)");
  check_size("Conv2d", "kernel_size", kernel, 1);
  check_size("Conv2d", "stride", stride_, 1);
  check_size("Conv2d", "padding", padding_, 0);
  check_size("Conv2d", "dilation", dilation_, 1);
  weight = register_parameter("weight", empty({out, in / groups_, kernel[0], kernel[1]}));
  bias = register_parameter("bias", with_bias ? empty({out}) : Tensor());
  reset_parameters();
}

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride_, int64_t padding_,
               int64_t dilation_, int64_t groups_, bool with_bias)
    : Conv2d(in, out, Size2{kernel, kernel}, Size2{stride_, stride_}, Size2{padding_, padding_},
             Size2{dilation_, dilation_}, groups_, with_bias) {}

void Conv2d::reset_parameters() {
  // As torch.nn.Conv2d: kaiming_uniform_(a = sqrt(5)) on the weight, fan_in = in/groups*kh*kw,
  // which makes the bound 1 / sqrt(fan_in); the bias draws from the same interval.
  init::default_layer_init_(weight, bias);
}

Tensor Conv2d::forward(const Tensor& x) {
  // The checks the op would also make, phrased for this layer so that a model's error says
  // which layer was given what.
  EMBER_CHECK(x.defined(), str(), ": the input is undefined");
  if ((x.dim() != 4 && x.dim() != 3) || x.size(-3) != in_channels) {
    std::string hint;
    if (x.dim() == 2 && in_channels == 1) {
      hint = " (one grayscale image: x.view({1, 1, H, W}))";
    } else if (x.dim() == 4 && x.size(-1) == in_channels) {
      hint = " (channels last? ember's images are NCHW: x.permute({0, 3, 1, 2}))";
    }
    throw ValueError(str() + ": expected an input [N, " + std::to_string(in_channels) +
                     ", H, W] (or [" + std::to_string(in_channels) + ", H, W]), got shape " +
                     shape_str(x.shape()) + hint);
  }
  EMBER_CHECK_T(DeviceError, x.device() == weight.device(), str(), ": the input is on ",
                x.device(), " but the layer's weight is on ", weight.device(), ": move the model "
                "with model->to(device) (modules move in place) or the input with x.to(device)");
  EMBER_CHECK(x.dtype() == weight.dtype(), str(), ": the input is ", dtype_name(x.dtype()),
              " but the layer's weight is ", dtype_name(weight.dtype()), ": convert the input "
              "with x.to(", dtype_name(weight.dtype()), ")",
              x.dtype() == kUInt8 ? " (pixels: data::ToTensor() scales them to 0..1)" : "");
  return F::conv2d(x, weight, bias, stride, padding, dilation, groups);
}

std::string Conv2d::extra_repr() const {
  // torch.nn.Conv2d's extra_repr: the defaults of padding, dilation and bias are left out.
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + pair_str(kernel_size) + ", stride=" + pair_str(stride);
  if (padding != Size2{0, 0}) s += ", padding=" + pair_str(padding);
  if (dilation != Size2{1, 1}) s += ", dilation=" + pair_str(dilation);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

// ---- MaxPool2d / AvgPool2d ------------------------------------------------------------------

MaxPool2d::MaxPool2d(Size2 kernel, Size2 stride_, Size2 padding_, Size2 dilation_,
                     bool return_indices_, bool ceil_mode_)
    : kernel_size(kernel),
      stride(resolve_stride(stride_, kernel)),
      padding(padding_),
      dilation(dilation_),
      return_indices(return_indices_),
      ceil_mode(ceil_mode_),
      square_(false) {
  check_pool("MaxPool2d", kernel, stride_, padding_);
  check_size("MaxPool2d", "dilation", dilation_, 1);
}

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride_, int64_t padding_, int64_t dilation_,
                     bool return_indices_, bool ceil_mode_)
    : MaxPool2d(Size2{kernel, kernel}, Size2{stride_, stride_}, Size2{padding_, padding_},
                Size2{dilation_, dilation_}, return_indices_, ceil_mode_) {
  square_ = true;
}

Tensor MaxPool2d::forward(const Tensor& x) {
  check_pool_input(*this, x);
  return ember::max_pool2d(x, options());
}

ValuesIndices MaxPool2d::forward_with_indices(const Tensor& x) {
  check_pool_input(*this, x);
  return ember::max_pool2d_with_indices(x, options());
}

std::string MaxPool2d::extra_repr() const {
  // MaxPool2d's own fields, as PyTorch prints them (return_indices is not among them).
  const std::string dil = dilation == Size2{1, 1} ? "1" : size_str(dilation, square_);
  return "kernel_size=" + size_str(kernel_size, square_) + ", stride=" + size_str(stride, square_) +
         ", padding=" + padding_str(padding, square_) + ", dilation=" + dil +
         ", ceil_mode=" + (ceil_mode ? "True" : "False");
}

AvgPool2d::AvgPool2d(Size2 kernel, Size2 stride_, Size2 padding_, bool ceil_mode_,
                     bool count_include_pad_)
    : kernel_size(kernel),
      stride(resolve_stride(stride_, kernel)),
      padding(padding_),
      ceil_mode(ceil_mode_),
      count_include_pad(count_include_pad_),
      square_(false) {
  check_pool("AvgPool2d", kernel, stride_, padding_);
}

AvgPool2d::AvgPool2d(int64_t kernel, int64_t stride_, int64_t padding_, bool ceil_mode_,
                     bool count_include_pad_)
    : AvgPool2d(Size2{kernel, kernel}, Size2{stride_, stride_}, Size2{padding_, padding_},
                ceil_mode_, count_include_pad_) {
  square_ = true;
}

Tensor AvgPool2d::forward(const Tensor& x) {
  check_pool_input(*this, x);
  return ember::avg_pool2d(x, options());
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + size_str(kernel_size, square_) + ", stride=" +
         size_str(stride, square_) + ", padding=" + padding_str(padding, square_);
}

}  // namespace ember::nn
