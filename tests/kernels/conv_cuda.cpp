// The CUDA convolution kernels (kernels/cuda/conv.cu and the files it routes to: conv_im2col.cu,
// conv_implicit.cu, conv_bias.cu, conv_cudnn.cu) against the CPU.
//
// Two kinds of tests:
//   [conv_index]  run everywhere, GPU or not: the index arithmetic of the CUDA kernels
//                 (kernels/cuda/conv_index.h — the very functions the GPU runs) is executed on
//                 the CPU and checked against plain loops written the other way round (scatter
//                 instead of gather, direct convolution instead of a GEMM), on integer-valued
//                 data so that every comparison is exact. Plus the batching and Auto rules.
//   [cuda]        need a GPU (they print "SKIPPED: <reason>" without one): forward and all three
//                 gradients of kernels::cuda::conv2d_* on device buffers, for each algorithm
//                 called explicitly (Im2colGemm, ImplicitGemm, Auto, and Cudnn when this build
//                 has it), against kernels::cpu::conv2d_*, in float64 and float32, for the layer
//                 shapes of seed 002 (cats_vs_dogs) and seed 001 (cifar10_cnn) and odd geometries.
//                 Outputs start as NaN, so an element a kernel forgets to write fails the test.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "kernels/conv_geometry.h"
#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_index.h"

using namespace ember;
using kernels::ConvGeometry;
namespace kc = ember::kernels::cuda;

namespace {

bool skip_without_gpu() {
  if (cuda::is_available()) return false;
  std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
  return true;
}

// ---- the layers ---------------------------------------------------------------------------------

struct Layer {
  const char* name;
  int64_t N, C, H, W, K, R, S;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  bool bias = true;
  int64_t groups = 1;
};

ConvGeometry geometry(const Layer& l) {
  ConvGeometry g;
  g.N = l.N; g.C = l.C; g.H = l.H; g.W = l.W; g.K = l.K; g.R = l.R; g.S = l.S;
  g.stride_h = l.stride_h; g.stride_w = l.stride_w;
  g.pad_h = l.pad_h; g.pad_w = l.pad_w;
  g.dil_h = l.dil_h; g.dil_w = l.dil_w;
  g.groups = l.groups;
  g.P = kernels::conv_out_size(l.H, l.R, l.stride_h, l.pad_h, l.dil_h);
  g.Q = kernels::conv_out_size(l.W, l.S, l.stride_w, l.pad_w, l.dil_w);
  return g;
}

// The seed models' layers (with smaller batches than the seeds' 100 and 4 where noted), then
// geometries chosen to break index arithmetic: strides, padding, dilation (equal and unequal per
// axis), 1x1 kernels with and without padding, batch 1, non-square kernels and images, a kernel
// as large as the padded input (one output pixel), sizes just past the tile widths (65), tiny
// and 1x1 images, K > 64 (Im2colGemm under Auto) and strides larger than the kernel (input
// pixels no window reads).
// The emulation build runs every CUDA thread on the CPU: there the three seed 002 layers use a
// batch of 2 instead of 6 (the same geometry, a third of the work).
const std::vector<Layer>& layers() {
  static const std::vector<Layer> v = [] {
    std::vector<Layer> l = {
        {"seed 002 conv1 1->32 5x5 on 50x50", 6, 1, 50, 50, 32, 5, 5},
        {"seed 002 conv2 32->64 5x5 on 23x23", 6, 32, 23, 23, 64, 5, 5},
        {"seed 002 conv3 64->128 5x5 on 9x9", 6, 64, 9, 9, 128, 5, 5},
        {"seed 001 conv1 3->6 5x5 on 32x32", 4, 3, 32, 32, 6, 5, 5},
        {"seed 001 conv2 6->16 5x5 on 14x14", 4, 6, 14, 14, 16, 5, 5},
        {"3x3 stride 2 padding 1", 3, 5, 17, 13, 7, 3, 3, 2, 2, 1, 1},
        {"3x4 stride (2, 3) padding (2, 1)", 2, 3, 11, 16, 9, 3, 4, 2, 3, 2, 1},
        {"3x3 dilation 2 padding 2", 2, 4, 15, 15, 5, 3, 3, 1, 1, 2, 2, 2, 2},
        {"3x2 dilation (3, 1) stride (2, 1) no bias", 2, 3, 20, 9, 4, 3, 2, 2, 1, 0, 1, 3, 1, false},
        {"1x1 pointwise", 3, 16, 7, 9, 24, 1, 1},
        {"1x1 stride 2 padding 1", 2, 5, 8, 7, 3, 1, 1, 2, 2, 1, 1},
        {"batch 1, 3x5 kernel on 12x20", 1, 3, 12, 20, 8, 3, 5, 1, 1, 1, 2},
        {"kernel as large as the padded input", 2, 2, 5, 4, 3, 7, 6, 1, 1, 1, 1},
        {"65 channels and 65 filters (tile edges)", 2, 65, 6, 6, 65, 3, 3, 1, 1, 1, 1},
        {"1x1 image, 1x1 kernel", 3, 4, 1, 1, 5, 1, 1},
        {"200 filters on 4x4", 2, 7, 4, 4, 200, 2, 2},
        {"2x2 kernel, stride 3 (pixels no window reads)", 2, 3, 10, 10, 4, 2, 2, 3, 3},
    };
    if (cuda::is_emulated())
      for (Layer& x : l)
        if (x.N == 6) x.N = 2;
    return l;
  }();
  return v;
}

// ---- plain reference loops (double, scatter form) -------------------------------------------------

int64_t x_at(const ConvGeometry& g, int64_t n, int64_t c, int64_t h, int64_t w) {
  return ((n * g.C + c) * g.H + h) * g.W + w;
}
int64_t y_at(const ConvGeometry& g, int64_t n, int64_t k, int64_t p, int64_t q) {
  return ((n * g.K + k) * g.P + p) * g.Q + q;
}
int64_t w_at(const ConvGeometry& g, int64_t k, int64_t c, int64_t r, int64_t s) {
  return ((k * g.C + c) * g.R + r) * g.S + s;
}

// Calls f(n, k, p, q, c, r, s, h, w) for every tap that lands inside the image.
template <typename F>
void for_each_live_tap(const ConvGeometry& g, F f) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t p = 0; p < g.P; ++p)
        for (int64_t q = 0; q < g.Q; ++q)
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t h = p * g.stride_h - g.pad_h + r * g.dil_h;
                const int64_t w = q * g.stride_w - g.pad_w + s * g.dil_w;
                if (h >= 0 && h < g.H && w >= 0 && w < g.W) f(n, k, p, q, c, r, s, h, w);
              }
}

