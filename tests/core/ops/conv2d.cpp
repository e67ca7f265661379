// Direct tests of conv2d on the CPU: values and all three gradients against a plain 7-loop
// convolution written here, float32 against float64, every argument error, a 3-d input, the
// backend switch in a build without cuDNN, and results that do not depend on the thread count.
// (Gradcheck of the small cases in tests/cases/conv.cpp runs in tests/core/gradcheck.cpp.)
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

struct Geometry {
  std::string label;
  Shape x, w;  // [N, C, H, W], [K, C / groups, R, S]
  bool bias = true;
  Conv2dOptions o;
};

Conv2dOptions opts(std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                   std::array<int64_t, 2> dilation = {1, 1}, int64_t groups = 1) {
  Conv2dOptions o;
  o.stride = stride;
  o.padding = padding;
  o.dilation = dilation;
  o.groups = groups;
  return o;
}

int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

// The textbook convolution's seven loops. visit(yi, xi, wi) is called for every product
// y[yi] += w[wi] * x[xi] whose tap lies inside the image (row-major element numbers). With
// groups, filter k sees the Cg = C / groups input channels of its group k / (K / groups).
void for_each_tap(const Geometry& g,
                  const std::function<void(int64_t, int64_t, int64_t)>& visit) {
  const int64_t N = g.x[0], C = g.x[1], H = g.x[2], W = g.x[3];
  const int64_t K = g.w[0], Cg = g.w[1], R = g.w[2], S = g.w[3], Kg = K / g.o.groups;
  const int64_t P = out_size(H, R, g.o.stride[0], g.o.padding[0], g.o.dilation[0]);
  const int64_t Q = out_size(W, S, g.o.stride[1], g.o.padding[1], g.o.dilation[1]);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q)
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                const int64_t ih = p * g.o.stride[0] - g.o.padding[0] + r * g.o.dilation[0];
                const int64_t iw = q * g.o.stride[1] - g.o.padding[1] + s * g.o.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t ci = k / Kg * Cg + c;  // the input channel
                visit(((n * K + k) * P + p) * Q + q, ((n * C + ci) * H + ih) * W + iw,
                      ((k * Cg + c) * R + r) * S + s);
              }
}

Shape out_shape(const Geometry& g) {
  return {g.x[0], g.w[0], out_size(g.x[2], g.w[2], g.o.stride[0], g.o.padding[0], g.o.dilation[0]),
          out_size(g.x[3], g.w[3], g.o.stride[1], g.o.padding[1], g.o.dilation[1])};
}

struct Reference {
  std::vector<double> y, dx, dw, db;
};

// y = conv(x, w) + b, and the gradients for dL/dy = gy.
Reference reference(const Geometry& g, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& b, const std::vector<double>& gy) {
  Reference ref;
  const Shape ys = out_shape(g);
  const int64_t PQ = ys[2] * ys[3];
  ref.y.assign(static_cast<size_t>(shape_numel(ys)), 0.0);
  ref.dx.assign(x.size(), 0.0);
  ref.dw.assign(w.size(), 0.0);
  ref.db.assign(static_cast<size_t>(g.w[0]), 0.0);
  for_each_tap(g, [&](int64_t yi, int64_t xi, int64_t wi) {
    ref.y[yi] += w[wi] * x[xi];
    ref.dx[xi] += gy[yi] * w[wi];
    ref.dw[wi] += gy[yi] * x[xi];
  });
  for (size_t i = 0; i < ref.y.size(); ++i) {
    const int64_t k = (static_cast<int64_t>(i) / PQ) % g.w[0];
    if (g.bias) ref.y[i] += b[k];
    ref.db[k] += gy[i];
  }
  return ref;
}

void check_close(const Tensor& t, const std::vector<double>& want, double tol,
                 const char* what) {
  const std::vector<double> got = t.to_vector<double>();
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (got[i] == Approx(want[i]).margin(tol).epsilon(tol)) continue;
    ++bad;
    FAIL_CHECK(what << "[" << i << "] = " << got[i] << ", expected " << want[i]);
  }
}

