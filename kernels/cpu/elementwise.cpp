#include "kernels/elementwise.h"

#include <cmath>
#include <cstring>

#include <type_traits>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/base/scalar_math.h"
#include "kernels/cpu/isa_variant.h"  // last: what follows is compiled per variant

EMBER_CPU_VARIANT_BEGIN
namespace ember::kernels::cpu::EMBER_CPU_VARIANT {

namespace {

// The definition of each unary op, one element at a time. Every path uses it: contiguous runs,
// strided runs and every tensor length, so an element's answer never depends on where it sits
// or on how long its tensor is. The transcendental functions are the C library's (glibc's
// exp, log, tanh, pow are correctly rounded or within an ulp, and handle subnormal inputs and
// results, +-0, +-inf and NaN as IEEE 754 says).
//
// Eigen's vectorized exp/log/tanh are not used: they clamp their inputs (exp(-740) would be
// 5.6e-309 instead of 4.2e-322, float exp(-103) 0) and take subnormal inputs for the smallest
// normal number (log(1e-310) = -708.4 instead of -713.8), and Eigen runs them only on the
// whole packets of a long enough run, so an answer would depend on the tensor's length. The
// simple ops (neg, abs, relu, sqrt, square) still vectorize: plain loops that the compiler turns
// into SIMD instructions with the scalar instructions' results.
//
// Special values follow PyTorch: abs(-0) = +0; relu(NaN) = NaN and relu(-0) = -0 (x < 0 ? 0 : x);
// sign(NaN) = 0 (so the gradient of abs at NaN is 0, as PyTorch's).
// x^p with PyTorch's short cuts for the common exponents: they are what PyTorch computes (and
// where special values are concerned they differ from std::pow: pow(-0, -0.5) is +inf but
// 1 / sqrt(-0) is -inf), and x * x is faster than a pow call.
template <typename T>
T pow_scalar(T x, double p) {
  if (p == 2.0) return x * x;
  if (p == 3.0) return x * x * x;
  if (p == 0.5) return std::sqrt(x);
  if (p == -0.5) return T(1) / std::sqrt(x);
  if (p == -1.0) return T(1) / x;
  if (p == -2.0) return T(1) / (x * x);
  return std::pow(x, static_cast<T>(p));
}

template <typename T>
T unary_scalar(UnaryOp op, T x, double p) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::Neg: return -x;
      case UnaryOp::Exp: return std::exp(x);
      case UnaryOp::Log: return std::log(x);
      case UnaryOp::Sqrt: return std::sqrt(x);
      case UnaryOp::Abs: return std::fabs(x);
      case UnaryOp::Sign: return static_cast<T>((T(0) < x) - (x < T(0)));
      case UnaryOp::Relu: return x < T(0) ? T(0) : x;
      case UnaryOp::Sigmoid: return T(1) / (T(1) + std::exp(-x));
      case UnaryOp::Tanh: return std::tanh(x);
      case UnaryOp::Pow: return pow_scalar(x, p);
      case UnaryOp::Square: return x * x;
    }
    return x;
  } else {
    // Integers: the arithmetic ops only (the op cards compute exp, log... of integers as floats).
    switch (op) {
      case UnaryOp::Neg: return wrapping_neg(x);
      case UnaryOp::Abs:
        if constexpr (std::is_signed_v<T>) return x < T(0) ? wrapping_neg(x) : x;
        else return x;
      case UnaryOp::Sign:
        if constexpr (std::is_signed_v<T>) return static_cast<T>((T(0) < x) - (x < T(0)));
        else return static_cast<T>(x > T(0) ? 1 : 0);
      case UnaryOp::Relu: return x > T(0) ? x : T(0);
      case UnaryOp::Pow: return int_pow(x, static_cast<int64_t>(p));
      case UnaryOp::Square: return wrapping_mul(x, x);
      default: return convert_value<T>(unary_scalar<double>(op, static_cast<double>(x), p));
    }
  }
}

// One op applied to n elements with strides: a separate loop per op (the switch outside), so
// each loop body is a single call the compiler can inline, and vectorize where the op is plain
// arithmetic and both strides are 1.
template <typename T, typename F>
void unary_run(T* o, int64_t so, const T* x, int64_t sx, int64_t n, const F& f) {
  if (so == 1 && sx == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i * so] = f(x[i * sx]);
  }
}

template <typename T>
void unary_typed(UnaryOp op, const StridedLoop<2>& L, T* out, const T* in, double p) {
  for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
    T* o = out + off[0];
    const T* x = in + off[1];
    switch (op) {
#define EMBER_UNARY_CASE(OP)                \
  case UnaryOp::OP:                         \
    return unary_run(o, st[0], x, st[1], n, \
                     [p](T v) { return unary_scalar<T>(UnaryOp::OP, v, p); });
      EMBER_UNARY_CASE(Neg)
      EMBER_UNARY_CASE(Exp)
      EMBER_UNARY_CASE(Log)
      EMBER_UNARY_CASE(Sqrt)
      EMBER_UNARY_CASE(Abs)
      EMBER_UNARY_CASE(Sign)
      EMBER_UNARY_CASE(Relu)
      EMBER_UNARY_CASE(Sigmoid)
      EMBER_UNARY_CASE(Tanh)
      EMBER_UNARY_CASE(Pow)
      EMBER_UNARY_CASE(Square)
#undef EMBER_UNARY_CASE
    }
  });
}

