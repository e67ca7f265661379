// max_pool2d and avg_pool2d (core/ops/pool2d.cpp): values and gradients against a naive loop,
// ties, -inf padding and NaN, count_include_pad, argument errors, the same bits for any thread
// count, and (with a GPU) CUDA against the CPU bit for bit.
// gradcheck and the CUDA parity of the op cases are in tests/cases/pool.cpp; the PyTorch
// reference values in tests/fixtures/ops.txt.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Pool2dOptions pool(std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride = {0, 0},
                   std::array<int64_t, 2> padding = {0, 0},
                   std::array<int64_t, 2> dilation = {1, 1}, bool ceil_mode = false,
                   bool count_include_pad = true) {
  Pool2dOptions o;
  o.kernel_size = kernel;
  o.stride = stride;
  o.padding = padding;
  o.dilation = dilation;
  o.ceil_mode = ceil_mode;
  o.count_include_pad = count_include_pad;
  return o;
}

// PyTorch's output size, written as its docs state it: floor (or ceil) of
// (in + 2 pad - dil (k - 1) - 1) / stride + 1, and in ceil mode one less when the last window
// would start in the right padding.
int64_t naive_out(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
  const double span =
      static_cast<double>(in + 2 * pad - dil * (k - 1) - 1) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

// The reference: pooling written out the obvious way, over [planes, H, W] in double. Taps in
// the padding are skipped (max: they are -inf; avg: zeros). The average divides by the window
// clipped to the padded input (count_include_pad) or by its taps inside the plane.
struct Naive {
  std::vector<double> y;   // [planes, P, Q]
  std::vector<double> dx;  // gradient of sum(y * g), [planes, H, W]
  int64_t P = 0, Q = 0;
};

Naive naive_pool(bool is_max, const std::vector<double>& x, int64_t planes, int64_t H, int64_t W,
                 const Pool2dOptions& o, const std::vector<double>& g) {
  const int64_t kh = o.kernel_size[0], kw = o.kernel_size[1];
  const int64_t sh = o.stride[0] ? o.stride[0] : kh, sw = o.stride[1] ? o.stride[1] : kw;
  const int64_t ph = o.padding[0], pw = o.padding[1];
  const int64_t dh = o.dilation[0], dw = o.dilation[1];
  Naive r;
  r.P = naive_out(H, kh, sh, ph, dh, o.ceil_mode);
  r.Q = naive_out(W, kw, sw, pw, dw, o.ceil_mode);
  r.y.assign(static_cast<size_t>(planes * r.P * r.Q), 0.0);
  r.dx.assign(x.size(), 0.0);
  for (int64_t n = 0; n < planes; ++n) {
    for (int64_t p = 0; p < r.P; ++p) {
      for (int64_t q = 0; q < r.Q; ++q) {
        const size_t out = static_cast<size_t>((n * r.P + p) * r.Q + q);
        double best = -kInf, sum = 0.0;
        int64_t at = -1, inside = 0, padded = 0;
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t h = p * sh - ph + i * dh, w = q * sw - pw + j * dw;
            if (h < H + ph && w < W + pw) ++padded;  // inside the padded input
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x[static_cast<size_t>((n * H + h) * W + w)];
            sum += v;
            ++inside;
            // PyTorch's rule: the first tap in the plane; then a larger number or any NaN.
            if (at < 0 || v > best || std::isnan(v)) {
              best = v;
              at = h * W + w;
            }
          }
        }
        const double divisor = static_cast<double>(o.count_include_pad ? padded : inside);
        if (is_max) {
          r.y[out] = best;
          r.dx[static_cast<size_t>(n * H * W + at)] += g[out];
        } else {
          r.y[out] = sum / divisor;
          for (int64_t i = 0; i < kh; ++i) {
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t h = p * sh - ph + i, w = q * sw - pw + j;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              const size_t in = static_cast<size_t>((n * H + h) * W + w);
              r.dx[in] += g[out] / divisor;
            }
          }
        }
      }
    }
  }
  return r;
}

