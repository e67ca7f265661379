// ember/kernels/base/scalar_math.h — per-element definitions that the CPU kernels
// (kernels/cpu/elementwise.cpp) and the CUDA kernels (kernels/cuda/elementwise.cu) share, for the
// cases where C++'s own operator is not the answer PyTorch gives:
//
//   integer division   C++ `a / b` traps (SIGFPE, the process dies) for b == 0 and for
//                      INT64_MIN / -1. The op card refuses b == 0 before any kernel runs
//                      (core/ops/div.cpp), and these functions never divide by 0 or -1, so no
//                      input can trap. x / -1 is -x with two's-complement wrap-around, so
//                      INT64_MIN / -1 = INT64_MIN, as INT64_MIN * -1 is in PyTorch (PyTorch
//                      itself dies with SIGFPE there).
//   floor division     Python's `//`: the quotient rounded toward -inf, for integers and floats.
//   integer powers     exact repeated squaring with wrap-around, where std::pow would go through
//                      a double and lose the low bits of int64 results.
//   float -> integer   C++ leaves a value out of the integer type's range (and NaN) undefined,
//                      and machines answer differently: x86's conversion instructions (and so
//                      PyTorch on x86) give the "integer indefinite" INT_MIN of the 32- or 64-bit
//                      register they convert into, keeping the low byte for uint8 (-1.0 -> 255,
//                      300.0 -> 44, 1e10 -> 0), where a GPU and an ARM CPU saturate (-1.0 -> 0).
//                      ember defines x86's answer on every machine and device (convert_value).
//   integer + - *      wrap around modulo 2^bits, as PyTorch's (and the GPU's) do: in C++ a signed
//                      overflow is undefined behaviour (UBSan reports INT64_MAX + 1), so the sums
//                      and products are computed in uint64_t, where wrapping is defined, and
//                      converted back.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/base/host_device.h"

namespace ember::kernels {

// -x with two's-complement wrap-around (no signed-overflow UB for INT64_MIN).
template <typename T>
EMBER_HOST_DEVICE inline T wrapping_neg(T x) {
  if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(x));
  } else {
    return static_cast<T>(-x);  // uint8: promoted to int, negated, wrapped back modulo 256
  }
}

// a + b, a - b, a * b: plain IEEE arithmetic for floats; for integers the two's-complement
// result modulo 2^64, converted back to T (so int64 wraps, and uint8 wraps modulo 256).
template <typename T>
EMBER_HOST_DEVICE inline T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return a + b;
}
template <typename T>
EMBER_HOST_DEVICE inline T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else return a - b;
}
template <typename T>
EMBER_HOST_DEVICE inline T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return a * b;
}

// x as int32, truncated toward zero; out of range or NaN gives INT32_MIN (see the top).
template <typename F>
EMBER_HOST_DEVICE inline int32_t float_to_int32(F x) {
  const double d = static_cast<double>(x);
  const bool fits = d > -2147483649.0 && d < 2147483648.0;  // false for NaN
  return fits ? static_cast<int32_t>(d) : INT32_MIN;
}

// x as int64, truncated toward zero; out of range or NaN gives INT64_MIN (see the top).
template <typename F>
EMBER_HOST_DEVICE inline int64_t float_to_int64(F x) {
  const double d = static_cast<double>(x);
  const bool fits = d >= -9223372036854775808.0 && d < 9223372036854775808.0;  // false for NaN
  return fits ? static_cast<int64_t>(d) : INT64_MIN;
}

// x as uint8: converted to int32 as above and cut to its low byte, as x86 converts (see the top).
template <typename F>
EMBER_HOST_DEVICE inline uint8_t float_to_uint8(F x) {
  return static_cast<uint8_t>(static_cast<uint32_t>(float_to_int32(x)));
}

// One element from type From to type To, as every ember kernel converts values (copy, .to(),
// fill, arange, integer results computed in double): a plain static_cast, except that a float
// goes to an integer type as defined above, and anything goes to bool as `x != 0` (so NaN is
// true).
template <typename To, typename From>
EMBER_HOST_DEVICE inline To convert_value(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_same_v<To, uint8_t>) {
    return float_to_uint8(x);
  } else if constexpr (std::is_floating_point_v<From> && std::is_same_v<To, int32_t>) {
    return float_to_int32(x);
  } else if constexpr (std::is_floating_point_v<From> && std::is_same_v<To, int64_t>) {
    return float_to_int64(x);
  } else {
    return static_cast<To>(x);
  }
}

// a / b rounded toward zero (C's integer `/`). b == 0 gives 0 (the op card refuses it first).
template <typename T>
EMBER_HOST_DEVICE inline T int_div_trunc(T a, T b) {
  if (b == T(0)) return T(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrapping_neg(a);
  }
  return static_cast<T>(a / b);
}

// a / b rounded toward -inf (Python's `//`): one less than the truncated quotient when the
// division is inexact and the signs differ.
template <typename T>
EMBER_HOST_DEVICE inline T int_div_floor(T a, T b) {
  const T q = int_div_trunc(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (b != T(0) && b != T(-1) && static_cast<T>(a - q * b) != T(0) && ((a < T(0)) != (b < T(0))))
      return static_cast<T>(q - T(1));
  }
  return q;
}

