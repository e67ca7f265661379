// Op card: max_pool2d, avg_pool2d — 2-d max and average pooling over NCHW planes.
//
// Math      Each of the N*C planes is pooled on its own. Output pixel (p, q) looks at the
//           kh x kw window whose top-left tap is (p * sh - ph, q * sw - pw), taps dh / dw apart
//           (dilation, max_pool2d only):
//             max_pool2d  y[p, q] = max of the window's taps inside the plane, and
//                         idx[p, q] = h * W + w of the tap that holds it (saved for backward,
//                         and returned by max_pool2d_with_indices). Taps in the padding count as
//                         -inf, so they never win. PyTorch 1.13's rule: a tap replaces the best
//                         when it is larger or a NaN, so ties go to the first tap in row-major
//                         window order, a NaN wins, and of several NaNs the LAST one does.
//             avg_pool2d  y[p, q] = (sum of the window's taps inside the plane) / divisor:
//                         count_include_pad (the default) divides by the window clipped to the
//                         padded input (the full kh * kw except where ceil mode lets the last
//                         window hang over the padding), count_include_pad = false by the taps
//                         inside the plane (kernels/conv_geometry.h, avg_pool_divisor).
//           Output size (PyTorch's pooling_output_shape), span = dh * (kh - 1) + 1:
//             P = floor((H + 2 ph - span) / sh) + 1, or in ceil mode
//             P = ceil((H + 2 ph - span) / sh) + 1, less one if that last window would start at
//                 or after H + ph (it must start inside the input or the left padding).
// Backward  max: y[p, q] = x[idx[p, q]] picks one input, so dy[p, q] goes to that input alone:
//             dx[h, w] = sum over the (p, q) with idx[p, q] == h * W + w of dy[p, q]
//           (overlapping windows, stride < kernel, may pick the same input several times: the
//           contributions add). At a tie the derivative does not exist; the first tap gets it
//           all (a valid subgradient, the one PyTorch picks); a NaN window sends it to the NaN
//           PyTorch picks.
//           avg: y[p, q] = sum over the window of x / divisor(p, q), so
//             dx[h, w] = sum over the windows containing (h, w) of dy[p, q] / divisor(p, q).
//           Under create_graph (a gradient that will be differentiated again) both run as
//           recorded ops. max: the same routing as a scatter_add of dy into zeros at the saved
//           indices, whose own backward gathers at them. avg: y = A x is linear and its backward
//           is the adjoint dx = A^T dy; each is recorded as an op whose backward is the other
//           (avg_pool_apply, avg_pool_adjoint below), so it differentiates any number of times.
// Shapes    input [N, C, H, W] -> [N, C, P, Q]; input [C, H, W] -> [C, P, Q] (one image).
//           kernel >= 1; stride >= 1, or 0 meaning "the kernel size" (PyTorch's default);
//           dilation >= 1; 0 <= padding <= kernel / 2 (PyTorch's rule: with more padding a
//           window could lie in the padding alone); H, W >= 1 and P, Q >= 1. A dilated window
//           whose taps all miss the plane (PyTorch returns -inf there, with an index outside the
//           plane) is refused.
// Dtypes    float32 or float64, kept (integer images are refused: convert them first).
// Saved     max: the int64 indices [N, C, P, Q] (flat positions within each H x W plane).
//           avg: only the sizes. Both also save the input, only so that changing it in place
//           before the backward is refused, as in PyTorch (which saves it).
// Kernels   CPU: kernels/cpu/pool.cpp max_pool2d_forward / _backward, avg_pool2d_forward /
//           _backward (parallel over the N*C planes).
//           CUDA: kernels/cuda/pool.cu, the same functions (one thread per output element
//           forward, one thread per input element backward: no atomics, deterministic).
//
// A non-contiguous input is copied to contiguous NCHW first; the gradient comes back in that
// contiguous layout, which is the input's shape, so it needs no further rearranging.
#include <array>
#include <string>

#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/conv_geometry.h"
#include "kernels/pool.h"