void check_values(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                  const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same_nan = std::isnan(got[i]) && std::isnan(want[i]);
    if (same_nan || got[i] == want[i]) continue;
    if (std::fabs(got[i] - want[i]) <= rtol * (std::fabs(want[i]) + 1e-3)) continue;
    if (bad++ < 3) UNSCOPED_INFO("[" << i << "] got " << got[i] << ", expected " << want[i]);
  }
  CHECK(bad == 0);
}

// Runs the op on x (which must require grad) with upstream gradient g and compares the output
// and x's gradient with the naive loop.
void check_against_naive(bool is_max, const Tensor& x, const Pool2dOptions& o, double rtol,
                         const std::string& what) {
  const int64_t H = x.size(-2), W = x.size(-1);
  const int64_t planes = x.numel() / (H * W);
  const Tensor y = is_max ? max_pool2d(x, o) : avg_pool2d(x, o);
  manual_seed(99);
  const Tensor g = (rand(y.shape(), kFloat64) * 2.0 - 1.0).to(x.dtype());
  sum(mul(y, g)).backward();
  const Naive want = naive_pool(is_max, x.detach().to_vector<double>(), planes, H, W, o,
                                g.to_vector<double>());
  Shape shape = x.shape();
  shape[shape.size() - 2] = want.P;
  shape[shape.size() - 1] = want.Q;
  INFO(what << (is_max ? " max" : " avg") << ", input " << shape_str(x.shape()) << " "
            << x.dtype());
  CHECK(y.shape() == shape);
  CHECK(y.dtype() == x.dtype());
  check_values(y.to_vector<double>(), want.y, rtol, "output");
  REQUIRE(x.grad().defined());
  CHECK(x.grad().shape() == x.shape());
  check_values(x.grad().to_vector<double>(), want.dx, rtol, "input gradient");
}

template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no ValueError thrown)";
}

}  // namespace