Tensor uniform(const Shape& shape, uint64_t seed, DType dt = kFloat64) {
  manual_seed(seed);
  return (rand(shape, dt) * 2.0 - 1.0).detach();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> gs = {
      {"3x3, stride 1, no padding", {2, 3, 9, 8}, {4, 3, 3, 3}, true, opts({1, 1}, {0, 0})},
      {"stride 2", {2, 3, 11, 10}, {5, 3, 3, 3}, true, opts({2, 2}, {0, 0})},
      {"padding 2", {1, 2, 6, 7}, {3, 2, 5, 5}, false, opts({1, 1}, {2, 2})},
      {"dilation 2, padding 2", {2, 2, 9, 9}, {3, 2, 3, 3}, true, opts({1, 1}, {2, 2}, {2, 2})},
      {"1x1 pointwise (no im2col)", {3, 5, 6, 7}, {4, 5, 1, 1}, true, opts({1, 1}, {0, 0})},
      {"1x1, stride 2", {2, 3, 7, 7}, {2, 3, 1, 1}, false, opts({2, 2}, {0, 0})},
      {"kernel == input size", {3, 2, 5, 4}, {6, 2, 5, 4}, true, opts({1, 1}, {0, 0})},
      {"rectangular 2x5, stride (3, 1), padding (1, 2)", {2, 3, 10, 9}, {2, 3, 2, 5}, true,
       opts({3, 1}, {1, 2})},
      {"stride 2, padding 1, dilation (2, 1), odd sizes", {1, 4, 13, 11}, {3, 4, 3, 3}, true,
       opts({2, 2}, {1, 1}, {2, 1})},
      // More images than weight-gradient groups (16): a group sums several images in order.
      {"batch 37, several images per weight group", {37, 2, 6, 5}, {3, 2, 3, 3}, true,
       opts({1, 1}, {1, 1})},
      // Filters long enough (C*R*S = 400) that Eigen blocks the summed dimension.
      {"C*R*S = 400, 5x5, padding 2", {3, 16, 12, 12}, {8, 16, 5, 5}, true, opts({1, 1}, {2, 2})},
      // 5x5 output planes: float32 puts several images side by side in one GEMM (batches of
      // 8, 8 and 7; kernels/cpu/conv_im2col.cpp images_per_gemm), and the weight gradient's
      // 3 groups hold 7, 8 and 8 images.
      {"batch 23 of 5x5 outputs, several images per GEMM", {23, 4, 7, 7}, {6, 4, 3, 3}, true,
       opts({1, 1}, {0, 0})},
      // Stride 1 with at least 64 taps per filter: float32 runs the implicit GEMM (no im2col;
      // kernels/cpu/conv_implicit.cpp), here with uneven padding and dilation, input rows no
      // tap reaches, and a batch wide enough for several column panels per output row.
      {"implicit: 3x5, padding (2, 1), dilation (1, 2)", {5, 8, 11, 13}, {7, 8, 3, 5}, true,
       opts({1, 1}, {2, 1}, {1, 2})},
      {"implicit: dilation 3, rows no tap reaches", {3, 8, 7, 9}, {4, 8, 3, 3}, true,
       opts({1, 1}, {0, 0}, {3, 1})},
      {"implicit: batch 37, padding 1", {37, 16, 9, 9}, {10, 16, 3, 3}, true, opts({1, 1}, {1, 1})},
      {"implicit: 13 filters of 16x5x5, 12x12 input", {6, 16, 12, 12}, {13, 16, 5, 5}, false,
       opts({1, 1}, {0, 0})},
      // groups: depthwise (the direct loops), with a channel multiplier, and 1 < groups < C
      // (im2col, or in float32 the implicit GEMM for 64-tap groups, one group at a time).
      {"depthwise 3x3, padding 1",
       {3, 6, 9, 8},
       {6, 1, 3, 3},
       true,
       opts({1, 1}, {1, 1}, {1, 1}, 6)},
      {"depthwise x3, stride 2, dilation (1, 2)",
       {2, 2, 11, 10},
       {6, 1, 3, 3},
       false,
       opts({2, 2}, {1, 2}, {1, 2}, 2)},
      {"groups 2, 5x3, stride (1, 2)",
       {2, 6, 9, 10},
       {4, 3, 5, 3},
       true,
       opts({1, 2}, {2, 1}, {1, 1}, 2)},
      {"groups 2, implicit-sized groups (16x2x2 taps)",
       {3, 32, 8, 8},
       {6, 16, 2, 2},
       true,
       opts({1, 1}, {0, 0}, {1, 1}, 2)},
  };
  return gs;
}

