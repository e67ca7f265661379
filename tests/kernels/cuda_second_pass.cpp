// Why this file exists: the emulator's grid-cap mode (docs/emulator.md, EMBER_EMULATOR_GRID_CAP=2)
// needs every strided kernel to take a second grid_stride pass somewhere in the "[cuda]" tests;
// these six took none there, so each case below gives one more than 2 * 256 = 512 items of work.
//
// Each case runs an op on cuda:0 and on the CPU and compares the values (and gradients). Under
// EMBER_EMULATOR_GRID_CAP=2 the launch gets 2 blocks of 256 threads, so some threads take a
// second pass; on a GPU (or without the cap) the same cases are ordinary parity checks.
//   bias_grad_finish_kernel    conv2d backward with a bias of 600 channels (grid_for(K))
//   ce_forward_spatial_kernel  cross_entropy on [N, C, d] logits with 700 positions (grid_for(N*S))
//   arange_kernel              arange of 1000 elements on cuda (grid_for(n))
//   trap_out_of_range_kernel   the device-side index check of a CUDA graph capture: index_select
//                              with 700 indices, captured and replayed (grid_for(n))
//   scatter_add_kernel         gather's backward (and scatter_add) over 700 lines (grid_for(lines))
//   prod_backward_kernel       prod's backward with 700 outputs (grid_for(outer * inner))
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/cuda_graph.h"
#include "core/ember.h"
#include "cuda_test_util.h"

using namespace ember;

namespace {

using test::kCuda0;
using test::skip_without_gpu;

// More than the 2 * kBlock = 512 threads of a grid capped at 2 blocks, and not a multiple of 256.
constexpr int64_t kItems = 700;

// As cuda_parity.cpp: an element passes when |cuda - cpu| <= rtol * |cpu| + atol * max|cpu|.
void require_close(const Tensor& cpu, const Tensor& dev, const std::string& what,
                   double rtol = 1e-9, double atol = 1e-9) {
  INFO(what);
  REQUIRE(cpu.defined());
  REQUIRE(dev.defined());
  CHECK(dev.device() == kCuda0);
  REQUIRE(shape_str(dev.shape()) == shape_str(cpu.shape()));
  REQUIRE(dev.dtype() == cpu.dtype());
  const std::vector<double> a = cpu.to_vector<double>();
  const std::vector<double> b = dev.to_vector<double>();
  REQUIRE(a.size() == b.size());
  double scale = 0.0;
  for (double x : a)
    if (std::isfinite(x)) scale = std::max(scale, std::fabs(x));
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool ok =
        (std::isnan(a[i]) || std::isnan(b[i]))
            ? (std::isnan(a[i]) && std::isnan(b[i]))
            : (a[i] == b[i] || std::fabs(b[i] - a[i]) <= rtol * std::fabs(a[i]) + atol * scale);
    if (ok) continue;
    if (first < 0) first = static_cast<int64_t>(i);
    ++bad;
  }
  std::ostringstream msg;
  msg.precision(17);
  msg << "shape " << shape_str(cpu.shape()) << ": " << bad << " of " << a.size()
      << " elements differ";
  if (first >= 0)
    msg << "; first at flat index " << first << " (cpu " << a[static_cast<size_t>(first)]
        << ", cuda " << b[static_cast<size_t>(first)] << ")";
  INFO(msg.str());
  CHECK(bad == 0);
}

// Uniform in [lo, hi), float64, on the CPU (deterministic).
Tensor uniform(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  manual_seed(seed);
  return (rand(shape, kFloat64) * (hi - lo) + lo).detach();
}

// A CPU leaf and its cuda:0 twin, both requiring a gradient.
struct Pair {
  Tensor cpu, dev;
};
Pair leaves(const Tensor& t) {
  Pair p{t.detach().clone(), t.detach().to(kCuda0)};
  p.cpu.requires_grad_(true);
  p.dev.requires_grad_(true);
  return p;
}

}  // namespace

TEST_CASE("cuda second pass: conv2d bias gradient over 600 output channels", "[cuda]") {
  if (skip_without_gpu()) return;
  // 1x1 kernel, batch 1, a 2x2 image: bias_grad_finish_kernel strides over K = 600 channels.
  const int64_t K = 600;
  Pair x = leaves(uniform({1, 2, 2, 2}, 11));
  Pair w = leaves(uniform({K, 2, 1, 1}, 12));
  Pair b = leaves(uniform({K}, 13));
  const Tensor y_cpu = conv2d(x.cpu, w.cpu, b.cpu);
  const Tensor y_dev = conv2d(x.dev, w.dev, b.dev);
  require_close(y_cpu, y_dev, "conv2d forward", 1e-8, 1e-9);
  const Tensor g = uniform(y_cpu.shape(), 14);
  y_cpu.backward(g);
  y_dev.backward(g.to(kCuda0));
  require_close(b.cpu.grad(), b.dev.grad(), "conv2d: gradient of the bias", 1e-8, 1e-9);
  require_close(w.cpu.grad(), w.dev.grad(), "conv2d: gradient of the weight", 1e-8, 1e-9);
  require_close(x.cpu.grad(), x.dev.grad(), "conv2d: gradient of the input", 1e-8, 1e-9);
}