TEST_CASE("pool2d: values and gradients match a naive loop", "[pool2d]") {
  struct Geometry {
    Shape shape;
    Pool2dOptions o;
    const char* what;
  };
  const std::vector<Geometry> geometries = {
      {{2, 3, 8, 8}, pool({2, 2}), "k2 s2"},
      {{1, 2, 7, 9}, pool({3, 3}, {1, 1}), "k3 s1 overlap"},
      {{2, 2, 9, 7}, pool({3, 3}, {2, 2}, {1, 1}), "k3 s2 pad 1"},
      {{1, 3, 6, 11}, pool({2, 4}, {1, 3}, {1, 2}), "non-square"},
      {{3, 1, 7, 5}, pool({2, 2}), "odd sizes (floor mode)"},
      {{1, 2, 10, 10}, pool({2, 3}, {4, 3}), "stride > kernel"},
      {{4, 5, 5}, pool({5, 5}, {1, 1}, {2, 2}), "3-d, pad = kernel / 2"},
      {{1, 1, 1, 1}, pool({1, 1}), "1x1"},
      {{2, 4, 50, 50}, pool({2, 2}), "the cats-vs-dogs 50x50"},
      {{2, 2, 7, 5}, pool({2, 2}, {2, 2}, {0, 0}, {1, 1}, true), "ceil mode, odd sizes"},
      {{1, 2, 8, 8}, pool({3, 3}, {2, 2}, {1, 1}, {1, 1}, true), "ceil mode over the padding"},
      {{1, 1, 4, 7}, pool({2, 2}, {3, 3}, {1, 1}, {1, 1}, true), "ceil mode, last window dropped"},
      {{2, 2, 9, 7}, pool({3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false), "count_include_pad off"},
      {{1, 2, 7, 6}, pool({3, 2}, {2, 2}, {1, 1}, {1, 1}, true, false), "ceil, pad not counted"},
      {{1, 2, 9, 8}, pool({3, 3}, {1, 1}, {0, 0}, {2, 2}), "dilation 2 (max)"},
      {{2, 1, 10, 9}, pool({3, 2}, {2, 1}, {1, 1}, {2, 3}, true), "dilation (2, 3), ceil (max)"},
  };
  for (const Geometry& geo : geometries) {
    for (bool is_max : {true, false}) {
      if (!is_max && geo.o.dilation != std::array<int64_t, 2>{1, 1}) continue;
      for (DType dt : {kFloat64, kFloat32}) {
        manual_seed(7);
        // float32 values: the naive loop then sees exactly what the kernel sees.
        const Tensor x = randn(geo.shape, dt).requires_grad_(true);
        // float32 kernels sum in double like the naive loop, but round the result and the
        // gradients to float (max pooling adds overlapping windows' gradients in float: with
        // dilation an input collects up to 9 of them, hence 1e-5).
        check_against_naive(is_max, x, geo.o, dt == kFloat64 ? 1e-12 : 1e-5, geo.what);
      }
    }
  }
}

TEST_CASE("pool2d: strided and transposed inputs give the contiguous answer", "[pool2d]") {
  manual_seed(3);
  const Tensor wide = randn({2, 3, 7, 12}, kFloat64);
  Tensor strided = wide.slice(-1, 0, 12, 2).detach().requires_grad_(true);  // [2,3,7,6]
  Tensor transposed = randn({2, 3, 6, 7}, kFloat64).transpose(-1, -2).detach()
                                .requires_grad_(true);  // [2, 3, 7, 6]
  REQUIRE_FALSE(strided.is_contiguous());
  REQUIRE_FALSE(transposed.is_contiguous());
  for (bool is_max : {true, false}) {
    check_against_naive(is_max, strided, pool({3, 3}, {2, 2}, {1, 1}), 1e-12, "strided");
    check_against_naive(is_max, transposed, pool({2, 3}, {1, 2}), 1e-12, "transposed");
    strided.zero_grad();
    transposed.zero_grad();
  }
}

TEST_CASE("max_pool2d: ties go to the first tap, padding never wins, NaN wins", "[pool2d]") {
  SECTION("ties: the whole gradient goes to the first tap of each window, row-major") {
    const Tensor x = ones({1, 1, 4, 4}, kFloat64).requires_grad_(true);
    const Tensor y = max_pool2d(x, pool({2, 2}));
    CHECK(y.to_vector<double>() == std::vector<double>(4, 1.0));
    sum(y).backward();
    CHECK(x.grad().to_vector<double>() ==
          std::vector<double>{1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0});
  }
  SECTION("ties between two later taps: the first of them") {
    // Window [[1, 5], [5, 2]]: both 5s tie; the one at (0, 1) comes first.
    const Tensor x =
        tensor({1.0, 5.0, 5.0, 2.0}, kFloat64).reshape({1, 1, 2, 2}).requires_grad_(true);
    sum(max_pool2d(x, pool({2, 2}))).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 0});
  }
  SECTION("overlapping windows add their gradients into the shared winner") {
    // k3 s1 on a constant 3x4 plane: both windows pick their first tap, (0, 0) and (0, 1).
    const Tensor x = full({1, 1, 3, 4}, 2.0, kFloat64).requires_grad_(true);
    const Tensor y = max_pool2d(x, pool({3, 3}, {1, 1}));
    CHECK(y.shape() == Shape{1, 1, 1, 2});
    sum(y).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    // A strict maximum in the middle of a 3x3 plane is picked by all four 2x2 windows.
    const Tensor z = tensor({0, 0, 0, 0, 9, 0, 0, 0, 0}, kFloat64).reshape({1, 1, 3, 3})
                         .requires_grad_(true);
    sum(max_pool2d(z, pool({2, 2}, {1, 1}))).backward();
    CHECK(z.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 0, 4, 0, 0, 0, 0});
  }
  SECTION("padding is -inf: never picked, even over negative numbers or -inf inputs") {
    const Tensor neg = full({1, 1, 3, 3}, -2.0, kFloat64);
    CHECK(max_pool2d(neg, pool({3, 3}, {1, 1}, {1, 1})).to_vector<double>() ==
          std::vector<double>(9, -2.0));
    const Tensor x = full({1, 1, 2, 2}, -kInf, kFloat64).requires_grad_(true);
    const Tensor y = max_pool2d(x, pool({2, 2}, {1, 1}, {1, 1}));  // 3x3 windows, mostly padding
    CHECK(y.shape() == Shape{1, 1, 3, 3});
    CHECK(y.to_vector<double>() == std::vector<double>(9, -kInf));
    // Each output picked a real input (the first tap inside the plane), so the gradient of
    // sum(y) is a count of windows per input: 9 windows in all, none lost to the padding.
    sum(y).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{4, 2, 2, 1});
  }
  SECTION("NaN: a window with a NaN gives NaN, and PyTorch's NaN gets the gradient") {
    const double nan = std::nan("");
    const Tensor x = tensor({1.0, 7.0, nan, 3.0, 2.0, nan, 8.0, 0.0}, kFloat64)
                         .reshape({1, 1, 2, 4}).requires_grad_(true);
    // Windows: [[1, 7], [2, nan]] and [[nan, 3], [8, 0]].
    const Tensor y = max_pool2d(x, pool({2, 2}));
    const auto v = y.to_vector<double>();
    REQUIRE(v.size() == 2);
    CHECK(std::isnan(v[0]));
    CHECK(std::isnan(v[1]));
    sum(y).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 1, 0, 0, 1, 0, 0});
    // Two NaNs in one window: the LAST (row-major) is picked, as PyTorch 1.13 does (a tap
    // replaces the best when it is larger or a NaN).
    const Tensor z = tensor({5.0, nan, nan, 9.0}, kFloat64).reshape({1, 1, 2, 2})
                         .requires_grad_(true);
    sum(max_pool2d(z, pool({2, 2}))).backward();
    CHECK(z.grad().to_vector<double>() == std::vector<double>{0, 0, 1, 0});
    // PyTorch 1.13's own answer (F.max_pool2d(x, 2, 1, return_indices=True) on this plane):
    // indices [[3, 1], [3, 8]], and the gradient of the sum [[0, 1, 0], [2, 0, 0], [0, 0, 1]].
    const Tensor w = tensor({1.0, nan, 3.0, nan, 2.0, 5.0, 0.0, 1.0, nan}, kFloat64)
                         .reshape({1, 1, 3, 3})
                         .requires_grad_(true);
    const ValuesIndices vi = max_pool2d_with_indices(w, pool({2, 2}, {1, 1}));
    CHECK(vi.indices.to_vector<int64_t>() == std::vector<int64_t>{3, 1, 3, 8});
    sum(vi.values).backward();
    CHECK(w.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 2, 0, 0, 0, 0, 1});
    // On a row of a 2x2 fast-path layout too (kernel 2, stride 2: its NaN rows are redone).
    const Tensor r =
        tensor({nan, nan, 1.0, 2.0, nan, 4.0, 3.0, nan}, kFloat32).reshape({1, 1, 2, 4});
    CHECK(max_pool2d_with_indices(r, pool({2, 2})).indices.to_vector<int64_t>() ==
          std::vector<int64_t>{4, 7});
  }
}