// Runs conv2d forward and backward (dL/dy = gy) on `dt` copies of x, w, b; returns y, dx, dw, db.
std::vector<Tensor> run_conv(const Geometry& g, const Tensor& x64, const Tensor& w64,
                             const Tensor& b64, const Tensor& gy64, DType dt) {
  Tensor x = x64.to(dt).detach().requires_grad_();
  Tensor w = w64.to(dt).detach().requires_grad_();
  Tensor b = g.bias ? b64.to(dt).detach().requires_grad_() : Tensor();
  Tensor y = conv2d(x, w, b, g.o);
  y.backward(gy64.to(dt));
  return {y, x.grad(), w.grad(), g.bias ? b.grad() : Tensor()};
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  return va.size() == vb.size() &&
         std::memcmp(va.data(), vb.data(), va.size() * sizeof(double)) == 0;
}

// Restores ember's thread count when a test ends (also when it fails).
struct ThreadCountGuard {
  int saved = get_num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("conv2d: values and gradients match a direct 7-loop convolution", "[conv2d]") {
  uint64_t seed = 700;
  for (const Geometry& g : geometries()) {
    DYNAMIC_SECTION(g.label << ": " << shape_str(g.x) << " * " << shape_str(g.w)) {
      const Tensor x = uniform(g.x, ++seed), w = uniform(g.w, ++seed);
      const Tensor b = uniform({g.w[0]}, ++seed), gy = uniform(out_shape(g), ++seed);
      const Reference ref = reference(g, x.to_vector<double>(), w.to_vector<double>(),
                                      b.to_vector<double>(), gy.to_vector<double>());
      const std::vector<Tensor> got = run_conv(g, x, w, b, gy, kFloat64);
      REQUIRE(got[0].shape() == out_shape(g));
      check_close(got[0], ref.y, 1e-12, "y");
      check_close(got[1], ref.dx, 1e-12, "dx");
      check_close(got[2], ref.dw, 1e-12, "dw");
      if (g.bias) check_close(got[3], ref.db, 1e-12, "db");
    }
  }
}

TEST_CASE("conv2d: float32 agrees with float64", "[conv2d]") {
  uint64_t seed = 800;
  for (const Geometry& g : geometries()) {
    DYNAMIC_SECTION(g.label) {
      const Tensor x = uniform(g.x, ++seed), w = uniform(g.w, ++seed);
      const Tensor b = uniform({g.w[0]}, ++seed), gy = uniform(out_shape(g), ++seed);
      const std::vector<Tensor> r64 = run_conv(g, x, w, b, gy, kFloat64);
      const std::vector<Tensor> r32 = run_conv(g, x, w, b, gy, kFloat32);
      const char* names[] = {"y", "dx", "dw", "db"};
      for (size_t i = 0; i < 4; ++i) {
        if (!r64[i].defined()) continue;
        CHECK(r32[i].dtype() == kFloat32);
        // Sums of up to a few thousand float32 products of values in [-1, 1].
        check_close(r32[i], r64[i].to_vector<double>(), 2e-4, names[i]);
      }
    }
  }
}

TEST_CASE("conv2d: only the gradients that are needed", "[conv2d]") {
  // float64 runs im2col + GEMM; float32 with 64 taps or more runs the implicit GEMM
  // (kernels/cpu/conv.cpp), which computes both gradients in one call when both are needed.
  struct Config {
    const char* label;
    Geometry g;
    DType dt;
    double tol;
  };
  const Config configs[] = {
      {"float64, im2col", {"", {2, 3, 6, 6}, {4, 3, 3, 3}, true, opts({1, 1}, {1, 1})}, kFloat64,
       1e-12},
      {"float32, 72 taps", {"", {3, 8, 7, 9}, {5, 8, 3, 3}, true, opts({1, 1}, {1, 2})}, kFloat32,
       1e-5},
  };
  uint64_t seed = 900;
  for (const Config& cfg : configs) {
    const Geometry& g = cfg.g;
    const Tensor x64 = uniform(g.x, ++seed), w64 = uniform(g.w, ++seed);
    const Tensor b64 = uniform({g.w[0]}, ++seed), gy64 = uniform(out_shape(g), ++seed);
    const Reference ref = reference(g, x64.to_vector<double>(), w64.to_vector<double>(),
                                    b64.to_vector<double>(), gy64.to_vector<double>());
    const Tensor x0 = x64.to(cfg.dt), w0 = w64.to(cfg.dt), b0 = b64.to(cfg.dt);
    const Tensor gy = gy64.to(cfg.dt);
    DYNAMIC_SECTION(cfg.label << ": a frozen weight and bias: only the input learns") {
      Tensor x = x0.clone().requires_grad_();
      Tensor y = conv2d(x, w0, b0, g.o);
      REQUIRE(y.grad_fn());
      CHECK(y.grad_fn()->name() == "Conv2dBackward");
      y.backward(gy);
      check_close(x.grad(), ref.dx, cfg.tol, "dx");
    }
    DYNAMIC_SECTION(cfg.label << ": a frozen weight, a learning bias: the bias gradient alone") {
      Tensor b = b0.clone().requires_grad_();
      conv2d(x0, w0, b, g.o).backward(gy);
      check_close(b.grad(), ref.db, cfg.tol, "db");
    }
    DYNAMIC_SECTION(cfg.label << ": a frozen input: weight and bias") {
      Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
      conv2d(x0, w, b, g.o).backward(gy);
      check_close(w.grad(), ref.dw, cfg.tol, "dw");
      check_close(b.grad(), ref.db, cfg.tol, "db");
    }
    DYNAMIC_SECTION(cfg.label << ": nothing requires grad: no graph") {
      CHECK_FALSE(conv2d(x0, w0, b0, g.o).requires_grad());
    }
  }
}

TEST_CASE("conv2d: a 3-d input is one image and gives a 3-d result", "[conv2d]") {
  const Tensor x0 = uniform({3, 7, 6}, 911), w0 = uniform({2, 3, 3, 3}, 912);
  const Tensor b0 = uniform({2}, 913);
  const Conv2dOptions o = opts({2, 1}, {1, 1});
  Tensor x = x0.clone().requires_grad_();
  Tensor y = conv2d(x, w0, b0, o);
  REQUIRE(y.shape() == Shape{2, 4, 6});
  const Tensor y4 = conv2d(x0.unsqueeze(0), w0, b0, o);
  REQUIRE(y4.shape() == Shape{1, 2, 4, 6});
  CHECK(bitwise_equal(y, y4.squeeze(0)));
  y.sum().backward();
  REQUIRE(x.grad().shape() == Shape{3, 7, 6});
  Tensor x4 = x0.unsqueeze(0).detach().requires_grad_();
  conv2d(x4, w0, b0, o).sum().backward();
  CHECK(bitwise_equal(x.grad(), x4.grad().squeeze(0)));
}

TEST_CASE("conv2d: argument errors say what is wrong", "[conv2d]") {
  const Tensor x = zeros({2, 3, 8, 8}), w = zeros({4, 3, 3, 3}), b = zeros({4});
  auto conv = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb, Conv2dOptions o = {}) {
    return [=] { conv2d(xx, ww, bb, o); };
  };
  CHECK_THROWS_AS(conv(x, zeros({4, 5, 3, 3}), Tensor())(), ValueError);
  CHECK_THAT(error_of(conv(Tensor(), w, b)), Contains("conv2d: input is an undefined tensor"));
  CHECK_THAT(error_of(conv(x, Tensor(), b)), Contains("conv2d: weight is an undefined tensor"));
  CHECK_THAT(error_of(conv(zeros({3, 8}), w, b)),
             Contains("input must be [N, C, H, W] (or [C, H, W] for one image), got [3, 8]"));
  CHECK_THAT(error_of(conv(zeros({1, 2, 3, 8, 8}), w, b)), Contains("got [1, 2, 3, 8, 8]"));
  CHECK_THAT(error_of(conv(x, zeros({4, 3, 3}), b)),
             Contains("weight must be [K, C/groups, R, S]") && Contains("got [4, 3, 3]"));
  CHECK_THAT(error_of(conv(x, zeros({4, 5, 3, 3}), b)),
             Contains("input [2, 3, 8, 8] has 3 channels but weight [4, 5, 3, 3] expects 5"));
  CHECK_THAT(error_of(conv(x, zeros({4, 3, 0, 3}), b)), Contains("has an empty kernel"));
  CHECK_THAT(error_of(conv(x, w, zeros({3}))),
             Contains("bias must be [4] (one value per output channel") && Contains("got [3]"));
  CHECK_THAT(error_of(conv(x, w, zeros({4, 1}))), Contains("bias must be [4]"));
  CHECK_THAT(error_of(conv(x, w, b, opts({0, 1}, {0, 0}))),
             Contains("stride must be >= 1, got (0, 1)"));
  CHECK_THAT(error_of(conv(x, w, b, opts({1, 1}, {0, 0}, {1, 0}))),
             Contains("dilation must be >= 1, got (1, 0)"));
  CHECK_THAT(error_of(conv(x, w, b, opts({1, 1}, {-1, 0}))),
             Contains("padding must be >= 0, got (-1, 0)"));
  CHECK_THAT(error_of(conv(x, zeros({4, 3, 9, 3}), b)),
             Contains("the kernel 9x3 with dilation (1, 1) spans 9x3, larger than the input 8x8 "
                      "with padding (0, 0) (8x8)"));
  CHECK_THAT(error_of(conv(x, w, b, opts({1, 1}, {0, 0}, {4, 1}))),
             Contains("spans 9x3") && Contains("more padding"));
  // Padding makes the same kernel fit (like PyTorch).
  CHECK(conv2d(x, zeros({4, 3, 9, 3}), b, opts({1, 1}, {1, 0})).shape() == Shape{2, 4, 2, 6});
  CHECK_THAT(error_of(conv(x, w.to(kFloat64), b)), Contains("conv2d: dtypes differ"));
  CHECK_THAT(error_of(conv(x, w, b.to(kFloat64))), Contains("conv2d: dtypes differ"));
  CHECK_THAT(error_of(conv(x.to(kInt64), w.to(kInt64), Tensor())),
             Contains("conv2d: expected a float32 or float64 tensor, got int64"));
  // groups: both channel counts divisible, the weight holds C / groups channels per filter.
  Conv2dOptions g2;
  g2.groups = 2;
  const Tensor x4 = zeros({2, 4, 8, 8});
  CHECK_THAT(error_of(conv(x, zeros({4, 1, 3, 3}), b, g2)),
             Contains("input [2, 3, 8, 8] has 3 channels, which groups = 2 does not divide") &&
                 Contains("depthwise: groups = 3"));
  CHECK_THAT(error_of(conv(x4, zeros({3, 2, 3, 3}), Tensor(), g2)),
             Contains("weight [3, 2, 3, 3] has 3 output channels, which groups = 2 does not "
                      "divide"));
  CHECK_THAT(error_of(conv(x4, zeros({4, 4, 3, 3}), b, g2)),
             Contains("input [2, 4, 8, 8] has 4 channels but weight [4, 4, 3, 3] expects 8 (4 "
                      "per group times groups = 2)"));
  g2.groups = 0;
  CHECK_THAT(error_of(conv(x4, zeros({4, 4, 3, 3}), b, g2)),
             Contains("groups must be at least 1, got 0"));
  g2.groups = 4;  // depthwise: weight [4, 1, 3, 3]
  CHECK(conv2d(x4, zeros({4, 1, 3, 3}), b, g2).shape() == Shape{2, 4, 6, 6});
}