template <typename T>
struct BinaryFn {
  BinaryOp op;
  T alpha;
  T operator()(T a, T b) const {
    switch (op) {
      case BinaryOp::Add: return a + alpha * b;
      case BinaryOp::Sub: return a - alpha * b;
      case BinaryOp::Mul: return a * b;
      case BinaryOp::Div:
      case BinaryOp::DivTrunc:
      case BinaryOp::DivFloor: return divide(op, a, b);
      case BinaryOp::ReluBackward: return b <= T(0) ? T(0) : a;  // y = NaN passes g, as PyTorch
      case BinaryOp::SigmoidBackward: return a * b * (T(1) - b);
      case BinaryOp::TanhBackward: return a * (T(1) - b * b);
      case BinaryOp::Maximum: return nan_max(a, b);
      case BinaryOp::Minimum: return nan_min(a, b);
      case BinaryOp::Pow:
        if constexpr (std::is_floating_point_v<T>) return std::pow(a, b);
        else return int_pow_any(a, b);
      case BinaryOp::Fmod: return fmod_any(a, b);
      case BinaryOp::Remainder: return remainder_any(a, b);
    }
    return a;
  }
  // The three divisions (kernels/base/scalar_math.h): integers never reach a trapping `/`.
  static T divide(BinaryOp op, T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (op == BinaryOp::DivTrunc) return float_div_trunc(a, b);
      if (op == BinaryOp::DivFloor) return float_div_floor(a, b);
      return a / b;
    } else {
      return op == BinaryOp::DivFloor ? int_div_floor(a, b) : int_div_trunc(a, b);
    }
  }
};

// The switch sits outside the loop so that each loop body is one simple, vectorizable line.
template <typename T, typename F>
void binary_loop(const StridedLoop<3>& L, T* out, const T* a, const T* b, const F& f) {
  for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
    T* o = out + off[0];
    const T* x = a + off[1];
    const T* y = b + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {  // tensor (op) broadcast scalar
      const T yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(x[i * st[1]], y[i * st[2]]);
    }
  });
}

template <typename T>
void binary_typed(BinaryOp op, const StridedLoop<3>& L, T* out, const T* a, const T* b,
                  double alpha) {
  const T al = static_cast<T>(alpha);
  switch (op) {
    case BinaryOp::Add:
      if (alpha == 1.0)
        return binary_loop(L, out, a, b, [](T x, T y) { return wrapping_add(x, y); });
      return binary_loop(L, out, a, b,
                         [al](T x, T y) { return wrapping_add(x, wrapping_mul(al, y)); });
    case BinaryOp::Sub:
      if (alpha == 1.0)
        return binary_loop(L, out, a, b, [](T x, T y) { return wrapping_sub(x, y); });
      return binary_loop(L, out, a, b,
                         [al](T x, T y) { return wrapping_sub(x, wrapping_mul(al, y)); });
    case BinaryOp::Mul:
      return binary_loop(L, out, a, b, [](T x, T y) { return wrapping_mul(x, y); });
    case BinaryOp::Div:
      return binary_loop(L, out, a, b,
                         [](T x, T y) { return BinaryFn<T>::divide(BinaryOp::Div, x, y); });
    case BinaryOp::DivTrunc:
      return binary_loop(L, out, a, b,
                         [](T x, T y) { return BinaryFn<T>::divide(BinaryOp::DivTrunc, x, y); });
    case BinaryOp::DivFloor:
      return binary_loop(L, out, a, b,
                         [](T x, T y) { return BinaryFn<T>::divide(BinaryOp::DivFloor, x, y); });
    // relu's backward, BinaryFn's definition with the op fixed at compile time. Passed
    // BinaryFn<T>{op, al} itself, the loop would run BinaryFn's switch on every element, which
    // also keeps it from vectorizing, on an op that every ReLU network's backward runs over its
    // activations (its share of a training step: bench/RESULTS.md, "Figures that were comments
    // in kernels/").
    // A select, so the vector code gives the same bits. (SigmoidBackward and TanhBackward would
    // gain the same way, but the vector code may multiply the operands in another order, and
    // where two NaNs meet, which of them comes out is not the same.)
    case BinaryOp::ReluBackward:
      return binary_loop(L, out, a, b, [](T g, T y) {
        return BinaryFn<T>{BinaryOp::ReluBackward, T(1)}(g, y);
      });
    // maximum / minimum: a compare and a select per element, with the op fixed at compile time
    // so the contiguous loop can vectorize (the NaN tests are selects too).
    case BinaryOp::Maximum:
      return binary_loop(L, out, a, b, [](T x, T y) { return nan_max(x, y); });
    case BinaryOp::Minimum:
      return binary_loop(L, out, a, b, [](T x, T y) { return nan_min(x, y); });
    default: return binary_loop(L, out, a, b, BinaryFn<T>{op, al});
  }
}