TEST_CASE("avg_pool2d: padding counts as zeros, the divisor is the full window", "[pool2d]") {
  const Tensor x = ones({1, 1, 3, 3}, kFloat64).requires_grad_(true);
  const Tensor y = avg_pool2d(x, pool({3, 3}, {1, 1}, {1, 1}));
  const auto v = y.to_vector<double>();
  REQUIRE(v.size() == 9);
  CHECK(v[0] == Approx(4.0 / 9.0).epsilon(1e-15));  // corner: 4 real taps of 9
  CHECK(v[1] == Approx(6.0 / 9.0).epsilon(1e-15));  // edge: 6 of 9
  CHECK(v[4] == 1.0);                               // centre: all 9
  sum(y).backward();
  // Every input is in windows covering it; each contributes 1/9. Corner (0,0) is in 4 windows.
  const auto gx = x.grad().to_vector<double>();
  CHECK(gx[0] == Approx(4.0 / 9.0).epsilon(1e-15));
  CHECK(gx[4] == Approx(1.0).epsilon(1e-15));
  // A NaN anywhere in a window makes that average NaN.
  const Tensor n = tensor({1.0, std::nan(""), 2.0, 3.0}, kFloat64).reshape({1, 1, 1, 4});
  const auto nv = avg_pool2d(n, pool({1, 2})).to_vector<double>();
  CHECK(std::isnan(nv[0]));
  CHECK(nv[1] == 2.5);
}