std::vector<double> naive_forward(const ConvGeometry& g, const std::vector<double>& x,
                                  const std::vector<double>& w, const std::vector<double>& b) {
  std::vector<double> y(static_cast<size_t>(g.N * g.K * g.P * g.Q), 0.0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t pq = 0; pq < g.P * g.Q; ++pq) y[y_at(g, n, k, 0, 0) + pq] = b.empty() ? 0 : b[k];
  for_each_live_tap(g, [&](int64_t n, int64_t k, int64_t p, int64_t q, int64_t c, int64_t r,
                           int64_t s, int64_t h, int64_t wi) {
    y[y_at(g, n, k, p, q)] += w[w_at(g, k, c, r, s)] * x[x_at(g, n, c, h, wi)];
  });
  return y;
}

std::vector<double> naive_backward_input(const ConvGeometry& g, const std::vector<double>& dy,
                                         const std::vector<double>& w) {
  std::vector<double> dx(static_cast<size_t>(g.N * g.C * g.H * g.W), 0.0);
  for_each_live_tap(g, [&](int64_t n, int64_t k, int64_t p, int64_t q, int64_t c, int64_t r,
                           int64_t s, int64_t h, int64_t wi) {
    dx[x_at(g, n, c, h, wi)] += dy[y_at(g, n, k, p, q)] * w[w_at(g, k, c, r, s)];
  });
  return dx;
}

// Small integers, so that every sum below is exact in double and comparisons can use ==.
std::vector<double> small_ints(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-3, 3);
  std::vector<double> v(static_cast<size_t>(count));
  for (double& e : v) e = dist(gen);
  return v;
}

// ---- CPU runs of the GPU's index code -------------------------------------------------------------

// The implicit-GEMM kernel's arithmetic without its tiling: out[m, col] = sum_j A[m, j] B[j, col]
// through the index maps. Unwritten outputs stay NaN; a doubly written one is counted.
template <typename Gemm>
std::vector<double> emulate_implicit(const Gemm& gemm, const std::vector<double>& a,
                                     const std::vector<double>& b, const std::vector<double>& bias,
                                     size_t out_size, int64_t* double_writes) {
  std::vector<double> out(out_size, std::numeric_limits<double>::quiet_NaN());
  *double_writes = 0;
  for (int32_t m = 0; m < gemm.rows; ++m) {
    const typename Gemm::Row row = gemm.row(m);
    const int64_t base = gemm.out_base(m);
    for (int32_t col = 0; col < gemm.cols; ++col) {
      double sum = bias.empty() ? 0.0 : bias[col];
      for (int32_t j = 0; j < gemm.depth; ++j) {
        const int64_t ia = gemm.a_index(row, j);
        if (ia < 0) continue;
        const int64_t ib = gemm.b_index(j, col);
        if (ia >= static_cast<int64_t>(a.size()) || ib < 0 || ib >= static_cast<int64_t>(b.size()))
          FAIL("index out of range: m " << m << ", col " << col << ", j " << j);
        sum += a[ia] * b[ib];
      }
      const int64_t o = base + col * gemm.out_col_stride;
      if (o < 0 || o >= static_cast<int64_t>(out_size)) FAIL("output index out of range: " << o);
      if (!std::isnan(out[o])) ++*double_writes;
      out[o] = sum;
    }
  }
  return out;
}

// ---- helpers for the GPU tests --------------------------------------------------------------------

struct Pass {
  Tensor y, dx, dw, db;  // db undefined without bias
};

struct Inputs {
  Tensor x, w, b, dy;  // CPU, contiguous; b undefined without bias
};

Inputs make_inputs(const ConvGeometry& g, bool bias, DType dtype, uint64_t seed) {
  manual_seed(seed);
  Inputs in;
  in.x = randn({g.N, g.C, g.H, g.W}, dtype);
  in.w = randn({g.K, g.C / g.groups, g.R, g.S}, dtype);
  if (bias) in.b = randn({g.K}, dtype);
  in.dy = randn({g.N, g.K, g.P, g.Q}, dtype);
  return in;
}

