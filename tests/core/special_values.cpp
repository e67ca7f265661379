// Subnormals and special values (+-0, +-inf, NaN, the largest finite values) through the
// elementwise math, on every path: a contiguous run long enough for vector loops, a short one, a
// strided one, every length from 1 to 40 and every position inside a run — and on the GPU.
//
// The bug this guards against: Eigen's vectorized exp/log clamp their inputs and flush subnormals,
// and they ran only on whole vector packets, so log(1e-310) was -708.40 in a tensor of 8 or more
// elements and -713.80 (right) in a shorter one, float64 exp(-740) was 5.6e-309 instead of
// 4.2e-322, float32 exp(-103) was 0. The answer of an element must not depend on where it sits:
// every path must give the C library's answer, bit for bit.
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;

namespace {

// One op: ember's function and the C library's answer for one element (in the element's type).
struct Op {
  const char* name;
  std::function<Tensor(const Tensor&)> ember;
  double (*ref64)(double);
  float (*ref32)(float);
};

const std::vector<Op>& ops() {
  static const std::vector<Op> list = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); },
       [](float x) { return std::exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); },
       [](float x) { return std::log(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); },
       [](float x) { return std::sqrt(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); },
       [](float x) { return std::tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
       [](float x) { return 1.0f / (1.0f + std::exp(-x)); }},
      {"pow 2.5", [](const Tensor& x) { return pow(x, 2.5); }, [](double x) { return std::pow(x, 2.5); },
       [](float x) { return std::pow(x, 2.5f); }},
      {"pow -0.5", [](const Tensor& x) { return pow(x, -0.5); },
       [](double x) { return 1.0 / std::sqrt(x); }, [](float x) { return 1.0f / std::sqrt(x); }},
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; },
       [](float x) { return -x; }},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::fabs(x); },
       [](float x) { return std::fabs(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x < 0 ? 0.0 : x; },
       [](float x) { return x < 0 ? 0.0f : x; }},
  };
  return list;
}

// +-0, +-inf, NaN, the largest and smallest normal and subnormal values of both types, and the
// inputs near the ends of exp's and log's ranges.
std::vector<double> edge_values() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0, -0.0, 1.0, -1.0, inf, -inf, std::nan(""), 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308,
          1.7976931348623157e308, -1.7976931348623157e308, 1e-40, 1.401298464324817e-45,
          1.1754943508222875e-38, 3.4028234663852886e38, -103.0, -104.0, -745.0, -740.0, -708.5,
          88.7, 89.0, 709.8, 710.0, 0.5, -2.5, 1e4, -1e-30};
}

// Same bits, or both NaN (NaN payloads may differ).
template <typename T>
bool same(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Checks every element of ember's result on `x` (a view of any layout) against the reference.
template <typename T>
void check_against_c_library(const Op& op, const Tensor& x, const std::string& where) {
  const Tensor y = op.ember(x);
  REQUIRE(y.dtype() == x.dtype());
  const std::vector<T> in = x.to_vector<T>(), out = y.to_vector<T>();
  int bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    T want;
    if constexpr (std::is_same_v<T, float>) want = op.ref32(in[i]);
    else want = op.ref64(in[i]);
    if (same(out[i], want)) continue;
    if (++bad <= 3) {
      INFO(op.name << " " << dtype_name(x.dtype()) << ", " << where << ", element " << i << ": x = "
                   << in[i] << ", ember " << out[i] << ", C library " << want);
      CHECK(false);
    }
  }
  CHECK(bad == 0);
}

template <typename T>
void sweep(const Op& op, DType dtype) {
  const std::vector<double> edges = edge_values();
  const auto n_edges = static_cast<int64_t>(edges.size());
  // Every length 1..40 (tails, one vector, several vectors and a tail) with the edge values
  // starting at every offset, so each value is seen at every position of a run.
  for (int64_t n = 1; n <= 40; ++n) {
    for (int64_t start = 0; start < n_edges; start += (n < 8 ? 1 : 7)) {
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = edges[static_cast<size_t>((start + i) % n_edges)];
      const Tensor x = tensor(v, {n}, dtype);
      check_against_c_library<T>(op, x, "contiguous length " + std::to_string(n));
    }
  }
  // Long runs (the vectorized body many times over), strided and transposed views.
  std::vector<double> longer;
  for (int k = 0; k < 5; ++k) longer.insert(longer.end(), edges.begin(), edges.end());
  const auto n_long = static_cast<int64_t>(longer.size());
  const Tensor all = tensor(longer, {n_long}, dtype);
  check_against_c_library<T>(op, all, "contiguous length " + std::to_string(n_long));
  check_against_c_library<T>(op, all.slice(0, 1, n_long, 2), "every other element");
  REQUIRE(n_long % 6 == 0);
  check_against_c_library<T>(op, all.view({6, n_long / 6}).t(), "transposed");
  check_against_c_library<T>(op, all.slice(0, 3, 4).expand({9}), "stride 0");
}

}  // namespace

