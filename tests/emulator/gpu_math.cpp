// tests/emulator/gpu_math.cpp — the emulator's GPU arithmetic (emulation build only): kernels
// contracted as nvcc contracts them, and the transcendental functions moved by up to CUDA's
// documented error (EMBER_EMULATOR_MATH=ulp, kernels/emulator/gpu_math.h).
#ifdef EMBER_CUDA_EMULATED
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "core/ember.h"
#include "kernels/emulator/gpu_math.h"
#include "tests/emulator/kernels.h"

namespace {

namespace emu = ember::emu;

// Sets a math mode for one test and puts the previous one back.
struct MathModeScope {
  emu::MathMode mode = emu::math_mode();
  uint64_t seed = emu::math_seed();
  MathModeScope(emu::MathMode m, uint64_t s) { emu::set_math_mode(m, s); }
  ~MathModeScope() { emu::set_math_mode(mode, seed); }
};

// The distance in ulps between two finite numbers of the same sign: the difference of their
// bit patterns, which are ordered like the numbers within one sign.
template <typename T>
int64_t ulps_between(T a, T b) {
  if constexpr (sizeof(T) == 4) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return std::llabs(int64_t{ia} - int64_t{ib});
  } else {
    int64_t ia, ib;
    std::memcpy(&ia, &a, 8);
    std::memcpy(&ib, &b, 8);
    return std::llabs(ia - ib);
  }
}

// Arguments spread over the ranges the ops meet: small and large magnitudes, both signs.
template <typename T>
std::vector<T> arguments(T low, T high, int n) {
  std::vector<T> xs;
  for (int i = 0; i < n; ++i) xs.push_back(low + (high - low) * (T(i) + T(0.37)) / T(n));
  return xs;
}

struct Checked {
  int moved = 0, total = 0;
  int64_t widest = 0;
};

// f under the ulp mode against the C library's g: never further than `bound` ulps, the same
// answer twice, and results that stay where the function's range says.
template <typename T, typename F, typename G>
Checked check_function(F f, G g, const std::vector<T>& xs, int bound, T lo, T hi) {
  Checked c;
  for (T x : xs) {
    const T exact = g(x), moved = f(x);
    if (!std::isfinite(exact)) {
      CHECK((std::isnan(exact) ? std::isnan(moved) : moved == exact));
      continue;
    }
    INFO("x = " << x << ", library " << exact << ", moved " << moved);
    REQUIRE(std::isfinite(moved));
    CHECK(moved == f(x));  // deterministic: a GPU's library gives one answer per argument
    CHECK(moved >= lo);
    CHECK(moved <= hi);
    if (exact != T(0)) {
      CHECK((moved < T(0)) == (exact < T(0)));
      const int64_t d = ulps_between(moved, exact);
      CHECK(d <= bound);
      c.widest = std::max(c.widest, d);
      c.moved += d != 0;
    } else {
      CHECK(moved == exact);
    }
    ++c.total;
  }
  return c;
}

}  // namespace

TEST_CASE("emulator: CUDA's documented ulp bounds are the table's", "[emulator]") {
  CHECK(emu::math_ulp_bound("expf") == 2);
  CHECK(emu::math_ulp_bound("logf") == 1);
  CHECK(emu::math_ulp_bound("tanhf") == 2);
  CHECK(emu::math_ulp_bound("powf") == 4);
  CHECK(emu::math_ulp_bound("sqrtf") == 0);
  CHECK(emu::math_ulp_bound("exp") == 1);
  CHECK(emu::math_ulp_bound("pow") == 2);
  CHECK(emu::math_ulp_bound("cos") == 2);
  CHECK(emu::math_ulp_bound("erfcinvf") == -1);
}

TEST_CASE("emulator: the exact math mode is the C library's", "[emulator]") {
  MathModeScope scope(emu::MathMode::exact, 0);
  for (float x : arguments(-20.0f, 20.0f, 301)) {
    CHECK(emu::gpu_expf(x) == std::exp(x));
    CHECK(emu::gpu_tanhf(x) == std::tanh(x));
    CHECK(emu::gpu_logf(std::fabs(x)) == std::log(std::fabs(x)));
    CHECK(emu::gpu_powf(std::fabs(x), 1.7f) == std::pow(std::fabs(x), 1.7f));
  }
  for (double x : arguments(-20.0, 20.0, 301)) {
    CHECK(emu::gpu_exp(x) == std::exp(x));
    CHECK(emu::gpu_cos(x) == std::cos(x));
  }
}