const void* ptr(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }
void* mut_ptr(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

Pass cpu_pass(const ConvGeometry& g, const Inputs& in) {
  const DType dt = in.x.dtype();
  Pass out;
  out.y = empty({g.N, g.K, g.P, g.Q}, dt);
  out.dx = empty({g.N, g.C, g.H, g.W}, dt);
  out.dw = empty({g.K, g.C / g.groups, g.R, g.S}, dt);
  if (in.b.defined()) out.db = empty({g.K}, dt);
  kernels::cpu::conv2d_forward(dt, g, ptr(in.x), ptr(in.w), ptr(in.b), mut_ptr(out.y));
  kernels::cpu::conv2d_backward_input(dt, g, ptr(in.dy), ptr(in.w), mut_ptr(out.dx));
  kernels::cpu::conv2d_backward_weight(dt, g, ptr(in.x), ptr(in.dy), mut_ptr(out.dw),
                                       mut_ptr(out.db));
  return out;
}

// Only a build with the CUDA backend has kernels::cuda to call (a CPU-only build has no stubs):
// there the [cuda][conv] tests below do not exist, where they used to be skipped at run time.
#if defined(EMBER_WITH_CUDA)
// The CUDA pass with one algorithm, on device copies of the inputs; outputs start as NaN.
Pass cuda_pass(const ConvGeometry& g, const Inputs& in, kc::ConvAlgo algo) {
  const Device dev = Device::cuda(0);
  const DType dt = in.x.dtype();
  const TensorOptions opt = TensorOptions(dt).device(dev);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = in.x.to(dev), w = in.w.to(dev), dy = in.dy.to(dev);
  const Tensor b = in.b.defined() ? in.b.to(dev) : Tensor();
  Pass out;
  out.y = full({g.N, g.K, g.P, g.Q}, nan, opt);
  out.dx = full({g.N, g.C, g.H, g.W}, nan, opt);
  out.dw = full({g.K, g.C / g.groups, g.R, g.S}, nan, opt);
  if (b.defined()) out.db = full({g.K}, nan, opt);
  kc::conv2d_forward(dt, g, ptr(x), ptr(w), ptr(b), mut_ptr(out.y), algo);
  kc::conv2d_backward_input(dt, g, ptr(dy), ptr(w), mut_ptr(out.dx), algo);
  kc::conv2d_backward_weight(dt, g, ptr(x), ptr(dy), mut_ptr(out.dw), mut_ptr(out.db), algo);
  cuda::synchronize();
  out.y = out.y.cpu();
  out.dx = out.dx.cpu();
  out.dw = out.dw.cpu();
  if (out.db.defined()) out.db = out.db.cpu();
  return out;
}
#endif  // EMBER_WITH_CUDA

const char* algo_name(kc::ConvAlgo a) {
  switch (a) {
    case kc::ConvAlgo::Auto: return "Auto";
    case kc::ConvAlgo::Im2colGemm: return "Im2colGemm";
    case kc::ConvAlgo::ImplicitGemm: return "ImplicitGemm";
    case kc::ConvAlgo::Cudnn: return "Cudnn";
    case kc::ConvAlgo::Direct: return "Direct";
  }
  return "?";
}

std::vector<kc::ConvAlgo> algos_to_test() {
  std::vector<kc::ConvAlgo> v = {kc::ConvAlgo::Im2colGemm, kc::ConvAlgo::ImplicitGemm,
                                 kc::ConvAlgo::Auto};
  if (cudnn_available()) v.push_back(kc::ConvAlgo::Cudnn);
  return v;
}

// |got - want| <= tol * (max|want| + |want|) for every element (and no NaN in got): a tolerance
// that scales with the tensor's own magnitude, since convolution sums of hundreds of terms carry
// rounding relative to the largest of them, not to each small result.
void check_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> a = got.to(kFloat64).to_vector<double>();
  const std::vector<double> b = want.to(kFloat64).to_vector<double>();
  double scale = 0.0;
  for (double v : b) scale = std::max(scale, std::abs(v));
  int64_t bad = 0, first_bad = -1;
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(a[i] - b[i]);
    const bool ok = !std::isnan(a[i]) && err <= tol * (scale + std::abs(b[i]));
    if (!ok) {
      if (first_bad < 0) first_bad = static_cast<int64_t>(i);
      ++bad;
    }
    if (!std::isnan(err)) worst = std::max(worst, err);
  }
  INFO("elements out of tolerance: " << bad << " of " << a.size() << " (first at " << first_bad
       << (first_bad >= 0 ? ": got " + std::to_string(a[first_bad]) + ", want " +
                                std::to_string(b[first_bad])
                          : std::string()) << "); worst |error| " << worst << ", max|want| "
       << scale << ", tol " << tol);
  CHECK(bad == 0);
}

double tolerance(DType dt) { return dt == kFloat64 ? 1e-10 : 1e-4; }

void check_pass(const Pass& got, const Pass& want, DType dt, const std::string& what) {
  const double tol = tolerance(dt);
  check_close(got.y, want.y, tol, what + ": forward y");
  check_close(got.dx, want.dx, tol, what + ": input gradient dx");
  check_close(got.dw, want.dw, tol, what + ": weight gradient dw");
  if (want.db.defined()) check_close(got.db, want.db, tol, what + ": bias gradient db");
}

}  // namespace

