// The row loops of the CPU convolution and pooling kernels, exactly:
//   - conv (kernels/cpu/conv_im2col.cpp): im2col and col2im move each row in blocks of 16, 8, 4,
//     2 and 1 elements, with separate loops for stride 1 and the zero-filled edges. Small integer
//     values make every product and sum exact in float, so the forward and both gradients must
//     equal a direct loop written here bit for bit, for every row length from 1 to 40 and with
//     padding, strides and dilation that clip rows at either end.
//   - max pooling (kernels/cpu/pool.cpp): the 2x2 stride-2 fast path must give the general
//     scan's bits: the same values (the same NaN, the same signed zero) and the same indices,
//     with ties, infinities and NaNs everywhere, for even and odd plane sizes.
// The kernels are called directly (no autograd), on raw buffers.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/ember.h"
#include "kernels/backend.h"
#include "kernels/cpu/conv.h"
#include "kernels/pool.h"

using namespace ember;
using kernels::ConvGeometry;
using kernels::PoolGeometry;

namespace {

// A small deterministic generator (the values, not their randomness, matter here).
struct Lcg {
  uint64_t s;
  explicit Lcg(uint64_t seed) : s(seed * 2862933555777941757ULL + 3037000493ULL) {}
  uint32_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(s >> 33);
  }
  // An integer in [-k, k].
  int small(int k) { return static_cast<int>(next() % static_cast<uint32_t>(2 * k + 1)) - k; }
};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// ---- convolution ---------------------------------------------------------------------------

ConvGeometry conv_geometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R,
                           int64_t S, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                           int64_t dw) {
  ConvGeometry g;
  g.N = N, g.C = C, g.H = H, g.W = W, g.K = K, g.R = R, g.S = S;
  g.stride_h = sh, g.stride_w = sw, g.pad_h = ph, g.pad_w = pw, g.dil_h = dh, g.dil_w = dw;
  g.P = kernels::conv_out_size(H, R, sh, ph, dh);
  g.Q = kernels::conv_out_size(W, S, sw, pw, dw);
  return g;
}

// Runs the three CPU kernels on integer-valued data and compares them with direct loops. All
// values are integers far below 2^24, so float sums are exact in any order.
template <typename T>
void check_conv_exact(const ConvGeometry& g) {
  const DType dt = std::is_same_v<T, float> ? kFloat32 : kFloat64;
  Lcg rng(static_cast<uint64_t>(g.W * 1000 + g.H * 10 + g.stride_w));
  auto fill = [&](std::vector<T>& v) {
    for (T& e : v) e = static_cast<T>(rng.small(3));
  };
  std::vector<T> x(static_cast<size_t>(g.N * g.C * g.H * g.W));
  std::vector<T> w(static_cast<size_t>(g.K * g.C * g.R * g.S)), b(static_cast<size_t>(g.K));
  std::vector<T> dy(static_cast<size_t>(g.N * g.K * g.P * g.Q));
  fill(x), fill(w), fill(b), fill(dy);

  std::vector<T> y(dy.size()), dx(x.size(), T(7)), dw(w.size(), T(7)), db(b.size(), T(7));
  kernels::cpu::conv2d_forward(dt, g, x.data(), w.data(), b.data(), y.data());
  kernels::cpu::conv2d_backward_input(dt, g, dy.data(), w.data(), dx.data());
  kernels::cpu::conv2d_backward_weight(dt, g, x.data(), dy.data(), dw.data(), db.data());

  std::vector<T> want_y(y.size()), want_dx(x.size(), T(0)), want_dw(w.size(), T(0));
  std::vector<T> want_db(b.size(), T(0));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t p = 0; p < g.P; ++p)
        for (int64_t q = 0; q < g.Q; ++q) {
          const size_t yi = static_cast<size_t>(((n * g.K + k) * g.P + p) * g.Q + q);
          T acc = b[static_cast<size_t>(k)];
          want_db[static_cast<size_t>(k)] += dy[yi];
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t ih = p * g.stride_h - g.pad_h + r * g.dil_h;
                const int64_t iw = q * g.stride_w - g.pad_w + s * g.dil_w;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const size_t xi = static_cast<size_t>(((n * g.C + c) * g.H + ih) * g.W + iw);
                const size_t wi = static_cast<size_t>(((k * g.C + c) * g.R + r) * g.S + s);
                acc += w[wi] * x[xi];
                want_dx[xi] += w[wi] * dy[yi];
                want_dw[wi] += x[xi] * dy[yi];
              }
          want_y[yi] = acc;
        }
  CHECK(same_bits(y, want_y));
  CHECK(same_bits(dx, want_dx));
  CHECK(same_bits(dw, want_dw));
  CHECK(same_bits(db, want_db));
}

// ---- max pooling ---------------------------------------------------------------------------

// pool.h's rule (PyTorch 1.13's), written plainly: the first tap of the window, then a strictly
// larger number or any NaN (so the last NaN of the window wins).
template <typename T>
void reference_max_pool(const PoolGeometry& g, const std::vector<T>& x, std::vector<T>& y,
                        std::vector<int64_t>& idx) {
  for (int64_t plane = 0; plane < g.N * g.C; ++plane) {
    const T* xp = x.data() + plane * g.H * g.W;
    for (int64_t p = 0; p < g.P; ++p)
      for (int64_t q = 0; q < g.Q; ++q) {
        int64_t at = -1;
        for (int64_t i = 0; i < g.kernel_h; ++i)
          for (int64_t j = 0; j < g.kernel_w; ++j) {
            const int64_t h = p * g.stride_h - g.pad_h + i, w = q * g.stride_w - g.pad_w + j;
            if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
            const T v = xp[h * g.W + w];
            if (at < 0 || std::isnan(v) || v > xp[at]) at = h * g.W + w;
          }
        const size_t o = static_cast<size_t>((plane * g.P + p) * g.Q + q);
        y[o] = xp[at];
        idx[o] = at;
      }
  }
}