TEST_CASE("conv2d: the backend switch in a build without cuDNN", "[conv2d]") {
  CHECK(conv_backend() == ConvBackend::Native);
  if (cudnn_available()) {
    // A cuDNN build: the switch works and goes back.
    set_conv_backend(ConvBackend::Cudnn);
    CHECK(conv_backend() == ConvBackend::Cudnn);
    set_conv_backend(ConvBackend::Native);
    CHECK(conv_backend() == ConvBackend::Native);
    return;
  }
  CHECK_THROWS_AS(set_conv_backend(ConvBackend::Cudnn), DeviceError);
  const std::string msg = error_of([] { set_conv_backend(ConvBackend::Cudnn); });
  CHECK_THAT(msg, Contains("no cuDNN") && Contains("-DEMBER_CUDNN=ON"));
  CHECK(conv_backend() == ConvBackend::Native);
  set_conv_backend(ConvBackend::Native);  // always allowed
  CHECK(conv_backend() == ConvBackend::Native);
}

TEST_CASE("conv2d: results do not depend on the thread count", "[conv2d]") {
  ThreadCountGuard restore;
  // One image (the other thread idles), an odd batch, and more images than weight groups; the
  // filters are long enough (C*R*S = 400 and 360) for Eigen to block the summed dimension,
  // which it does differently when it runs one product on several threads.
  const std::vector<Geometry> gs = {
      {"one image", {1, 16, 15, 15}, {16, 16, 5, 5}, true, opts({1, 1}, {2, 2})},
      {"batch 5", {5, 40, 13, 11}, {24, 40, 3, 3}, true, opts({1, 1}, {1, 1})},
      {"batch 21, stride 2", {21, 8, 24, 24}, {12, 8, 3, 3}, true, opts({2, 2}, {1, 1})},
      {"batch 23 of 5x5 outputs", {23, 4, 7, 7}, {6, 4, 3, 3}, true, opts({1, 1}, {0, 0})},
  };
  uint64_t seed = 950;
  for (const Geometry& g : gs) {
    for (DType dt : {kFloat32, kFloat64}) {
      DYNAMIC_SECTION(g.label << ", " << dt) {
        const Tensor x = uniform(g.x, ++seed), w = uniform(g.w, ++seed);
        const Tensor b = uniform({g.w[0]}, ++seed), gy = uniform(out_shape(g), ++seed);
        set_num_threads(1);
        const std::vector<Tensor> one = run_conv(g, x, w, b, gy, dt);
        set_num_threads(2);
        const std::vector<Tensor> two = run_conv(g, x, w, b, gy, dt);
        const char* names[] = {"y", "dx", "dw", "db"};
        for (size_t i = 0; i < 4; ++i) {
          INFO(names[i]);
          CHECK(bitwise_equal(one[i], two[i]));
        }
      }
    }
  }
}