// ==== [conv_index]: the GPU's index arithmetic, on the CPU ==========================================

TEST_CASE("conv index: FastDivmod divides like / and % for every divisor and dividend below 2^31",
          "[conv_index]") {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 2048; ++d) divisors.push_back(d);
  for (int k = 11; k <= 30; ++k) {
    for (int64_t d : {(int64_t{1} << k) - 1, int64_t{1} << k, (int64_t{1} << k) + 1}) divisors.push_back(d);
  }
  divisors.push_back(kc::kInt32Max);
  divisors.push_back(kc::kInt32Max - 1);
  std::mt19937_64 gen(7);
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + static_cast<int64_t>(gen() % kc::kInt32Max));

  int64_t failures = 0;
  for (int64_t d : divisors) {
    const kc::FastDivmod fd(d);
    std::vector<int64_t> dividends = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, 3 * d + 1,
                                      kc::kInt32Max, kc::kInt32Max - 1, kc::kInt32Max - d};
    for (int i = 0; i < 64; ++i) dividends.push_back(static_cast<int64_t>(gen() % (kc::kInt32Max + 1)));
    for (int i = 0; i < 16; ++i) dividends.push_back(static_cast<int64_t>(gen() % 4096));
    for (int64_t n : dividends) {
      if (n < 0 || n > kc::kInt32Max) continue;
      int32_t q = -1, r = -1;
      fd.divmod(static_cast<int32_t>(n), &q, &r);
      if (q != n / d || r != n % d) {
        if (failures < 5) FAIL_CHECK(n << " / " << d << ": got " << q << " rem " << r);
        ++failures;
      }
    }
  }
  CHECK(failures == 0);
  // Every dividend for a few small divisors (the common case: strides, kernel widths).
  for (int64_t d : {1, 2, 3, 5, 7, 25}) {
    const kc::FastDivmod fd(d);
    for (int32_t n = 0; n < 1 << 20; ++n) {
      if (fd.div(n) != n / d) {
        FAIL("n = " << n << ", d = " << d);
      }
    }
  }
}

TEST_CASE("conv index: input_tap and output_tap are inverse to each other", "[conv_index]") {
  for (const Layer& l : layers()) {
    const ConvGeometry g = geometry(l);
    const kc::ConvIndex ix = kc::make_conv_index(g);
    INFO(l.name);
    // Rows: every (p, r) whose tap lands inside gives back p from (h, r), and every (h, r) that
    // output_tap accepts comes from such a pair.
    int64_t forward_pairs = 0, backward_pairs = 0;
    for (int32_t p = 0; p < ix.P; ++p)
      for (int32_t r = 0; r < ix.R; ++r) {
        int32_t h = 0, p_back = -1;
        if (!kc::input_tap(p, r, ix.stride_h, ix.pad_h, ix.dil_h, ix.H, &h)) continue;
        ++forward_pairs;
        REQUIRE(kc::output_tap(h, r, ix.by_stride_h, ix.pad_h, ix.dil_h, ix.P, &p_back));
        CHECK(p_back == p);
      }
    for (int32_t h = 0; h < ix.H; ++h)
      for (int32_t r = 0; r < ix.R; ++r) {
        int32_t p = 0, h_back = -1;
        if (!kc::output_tap(h, r, ix.by_stride_h, ix.pad_h, ix.dil_h, ix.P, &p)) continue;
        ++backward_pairs;
        REQUIRE(kc::input_tap(p, r, ix.stride_h, ix.pad_h, ix.dil_h, ix.H, &h_back));
        CHECK(h_back == h);
      }
    CHECK(forward_pairs == backward_pairs);
    // Same along the width.
    forward_pairs = backward_pairs = 0;
    for (int32_t q = 0; q < ix.Q; ++q)
      for (int32_t s = 0; s < ix.S; ++s) {
        int32_t w = 0, q_back = -1;
        if (!kc::input_tap(q, s, ix.stride_w, ix.pad_w, ix.dil_w, ix.W, &w)) continue;
        ++forward_pairs;
        REQUIRE(kc::output_tap(w, s, ix.by_stride_w, ix.pad_w, ix.dil_w, ix.Q, &q_back));
        CHECK(q_back == q);
      }
    for (int32_t w = 0; w < ix.W; ++w)
      for (int32_t s = 0; s < ix.S; ++s) {
        int32_t q = 0;
        if (kc::output_tap(w, s, ix.by_stride_w, ix.pad_w, ix.dil_w, ix.Q, &q)) ++backward_pairs;
      }
    CHECK(forward_pairs == backward_pairs);
  }
}

