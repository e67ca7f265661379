// sort and topk on CUDA against the CPU, over the sizes where kernels/cuda/sort.cu changes
// path: lines of 1, 7 and 1023 elements and 2048 (the longest sorted in shared memory, by one
// block per line), 2049 and 5000 (one launch per step of the network, pairs in global memory);
// along the last dim (contiguous lines) and along dim 0 (lines `inner` apart); every dtype; values
// with many ties, and NaNs in the float ones. Both devices must give the same values and the
// same positions (the order is total, so there is one right answer), and the same gradient.
//
// The second-pass cases: a grid capped at 2 blocks (EMBER_EMULATOR_GRID_CAP=2, docs/emulator.md)
// must make each of the four kernels loop. sort_lines_shared_kernel strides over lines, so 700
// lines make its 2 blocks take 350 passes; the three long-line kernels stride over slots or
// pairs, and a 2049-long line has 4096 slots and 2048 pairs, more than 2 * 256 threads.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "cuda_test_util.h"

using namespace ember;

namespace {

using test::kCuda0;
using test::skip_without_gpu;

// n values of the dtype with many ties (a cycle of 13 integers in a scrambled order), and for
// float dtypes a NaN every 17th element and a -0.0 beside the 0.0s.
Tensor tied_values(const Shape& shape, DType dtype) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = double((i * 7 + (i / 13) * 5) % 13) - (dtype == kUInt8 || dtype == kBool ? 0.0 : 6.0);
    if (is_floating(dtype) && i % 17 == 16) v[i] = std::nan("");
    if (is_floating(dtype) && v[i] == 0.0 && i % 2 == 1) v[i] = -0.0;
  }
  if (dtype == kBool) return tensor(v, shape, kFloat64).gt(6.0);
  return tensor(v, shape, dtype);
}

void require_same(const Tensor& cpu, const Tensor& dev, const std::string& what) {
  INFO(what);
  REQUIRE(dev.device() == kCuda0);
  REQUIRE(dev.dtype() == cpu.dtype());
  REQUIRE(shape_str(dev.shape()) == shape_str(cpu.shape()));
  const std::vector<double> a = cpu.to(kFloat64).to_vector<double>();
  const std::vector<double> b = dev.cpu().to(kFloat64).to_vector<double>();
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = std::isnan(a[i]) ? std::isnan(b[i])
                                       : (a[i] == b[i] && std::signbit(a[i]) == std::signbit(b[i]));
    if (same) continue;
    if (first < 0) first = static_cast<int64_t>(i);
    ++bad;
  }
  INFO(bad << " of " << a.size() << " differ, the first at " << first);
  CHECK(bad == 0);
}

// sort (both directions) and topk (largest and smallest) of x along dim on both devices.
void check_sort_topk(const Tensor& x, int64_t dim, const std::string& what) {
  const Tensor xd = x.to(kCuda0);
  for (bool descending : {false, true}) {
    const std::string w = what + (descending ? ", descending" : ", ascending");
    const ValuesIndices c = sort(x, dim, descending), d = sort(xd, dim, descending);
    require_same(c.values, d.values, "sort values: " + w);
    require_same(c.indices, d.indices, "sort indices: " + w);
  }
  if (x.dtype() == kBool) return;  // topk refuses bool, on every device
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[wrap_dim(dim, x.dim(), "test")];
  const int64_t k = std::min<int64_t>(5, n);
  for (bool largest : {true, false}) {
    const std::string w = what + ", k " + std::to_string(k) + (largest ? " largest" : " smallest");
    const ValuesIndices c = topk(x, k, dim, largest), d = topk(xd, k, dim, largest);
    require_same(c.values, d.values, "topk values: " + w);
    require_same(c.indices, d.indices, "topk indices: " + w);
  }
}

}  // namespace

TEST_CASE("cuda sort: every path of the kernels, every dtype, ties and NaN", "[cuda][cuda-sort]") {
  if (skip_without_gpu()) return;
  for (int64_t n : {1, 7, 1023, 2048, 2049, 5000}) {
    for (DType dt : {kFloat32, kFloat64, kInt64, kInt32, kUInt8, kBool}) {
      const std::string what = std::to_string(n) + " " + dtype_name(dt);
      check_sort_topk(tied_values({2, n}, dt), -1, "rows [2, " + what + "]");
      // Along dim 0: each line's elements are 3 apart (inner 3).
      if (n <= 2049) check_sort_topk(tied_values({n, 3}, dt), 0, "columns [" + what + ", 3]");
    }
  }
}

TEST_CASE("cuda sort: the gradient goes to the same positions", "[cuda][cuda-sort]") {
  if (skip_without_gpu()) return;
  for (int64_t n : {7, 2049}) {
    INFO("n = " << n);
    const Tensor x = tied_values({3, n}, kFloat64);
    const Tensor w = rand({3, n}, kFloat64), wk = rand({3, 4}, kFloat64);
    Tensor xc = x.detach().requires_grad_(true), xd = x.to(kCuda0).detach().requires_grad_(true);
    sum(sort(xc, 1, true).values * w).backward();
    sum(sort(xd, 1, true).values * w.to(kCuda0)).backward();
    require_same(xc.grad(), xd.grad(), "sort: gradient of the input");
    xc.zero_grad();
    xd.zero_grad();
    sum(topk(xc, 4, 1).values * wk).backward();
    sum(topk(xd, 4, 1).values * wk.to(kCuda0)).backward();
    require_same(xc.grad(), xd.grad(), "topk: gradient of the input");
  }
}

TEST_CASE("cuda second pass: sort over 700 lines and along a 2049-long line", "[cuda]") {
  if (skip_without_gpu()) return;
  check_sort_topk(tied_values({700, 9}, kFloat64), 1, "700 lines of 9");
  check_sort_topk(tied_values({1, 2049}, kFloat32), 1, "one line of 2049");
}