TEST_CASE("emulator: the ulp math mode moves results within CUDA's bounds", "[emulator]") {
  MathModeScope scope(emu::MathMode::ulp, 11);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = arguments(-30.0f, 30.0f, 2001);
  std::vector<float> positive;
  for (float x : xs) positive.push_back(std::fabs(x) + 1e-3f);

  const Checked e = check_function<float>([](float x) { return emu::gpu_expf(x); },
                                          [](float x) { return std::exp(x); }, xs, 2, 0.0f, kInf);
  const Checked l =
      check_function<float>([](float x) { return emu::gpu_logf(x); },
                            [](float x) { return std::log(x); }, positive, 1, -kInf, kInf);
  const Checked t = check_function<float>([](float x) { return emu::gpu_tanhf(x); },
                                          [](float x) { return std::tanh(x); }, xs, 2, -1.0f, 1.0f);
  const Checked p =
      check_function<float>([](float x) { return emu::gpu_powf(x, 2.5f); },
                            [](float x) { return std::pow(x, 2.5f); }, positive, 4, -kInf, kInf);
  const Checked d =
      check_function<double>([](double x) { return emu::gpu_exp(x); },
                             [](double x) { return std::exp(x); }, arguments(-30.0, 30.0, 2001), 1,
                             0.0, std::numeric_limits<double>::infinity());
  // Most results move (a uniform step in [-b, b] is 0 with probability 1 / (2b + 1)), and the
  // widest step is the bound itself: the mode uses all the room the documentation gives.
  CHECK(e.moved > e.total * 7 / 10);
  CHECK(e.widest == 2);
  CHECK(l.moved > l.total * 6 / 10);
  CHECK(l.widest == 1);
  CHECK(t.moved > t.total / 2);  // tanh saturates at 1 for |x| > 9: those cannot move up
  CHECK(p.moved > p.total * 8 / 10);
  CHECK(p.widest == 4);
  CHECK(d.moved > d.total * 6 / 10);

  // Exact cases stay exact: what CUDA's Math API specifies, and the correctly rounded sqrt.
  CHECK(emu::gpu_expf(0.0f) == 1.0f);
  CHECK(emu::gpu_logf(1.0f) == 0.0f);
  CHECK(emu::gpu_powf(3.7f, 0.0f) == 1.0f);
  CHECK(emu::gpu_powf(1.0f, 3.7f) == 1.0f);
  CHECK(emu::gpu_tanhf(-0.0f) == 0.0f);
  CHECK(std::signbit(emu::gpu_tanhf(-0.0f)));
  CHECK(emu::gpu_expf(-200.0f) == 0.0f);
  CHECK(emu::gpu_expf(200.0f) == kInf);
  CHECK(std::isnan(emu::gpu_logf(-1.0f)));
  for (float x : positive) CHECK(emu::gpu_sqrtf(x) == std::sqrt(x));
  CHECK(emu::gpu_expf(88.7f) < kInf);  // near the top: moved, never into overflow

  // Another seed moves other results: the seed chooses the GPU.
  float first = emu::gpu_expf(1.3f), differs = 0;
  for (uint64_t seed = 12; seed < 40 && differs == 0; ++seed) {
    emu::set_math_mode(emu::MathMode::ulp, seed);
    if (emu::gpu_expf(1.3f) != first) differs = 1;
  }
  CHECK(differs == 1);
}

TEST_CASE("emulator: the ulp math mode reaches ember's kernels and parity holds",
          "[emulator][cuda]") {
  using namespace ember;
  const Tensor x = linspace(-6.0, 6.0, 4096);
  const Tensor rows = x.reshape({64, 64});
  const std::vector<float> cpu_exp = exp(x).to_vector<float>();
  const std::vector<float> cpu_tanh = tanh(x).to_vector<float>();
  const std::vector<float> cpu_softmax = softmax(rows, 1).to_vector<float>();
  const Tensor gx = x.to(Device::cuda(0));
  // How many elements differ, and the largest relative difference.
  struct Diff {
    int differing = 0;
    double worst = 0;
  };
  auto compare = [](const std::vector<float>& cpu, const Tensor& gpu) {
    const std::vector<float> g = gpu.cpu().to_vector<float>();
    Diff d;
    for (size_t i = 0; i < cpu.size(); ++i) {
      d.differing += g[i] != cpu[i];
      d.worst = std::max(d.worst, std::fabs(double(g[i]) - cpu[i]) / std::fabs(double(cpu[i])));
    }
    return d;
  };
  {
    MathModeScope scope(emu::MathMode::exact, 0);
    CHECK(compare(cpu_exp, exp(gx)).differing == 0);  // glibc on both sides: bit for bit
  }
  MathModeScope scope(emu::MathMode::ulp, 5);
  const Diff e = compare(cpu_exp, exp(gx)), t = compare(cpu_tanh, tanh(gx));
  const Diff s = compare(cpu_softmax, softmax(gx.reshape({64, 64}), 1));
  // The GPU's answers differ from the CPU's in most elements...
  CHECK(e.differing > 2048);
  CHECK(t.differing > 1024);
  CHECK(s.differing > 1024);
  // ...by a few ulps: far inside the float32 tolerance of the parity tests (rtol 1e-5,
  // tests/kernels/cuda_parity.cpp), which therefore holds for a GPU's libm as well.
  CHECK(e.worst <= 3 * 0x1.0p-23);
  CHECK(t.worst <= 3 * 0x1.0p-23);
  CHECK(s.worst < 1e-5);
}

TEST_CASE("emulator: kernels are contracted as nvcc contracts them", "[emulator]") {
  // Values where one rounding and two differ: a * b = 1 + 2^-11 + 2^-24 needs 25 bits.
  const float a = 1.0f + 0x1.0p-12f, b = 1.0f + 0x1.0p-12f, c = -1.0f;
  const float host_in[3] = {a, b, c};
  float *in = nullptr, *out = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&in), 3 * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&out), 3 * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemcpy(in, host_in, sizeof host_in, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(ember_test::launch_contraction(in, out) == cudaSuccess);
  float f[3];
  REQUIRE(cudaMemcpy(f, out, sizeof f, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(in);
  cudaFree(out);
  volatile float product = a * b;  // rounded on its own
  const float twice = product + c, once = std::fma(a, b, c);
  REQUIRE(twice != once);
  CHECK(f[1] == twice);  // __fmul_rn is never fused
  CHECK(f[2] == twice);  // nor is __fadd_rn
  if (ember_test::kernels_contracted()) {
    CHECK(f[0] == once);  // a * b + c: one fma, as nvcc compiles it
  } else {
    CHECK(f[0] == twice);  // EMBER_EMULATOR_FMA off (or no FMA on this CPU): two roundings
  }
}

#endif  // EMBER_CUDA_EMULATED