TEST_CASE("conv index: im2col columns times the filters are the direct convolution",
          "[conv_index]") {
  for (const Layer& l : layers()) {
    Layer small = l;
    small.N = std::min<int64_t>(l.N, 2);
    const ConvGeometry g = geometry(small);
    const kc::ConvIndex ix = kc::make_conv_index(g);
    INFO(l.name);
    const std::vector<double> x = small_ints(g.N * g.C * g.H * g.W, 1);
    const std::vector<double> w = small_ints(g.K * g.C * g.R * g.S, 2);
    const std::vector<double> b = l.bias ? small_ints(g.K, 3) : std::vector<double>();
    const std::vector<double> want = naive_forward(g, x, w, b);

    // Both layouts the kernels use: per image [N, CRS, PQ] and side by side [CRS, N*PQ].
    const int64_t crs = ix.CRS, pq = ix.PQ;
    for (bool side_by_side : {false, true}) {
      const int64_t n_stride = side_by_side ? pq : crs * pq;
      const int64_t j_stride = side_by_side ? g.N * pq : pq;
      std::vector<double> col(static_cast<size_t>(g.N * crs * pq),
                              std::numeric_limits<double>::quiet_NaN());
      for (int64_t i = 0; i < g.N * crs * pq; ++i)
        kc::im2col_element(ix, x.data(), col.data(), static_cast<int32_t>(i), n_stride, j_stride);
      std::vector<double> y(want.size());
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t k = 0; k < g.K; ++k)
          for (int64_t o = 0; o < pq; ++o) {
            double sum = b.empty() ? 0.0 : b[k];
            for (int64_t j = 0; j < crs; ++j)
              sum += w[k * crs + j] * col[n * n_stride + j * j_stride + o];
            y[(n * g.K + k) * pq + o] = sum;
          }
      INFO("layout " << (side_by_side ? "[CRS, N*PQ]" : "[N, CRS, PQ]"));
      CHECK(y == want);  // exact: integer data (a NaN left in col would fail here too)
    }
  }
}

TEST_CASE("conv index: col2im gathers exactly what im2col scatters (the adjoint)",
          "[conv_index]") {
  for (const Layer& l : layers()) {
    Layer small = l;
    small.N = std::min<int64_t>(l.N, 2);
    const ConvGeometry g = geometry(small);
    const kc::ConvIndex ix = kc::make_conv_index(g);
    INFO(l.name);
    const int64_t col_size = g.N * ix.CRS * ix.PQ, x_size = g.N * g.C * g.H * g.W;
    const std::vector<double> dcol = small_ints(col_size, 4);
    // Reference: scatter every column element back onto the pixel im2col_source says it came from.
    std::vector<double> want(static_cast<size_t>(x_size), 0.0);
    for (int64_t n = 0; n < g.N; ++n)
      for (int32_t j = 0; j < ix.CRS; ++j)
        for (int32_t o = 0; o < ix.PQ; ++o) {
          const int64_t src = kc::im2col_source(ix, j, o);
          if (src >= 0) want[n * ix.CHW + src] += dcol[(n * ix.CRS + j) * ix.PQ + o];
        }
    std::vector<double> got(static_cast<size_t>(x_size));
    for (int64_t i = 0; i < x_size; ++i)
      got[i] = kc::col2im_element(ix, dcol.data(), static_cast<int32_t>(i));
    CHECK(got == want);
    // And the whole backward: naive dx from dy and w equals col2im(w^T @ dy).
    const std::vector<double> w = small_ints(g.K * ix.CRS, 5);
    const std::vector<double> dy = small_ints(g.N * g.K * ix.PQ, 6);
    std::vector<double> dcol2(static_cast<size_t>(col_size), 0.0);
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t j = 0; j < ix.CRS; ++j)
        for (int64_t o = 0; o < ix.PQ; ++o) {
          double s = 0.0;
          for (int64_t k = 0; k < g.K; ++k) s += w[k * ix.CRS + j] * dy[(n * g.K + k) * ix.PQ + o];
          dcol2[(n * ix.CRS + j) * ix.PQ + o] = s;
        }
    for (int64_t i = 0; i < x_size; ++i)
      got[i] = kc::col2im_element(ix, dcol2.data(), static_cast<int32_t>(i));
    CHECK(got == naive_backward_input(g, dy, w));
  }
}

TEST_CASE("conv index: the implicit-GEMM index maps compute the convolution and its input "
          "gradient", "[conv_index]") {
  for (const Layer& l : layers()) {
    Layer small = l;
    small.N = std::min<int64_t>(l.N, 2);
    const ConvGeometry g = geometry(small);
    INFO(l.name);
    REQUIRE(kc::implicit_forward_fits(g));
    REQUIRE(kc::implicit_backward_input_fits(g));
    const std::vector<double> x = small_ints(g.N * g.C * g.H * g.W, 11);
    const std::vector<double> w = small_ints(g.K * g.C * g.R * g.S, 12);
    const std::vector<double> b = l.bias ? small_ints(g.K, 13) : std::vector<double>();
    const std::vector<double> dy = small_ints(g.N * g.K * g.P * g.Q, 14);
    int64_t double_writes = 0;

    const kc::ForwardGemm fwd = kc::make_forward_gemm(g);
    const std::vector<double> y = emulate_implicit(fwd, x, w, b, dy.size(), &double_writes);
    CHECK(double_writes == 0);
    CHECK(y == naive_forward(g, x, w, b));  // exact, and no NaN (every output written)

    const kc::BackwardDataGemm bwd = kc::make_backward_data_gemm(g);
    const std::vector<double> dx = emulate_implicit(bwd, dy, w, {}, x.size(), &double_writes);
    CHECK(double_writes == 0);
    CHECK(dx == naive_backward_input(g, dy, w));
  }
}

