// Op card: conv2d — 2-d convolution (cross-correlation, as torch.nn.functional.conv2d), NCHW.
//
// Math      Letters as in kernels/conv_geometry.h. With ih = p*stride_h - pad_h + r*dil_h and
//           iw = q*stride_w - pad_w + s*dil_w (a tap outside the image reads 0):
//             y[n, k, p, q] = b[k] + sum_{c, r, s} w[k, c, r, s] * x[n, c, ih, iw]
//           The filter is not flipped (deep learning's "convolution" is a correlation).
//           With groups > 1 the channels are cut into `groups` blocks: output channel k
//           (of group j = k / (K/groups)) sums only over the C/groups input channels
//           c' = j*(C/groups) + c of its block, w[k, c, r, s] with c < C/groups. Each group is an
//           ordinary convolution, and the gradients below hold within each group.
// Backward  y is linear in each argument, so each gradient collects g = dL/dy through the
//           terms its element appears in:
//             dL/db[k]          = sum_{n, p, q} g[n, k, p, q]
//             dL/dw[k, c, r, s] = sum_{n, p, q} g[n, k, p, q] * x[n, c, ih, iw]
//             dL/dx[n, c, i, j] = sum of g[n, k, p, q] * w[k, c, r, s] over every (k, p, q, r, s)
//                                 whose tap lands on (i, j), i.e. ih == i and iw == j
//           In im2col form (kernels/cpu/conv_im2col.cpp: col_n [CRS, PQ] holds x[n, c, ih, iw] in
//           row (c, r, s), column (p, q), so y_n = W [K, CRS] @ col_n):
//             dW = sum_n g_n [K, PQ] @ col_n^T      (the gradient of a matrix product)
//             dcol_n = W^T @ g_n, and since each entry of col_n is a copy of one input pixel (or
//             of the zero padding), dx_n = col2im(dcol_n) adds every entry back onto its pixel.
//           Under create_graph (a gradient to be differentiated again) the two gradients are
//           recorded ops of their own, conv2d_input_grad(dy, w) = dx (a transposed convolution)
//           and conv2d_weight_grad(x, dy) = dw, on the same kernels. Both are bilinear; with
//           <a, b> the sum of a * b over all elements and conv(x, w) the convolution above,
//             <u, input_grad(dy, w)>  = <conv(u, w), dy> = <weight_grad(u, dy), w>
//             <U, weight_grad(x, dy)> = <conv(x, U), dy> = <input_grad(dy, U), x>
//           so the backward of each is conv2d and the other one: differentiable again, for any
//           stride, padding, dilation and groups (the kernels handle them all).
// Shapes    input [N, C, H, W] (or [C, H, W]: one image, the result is then [K, P, Q]),
//           weight [K, C/groups, R, S], bias [K] or undefined -> [N, K, P, Q] with
//             P = (H + 2*pad_h - dil_h*(R-1) - 1) / stride_h + 1,  Q likewise;
//           the dilated kernel dil*(R-1)+1 must fit in the padded input H + 2*pad (P >= 1).
//           stride, dilation >= 1, padding >= 0, groups >= 1 dividing C and K; float32/float64;
//           all on one device.
// Dtypes    float32 or float64; input, weight and bias of one dtype, kept (integer tensors are
//           refused: docs/from_pytorch.md, integer-matmul-conv).
// Saved     the input (when the weight needs a gradient) and the weight (when the input does),
//           both contiguous; version-checked as the caller's tensors, copied or not; under
//           create_graph each comes back attached to the caller's tensor.
// Kernels   the conv family (kernels/conv.h) forward, backward (both gradients at once).
//           CPU: kernels/cpu/conv.cpp: an implicit GEMM on the batch-innermost layout for
//           float32 stride-1 filters of 64 taps or more on AVX-512 (conv_implicit.cpp), else
//           im2col + GEMM with images spread over threads (conv_im2col.cpp); depthwise
//           (groups == C) by direct loops (conv_direct.cpp), other groups one group at a time
//           (conv_grouped.cpp).
//           CUDA: kernels/cuda/conv.cu: im2col + cuBLAS (conv_im2col.cu) or an implicit-GEMM
//           kernel (conv_implicit.cu), or cuDNN (conv_cudnn.cu) after set_conv_backend(Cudnn);
//           depthwise by direct kernels (conv_direct.cu), other groups one group at a time
//           (conv_grouped.cu); cuDNN takes the groups itself.
#include <atomic>

#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/conv.h"
#include "kernels/conv_geometry.h"