// Values that make the rule matter: many ties (a handful of levels), both zeros, infinities and
// NaNs of both signs; `nan_rate` in [0, 1) of the entries are NaN.
template <typename T>
std::vector<T> awkward_values(size_t n, double nan_rate, uint64_t seed) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T levels[] = {T(-1), T(-0.0), T(0), T(1), T(2), inf, -inf, T(2), T(-1), T(1)};
  Lcg rng(seed);
  std::vector<T> v(n);
  for (T& e : v) {
    const double u = (rng.next() % 100000) / 100000.0;
    if (u < nan_rate) e = (rng.next() & 1) ? nan : -nan;
    else e = levels[rng.next() % 10];
  }
  return v;
}

template <typename T>
void check_max_pool_2x2(int64_t planes, int64_t H, int64_t W, double nan_rate) {
  PoolGeometry g;
  g.N = 1, g.C = planes, g.H = H, g.W = W;
  g.kernel_h = g.kernel_w = 2;
  g.stride_h = g.stride_w = 2;
  g.P = H / 2, g.Q = W / 2;
  const DType dt = std::is_same_v<T, float> ? kFloat32 : kFloat64;
  const auto x = awkward_values<T>(static_cast<size_t>(planes * H * W), nan_rate,
                                   static_cast<uint64_t>(H * 100 + W));
  const size_t out = static_cast<size_t>(planes * g.P * g.Q);
  std::vector<T> y(out), want_y(out);
  std::vector<int64_t> idx(out, -1), want_idx(out);
  // The CPU backend's table: the variant of the instruction set in force (EMBER_CPU_ISA).
  kernels::cpu_backend().pool.max_forward(dt, g, x.data(), y.data(), idx.data());
  reference_max_pool(g, x, want_y, want_idx);
  INFO("planes " << planes << ", " << H << " x " << W << ", NaN rate " << nan_rate);
  CHECK(same_bits(y, want_y));
  CHECK(idx == want_idx);
}

}  // namespace

TEST_CASE("conv2d CPU: every row length, exact against direct loops", "[conv2d][rows]") {
  // Stride 1, no padding: rows of Q = W - S + 1 elements, Q = 1..40 covers every mix of the
  // 16/8/4/2/1 blocks.
  for (int64_t W = 3; W <= 42; ++W) {
    INFO("stride 1, W " << W);
    check_conv_exact<float>(conv_geometry(2, 2, 4, W, 3, 2, 3, 1, 1, 0, 0, 1, 1));
  }
  for (int64_t W : {3, 12, 21, 40}) {
    INFO("float64, W " << W);
    check_conv_exact<double>(conv_geometry(2, 2, 4, W, 3, 2, 3, 1, 1, 0, 0, 1, 1));
  }
  // Padding clips rows at both ends (and whole rows at the top and bottom); dilation and
  // strides move the taps.
  struct Case {
    const char* what;
    ConvGeometry g;
  };
  const std::vector<Case> cases = {
      {"pad 2", conv_geometry(2, 3, 6, 23, 2, 5, 5, 1, 1, 2, 2, 1, 1)},
      {"pad (0, 3), wide", conv_geometry(1, 2, 5, 37, 2, 3, 7, 1, 1, 0, 3, 1, 1)},
      {"stride 2, pad 1", conv_geometry(2, 2, 9, 19, 3, 3, 3, 2, 2, 1, 1, 1, 1)},
      {"stride (1, 3), pad (2, 1)", conv_geometry(1, 2, 7, 29, 2, 3, 4, 1, 3, 2, 1, 1, 1)},
      {"dilation 2, pad 2", conv_geometry(2, 2, 8, 21, 2, 3, 3, 1, 1, 2, 2, 2, 2)},
      {"dilation (1, 3), pad (1, 4)", conv_geometry(1, 3, 6, 26, 2, 3, 3, 1, 1, 1, 4, 1, 3)},
      {"kernel wider than the unpadded row", conv_geometry(1, 1, 3, 4, 2, 3, 6, 1, 1, 1, 2, 1, 1)},
      {"the cats-vs-dogs conv2 plane", conv_geometry(2, 4, 23, 23, 3, 5, 5, 1, 1, 0, 0, 1, 1)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    check_conv_exact<float>(c.g);
    check_conv_exact<double>(c.g);
  }
}

TEST_CASE("max_pool2d CPU: the 2x2 stride-2 path gives the general scan's bits", "[pool2d][rows]") {
  // Even and odd sizes (floor mode leaves the last row or column out), short and long rows.
  for (int64_t H : {2, 3, 5, 8}) {
    for (int64_t W : {2, 3, 4, 5, 9, 19, 46, 71}) {
      for (double nan_rate : {0.0, 0.01, 0.3}) {
        check_max_pool_2x2<float>(3, H, W, nan_rate);
        check_max_pool_2x2<double>(3, H, W, nan_rate);
      }
    }
  }
}