TEST_CASE("conv index: the dy transpose of the weight gradient", "[conv_index]") {
  const int64_t images = 3, K = 5, PQ = 7;
  std::vector<double> dy(static_cast<size_t>(images * K * PQ));
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<double>(i);
  const kc::FastDivmod by_PQ(PQ), by_images(images);
  for (int32_t i = 0; i < images * K * PQ; ++i) {
    const int64_t k = i / (images * PQ), n = (i / PQ) % images, pq = i % PQ;
    CHECK(dy[kc::transpose_dy_source(by_PQ, by_images, K, i)] == dy[(n * K + k) * PQ + pq]);
  }
}

TEST_CASE("conv index: batching of the im2col path and the 32-bit limits", "[conv_index]") {
  const int64_t MiB = int64_t{1} << 20;
  // 1 MiB per image, 10 MiB budget: 10 images per pass; never more than N, never fewer than 1.
  CHECK(kc::images_per_chunk(100, MiB / 4, MiB / 4, 4, 10 * MiB) == 10);
  CHECK(kc::images_per_chunk(3, MiB / 4, MiB / 4, 4, 10 * MiB) == 3);
  CHECK(kc::images_per_chunk(100, 64 * MiB, 64 * MiB, 8, 10 * MiB) == 1);
  // No scratch at all (the 1x1 path): only the index limit counts.
  CHECK(kc::images_per_chunk(100, 0, 1000, 4, 0) == 100);
  // A chunk's flat indices stay below 2^31 whatever the budget allows.
  const int64_t per_image = int64_t{1} << 28;
  CHECK(kc::images_per_chunk(100, per_image, per_image, 4, int64_t{1} << 40) == 7);
  CHECK(kc::images_per_chunk(100, 10, kc::kInt32Max + 1, 4, int64_t{1} << 40) == 0);

  // Seed shapes fit the 32-bit indexing; a layer whose one image has 2^31 column elements not.
  for (const Layer& l : layers()) CHECK(kc::conv_index_fits(geometry(l)));
  const ConvGeometry huge = geometry({"huge", 1, 512, 800, 800, 64, 3, 3, 1, 1, 1, 1});
  CHECK_FALSE(kc::conv_index_fits(huge));
  CHECK_FALSE(kc::implicit_forward_fits(huge));
}

TEST_CASE("conv index: what ConvAlgo::Auto picks for grouped layers", "[conv_index]") {
  // Depthwise (groups == C, any channel multiplier): the direct kernels. Other groups: Auto,
  // which the group loop resolves per group; groups = 1 never takes this rule.
  ConvGeometry g = geometry({"", 2, 32, 56, 56, 32, 3, 3, 1, 1, 1, 1, 1, 1, true, 32});
  CHECK(kc::choose_grouped_algo(g) == kc::ConvAlgo::Direct);
  g.K = 64;
  CHECK(kc::choose_grouped_algo(g) == kc::ConvAlgo::Direct);
  g.groups = 8;
  CHECK(kc::choose_grouped_algo(g) == kc::ConvAlgo::Auto);
  g = geometry({"", 2, 1, 28, 28, 8, 3, 3});
  CHECK(kc::choose_grouped_algo(g) == kc::ConvAlgo::Auto);
}

TEST_CASE("conv index: what ConvAlgo::Auto picks for the seed models", "[conv_index]") {
  using A = kc::ConvAlgo;
  const int h100 = 132;  // SMs of an H100 SXM
  // seed 002, batch 100: conv1 1->32 on 50x50, conv2 32->64 on 23x23, conv3 64->128 on 9x9.
  const ConvGeometry c1 = geometry({"", 100, 1, 50, 50, 32, 5, 5});
  const ConvGeometry c2 = geometry({"", 100, 32, 23, 23, 64, 5, 5});
  const ConvGeometry c3 = geometry({"", 100, 64, 9, 9, 128, 5, 5});
  CHECK(kc::choose_forward_algo(c1, h100) == A::ImplicitGemm);   // K = 32: columns dominate
  CHECK(kc::choose_forward_algo(c2, h100) == A::ImplicitGemm);   // K = 64, 283 tiles
  CHECK(kc::choose_forward_algo(c3, h100) == A::Im2colGemm);     // K = 128: cuBLAS
  // The input gradient: col2im + cuBLAS everywhere (the implicit kernel measured 2-22x slower
  // on an H200, on every one of these layers).
  for (const ConvGeometry& g : {c1, c2, c3}) {
    CHECK(kc::choose_backward_input_algo(g, h100) == A::Im2colGemm);
    CHECK(kc::choose_backward_input_algo(g, 40) == A::Im2colGemm);
  }
  CHECK(kc::choose_backward_weight_algo(c1) == A::Im2colGemm);
  // seed 001, batch 4: tiny layers, launch-bound: one kernel beats three.
  const ConvGeometry f1 = geometry({"", 4, 3, 32, 32, 6, 5, 5});
  const ConvGeometry f2 = geometry({"", 4, 6, 14, 14, 16, 5, 5});
  CHECK(kc::choose_forward_algo(f1, h100) == A::ImplicitGemm);
  CHECK(kc::choose_forward_algo(f2, h100) == A::ImplicitGemm);
  CHECK(kc::choose_backward_input_algo(f2, h100) == A::Im2colGemm);
  const ConvGeometry s2 = geometry({"", 64, 16, 64, 64, 16, 3, 3, 2, 2, 1, 1});
  CHECK(kc::choose_forward_algo(s2, h100) == A::ImplicitGemm);
  CHECK(kc::choose_backward_input_algo(s2, h100) == A::Im2colGemm);
  // Few output tiles (2) over a long depth (4608 taps): cuBLAS splits the depth over the SMs.
  const ConvGeometry deep = geometry({"", 4, 512, 8, 8, 64, 3, 3, 1, 1, 1, 1});
  CHECK(kc::choose_forward_algo(deep, h100) == A::Im2colGemm);
}