// Float helpers with explicit float and double overloads (the C names exist on the host and,
// as CUDA's math API, on the device).
EMBER_HOST_DEVICE inline float fmod_t(float a, float b) { return fmodf(a, b); }
EMBER_HOST_DEVICE inline double fmod_t(double a, double b) { return fmod(a, b); }
EMBER_HOST_DEVICE inline float floor_t(float a) { return floorf(a); }
EMBER_HOST_DEVICE inline double floor_t(double a) { return floor(a); }
EMBER_HOST_DEVICE inline float trunc_t(float a) { return truncf(a); }
EMBER_HOST_DEVICE inline double trunc_t(double a) { return trunc(a); }
EMBER_HOST_DEVICE inline float copysign_t(float a, float b) { return copysignf(a, b); }
EMBER_HOST_DEVICE inline double copysign_t(double a, double b) { return copysign(a, b); }

// trunc(a / b) for floats: the IEEE quotient rounded toward zero (inf and nan pass through).
template <typename T>
EMBER_HOST_DEVICE inline T float_div_trunc(T a, T b) {
  return trunc_t(a / b);
}

// floor(a / b) for floats, as Python's float `//` computes it. Rounding a / b first and then
// flooring can be off by one when the quotient is just below an integer, so the quotient is
// built from the exact remainder instead: m = fmod(a, b) (exact), (a - m) / b is then an integer
// up to one rounding; it is moved down by one when m and b have opposite signs, and snapped to
// the nearest integer. b == 0 gives the IEEE a / b (+-inf or nan), as in PyTorch; a zero
// quotient takes the sign of a / b.
template <typename T>
EMBER_HOST_DEVICE inline T float_div_floor(T a, T b) {
  if (b == T(0)) return a / b;
  const T m = fmod_t(a, b);
  T q = (a - m) / b;
  if (m != T(0) && ((b < T(0)) != (m < T(0)))) q -= T(1);
  if (q == T(0)) return copysign_t(T(0), a / b);
  T f = floor_t(q);
  if (q - f > T(0.5)) f += T(1);
  return f;
}

// base ^ exp for integers by repeated squaring, wrapping modulo 2^bits like repeated `*`.
// exp >= 0 (the op card refuses negative integer exponents).
template <typename T>
EMBER_HOST_DEVICE inline T int_pow(T base, int64_t exp) {
  using U = std::conditional_t<std::is_signed_v<T>, std::make_unsigned_t<T>, T>;
  U result = 1, b = static_cast<U>(base);
  while (exp > 0) {
    if (exp & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    exp >>= 1;
  }
  return static_cast<T>(result);
}

// maximum(a, b) / minimum(a, b), elementwise (torch.maximum / torch.minimum; clamp uses them).
// std::max would drop a NaN (NaN < x and x < NaN are both false, so it returns its first
// operand whichever that is); PyTorch's rule is that a NaN always comes out. A NaN in either
// operand therefore wins. Otherwise a tie returns a: for -0 against +0 that is the sign of a,
// which is what PyTorch's element-at-a-time loop gives (its vector loop returns b instead, so
// PyTorch itself is not consistent there). `a != a` is the portable NaN test: false for
// integers, so they compile to a plain compare and select.
template <typename T>
EMBER_HOST_DEVICE inline T nan_max(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}
template <typename T>
EMBER_HOST_DEVICE inline T nan_min(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return b < a ? b : a;
}

// ---- pow(tensor, tensor), fmod, remainder (issue 27) -------------------------------------------

// base ^ exp for integers when the exponent is itself an element (pow(tensor, tensor)), as
// PyTorch's powi: a negative exponent is no error there (only a negative Scalar exponent is,
// core/ops/pow.cpp); the exact answer 1 / base^|exp| truncated toward zero is 1 for base 1,
// +-1 for base -1 (by the parity of exp) and 0 for every other base (0 included).
template <typename T>
EMBER_HOST_DEVICE inline T int_pow_any(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < T(0)) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exp % T(2)) != T(0) ? T(-1) : T(1);
      return T(0);
    }
  }
  return int_pow(base, static_cast<int64_t>(exp));
}

// fmod(a, b): the remainder of the quotient truncated toward zero, C's fmod and `%`: it has the
// sign of the dividend a (fmod(-5, 3) = -2). For floats std::fmod is exact (no rounding at all)
// and gives NaN for b == 0 or an infinite a. For integers b == 0 gives 0 (the op card refuses a
// zero divisor first, as PyTorch raises "ZeroDivisionError"); b == -1 gives 0 without asking the
// CPU, where INT64_MIN % -1 traps.
template <typename T>
EMBER_HOST_DEVICE inline T fmod_any(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return fmod_t(a, b);
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return T(0);
    }
    return static_cast<T>(a % b);
  }
}

// remainder(a, b): Python's `a % b`, the remainder of the quotient rounded toward -inf: it has
// the sign of the divisor b (remainder(-5, 3) = 1). Computed as PyTorch 1.13 computes it, from
// the truncated remainder m = fmod(a, b): when m is nonzero and its sign differs from b's, b is
// added (remainder(-1e-300, 1e300) is therefore 1e300, the rounded -1e-300 + 1e300). A zero m
// keeps the sign fmod gave it (remainder(-0.0, 2) = -0.0).
template <typename T>
EMBER_HOST_DEVICE inline T remainder_any(T a, T b) {
  const T m = fmod_any(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (m != T(0) && ((m < T(0)) != (b < T(0)))) return static_cast<T>(m + b);
  }
  return m;
}

}  // namespace ember::kernels