TEST_CASE("conv2d: an image gives the same bits alone as inside a batch", "[conv2d]") {
  // Small output planes put several float32 images in one GEMM (kernels/cpu/conv_im2col.cpp); the
  // GEMM kernel's sums depend only on their length, so each image's output and input gradient
  // must not depend on its neighbours. (float64, one image per GEMM, is covered by
  // tests/nn/conv.cpp's "one image gives the first row of the batch".)
  // The implicit GEMM (stride 1, 64 taps or more) puts the batch inside each product's columns;
  // its sums too must not depend on the batch.
  const std::vector<Geometry> gs = {
      {"batch 23 of 5x5 outputs", {23, 4, 7, 7}, {6, 4, 3, 3}, true, opts({1, 1}, {0, 0})},
      {"implicit, batch 23", {23, 8, 6, 7}, {5, 8, 3, 3}, true, opts({1, 1}, {1, 1})},
      {"implicit, 400 taps (two k-blocks)", {23, 16, 9, 9}, {6, 16, 5, 5}, true,
       opts({1, 1}, {2, 2})},
  };
  uint64_t seed = 990;
  for (const Geometry& g : gs) {
    DYNAMIC_SECTION(g.label) {
      const Tensor x = uniform(g.x, ++seed, kFloat32), w = uniform(g.w, ++seed, kFloat32);
      const Tensor b = uniform({g.w[0]}, ++seed, kFloat32);
      const Tensor gy = uniform(out_shape(g), ++seed, kFloat32);
      const std::vector<Tensor> batch = run_conv(g, x, w, b, gy, kFloat32);
      for (int64_t n : {0, 7, 8, 15, 22}) {  // first, last and inside batches of 8, 8, 7
        INFO("image " << n);
        Geometry one = g;
        one.x[0] = 1;
        const Tensor xn = x.slice(0, n, n + 1).contiguous();
        const Tensor gyn = gy.slice(0, n, n + 1).contiguous();
        const std::vector<Tensor> alone = run_conv(one, xn, w, b, gyn, kFloat32);
        CHECK(bitwise_equal(alone[0], batch[0].slice(0, n, n + 1)));
        CHECK(bitwise_equal(alone[1], batch[1].slice(0, n, n + 1)));
      }
    }
  }
}