TEST_CASE("pool2d: shapes, default stride, names of the backward nodes", "[pool2d]") {
  const Tensor x = randn({2, 3, 9, 8}).requires_grad_(true);
  // Default options: kernel 2, stride 0 = the kernel size.
  CHECK(max_pool2d(x).shape() == Shape{2, 3, 4, 4});
  CHECK(avg_pool2d(x, pool({3, 2})).shape() == Shape{2, 3, 3, 4});
  CHECK(max_pool2d(x).grad_fn()->name() == "MaxPool2dBackward");
  CHECK(avg_pool2d(x).grad_fn()->name() == "AvgPool2dBackward");
  // 3-d in, 3-d out.
  CHECK(max_pool2d(randn({3, 5, 5}), pool({2, 2}, {1, 1})).shape() == Shape{3, 4, 4});
  // An empty batch or no channels: an empty result of the right shape, and its backward.
  const Tensor e = zeros({0, 3, 4, 4}, TensorOptions().requires_grad());
  const Tensor ye = max_pool2d(e);
  CHECK(ye.shape() == Shape{0, 3, 2, 2});
  sum(ye).backward();
  CHECK(e.grad().shape() == Shape{0, 3, 4, 4});
  CHECK(avg_pool2d(zeros({2, 0, 4, 4})).shape() == Shape{2, 0, 2, 2});
  // No recording without requires_grad or under NoGradGuard.
  CHECK_FALSE(max_pool2d(randn({1, 1, 4, 4})).requires_grad());
  {
    NoGradGuard ng;
    CHECK_FALSE(avg_pool2d(x).requires_grad());
  }
}

TEST_CASE("max_pool2d_with_indices: PyTorch's flat indices, the values, one backward", "[pool2d]") {
  // 1x5 rows pooled k (1, 2) s 2, ceil mode: windows [0, 1], [2, 3] and [4] (the last overhangs).
  const Tensor x = tensor({3.0, 1.0, 2.0, 8.0, -1.0, 0.0, 6.0, 6.0, 5.0, 9.0}, kFloat64)
                       .reshape({1, 2, 1, 5})
                       .requires_grad_(true);
  const ValuesIndices vi = max_pool2d_with_indices(x, pool({1, 2}, {2, 2}, {0, 0}, {1, 1}, true));
  CHECK(vi.values.shape() == Shape{1, 2, 1, 3});
  CHECK(vi.indices.dtype() == kInt64);
  CHECK(vi.values.to_vector<double>() == std::vector<double>{3, 8, -1, 6, 6, 9});
  // Flat within each H x W plane (not within the window, not global): the second plane's
  // indices start at 0 again.
  CHECK(vi.indices.to_vector<int64_t>() == std::vector<int64_t>{0, 3, 4, 1, 2, 4});
  sum(vi.values).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 0, 1});
  // The values equal max_pool2d's, with dilation too (taps 2 apart: [0, 2] and [2, 4]).
  const Tensor y = randn({2, 3, 6, 7}, kFloat64);
  const Pool2dOptions o = pool({2, 2}, {2, 1}, {1, 1}, {2, 2});
  const ValuesIndices d = max_pool2d_with_indices(y, o);
  CHECK(d.values.to_vector<double>() == max_pool2d(y, o).to_vector<double>());
  // Each index points at its value.
  const std::vector<double> yv = y.to_vector<double>(), dv = d.values.to_vector<double>();
  const std::vector<int64_t> iv = d.indices.to_vector<int64_t>();
  const int64_t out_plane = d.values.size(2) * d.values.size(3);
  for (size_t i = 0; i < iv.size(); ++i)
    CHECK(yv[static_cast<size_t>(static_cast<int64_t>(i) / out_plane * 42 + iv[i])] == dv[i]);
}

