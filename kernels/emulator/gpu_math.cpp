// ember/kernels/emulator/gpu_math.cpp — the GPU's transcendental functions in the emulator:
// the C library's result, or (EMBER_EMULATOR_MATH=ulp[:SEED]) that result moved by up to CUDA's
// documented error. See gpu_math.h for why and for what it cannot do.
#include "kernels/emulator/gpu_math.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

namespace ember::emu {
namespace {

// CUDA's maximum errors in ulps for compute capability 5.2 and newer (CUDA Programming Guide,
// "Mathematical Functions", the standard functions; float first, then double). 0: correctly
// rounded (sqrt under nvcc's default -prec-sqrt=true).
struct Bound {
  const char* name;
  int ulps;
};
constexpr Bound kBounds[] = {
    {"expf", 2},  {"logf", 1}, {"log1pf", 1}, {"expm1f", 1}, {"tanhf", 2}, {"powf", 4},
    {"sqrtf", 0}, {"sinf", 2}, {"cosf", 2},   {"exp", 1},    {"log", 1},   {"log1p", 1},
    {"expm1", 1}, {"tanh", 1}, {"pow", 2},    {"sqrt", 0},   {"sin", 2},   {"cos", 2},
};

// One number per function, mixed into the hash so that expf(x) and logf(x) move independently.
enum Fn : uint64_t { kExp = 1, kLog, kLog1p, kExpm1, kTanh, kPow, kSin, kCos };

std::once_flag g_read_env;
std::atomic<int> g_mode{static_cast<int>(MathMode::exact)};
std::atomic<uint64_t> g_seed{0};

void read_env() {
  const char* e = std::getenv("EMBER_EMULATOR_MATH");
  if (e == nullptr || *e == '\0' || std::strcmp(e, "exact") == 0) return;
  if (std::strncmp(e, "ulp", 3) == 0 && (e[3] == '\0' || e[3] == ':')) {
    uint64_t seed = 1;
    if (e[3] == ':') {
      char* end = nullptr;
      seed = std::strtoull(e + 4, &end, 10);
      if (e[4] == '\0' || *end != '\0') {
        std::fprintf(stderr,
                     "ember emulator: EMBER_EMULATOR_MATH='%s': the seed after 'ulp:' must be a "
                     "whole number (for example ulp:7); using the C library's results (exact)\n",
                     e);
        return;
      }
    }
    g_seed.store(seed);
    g_mode.store(static_cast<int>(MathMode::ulp));
    return;
  }
  std::fprintf(stderr,
               "ember emulator: EMBER_EMULATOR_MATH='%s' is not a mode: use 'exact' (the C "
               "library's results) or 'ulp' / 'ulp:SEED' (moved by up to CUDA's documented "
               "error); using exact\n",
               e);
}

void ensure_env() { std::call_once(g_read_env, read_env); }

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
uint64_t bits_of(T x) {
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    return b;
  } else {
    uint64_t b;
    std::memcpy(&b, &x, 8);
    return b;
  }
}

// `exact` moved by a whole number of ulps k in [-bound, bound], chosen by hashing (seed, fn,
// arguments). Each step is one nextafter, so near a power of two the steps follow the binade the
// value crosses into. The walk stops early rather than leave [lo, hi], reach zero or change sign
// (a GPU's exp is never 0 for a finite result that glibc rounds to a normal number, its tanh
// never exceeds 1).
template <typename T>
T move(T exact, Fn fn, uint64_t args, int bound, T lo, T hi) {
  if (g_mode.load(std::memory_order_relaxed) != static_cast<int>(MathMode::ulp) || bound == 0)
    return exact;
  if (!std::isfinite(exact) || exact == T(0)) return exact;
  const uint64_t h =
      mix(mix(g_seed.load(std::memory_order_relaxed) ^ (fn * 0x9e3779b97f4a7c15ull)) ^ args);
  int k = static_cast<int>(h % static_cast<uint64_t>(2 * bound + 1)) - bound;
  T r = exact;
  const T toward = k > 0 ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
  for (; k != 0; k += (k > 0 ? -1 : 1)) {
    const T next = std::nextafter(r, toward);
    if (!std::isfinite(next) || next == T(0) || (next < T(0)) != (exact < T(0)) || next < lo ||
        next > hi)
      break;
    r = next;
  }
  return r;
}

template <typename T>
constexpr T kInf = std::numeric_limits<T>::infinity();

template <typename T>
T exp_impl(T x, int bound) {
  const T r = std::exp(x);
  if (x == T(0)) return r;  // exp(+-0) = 1 exactly
  return move(r, kExp, bits_of(x), bound, T(0), kInf<T>);
}
template <typename T>
T log_impl(T x, int bound) {
  return move(std::log(x), kLog, bits_of(x), bound, -kInf<T>, kInf<T>);  // log(1) = 0 stays
}
template <typename T>
T log1p_impl(T x, int bound) {
  return move(std::log1p(x), kLog1p, bits_of(x), bound, -kInf<T>, kInf<T>);
}
template <typename T>
T expm1_impl(T x, int bound) {
  return move(std::expm1(x), kExpm1, bits_of(x), bound, T(-1), kInf<T>);
}
template <typename T>
T tanh_impl(T x, int bound) {
  return move(std::tanh(x), kTanh, bits_of(x), bound, T(-1), T(1));
}
template <typename T>
T pow_impl(T x, T y, int bound) {
  const T r = std::pow(x, y);
  if (y == T(0) || x == T(1)) return r;  // pow(x, 0) = 1 and pow(1, y) = 1 exactly
  return move(r, kPow, mix(bits_of(x)) ^ bits_of(y), bound, -kInf<T>, kInf<T>);
}
template <typename T>
T sin_impl(T x, int bound) {
  return move(std::sin(x), kSin, bits_of(x), bound, T(-1), T(1));
}
template <typename T>
T cos_impl(T x, int bound) {
  return move(std::cos(x), kCos, bits_of(x), bound, T(-1), T(1));
}

}  // namespace

