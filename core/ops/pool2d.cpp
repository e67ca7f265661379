// Op card: max_pool2d, avg_pool2d — 2-d max and average pooling over NCHW planes.
//
// Math      Each of the N*C planes is pooled on its own. Output pixel (p, q) looks at the
//           kh x kw window whose top-left tap is (p * sh - ph, q * sw - pw):
//             max_pool2d  y[p, q] = max of the window's taps inside the plane, and
//                         idx[p, q] = h * W + w of the tap that holds it (saved for backward).
//                         Taps in the padding count as -inf, so they never win; ties go to the
//                         first tap in row-major window order; a NaN wins (the first NaN), as
//                         in PyTorch, so a NaN in a window comes out.
//             avg_pool2d  y[p, q] = (sum of the window's taps inside the plane) / (kh * kw):
//                         taps in the padding count as zeros and the divisor is always the full
//                         window (PyTorch's default count_include_pad = true).
//           Floor mode: P = (H + 2 ph - kh) / sh + 1 (rounded down), Q likewise.
// Backward  max: y[p, q] = x[idx[p, q]] picks one input, so dy[p, q] goes to that input alone:
//             dx[h, w] = sum over the (p, q) with idx[p, q] == h * W + w of dy[p, q]
//           (overlapping windows, stride < kernel, may pick the same input several times: the
//           contributions add). At a tie the derivative does not exist; the first tap gets it
//           all (a valid subgradient, the one PyTorch picks).
//           avg: y[p, q] = sum over the window of x / (kh * kw), so
//             dx[h, w] = sum over the windows containing (h, w) of dy[p, q] / (kh * kw).
// Shapes    input [N, C, H, W] -> [N, C, P, Q]; input [C, H, W] -> [C, P, Q] (one image).
//           kernel >= 1; stride >= 1, or 0 meaning "the kernel size" (PyTorch's default);
//           0 <= padding <= kernel / 2 (PyTorch's rule: with more padding a window could lie in
//           the padding alone); H, W >= 1 and P, Q >= 1. float32 / float64.
// Dtypes    float32 or float64, kept (integer images are refused: convert them first).
// Saved     max: the int64 indices [N, C, P, Q] (flat positions within each H x W plane).
//           avg: nothing (only the sizes).
// Kernels   CPU: kernels/cpu/pool.cpp max_pool2d_forward / _backward, avg_pool2d_forward /
//           _backward (parallel over the N*C planes).
//           CUDA: kernels/cuda/pool.cu, the same functions (one thread per output element
//           forward, one thread per input element backward: no atomics, deterministic).
//
// A non-contiguous input is copied to contiguous NCHW first; the gradient comes back in that
// contiguous layout, which is the input's shape, so it needs no further rearranging.
#include <array>

#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/pool.h"