TEST_CASE("pool2d: argument errors say what is wrong", "[pool2d][errors]") {
  const Tensor x = zeros({1, 2, 5, 5});
  CHECK_THAT(error_message([&] { max_pool2d(zeros({1, 2, 5, 5}, kInt64)); }),
             Contains("max_pool2d: expected a float32 or float64 tensor, got int64"));
  CHECK_THAT(error_message([&] { avg_pool2d(zeros({5, 5})); }),
             Contains("avg_pool2d: expected a 4-d [N, C, H, W] or 3-d [C, H, W] input, got shape "
                      "[5, 5] (2-d)") && Contains("unsqueeze(0)"));
  CHECK_THAT(error_message([&] { max_pool2d(zeros({1, 1, 1, 5, 5})); }),
             Contains("got shape [1, 1, 1, 5, 5] (5-d)"));
  CHECK_THAT(error_message([&] { max_pool2d(x, pool({0, 2})); }),
             Contains("max_pool2d: kernel_size must be at least 1, got 0 for the height"));
  CHECK_THAT(error_message([&] { max_pool2d(x, pool({2, 2}, {1, -1})); }),
             Contains("max_pool2d: stride must be positive (or 0 for the kernel size), got -1 "
                      "for the width"));
  CHECK_THAT(error_message([&] { avg_pool2d(x, pool({2, 2}, {1, 1}, {-1, 0})); }),
             Contains("avg_pool2d: padding must be >= 0, got -1 for the height"));
  CHECK_THAT(error_message([&] { max_pool2d(x, pool({3, 3}, {1, 1}, {1, 2})); }),
             Contains("max_pool2d: padding 2 is more than half the kernel size 3 for the width") &&
                 Contains("PyTorch's rule"));
  CHECK_THAT(error_message([&] { max_pool2d(zeros({1, 1, 2, 9}), pool({3, 3})); }),
             Contains("max_pool2d: input [1, 1, 2, 9] is too small for kernel [3, 3] with "
                      "padding [0, 0]"));
  CHECK_THAT(error_message([&] { avg_pool2d(zeros({1, 1, 0, 4}), pool({2, 2}, {1, 1}, {1, 1})); }),
             Contains("avg_pool2d: the input plane is empty (shape [1, 1, 0, 4])"));
  CHECK_THAT(error_message([&] { max_pool2d(Tensor()); }),
             Contains("max_pool2d: input is an undefined tensor"));
  CHECK_THAT(error_message([&] {
               avg_pool2d(x, pool({2, 2}, {1, 1}, {0, 0}, {2, 1}));
             }),
             Contains("avg_pool2d: dilation is a max_pool2d option") && Contains("height"));
  CHECK_THAT(error_message([&] {
               max_pool2d(x, pool({2, 2}, {1, 1}, {0, 0}, {1, 0}));
             }),
             Contains("max_pool2d: dilation must be at least 1, got 0 for the width"));
  // Dilation 3 from the padding: window 0 reads rows -1 and 2 of a 2-row plane, none inside.
  CHECK_THAT(error_message([&] {
               max_pool2d(zeros({1, 1, 2, 4}), pool({2, 2}, {1, 1}, {1, 0}, {3, 1}));
             }),
             Contains("has no tap inside the input"));
  // ceil mode lets a window hang over the end, but not start past it.
  CHECK(max_pool2d(zeros({1, 1, 1, 5}), pool({1, 3}, {1, 3}, {0, 0}, {1, 1}, true)).shape() ==
        Shape{1, 1, 1, 2});
}

TEST_CASE("pool2d: the same bits for any thread count", "[pool2d][threads]") {
  manual_seed(11);
  // Enough planes (and work per plane) that several threads really split them.
  const Tensor x64 = randn({8, 16, 33, 35}, kFloat64);
  const Tensor g = randn({8, 16, 17, 18}, kFloat64);  // k3 s2 pad 1 output
  const Pool2dOptions o = pool({3, 3}, {2, 2}, {1, 1});
  const int saved = get_num_threads();
  for (DType dt : {kFloat64, kFloat32}) {
    for (bool is_max : {true, false}) {
      std::vector<std::vector<double>> ys, dxs;
      for (int threads : {1, 2, 5}) {
        set_num_threads(threads);
        const Tensor x = x64.to(dt).clone().requires_grad_(true);  // to(kFloat64) may alias
        const Tensor y = is_max ? max_pool2d(x, o) : avg_pool2d(x, o);
        sum(mul(y, g.to(dt))).backward();
        ys.push_back(y.to_vector<double>());
        dxs.push_back(x.grad().to_vector<double>());
      }
      INFO((is_max ? "max" : "avg") << " " << dt);
      CHECK(ys[0] == ys[1]);
      CHECK(ys[0] == ys[2]);
      CHECK(dxs[0] == dxs[1]);
      CHECK(dxs[0] == dxs[2]);
    }
  }
  set_num_threads(saved);
}