TEST_CASE("cuda second pass: spatial cross_entropy over 700 positions", "[cuda]") {
  if (skip_without_gpu()) return;
  // logits [N, C, S] with N * S = 700 positions: ce_forward_spatial_kernel's grid_for(R).
  const int64_t N = 1, C = 3, S = kItems;
  manual_seed(21);
  Tensor target = randint(0, C, {N, S});
  {
    // A few ignored positions, so the ignore_index branch runs on the second pass too.
    std::vector<int64_t> t = target.to_vector<int64_t>();
    for (size_t i = 5; i < t.size(); i += 97) t[i] = -100;
    target = from_vector<int64_t>(t, {N, S}, kInt64);
  }
  const Tensor weight = uniform({C}, 22, 0.5, 1.5);
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    DYNAMIC_SECTION("reduction " << static_cast<int>(r)) {
      const Tensor logits = uniform({N, C, S}, 23, -3.0, 3.0);
      for (bool weighted : {false, true}) {
        Pair lg = leaves(logits);
        const Tensor w_cpu = weighted ? weight : Tensor();
        const Tensor w_dev = weighted ? weight.to(kCuda0) : Tensor();
        const Tensor l_cpu = cross_entropy(lg.cpu, target, w_cpu, r);
        const Tensor l_dev = cross_entropy(lg.dev, target.to(kCuda0), w_dev, r);
        const std::string what = weighted ? "weighted cross_entropy" : "cross_entropy";
        require_close(l_cpu, l_dev, what + ": forward", 1e-8, 1e-9);
        const Tensor g =
            r == Reduction::None ? uniform(l_cpu.shape(), 24) : full({}, 0.75, kFloat64);
        l_cpu.backward(g);
        l_dev.backward(g.to(kCuda0));
        require_close(lg.cpu.grad(), lg.dev.grad(), what + ": gradient of the logits", 1e-8, 1e-9);
      }
    }
  }
}

TEST_CASE("cuda second pass: arange of 1000 elements", "[cuda]") {
  if (skip_without_gpu()) return;
  // arange_kernel strides over n.
  NoGradGuard no_grad;
  const TensorOptions f64 = TensorOptions(kFloat64);
  const TensorOptions i64 = TensorOptions(kInt64);
  {
    const Tensor cpu = arange(1000.0, f64);
    const Tensor dev = arange(1000.0, TensorOptions(kFloat64).device(kCuda0));
    REQUIRE(dev.numel() == 1000);
    require_close(cpu, dev, "arange(1000) float64", 0.0, 0.0);
  }
  {
    const Tensor cpu = arange(-3.5, 870.0, 1.25, f64);
    const Tensor dev = arange(-3.5, 870.0, 1.25, TensorOptions(kFloat64).device(kCuda0));
    REQUIRE(dev.numel() > 512);
    require_close(cpu, dev, "arange(-3.5, 870, 1.25) float64", 1e-15, 0.0);
  }
  {
    const Tensor cpu = arange(2000.0, -5.0, -3.0, i64);
    const Tensor dev = arange(2000.0, -5.0, -3.0, TensorOptions(kInt64).device(kCuda0));
    REQUIRE(dev.numel() > 512);
    CHECK(dev.device() == kCuda0);
    CHECK(dev.to_vector<int64_t>() == cpu.to_vector<int64_t>());
  }
}

TEST_CASE("cuda second pass: index_select in a CUDA graph checks 700 indices on the device",
          "[cuda]") {
  if (skip_without_gpu()) return;
  // In a capture the host cannot wait for first_out_of_range's answer, so the check becomes
  // trap_out_of_range_kernel, run at every replay over the n = 700 indices.
  NoGradGuard no_grad;
  const Tensor a = uniform({50, 3}, 31);
  manual_seed(32);
  const Tensor index = randint(0, 50, {kItems});
  const Tensor a_dev = a.to(kCuda0);
  Tensor index_dev = index.to(kCuda0);
  (void)index_select(a_dev, 0, index_dev);  // eager warm-up
  cuda::CUDAGraph graph;
  Tensor out;
  cuda::capture(graph, [&] { out = index_select(a_dev, 0, index_dev); });
  REQUIRE(graph.captured());
  graph.replay();
  require_close(index_select(a, 0, index), out, "index_select replayed", 0.0, 0.0);
  // New (still valid) indices copied into the static index: the replay checks and uses them.
  manual_seed(33);
  const Tensor index2 = randint(0, 50, {kItems});
  index_dev.copy_(index2);
  graph.replay();
  require_close(index_select(a, 0, index2), out, "index_select replayed on new indices", 0.0, 0.0);
}