// ==== [cuda]: every algorithm against the CPU =======================================================

#if defined(EMBER_WITH_CUDA)

TEST_CASE("conv cuda: forward and all gradients match the CPU for every algorithm",
          "[cuda][conv]") {
  if (skip_without_gpu()) return;
  for (DType dt : {kFloat64, kFloat32}) {
    uint64_t seed = 100;
    for (const Layer& l : layers()) {
      const ConvGeometry g = geometry(l);
      const Inputs in = make_inputs(g, l.bias, dt, ++seed);
      const Pass want = cpu_pass(g, in);
      for (kc::ConvAlgo algo : algos_to_test()) {
        const std::string what = std::string(l.name) + ", batch " + std::to_string(l.N) + " [" +
                                 dtype_name(dt) + ", " + algo_name(algo) + "]";
        check_pass(cuda_pass(g, in, algo), want, dt, what);
      }
    }
  }
}

// Grouped convolutions: every algorithm, ConvAlgo::Direct included (which Auto picks for the
// depthwise layers), against the CPU, whose depthwise layers run its direct loops and whose
// other groups run its GEMM algorithms one group at a time. Direct also runs two ungrouped
// layers. The depthwise 3x3 on 12x12 has 1152 outputs per pass, and a group of the groups-2
// layer 792 inputs to copy: under EMBER_EMULATOR_GRID_CAP=2 (512 threads) the direct kernels'
// and the channel copies' grid-stride loops take more than one pass.
TEST_CASE("conv cuda: groups and depthwise layers match the CPU for every algorithm",
          "[cuda][conv]") {
  if (skip_without_gpu()) return;
  const std::vector<Layer> grouped = {
      {"depthwise 3x3 padding 1 on 12x12", 2, 4, 12, 12, 4, 3, 3, 1, 1, 1, 1, 1, 1, true, 4},
      {"depthwise x2 (K = 2C) 3x3 stride 2", 2, 3, 9, 8, 6, 3, 3, 2, 2, 1, 1, 1, 1, false, 3},
      {"depthwise 3x2 dilation (2, 1) padding (2, 0)", 1, 5, 7, 9, 5, 3, 2, 1, 1, 2, 0, 2, 1, true,
       5},
      {"groups 2: 6->4 3x3 padding 1 on 12x11", 2, 6, 12, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, true, 2},
      {"groups 3: 6->9 2x3 stride (1, 2) dilation (1, 2), no bias", 1, 6, 8, 11, 9, 2, 3, 1, 2, 0,
       1, 1, 2, false, 3},
      {"groups 2, 1x1 pointwise 4->6", 2, 4, 5, 5, 6, 1, 1, 1, 1, 0, 0, 1, 1, true, 2},
  };
  const std::vector<Layer> ungrouped = {
      {"ungrouped 3->5 3x3 stride 2 padding 1 (Direct)", 2, 3, 9, 7, 5, 3, 3, 2, 2, 1, 1},
      {"ungrouped 2->3 2x2 dilation 2, no bias (Direct)", 1, 2, 6, 6, 3, 2, 2, 1, 1, 0, 0, 2, 2,
       false},
  };
  std::vector<kc::ConvAlgo> algos = algos_to_test();
  algos.push_back(kc::ConvAlgo::Direct);
  for (DType dt : {kFloat64, kFloat32}) {
    uint64_t seed = 900;
    for (const Layer& l : grouped) {
      const ConvGeometry g = geometry(l);
      const Inputs in = make_inputs(g, l.bias, dt, ++seed);
      const Pass want = cpu_pass(g, in);
      for (kc::ConvAlgo algo : algos) {
        check_pass(cuda_pass(g, in, algo), want, dt,
                   std::string(l.name) + " [" + dtype_name(dt) + ", " + algo_name(algo) + "]");
      }
    }
    for (const Layer& l : ungrouped) {
      const ConvGeometry g = geometry(l);
      const Inputs in = make_inputs(g, l.bias, dt, ++seed);
      check_pass(cuda_pass(g, in, kc::ConvAlgo::Direct), cpu_pass(g, in), dt,
                 std::string(l.name) + " [" + dtype_name(dt) + "]");
    }
  }
}