MathMode math_mode() {
  ensure_env();
  return static_cast<MathMode>(g_mode.load());
}

uint64_t math_seed() {
  ensure_env();
  return g_seed.load();
}

void set_math_mode(MathMode mode, uint64_t seed) {
  ensure_env();  // so that a later first use does not read the environment over this
  g_seed.store(seed);
  g_mode.store(static_cast<int>(mode));
}

int math_ulp_bound(const char* name) {
  for (const Bound& b : kBounds)
    if (std::strcmp(b.name, name) == 0) return b.ulps;
  return -1;
}

// One wrapper per function: the bound is looked up once (the table above is the one place it is
// written), after the mode has been read from the environment.
#define EMBER_GPU_MATH_BOUND(name) static const int bound = (ensure_env(), math_ulp_bound(name))
#define EMBER_GPU_MATH_UNARY(T, fn, name, impl) \
  T fn(T x) {                                   \
    EMBER_GPU_MATH_BOUND(name);                 \
    return impl(x, bound);                      \
  }
EMBER_GPU_MATH_UNARY(float, gpu_expf, "expf", exp_impl)
EMBER_GPU_MATH_UNARY(float, gpu_logf, "logf", log_impl)
EMBER_GPU_MATH_UNARY(float, gpu_log1pf, "log1pf", log1p_impl)
EMBER_GPU_MATH_UNARY(float, gpu_expm1f, "expm1f", expm1_impl)
EMBER_GPU_MATH_UNARY(float, gpu_tanhf, "tanhf", tanh_impl)
EMBER_GPU_MATH_UNARY(float, gpu_sinf, "sinf", sin_impl)
EMBER_GPU_MATH_UNARY(float, gpu_cosf, "cosf", cos_impl)
EMBER_GPU_MATH_UNARY(double, gpu_exp, "exp", exp_impl)
EMBER_GPU_MATH_UNARY(double, gpu_log, "log", log_impl)
EMBER_GPU_MATH_UNARY(double, gpu_log1p, "log1p", log1p_impl)
EMBER_GPU_MATH_UNARY(double, gpu_expm1, "expm1", expm1_impl)
EMBER_GPU_MATH_UNARY(double, gpu_tanh, "tanh", tanh_impl)
EMBER_GPU_MATH_UNARY(double, gpu_sin, "sin", sin_impl)
EMBER_GPU_MATH_UNARY(double, gpu_cos, "cos", cos_impl)
#undef EMBER_GPU_MATH_UNARY

float gpu_powf(float x, float y) {
  EMBER_GPU_MATH_BOUND("powf");
  return pow_impl(x, y, bound);
}
double gpu_pow(double x, double y) {
  EMBER_GPU_MATH_BOUND("pow");
  return pow_impl(x, y, bound);
}
#undef EMBER_GPU_MATH_BOUND

// sqrt is correctly rounded on a GPU (bound 0): the C library's answer is the GPU's.
float gpu_sqrtf(float x) { return std::sqrt(x); }
double gpu_sqrt(double x) { return std::sqrt(x); }

}  // namespace ember::emu