template <typename T>
bool compare_scalar(CompareOp op, T a, T b) {
  switch (op) {
    case CompareOp::Eq: return a == b;
    case CompareOp::Ne: return a != b;
    case CompareOp::Lt: return a < b;
    case CompareOp::Le: return a <= b;
    case CompareOp::Gt: return a > b;
    case CompareOp::Ge: return a >= b;
  }
  return false;
}

}  // namespace

void unary(UnaryOp op, DType dtype, const StridedLoop<2>& L, void* out, const void* in,
           double param) {
  EMBER_DISPATCH_NUMERIC(dtype, "unary", [&] {
    unary_typed<scalar_t>(op, L, static_cast<scalar_t*>(out), static_cast<const scalar_t*>(in),
                          param);
  });
}

void binary(BinaryOp op, DType dtype, const StridedLoop<3>& L, void* out, const void* a,
            const void* b, double alpha) {
  EMBER_DISPATCH_NUMERIC(dtype, "binary", [&] {
    binary_typed<scalar_t>(op, L, static_cast<scalar_t*>(out), static_cast<const scalar_t*>(a),
                           static_cast<const scalar_t*>(b), alpha);
  });
}

void compare(CompareOp op, DType dtype, const StridedLoop<3>& L, bool* out, const void* a,
             const void* b) {
  EMBER_DISPATCH_ALL(dtype, "compare", [&] {
    const auto* x = static_cast<const scalar_t*>(a);
    const auto* y = static_cast<const scalar_t*>(b);
    for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i)
        out[off[0] + i * st[0]] =
            compare_scalar<scalar_t>(op, x[off[1] + i * st[1]], y[off[2] + i * st[2]]);
    });
  });
}

void where(DType dtype, const StridedLoop<4>& L, void* out, const bool* cond, const void* a,
           const void* b) {
  EMBER_DISPATCH_ALL(dtype, "where", [&] {
    auto* o = static_cast<scalar_t*>(out);
    const auto* x = static_cast<const scalar_t*>(a);
    const auto* y = static_cast<const scalar_t*>(b);
    for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i)
        o[off[0] + i * st[0]] =
            cond[off[1] + i * st[1]] ? x[off[2] + i * st[2]] : y[off[3] + i * st[3]];
    });
  });
}

void copy(DType dst_dtype, DType src_dtype, const StridedLoop<2>& L, void* dst, const void* src) {
  EMBER_DISPATCH_ALL(dst_dtype, "copy", [&] {
    using dst_t = scalar_t;
    auto* d = static_cast<dst_t*>(dst);
    EMBER_DISPATCH_ALL(src_dtype, "copy", [&] {
      const auto* s = static_cast<const scalar_t*>(src);
      for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
        if constexpr (std::is_same_v<dst_t, scalar_t>) {
          if (st[0] == 1 && st[1] == 1) {
            std::memcpy(d + off[0], s + off[1], static_cast<size_t>(n) * sizeof(dst_t));
            return;
          }
        }
        // Defined for every value, on every machine, as the CUDA copy converts: a float out of an
        // integer type's range gets x86's answer (convert_value, kernels/base/scalar_math.h).
        for (int64_t i = 0; i < n; ++i)
          d[off[0] + i * st[0]] = convert_value<dst_t>(s[off[1] + i * st[1]]);
      });
    });
  });
}

void fill(DType dtype, const StridedLoop<1>& L, void* out, double value) {
  EMBER_DISPATCH_ALL(dtype, "fill", [&] {
    auto* o = static_cast<scalar_t*>(out);
    const auto v = convert_value<scalar_t>(value);
    for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i) o[off[0] + i * st[0]] = v;
    });
  });
}

// Each value in double, start + i * step with one rounding (std::fma: the same on every CPU and
// in the CUDA kernel, whatever the compiler would contract), then converted by copy(): exactly
// what a tensor made from those host doubles holds.
void arange(DType dtype, void* out, int64_t n, double start, double step) {
  if (n <= 0) return;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = std::fma(static_cast<double>(i), step, start);
  StridedLoop<2> L;
  L.ndim = 1;
  L.numel = n;
  L.shape[0] = n;
  L.strides[0][0] = L.strides[1][0] = 1;
  copy(dtype, kFloat64, L, out, v.data());
}

const ElementwiseKernels elementwise_kernels = {&unary, &binary, &compare, &where,
                                                &copy,  &fill,   &arange};

}  // namespace ember::kernels::cpu::EMBER_CPU_VARIANT
EMBER_CPU_VARIANT_END