namespace ember {

namespace {

using kernels::PoolGeometry;

// Checks the input and the options and works out the sizes. `op` names the op in messages.
PoolGeometry plan_pool(const Tensor& a, const Pool2dOptions& o, const char* op) {
  ops::check_defined(op, a);
  ops::check_float(op, a);
  EMBER_CHECK(a.dim() == 4 || a.dim() == 3, op, ": expected a 4-d [N, C, H, W] or 3-d [C, H, W] ",
              "input, got shape ", shape_str(a.shape()), " (", a.dim(), "-d)",
              a.dim() == 2 ? ": add a channel dim with .unsqueeze(0)" : "");
  const char* axis[2] = {"height", "width"};
  std::array<int64_t, 2> stride{};
  for (int k = 0; k < 2; ++k) {
    const int64_t kernel = o.kernel_size[k], pad = o.padding[k];
    EMBER_CHECK(kernel >= 1, op, ": kernel_size must be at least 1, got ", kernel, " for the ",
                axis[k]);
    EMBER_CHECK(o.stride[k] >= 0, op, ": stride must be positive (or 0 for the kernel size), got ",
                o.stride[k], " for the ", axis[k]);
    stride[k] = o.stride[k] == 0 ? kernel : o.stride[k];
    EMBER_CHECK(pad >= 0, op, ": padding must be >= 0, got ", pad, " for the ", axis[k]);
    EMBER_CHECK(2 * pad <= kernel, op, ": padding ", pad, " is more than half the kernel size ",
                kernel, " for the ", axis[k],
                " (PyTorch's rule: pad <= kernel_size / 2, so that no window lies in the "
                "padding alone); use a smaller padding or a larger kernel");
  }
  const bool batched = a.dim() == 4;
  PoolGeometry g;
  g.N = batched ? a.size(0) : 1;
  g.C = a.size(batched ? 1 : 0);
  g.H = a.size(-2);
  g.W = a.size(-1);
  EMBER_CHECK(g.H >= 1 && g.W >= 1, op, ": the input plane is empty (shape ",
              shape_str(a.shape()), "): height and width must be at least 1");
  g.kernel_h = o.kernel_size[0];
  g.kernel_w = o.kernel_size[1];
  g.stride_h = stride[0];
  g.stride_w = stride[1];
  g.pad_h = o.padding[0];
  g.pad_w = o.padding[1];
  // conv_out_size with dilation 1 is the floor-mode pooling size too.
  g.P = kernels::conv_out_size(g.H, g.kernel_h, g.stride_h, g.pad_h, 1);
  g.Q = kernels::conv_out_size(g.W, g.kernel_w, g.stride_w, g.pad_w, 1);
  // (H + 2 pad - kernel) is negative exactly when the window does not fit; C++ division
  // rounds toward zero, so test that rather than P itself.
  EMBER_CHECK(g.H + 2 * g.pad_h >= g.kernel_h && g.W + 2 * g.pad_w >= g.kernel_w, op,
              ": input ", shape_str(a.shape()), " is too small for kernel [", g.kernel_h, ", ",
              g.kernel_w, "] with padding [", g.pad_h, ", ", g.pad_w,
              "]: the output would be empty (it needs H + 2 * pad >= kernel, W likewise)");
  return g;
}

Shape out_shape(const Tensor& a, const PoolGeometry& g) {
  if (a.dim() == 3) return {g.C, g.P, g.Q};
  return {g.N, g.C, g.P, g.Q};
}

struct MaxPool2dBackward final : ops::Node {
  ops::SavedTensor indices;
  PoolGeometry geom;
  std::string name() const override { return "MaxPool2dBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    autograd::check_twice_differentiable(*this, "max_pool2d", g);
    const Tensor idx = indices.unpack(*this, "indices");
    const Tensor gc = g.contiguous();
    Tensor ga = empty(input_shapes[0], g.options());
    KernelsOn(g)->pool.max_backward(g.dtype(), geom, gc.raw_data(), idx.data_ptr<int64_t>(),
                                    ga.raw_data());
    return {ga};
  }
  void release_saved() override { indices.reset(); }
};

struct AvgPool2dBackward final : ops::Node {
  PoolGeometry geom;
  std::string name() const override { return "AvgPool2dBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    autograd::check_twice_differentiable(*this, "avg_pool2d", g);
    const Tensor gc = g.contiguous();
    Tensor ga = empty(input_shapes[0], g.options());
    KernelsOn(g)->pool.avg_backward(g.dtype(), geom, gc.raw_data(), ga.raw_data());
    return {ga};
  }
};

}  // namespace

Tensor max_pool2d(const Tensor& input, const Pool2dOptions& options) {
  const PoolGeometry g = plan_pool(input, options, "max_pool2d");
  const Tensor x = input.detach().contiguous();
  const Shape shape = out_shape(input, g);
  Tensor out = ops::new_output(shape, input);
  Tensor idx = ops::new_output(shape, input, kInt64);
  KernelsOn(input)->pool.max_forward(input.dtype(), g, x.raw_data(), out.raw_data(),
                                     idx.data_ptr<int64_t>());
  if (autograd::grad_needed({&input})) {
    auto node = std::make_shared<MaxPool2dBackward>();
    node->indices = ops::SavedTensor(idx);
    node->geom = g;
    autograd::connect(node, out, {&input});
  }
  return out;
}

Tensor avg_pool2d(const Tensor& input, const Pool2dOptions& options) {
  const PoolGeometry g = plan_pool(input, options, "avg_pool2d");
  const Tensor x = input.detach().contiguous();
  Tensor out = ops::new_output(out_shape(input, g), input);
  KernelsOn(input)->pool.avg_forward(input.dtype(), g, x.raw_data(), out.raw_data());
  if (autograd::grad_needed({&input})) {
    auto node = std::make_shared<AvgPool2dBackward>();
    node->geom = g;
    autograd::connect(node, out, {&input});
  }
  return out;
}

}  // namespace ember