// CUDA against the CPU. Both devices add the same numbers in the same order (see
// kernels/cuda/pool.cu), so the outputs and gradients must agree bit for bit.
TEST_CASE("pool2d: CUDA matches the CPU bit for bit", "[pool2d][cuda]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  struct Geometry {
    Shape shape;
    Pool2dOptions o;
  };
  const std::vector<Geometry> geometries = {
      // cats vs dogs, first pool (a batch of 20 instead of 100 in the emulation build)
      {{cuda::is_emulated() ? 20 : 100, 32, 46, 46}, pool({2, 2})},
      {{3, 2, 1023, 65}, pool({3, 3}, {2, 2}, {1, 1})},    // long planes, odd sizes
      {{1, 1, 1, 1}, pool({1, 1})},
      {{7, 3, 5, 5}, pool({2, 3}, {1, 2}, {1, 1})},
      {{65537, 1, 2, 2}, pool({2, 2})},                    // many tiny planes
      {{2, 1, 4096, 2100}, pool({2, 2})},  // 17.2M inputs > 2^16 blocks x 256: the grid loops
      {{2, 5, 9}, pool({3, 3}, {1, 1})},                   // 3-d
      {{2, 3, 9, 11}, pool({3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false)},  // ceil, pad not counted
      {{2, 3, 13, 10}, pool({3, 2}, {2, 1}, {1, 1}, {2, 3}, true)},        // dilation (max; avg: 1)
  };
  for (const Geometry& geo : geometries) {
    // The emulation build runs every CUDA thread on the CPU: the 17.2M-element geometry (there to
    // make the grid loop) runs once there, in float32 with random values, not eight times.
    const bool huge = geo.shape.size() == 4 && geo.shape[2] * geo.shape[3] > (1 << 23);
    for (DType dt : {kFloat32, kFloat64}) {
      if (huge && cuda::is_emulated() && dt != kFloat32) continue;
      for (int values = 0; values < 2; ++values) {  // 0: random, 1: all ties plus a NaN
        if (huge && cuda::is_emulated() && values != 0) continue;
        manual_seed(5);
        Tensor base = values == 0 ? randn(geo.shape, dt) : ones(geo.shape, dt);
        if (values == 1 && base.numel() > 3) {
          Tensor flat = base.reshape({-1});
          flat.narrow(0, 2, 1).fill_(std::nan(""));
        }
        for (bool is_max : {true, false}) {
          if (!is_max && geo.o.dilation != std::array<int64_t, 2>{1, 1}) continue;
          INFO((is_max ? "max " : "avg ") << shape_str(geo.shape) << " " << dt
                                          << (values ? " ties+NaN" : " random"));
          const Tensor xc = base.clone().requires_grad_(true);
          const Tensor xg = base.to(Device::cuda(0)).requires_grad_(true);
          const Tensor yc = is_max ? max_pool2d(xc, geo.o) : avg_pool2d(xc, geo.o);
          const Tensor yg = is_max ? max_pool2d(xg, geo.o) : avg_pool2d(xg, geo.o);
          manual_seed(6);
          const Tensor g = randn(yc.shape(), dt);
          sum(mul(yc, g)).backward();
          sum(mul(yg, g.to(Device::cuda(0)))).backward();
          const auto a = yc.to_vector<double>(), b = yg.cpu().to_vector<double>();
          const auto da = xc.grad().to_vector<double>(), db = xg.grad().cpu().to_vector<double>();
          REQUIRE(a.size() == b.size());
          REQUIRE(da.size() == db.size());
          int64_t bad = 0;
          for (size_t i = 0; i < a.size(); ++i)
            if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) ++bad;
          for (size_t i = 0; i < da.size(); ++i)
            if (!(da[i] == db[i] || (std::isnan(da[i]) && std::isnan(db[i])))) ++bad;
          CHECK(bad == 0);
        }
      }
    }
  }
}
