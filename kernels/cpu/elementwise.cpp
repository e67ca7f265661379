#include "kernels/cpu/elementwise.h"

#include <cmath>
#include <cstring>

#include <Eigen/Core>

#include "kernels/cpu/parallel.h"

namespace ember::kernels::cpu {

namespace {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Scalar definition of each unary op; the strided path and integer dtypes use these.
template <typename T>
T unary_scalar(UnaryOp op, T x, double p) {
  switch (op) {
    case UnaryOp::Neg: return -x;
    case UnaryOp::Exp: return static_cast<T>(std::exp(x));
    case UnaryOp::Log: return static_cast<T>(std::log(x));
    case UnaryOp::Sqrt: return static_cast<T>(std::sqrt(x));
    case UnaryOp::Abs: return x < T(0) ? -x : x;
    case UnaryOp::Sign: return static_cast<T>((T(0) < x) - (x < T(0)));
    case UnaryOp::Relu: return x > T(0) ? x : T(0);
    case UnaryOp::Sigmoid: return static_cast<T>(1 / (1 + std::exp(-x)));
    case UnaryOp::Tanh: return static_cast<T>(std::tanh(x));
    case UnaryOp::Pow: return static_cast<T>(std::pow(x, static_cast<T>(p)));
    case UnaryOp::Square: return x * x;
  }
  return x;
}

// Contiguous float path: the same math as Eigen array expressions, which vectorize.
template <typename T>
void unary_contiguous(UnaryOp op, T* out, const T* in, int64_t n, double p) {
  ArrayMap<T> o(out, n);
  ConstArrayMap<T> x(in, n);
  switch (op) {
    case UnaryOp::Neg: o = -x; break;
    case UnaryOp::Exp: o = x.exp(); break;
    case UnaryOp::Log: o = x.log(); break;
    case UnaryOp::Sqrt: o = x.sqrt(); break;
    case UnaryOp::Abs: o = x.abs(); break;
    case UnaryOp::Sign: o = x.sign(); break;
    case UnaryOp::Relu: o = x.max(T(0)); break;
    case UnaryOp::Sigmoid: o = T(1) / (T(1) + (-x).exp()); break;
    case UnaryOp::Tanh: o = x.tanh(); break;
    case UnaryOp::Pow:
      if (p == 2.0) o = x.square();
      else if (p == 0.5) o = x.sqrt();
      else o = x.pow(static_cast<T>(p));
      break;
    case UnaryOp::Square: o = x.square(); break;
  }
}

template <typename T>
void unary_typed(UnaryOp op, const StridedLoop<2>& L, T* out, const T* in, double p) {
  for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
    T* o = out + off[0];
    const T* x = in + off[1];
    if constexpr (std::is_floating_point_v<T>) {
      if (st[0] == 1 && st[1] == 1) {
        unary_contiguous<T>(op, o, x, n, p);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) o[i * st[0]] = unary_scalar<T>(op, x[i * st[1]], p);
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
      case BinaryOp::Div: return a / b;
      case BinaryOp::ReluBackward: return b > T(0) ? a : T(0);
      case BinaryOp::SigmoidBackward: return a * b * (T(1) - b);
      case BinaryOp::TanhBackward: return a * (T(1) - b * b);
    }
    return a;
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
      if (alpha == 1.0) return binary_loop(L, out, a, b, [](T x, T y) { return x + y; });
      return binary_loop(L, out, a, b, [al](T x, T y) { return x + al * y; });
    case BinaryOp::Sub:
      if (alpha == 1.0) return binary_loop(L, out, a, b, [](T x, T y) { return x - y; });
      return binary_loop(L, out, a, b, [al](T x, T y) { return x - al * y; });
    case BinaryOp::Mul: return binary_loop(L, out, a, b, [](T x, T y) { return x * y; });
    case BinaryOp::Div: return binary_loop(L, out, a, b, [](T x, T y) { return x / y; });
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
        out[off[0] + i * st[0]] = compare_scalar<scalar_t>(op, x[off[1] + i * st[1]], y[off[2] + i * st[2]]);
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
        o[off[0] + i * st[0]] = cond[off[1] + i * st[1]] ? x[off[2] + i * st[2]] : y[off[3] + i * st[3]];
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
        for (int64_t i = 0; i < n; ++i) d[off[0] + i * st[0]] = static_cast<dst_t>(s[off[1] + i * st[1]]);
      });
    });
  });
}

void fill(DType dtype, const StridedLoop<1>& L, void* out, double value) {
  EMBER_DISPATCH_ALL(dtype, "fill", [&] {
    auto* o = static_cast<scalar_t*>(out);
    const auto v = static_cast<scalar_t>(value);
    for_each_run(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i) o[off[0] + i * st[0]] = v;
    });
  });
}

}  // namespace ember::kernels::cpu