TEST_CASE("special values: every path gives the C library's answer", "[special]") {
  for (const Op& op : ops()) {
    sweep<double>(op, kFloat64);
    sweep<float>(op, kFloat32);
  }
}

TEST_CASE("special values: the issue's examples, at every length", "[special]") {
  for (int64_t n : {1, 3, 7, 8, 16, 33}) {
    INFO("length " << n);
    // log of a subnormal: -713.80 (glibc's), not log(DBL_MIN) = -708.40.
    const double l = log(full({n}, 1e-310, kFloat64)).to_vector<double>().back();
    CHECK(l == std::log(1e-310));
    CHECK(l < -713.8);
    // exp(-740) is subnormal (4.2e-322), not 5.6e-309.
    const double e = exp(full({n}, -740.0, kFloat64)).to_vector<double>().back();
    CHECK(e == std::exp(-740.0));
    CHECK(e < 1e-320);
    CHECK(e > 0.0);
    // float32: exp(-103) is a subnormal float (not 0), log(1e-40) is -92.1 (not -87.34).
    const float ef = exp(full({n}, -103.0, kFloat32)).to_vector<float>().back();
    CHECK(ef == std::exp(-103.0f));
    CHECK(ef > 0.0f);
    const float lf = log(full({n}, 1e-40, kFloat32)).to_vector<float>().back();
    CHECK(lf == std::log(1e-40f));
    CHECK(lf < -92.0f);
  }
}

// How far, in ulps of the result, the GPU's answer may be from the CPU's: CUDA's documented
// maximum error (kernels/emulator/gpu_math.cpp has the table; powf's is 4 ulp, expf's and
// tanhf's 2) plus one for glibc's own error, and sigmoid's 1 / (1 + exp(-x)) adds the rounding
// of its sum and quotient to exp's. CI runs this test with the emulator moving every result by
// up to CUDA's bound (EMBER_EMULATOR_MATH=ulp), which is how the figures were checked.
double gpu_ulps(const std::string& op) {
  if (op.rfind("pow", 0) == 0) return 5;
  if (op == "sigmoid") return 4;
  return 3;
}

TEST_CASE("special values on cuda: the GPU answers as the CPU does", "[cuda][special]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  std::vector<double> longer;
  const std::vector<double> edges = edge_values();
  for (int k = 0; k < 3; ++k) longer.insert(longer.end(), edges.begin(), edges.end());
  const auto n = static_cast<int64_t>(longer.size());
  for (const DType dtype : {kFloat64, kFloat32}) {
    for (const Op& op : ops()) {
      for (int64_t len : {int64_t{5}, n}) {
        const Tensor x = tensor(std::vector<double>(longer.begin(), longer.begin() + len), {len}, dtype);
        const std::vector<double> cpu = op.ember(x).to_vector<double>();
        const std::vector<double> gpu = op.ember(x.cuda()).to_vector<double>();
        for (size_t i = 0; i < cpu.size(); ++i) {
          const double a = cpu[i], b = gpu[i];
          INFO(op.name << " " << dtype_name(dtype) << " x = " << longer[i] << ": cpu " << a << ", gpu " << b);
          // The same kind of value (NaN, +-inf, zero, subnormal, normal), and within a few ulps
          // of each other (a GPU's math library is not glibc: gpu_ulps). At the bottom of the
          // subnormal range an ulp is the value itself: there zero and the smallest subnormals
          // are one kind (CUDA's exp(-745.0) is 0 where glibc's is 4.9e-324, one ulp apart),
          // and the ulp check below decides.
          const auto kind = [](double v) {
            const int c = std::fpclassify(v);
            return c == FP_SUBNORMAL ? FP_ZERO : c;
          };
          CHECK(kind(a) == kind(b));
          if (!std::isnan(a)) CHECK(std::signbit(a) == std::signbit(b));
          if (std::isfinite(a) && a != b) {
            const double ulp = dtype == kFloat32
                                   ? std::fabs(static_cast<double>(std::nextafter(static_cast<float>(a), INFINITY)) - a)
                                   : std::fabs(std::nextafter(a, INFINITY) - a);
            CHECK(std::fabs(a - b) <= gpu_ulps(op.name) * ulp);
          }
        }
      }
    }
  }
}