namespace ember {

namespace {

using kernels::PoolGeometry;

// PyTorch's pooling_output_shape along one axis (see the top of the file); may be < 1.
int64_t pool_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil,
                      bool ceil_mode) {
  const int64_t num = in + 2 * pad - dil * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // floor division (num may be negative when the window does not fit)
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && out >= 1 && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Does every window along this axis have a tap inside [0, in)? Only dilation can make one
// miss: the first tap at or after 0 of window o may already lie past the input.
bool every_window_reads(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                        int64_t dil) {
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad;
    const int64_t first = start >= 0 ? start : start + (-start + dil - 1) / dil * dil;
    if (first >= in || first > start + (kernel - 1) * dil) return false;
  }
  return true;
}

// Checks the input and the options and works out the sizes. `op` names the op in messages.
PoolGeometry plan_pool(const Tensor& a, const Pool2dOptions& o, const char* op) {
  ops::check_defined(op, a);
  ops::check_float(op, a);
  EMBER_CHECK(a.dim() == 4 || a.dim() == 3, op, ": expected a 4-d [N, C, H, W] or 3-d [C, H, W] ",
              "input, got shape ", shape_str(a.shape()), " (", a.dim(), "-d)",
              a.dim() == 2 ? ": add a channel dim with .unsqueeze(0)" : "");
  const bool is_max = std::string(op) == "max_pool2d";
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
    EMBER_CHECK(o.dilation[k] >= 1, op, ": dilation must be at least 1, got ", o.dilation[k],
                " for the ", axis[k]);
    EMBER_CHECK(is_max || o.dilation[k] == 1, op,
                ": dilation is a max_pool2d option (PyTorch's "
                "avg_pool2d has none), got ",
                o.dilation[k], " for the ", axis[k], "; leave it at 1");
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
  g.dil_h = o.dilation[0];
  g.dil_w = o.dilation[1];
  g.count_include_pad = o.count_include_pad;
  g.P = pool_out_size(g.H, g.kernel_h, g.stride_h, g.pad_h, g.dil_h, o.ceil_mode);
  g.Q = pool_out_size(g.W, g.kernel_w, g.stride_w, g.pad_w, g.dil_w, o.ceil_mode);
  EMBER_CHECK(g.P >= 1 && g.Q >= 1, op, ": input ", shape_str(a.shape()),
              " is too small for kernel [", g.kernel_h, ", ", g.kernel_w, "] with padding [",
              g.pad_h, ", ", g.pad_w, "] and dilation [", g.dil_h, ", ", g.dil_w,
              "]: the output would be ", g.P, "x", g.Q,
              " (it needs H + 2 * pad >= dilation * "
              "(kernel - 1) + 1, W likewise); use a smaller kernel or ceil_mode = true");
  EMBER_CHECK(every_window_reads(g.H, g.P, g.kernel_h, g.stride_h, g.pad_h, g.dil_h) &&
                  every_window_reads(g.W, g.Q, g.kernel_w, g.stride_w, g.pad_w, g.dil_w),
              op, ": with dilation [", g.dil_h, ", ", g.dil_w, "] and padding [", g.pad_h, ", ",
              g.pad_w, "] some window of input ", shape_str(a.shape()),
              " has no tap inside the input (PyTorch returns -inf there); use less padding or "
              "dilation");
  return g;
}

Shape out_shape(const Tensor& a, const PoolGeometry& g) {
  if (a.dim() == 3) return {g.C, g.P, g.Q};
  return {g.N, g.C, g.P, g.Q};
}

struct MaxPool2dBackward final : ops::Node {
  ops::SavedTensor indices;
  ops::SavedTensor input;  // only version-checked (PyTorch's rule, core/autograd/node.h)
  PoolGeometry geom;
  std::string name() const override { return "MaxPool2dBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor idx = indices.unpack(*this, "indices");
    input.unpack(*this, "self");
    if (is_grad_enabled()) {  // create_graph: dx[plane, idx] += dy, one row per N*C plane
      const int64_t planes = geom.N * geom.C, outputs = geom.P * geom.Q;
      const Tensor routed =
          scatter_add(zeros({planes, geom.H * geom.W}, g.options()), 1,
                      reshape(idx, {planes, outputs}), reshape(g, {planes, outputs}));
      return {reshape(routed, input_shapes[0])};
    }
    const Tensor gc = g.contiguous();
    Tensor ga = empty(input_shapes[0], g.options());
    KernelsOn(g)->pool.max_backward(g.dtype(), geom, gc.raw_data(), idx.data_ptr<int64_t>(),
                                    ga.raw_data());
    return {ga};
  }
  void release_saved() override {
    indices.reset();
    input.reset();
  }
};

// Average pooling is a linear map y = A x; its backward is the adjoint dx = A^T dy. Each is a
// recorded op whose backward is the other one (A^T's adjoint is A again, the forward).
Tensor avg_pool_apply(const Tensor& x, const PoolGeometry& g, const Shape& out_shape,
                      bool version_check_x);
Tensor avg_pool_adjoint(const Tensor& dy, const PoolGeometry& g, const Shape& in_shape);

struct AvgPool2dBackward final : ops::Node {
  PoolGeometry geom;
  ops::SavedTensor input;  // only version-checked, as in MaxPool2dBackward
  std::string name() const override { return "AvgPool2dBackward"; }
  void release_saved() override { input.reset(); }
  std::vector<Tensor> backward(const Tensor& g) override {
    input.unpack(*this, "self");
    return {avg_pool_adjoint(g, geom, input_shapes[0])};  // recorded under create_graph
  }
};

// The backward of the backward: dy -> A^T dy is linear in dy, so its gradient is A u.
struct AvgPool2dBackwardBackward final : ops::Node {
  PoolGeometry geom;
  std::string name() const override { return "AvgPool2dBackwardBackward"; }
  std::vector<Tensor> backward(const Tensor& u) override {
    return {avg_pool_apply(u, geom, input_shapes[0], false)};
  }
};

// y = A x with the forward kernel; recorded (AvgPool2dBackward) when x needs a gradient.
Tensor avg_pool_apply(const Tensor& x, const PoolGeometry& g, const Shape& out_shape,
                      bool version_check_x) {
  const Tensor xc = x.detach().contiguous();
  Tensor out = ops::new_output(out_shape, x);
  KernelsOn(x)->pool.avg_forward(x.dtype(), g, xc.raw_data(), out.raw_data());
  if (autograd::grad_needed({&x})) {
    auto node = std::make_shared<AvgPool2dBackward>();
    if (version_check_x) node->input = ops::SavedTensor(x);
    node->geom = g;
    autograd::connect(node, out, {&x});
  }
  return out;
}

// dx = A^T dy with the backward kernel; recorded (AvgPool2dBackwardBackward) when dy needs a
// gradient, which happens only under create_graph.
Tensor avg_pool_adjoint(const Tensor& dy, const PoolGeometry& g, const Shape& in_shape) {
  const Tensor dyc = dy.detach().contiguous();
  Tensor dx = ops::new_output(in_shape, dy);
  KernelsOn(dy)->pool.avg_backward(dy.dtype(), g, dyc.raw_data(), dx.raw_data());
  if (autograd::grad_needed({&dy})) {
    auto node = std::make_shared<AvgPool2dBackwardBackward>();
    node->geom = g;
    autograd::connect(node, dx, {&dy});
  }
  return dx;
}

}  // namespace

ValuesIndices max_pool2d_with_indices(const Tensor& input, const Pool2dOptions& options) {
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
    node->input = ops::SavedTensor(input);
    node->geom = g;
    autograd::connect(node, out, {&input});
  }
  return {out, idx};
}

Tensor max_pool2d(const Tensor& input, const Pool2dOptions& options) {
  return max_pool2d_with_indices(input, options).values;
}

Tensor avg_pool2d(const Tensor& input, const Pool2dOptions& options) {
  const PoolGeometry g = plan_pool(input, options, "avg_pool2d");
  return avg_pool_apply(input, g, out_shape(input, g), /*version_check_x=*/true);
}

}  // namespace ember