namespace ember {

namespace {

std::atomic<ConvBackend> g_conv_backend{ConvBackend::Native};

// The algorithm set_conv_backend asks for: the CPU always gets Auto (it has no cuDNN path).
kernels::ConvAlgo conv_algo(Device device) {
  return device.is_cuda() && conv_backend() == ConvBackend::Cudnn ? kernels::ConvAlgo::Cudnn
                                                                  : kernels::ConvAlgo::Auto;
}

std::string pair_str(const std::array<int64_t, 2>& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

// Checks the arguments and returns the geometry (N = 1 for a 3-d input).
kernels::ConvGeometry conv_geometry(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                    const Conv2dOptions& o) {
  const char* op = "conv2d";
  ops::check_defined(op, input, "input");
  ops::check_defined(op, weight, "weight");
  ops::check_same_device(op, input, weight);
  ops::check_float(op, input);
  ops::check_same_dtype(op, input, weight);
  EMBER_CHECK(input.dim() == 4 || input.dim() == 3, "conv2d: input must be [N, C, H, W] (or "
              "[C, H, W] for one image), got ", shape_str(input.shape()));
  EMBER_CHECK(weight.dim() == 4,
              "conv2d: weight must be [K, C/groups, R, S] (out channels, in "
              "channels per group, kernel height, kernel width), got ",
              shape_str(weight.shape()));
  EMBER_CHECK(o.groups >= 1, "conv2d: groups must be at least 1, got ", o.groups);
  const bool batched = input.dim() == 4;
  kernels::ConvGeometry g;
  const Shape& xs = input.shape();
  const Shape& ws = weight.shape();
  g.N = batched ? xs[0] : 1;
  g.C = xs[batched ? 1 : 0];
  g.H = xs[batched ? 2 : 1];
  g.W = xs[batched ? 3 : 2];
  g.K = ws[0];
  g.R = ws[2];
  g.S = ws[3];
  g.groups = o.groups;
  EMBER_CHECK(g.C % g.groups == 0, "conv2d: input ", shape_str(xs), " has ", g.C,
              " channels, which groups = ", g.groups,
              " does not divide: the channels are cut "
              "into groups of equal size (depthwise: groups = ",
              g.C, ")");
  EMBER_CHECK(g.K % g.groups == 0, "conv2d: weight ", shape_str(ws), " has ", g.K,
              " output channels, which groups = ", g.groups,
              " does not divide: each group needs "
              "the same number of filters");
  EMBER_CHECK(
      ws[1] * g.groups == g.C, "conv2d: input ", shape_str(xs), " has ", g.C,
      " channels but weight ", shape_str(ws), " expects ", ws[1] * g.groups,
      g.groups == 1 ? "" : detail::concat(" (", ws[1], " per group times groups = ", g.groups, ")"),
      " (weight is [out, in / groups, kernel h, kernel w])");
  EMBER_CHECK(g.R >= 1 && g.S >= 1, "conv2d: weight ", shape_str(ws),
              " has an empty kernel: its last two dims (kernel height, width) must be >= 1");
  if (bias.defined()) {
    ops::check_same_device(op, input, bias);
    ops::check_same_dtype(op, input, bias);
    EMBER_CHECK(bias.dim() == 1 && bias.shape()[0] == g.K, "conv2d: bias must be [", g.K,
                "] (one value per output channel of weight ", shape_str(ws), "), got ",
                shape_str(bias.shape()));
  }
  EMBER_CHECK(o.stride[0] >= 1 && o.stride[1] >= 1, "conv2d: stride must be >= 1, got ",
              pair_str(o.stride));
  EMBER_CHECK(o.dilation[0] >= 1 && o.dilation[1] >= 1, "conv2d: dilation must be >= 1, got ",
              pair_str(o.dilation));
  EMBER_CHECK(o.padding[0] >= 0 && o.padding[1] >= 0, "conv2d: padding must be >= 0, got ",
              pair_str(o.padding));
  g.stride_h = o.stride[0];
  g.stride_w = o.stride[1];
  g.pad_h = o.padding[0];
  g.pad_w = o.padding[1];
  g.dil_h = o.dilation[0];
  g.dil_w = o.dilation[1];
  // The window one output pixel reads: dil*(R-1)+1 rows, dil*(S-1)+1 columns.
  const int64_t span_h = g.dil_h * (g.R - 1) + 1, span_w = g.dil_w * (g.S - 1) + 1;
  const int64_t in_h = g.H + 2 * g.pad_h, in_w = g.W + 2 * g.pad_w;
  EMBER_CHECK(span_h <= in_h && span_w <= in_w, "conv2d: the kernel ", g.R, "x", g.S,
              " with dilation ", pair_str(o.dilation), " spans ", span_h, "x", span_w,
              ", larger than the input ", g.H, "x", g.W, " with padding ", pair_str(o.padding),
              " (", in_h, "x", in_w, "): use a smaller kernel or dilation, more padding, or a "
              "larger input");
  g.P = kernels::conv_out_size(g.H, g.R, g.stride_h, g.pad_h, g.dil_h);
  g.Q = kernels::conv_out_size(g.W, g.S, g.stride_w, g.pad_w, g.dil_w);
  return g;
}

// The convolution's options, read back from its geometry.
Conv2dOptions options_of(const kernels::ConvGeometry& g) {
  Conv2dOptions o;
  o.stride = {g.stride_h, g.stride_w};
  o.padding = {g.pad_h, g.pad_w};
  o.dilation = {g.dil_h, g.dil_w};
  o.groups = g.groups;
  return o;
}

// The two gradients as recorded ops (see "Backward" at the top), all tensors 4-d:
// dy [N, K, P, Q], w [K, C/groups, R, S], x [N, C, H, W].
Tensor conv2d_input_grad(const Tensor& dy, const Tensor& w, const kernels::ConvGeometry& g);
Tensor conv2d_weight_grad(const Tensor& x, const Tensor& dy, const kernels::ConvGeometry& g);

// dx = input_grad(dy, w): <u, dx> = <conv(u, w), dy> = <weight_grad(u, dy), w>.
struct Conv2dInputGradBackward final : ops::Node {
  ops::SavedTensor dy, weight;  // each saved only when the other needs a gradient
  kernels::ConvGeometry geometry;
  std::string name() const override { return "Conv2dInputGradBackward"; }
  std::vector<Tensor> backward(const Tensor& u) override {
    Tensor ddy, dw;
    if (needs_input_grad(0))
      ddy = conv2d(u, weight.unpack(*this, "weight"), Tensor(), options_of(geometry));
    if (needs_input_grad(1)) dw = conv2d_weight_grad(u, dy.unpack(*this, "grad_output"), geometry);
    return {ddy, dw};
  }
  void release_saved() override {
    dy.reset();
    weight.reset();
  }
};

// dw = weight_grad(x, dy): <U, dw> = <conv(x, U), dy> = <input_grad(dy, U), x>.
struct Conv2dWeightGradBackward final : ops::Node {
  ops::SavedTensor input, dy;  // each saved only when the other needs a gradient
  kernels::ConvGeometry geometry;
  std::string name() const override { return "Conv2dWeightGradBackward"; }
  std::vector<Tensor> backward(const Tensor& u) override {
    Tensor dx, ddy;
    if (needs_input_grad(0)) dx = conv2d_input_grad(dy.unpack(*this, "grad_output"), u, geometry);
    if (needs_input_grad(1))
      ddy = conv2d(input.unpack(*this, "input"), u, Tensor(), options_of(geometry));
    return {dx, ddy};
  }
  void release_saved() override {
    input.reset();
    dy.reset();
  }
};

Tensor conv2d_input_grad(const Tensor& dy, const Tensor& w, const kernels::ConvGeometry& g) {
  const Tensor dyc = dy.detach().contiguous(), wc = w.detach().contiguous();
  Tensor dx = ops::new_output({g.N, g.C, g.H, g.W}, dy);
  KernelsOn(dy)->conv.backward(dy.dtype(), g, nullptr, dyc.raw_data(), wc.raw_data(), dx.raw_data(),
                               nullptr, nullptr, conv_algo(dy.device()));
  if (autograd::grad_needed({&dy, &w})) {
    auto node = std::make_shared<Conv2dInputGradBackward>();
    if (w.requires_grad()) node->dy = ops::SavedTensor(dy);
    if (dy.requires_grad()) node->weight = ops::SavedTensor(w);
    node->geometry = g;
    autograd::connect(node, dx, {&dy, &w});
  }
  return dx;
}

Tensor conv2d_weight_grad(const Tensor& x, const Tensor& dy, const kernels::ConvGeometry& g) {
  const Tensor xc = x.detach().contiguous(), dyc = dy.detach().contiguous();
  Tensor dw = ops::new_output({g.K, g.C / g.groups, g.R, g.S}, dy);
  KernelsOn(dy)->conv.backward(dy.dtype(), g, xc.raw_data(), dyc.raw_data(), nullptr, nullptr,
                               dw.raw_data(), nullptr, conv_algo(dy.device()));
  if (autograd::grad_needed({&x, &dy})) {
    auto node = std::make_shared<Conv2dWeightGradBackward>();
    if (dy.requires_grad()) node->input = ops::SavedTensor(x);
    if (x.requires_grad()) node->dy = ops::SavedTensor(dy);
    node->geometry = g;
    autograd::connect(node, dw, {&x, &dy});
  }
  return dw;
}

struct Conv2dBackward final : ops::Node {
  ops::SavedTensor input, weight;  // contiguous; each saved only when the other needs a gradient
  kernels::ConvGeometry geometry;
  bool has_bias = false;
  std::string name() const override { return "Conv2dBackward"; }
  std::vector<Tensor> backward(const Tensor& grad) override {
    if (is_grad_enabled()) return recorded_backward(grad);  // create_graph
    const kernels::ConvGeometry& g = geometry;
    const Tensor dy = grad.contiguous();
    Tensor dx, dw, db, w, x;
    const bool want_db = has_bias && needs_input_grad(2);
    if (needs_input_grad(0)) {
      w = weight.unpack(*this, "weight");
      dx = ops::new_output(input_shapes[0], dy);
    }
    if (needs_input_grad(1)) {
      x = input.unpack(*this, "input");
      dw = ops::new_output(input_shapes[1], dy);
      if (want_db) db = ops::new_output({g.K}, dy);
    }
    void* dx_ptr = dx.defined() ? dx.raw_data() : nullptr;
    void* dw_ptr = dw.defined() ? dw.raw_data() : nullptr;
    void* db_ptr = db.defined() ? db.raw_data() : nullptr;
    if (dx_ptr || dw_ptr) {
      KernelsOn(dy)->conv.backward(dy.dtype(), g, x.defined() ? x.raw_data() : nullptr,
                                   dy.raw_data(), w.defined() ? w.raw_data() : nullptr, dx_ptr,
                                   dw_ptr, db_ptr, conv_algo(dy.device()));
    }
    if (want_db && !dw_ptr) {
      // Only the bias learns (a frozen weight): its gradient is a plain sum, no input needed.
      db = sum(dy.reshape({g.N, g.K, g.P * g.Q}), {0, 2});
    }
    return {dx, dw, db};
  }
  void release_saved() override {
    input.reset();
    weight.reset();
  }

  // The same gradients as recorded ops; a 3-d image's tensors are read as a batch of one.
  std::vector<Tensor> recorded_backward(const Tensor& grad) const {
    const kernels::ConvGeometry& g = geometry;
    const Tensor dy = reshape(grad, {g.N, g.K, g.P, g.Q});
    Tensor dx, dw, db;
    if (needs_input_grad(0)) {
      dx = reshape(conv2d_input_grad(dy, weight.unpack(*this, "weight"), g), input_shapes[0]);
    }
    if (needs_input_grad(1)) {
      const Tensor x = reshape(input.unpack(*this, "input"), {g.N, g.C, g.H, g.W});
      dw = conv2d_weight_grad(x, dy, g);
    }
    if (has_bias && needs_input_grad(2)) db = sum(dy, {0, 2, 3});
    return {dx, dw, db};
  }
};

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  const kernels::ConvGeometry g = conv_geometry(input, weight, bias, options);
  // Not detached: a copy made by contiguous() stays on the tape, so the saved x and w lead
  // back to input and weight under create_graph.
  const Tensor x = input.contiguous();
  const Tensor w = weight.contiguous();
  const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  const Shape out_shape =
      input.dim() == 4 ? Shape{g.N, g.K, g.P, g.Q} : Shape{g.K, g.P, g.Q};
  Tensor out = ops::new_output(out_shape, input);
  const void* b_ptr = b.defined() ? b.raw_data() : nullptr;
  KernelsOn(input)->conv.forward(input.dtype(), g, x.raw_data(), w.raw_data(), b_ptr,
                                 out.raw_data(), conv_algo(input.device()));

  if (autograd::grad_needed({&input, &weight, &bias})) {
    auto node = std::make_shared<Conv2dBackward>();
    // Checked as the caller's tensors even when contiguous() copied them (PyTorch's rule).
    if (weight.requires_grad()) node->input = ops::SavedTensor(x, input);
    if (input.requires_grad()) node->weight = ops::SavedTensor(w, weight);
    node->geometry = g;
    node->has_bias = bias.defined();
    autograd::connect(node, out, {&input, &weight, &bias});
  }
  return out;
}

// ---- which CUDA convolution runs ------------------------------------------------------------

void set_conv_backend(ConvBackend backend) {
  EMBER_CHECK_T(DeviceError, backend != ConvBackend::Cudnn || cudnn_available(),
                "set_conv_backend(ConvBackend::Cudnn): this build of ember has no cuDNN. Install "
                "cuDNN (cudnn.h and libcudnn next to the CUDA toolkit) and rebuild with "
                "-DEMBER_CUDNN=ON (a CUDA build is needed), or keep ConvBackend::Native, "
                "ember's own kernels");
  g_conv_backend.store(backend);
}

ConvBackend conv_backend() { return g_conv_backend.load(); }

bool cudnn_available() {
  const kernels::Backend* cuda = kernels::cuda_backend();
  return cuda && cuda->conv.has_cudnn();
}

}  // namespace ember