TEST_CASE("conv cuda: a batch larger than the column budget runs in chunks", "[cuda][conv]") {
  if (skip_without_gpu()) return;
  // One image's columns: 6*3*3 x 18*18 doubles = 139,968 bytes. With the budget lowered to two
  // images' worth, 5 images need 3 passes (2, 2, 1) and the weight gradient accumulates across
  // them. (The default budget, 256 MiB, does the same for batches of large layers.)
  const Layer l{"6->8 3x3 on 20x20, batch 5", 5, 6, 20, 20, 8, 3, 3};
  const ConvGeometry g = geometry(l);
  const int64_t one_image = g.C * g.R * g.S * g.P * g.Q * 8;
  struct Budget {
    explicit Budget(int64_t b) { kc::set_conv_column_budget(b); }
    ~Budget() { kc::set_conv_column_budget(0); }
  } budget(2 * one_image + 8);
  CHECK(kc::images_per_chunk(g.N, one_image / 8, g.K * g.P * g.Q, 8, 2 * one_image + 8) == 2);
  const Inputs in = make_inputs(g, true, kFloat64, 7);
  const Pass want = cpu_pass(g, in);
  check_pass(cuda_pass(g, in, kc::ConvAlgo::Im2colGemm), want, kFloat64,
             std::string(l.name) + " [Im2colGemm]");
  check_pass(cuda_pass(g, in, kc::ConvAlgo::ImplicitGemm), want, kFloat64,
             std::string(l.name) + " [ImplicitGemm]");
}

TEST_CASE("conv cuda: results repeat bit for bit", "[cuda][conv]") {
  if (skip_without_gpu()) return;
  const Layer l{"seed 002 conv2", cuda::is_emulated() ? 2 : 6, 32, 23, 23, 64, 5, 5};
  const ConvGeometry g = geometry(l);
  const Inputs in = make_inputs(g, true, kFloat32, 3);
  for (kc::ConvAlgo algo : {kc::ConvAlgo::Im2colGemm, kc::ConvAlgo::ImplicitGemm}) {
    INFO(algo_name(algo));
    const Pass a = cuda_pass(g, in, algo), b = cuda_pass(g, in, algo);
    CHECK(a.y.to_vector<float>() == b.y.to_vector<float>());
    CHECK(a.dx.to_vector<float>() == b.dx.to_vector<float>());
    CHECK(a.dw.to_vector<float>() == b.dw.to_vector<float>());
    CHECK(a.db.to_vector<float>() == b.db.to_vector<float>());
  }
}

TEST_CASE("conv cuda: empty layers and other dtypes", "[cuda][conv]") {
  if (skip_without_gpu()) return;
  const Device dev = Device::cuda(0);
  // No input channels: y is the bias, channel by channel, in each of the 2 images (element i is
  // in channel (i / 9) % 3); dw is empty; db is still the sum of dy.
  ConvGeometry g = geometry({"", 2, 0, 5, 5, 3, 3, 3});
  const Tensor b = tensor({1.0, 2.0, 3.0}, TensorOptions(kFloat64).device(dev));
  const Tensor y = full({2, 3, 3, 3}, std::nan(""), TensorOptions(kFloat64).device(dev));
  for (kc::ConvAlgo algo : algos_to_test()) {
    INFO(algo_name(algo));
    kc::conv2d_forward(kFloat64, g, nullptr, nullptr, b.raw_data(), y.raw_data(), algo);
    const std::vector<double> v = y.to_vector<double>();
    REQUIRE(v.size() == 2 * 3 * 9);
    for (size_t i = 0; i < v.size(); ++i) CHECK(v[i] == static_cast<double>((i / 9) % 3 + 1));
  }
  // A batch of 0: nothing to compute, the weight gradient is zero.
  g = geometry({"", 0, 2, 5, 5, 3, 3, 3});
  const Tensor dw = full({3, 2, 3, 3}, std::nan(""), TensorOptions(kFloat32).device(dev));
  const Tensor db = full({3}, std::nan(""), TensorOptions(kFloat32).device(dev));
  kc::conv2d_backward_weight(kFloat32, g, nullptr, nullptr, dw.raw_data(), db.raw_data());
  for (float v : dw.to_vector<float>()) CHECK(v == 0.0f);
  for (float v : db.to_vector<float>()) CHECK(v == 0.0f);
  // Integer tensors are not convolved.
  g = geometry({"", 1, 1, 3, 3, 1, 1, 1});
  CHECK_THROWS_AS(kc::conv2d_forward(kInt64, g, nullptr, nullptr, nullptr, nullptr), ValueError);
}

TEST_CASE("conv cuda: ConvAlgo::Cudnn without cuDNN in the build is a DeviceError",
          "[cuda][conv]") {
  if (kc::cudnn_built()) {
    std::cout << "SKIPPED: this build has cuDNN (the Cudnn algorithm is tested above)\n";
    return;
  }
  // Runs without a GPU too: the request is refused before any device work.
  const ConvGeometry g = geometry({"", 1, 1, 3, 3, 1, 1, 1});
  CHECK_FALSE(cudnn_available());
  CHECK_THROWS_AS(kc::conv2d_forward(kFloat32, g, nullptr, nullptr, nullptr, nullptr,
                                     kc::ConvAlgo::Cudnn),
                  DeviceError);
  CHECK_THROWS_AS(kc::conv2d_backward_input(kFloat32, g, nullptr, nullptr, nullptr,
                                            kc::ConvAlgo::Cudnn),
                  DeviceError);
  CHECK_THROWS_AS(kc::conv2d_backward_weight(kFloat32, g, nullptr, nullptr, nullptr, nullptr,
                                             kc::ConvAlgo::Cudnn),
                  DeviceError);
}

#endif  // EMBER_WITH_CUDA