TEST_CASE("cuda second pass: gather's backward and scatter_add over 700 lines", "[cuda]") {
  if (skip_without_gpu()) return;
  // scatter_add_kernel strides over the lines: every position of the index but dim d.
  manual_seed(41);
  const Tensor index = randint(0, 4, {kItems, 3});  // repeats within a line add up
  {
    Pair a = leaves(uniform({kItems, 4}, 42));
    const Tensor y_cpu = gather(a.cpu, 1, index);
    const Tensor y_dev = gather(a.dev, 1, index.to(kCuda0));
    require_close(y_cpu, y_dev, "gather forward", 0.0, 0.0);
    const Tensor g = uniform(y_cpu.shape(), 43);
    y_cpu.backward(g);
    y_dev.backward(g.to(kCuda0));
    require_close(a.cpu.grad(), a.dev.grad(), "gather: gradient of the input (scatter_add)");
  }
  {
    // scatter_add itself, along dim 0 of a [4, 700] tensor: 700 lines of 3.
    NoGradGuard no_grad;
    const Tensor base = uniform({4, kItems}, 44);
    const Tensor src = uniform({3, kItems}, 45);
    const Tensor ix = index.t().contiguous();
    const Tensor cpu = scatter_add(base, 0, ix, src);
    const Tensor dev = scatter_add(base.to(kCuda0), 0, ix.to(kCuda0), src.to(kCuda0));
    require_close(cpu, dev, "scatter_add along dim 0");
  }
}

TEST_CASE("cuda second pass: prod backward with 700 outputs", "[cuda]") {
  if (skip_without_gpu()) return;
  // prod_backward_kernel strides over outer * inner outputs (a thread walks its slice).
  Tensor x = uniform({3, kItems}, 51, 0.5, 1.5);
  {
    // One zero in some slices and two in others: both zero branches of the backward.
    std::vector<double> v = x.to_vector<double>();
    for (int64_t j = 7; j < kItems; j += 50) v[static_cast<size_t>(j)] = 0.0;
    for (int64_t j = 600; j < kItems; j += 31) {
      v[static_cast<size_t>(j)] = 0.0;
      v[static_cast<size_t>(kItems + j)] = 0.0;
    }
    x = from_vector<double>(v, {3, kItems}, kFloat64);
  }
  SECTION("over dim 0 (inner = 700)") {
    Pair a = leaves(x);
    const Tensor y_cpu = prod(a.cpu, 0), y_dev = prod(a.dev, 0);
    require_close(y_cpu, y_dev, "prod(x, 0) forward", 1e-9, 0.0);
    const Tensor g = uniform(y_cpu.shape(), 52);
    y_cpu.backward(g);
    y_dev.backward(g.to(kCuda0));
    require_close(a.cpu.grad(), a.dev.grad(), "prod(x, 0): gradient of the input");
  }
  SECTION("over dim 1 of the transpose (outer = 700)") {
    Pair a = leaves(x.t().contiguous());
    const Tensor y_cpu = prod(a.cpu, 1, true), y_dev = prod(a.dev, 1, true);
    require_close(y_cpu, y_dev, "prod(x, 1) forward", 1e-9, 0.0);
    const Tensor g = uniform(y_cpu.shape(), 53);
    y_cpu.backward(g);
    y_dev.backward(g.to(kCuda0));
    require_close(a.cpu.grad(), a.dev.grad(), "prod(x, 1): gradient of the input");
  }
}

TEST_CASE("cuda second pass: cumsum over 700 columns", "[cuda]") {
  if (skip_without_gpu()) return;
  // cumsum_kernel gives a thread each column (o, k) and strides over outer * inner of them; its
  // backward is the same kernel, reversed.
  const Tensor x = uniform({3, 5, kItems}, 53);
  Pair a = leaves(x);
  const Tensor y_cpu = cumsum(a.cpu, 1), y_dev = cumsum(a.dev, 1);
  require_close(y_cpu, y_dev, "cumsum(x, 1) forward", 1e-9, 0.0);
  const Tensor g = uniform(y_cpu.shape(), 54);
  y_cpu.backward(g);
  y_dev.backward(g.to(kCuda0));
  require_close(a.cpu.grad(), a.dev.grad(), "cumsum(x, 1): gradient of the input");
}
