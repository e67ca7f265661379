#include "core/promotion.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/autograd/grad_mode.h"
#include "core/backend.h"
#include "core/cuda.h"
#include "core/iter.h"
#include "kernels/elementwise.h"

namespace ember {

int dtype_category(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::UInt8:
    case DType::Int32:
    case DType::Int64: return 1;
    case DType::Float32:
    case DType::Float64: return 2;
  }
  return 0;
}

namespace {
// Position in the lattice bool < uint8 < int32 < int64 < float32 < float64.
int rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::UInt8: return 1;
    case DType::Int32: return 2;
    case DType::Int64: return 3;
    case DType::Float32: return 4;
    case DType::Float64: return 5;
  }
  return 0;
}

// The three tiers of rule 2, each the promotion of the operands seen in it so far.
struct Tiers {
  bool has_dim = false, has_zero = false, has_number = false;
  DType dim = kBool, zero = kBool, number = kBool;

  void add(DType t, bool dimensioned, bool is_number) {
    if (is_number) {
      // A number brings its category, in that category's default dtype.
      const DType as = dtype_category(t) == 2 ? default_dtype() : t;
      number = has_number ? promote_types(number, as) : as;
      has_number = true;
    } else if (dimensioned) {
      dim = has_dim ? promote_types(dim, t) : t;
      has_dim = true;
    } else {
      zero = has_zero ? promote_types(zero, t) : t;
      has_zero = true;
    }
  }

  // A lower tier counts only when its category is above the higher tier's.
  static void fold(bool& has_hi, DType& hi, bool has_lo, DType lo) {
    if (!has_lo) return;
    if (!has_hi) {
      hi = lo;
      has_hi = true;
    } else if (dtype_category(lo) > dtype_category(hi)) {
      hi = promote_types(hi, lo);
    }
  }

  DType result() const {
    bool has = has_zero;
    DType r = zero;
    fold(has, r, has_number, number);
    bool has_d = has_dim;
    DType d = dim;
    fold(has_d, d, has, r);
    return d;
  }

  void add(const Tensor& t) {
    add(t.dtype(), t.dim() > 0, t.impl()->wrapped_number);
  }
};
}  // namespace

DType promote_types(DType a, DType b) { return rank(a) >= rank(b) ? a : b; }

bool can_cast(DType from, DType to) {
  if (dtype_category(from) == 2 && dtype_category(to) < 2) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

DType result_type(const Tensor& a, const Tensor& b) {
  Tiers s;
  s.add(a);
  s.add(b);
  return s.result();
}

DType result_type(const Tensor& a, const Scalar& b) {
  Tiers s;
  s.add(a);
  s.add(b.dtype(), false, true);
  return s.result();
}

DType result_type(const Scalar& a, const Tensor& b) { return result_type(b, a); }

DType result_type(const std::vector<Tensor>& tensors) {
  EMBER_CHECK(!tensors.empty(), "result_type: expected at least one tensor");
  Tiers s;
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.defined(), "result_type: an operand is an undefined tensor");
    s.add(t);
  }
  return s.result();
}

bool scalar_fits(const Scalar& s, DType dtype) {
  if (dtype == kBool || s.is_bool()) return true;
  if (s.is_integral()) {
    const int64_t v = s.to_int();
    if (dtype == kUInt8) return v <= 255 && v >= -255;
    if (dtype == kInt32) return v <= INT32_MAX && v >= INT32_MIN;  // a signed type: no wrap
    return true;
  }
  const double f = s.to_double();
  switch (dtype) {
    case DType::Float64: return true;
    case DType::Float32: return std::isinf(f) || std::isnan(f) || std::fabs(f) <= 3.4028234663852886e38;
    case DType::UInt8: return f >= 0.0 && f <= 255.0;  // false for NaN and +-inf
    case DType::Int32: return f >= -2147483648.0 && f <= 2147483647.0;
    case DType::Int64: return f >= -9223372036854775808.0 && f <= 9223372036854775807.0;
    case DType::Bool: return true;
  }
  return true;
}

void check_scalar_fits(const char* op, const Scalar& s, DType dtype) {
  if (scalar_fits(s, dtype)) return;
  throw ValueError(detail::concat(op, ": the value ",
                                  s.is_floating() ? detail::concat(s.to_double()) : detail::concat(s.to_int()),
                                  " does not fit a ", dtype, " tensor (as in PyTorch): convert "
                                  "the tensor to a wider dtype first"));
}

Tensor cast_for_compute(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  NoGradGuard no_grad;
  return t.detach().to(dtype);
}

Tensor wrapped_scalar(const Scalar& s, DType dtype, Device device) {
  constexpr int64_t kExactInDouble = int64_t{1} << 53;
  const int64_t lo = dtype == kInt32 ? INT32_MIN : -kExactInDouble;
  const int64_t hi = dtype == kInt32 ? INT32_MAX : kExactInDouble;
  const bool exact_as_double = !s.is_integral() || (s.to_int() <= hi && s.to_int() >= lo);
  Tensor t;
  if (!device.is_cpu() && exact_as_double) {
    // One fill kernel, queued without waiting. It converts as the host branch does (1000 into
    // uint8 is 232), and unlike fill_ it accepts values the dtype cannot hold (x + 1000 on a
    // uint8 tensor wraps, as in PyTorch). An integer beyond int32's range for an int32 tensor
    // goes through the host, which wraps it as PyTorch does (x + 2^32 is x); the fill kernel's
    // double -> int32 conversion would give INT32_MIN, the answer for out-of-range floats.
    t = empty({}, TensorOptions(dtype).device(device));
    KernelsOn(t)->elementwise.fill(dtype, make_loop<1>({}, {&t}, "scalar"), t.raw_data(),
                                   s.to_double());
  } else {
    Tensor host = empty({}, TensorOptions(dtype));
    EMBER_DISPATCH_ALL(dtype, "scalar", [&] {
      auto* p = static_cast<scalar_t*>(host.raw_data());
      if constexpr (std::is_same_v<scalar_t, bool>) *p = s.is_floating() ? s.to_double() != 0.0 : s.to_int() != 0;
      else if (s.is_floating()) *p = static_cast<scalar_t>(s.to_double());
      else *p = static_cast<scalar_t>(s.to_int());  // integers wrap into uint8, as in PyTorch
    });
    t = device.is_cpu() ? host : host.to(device);
  }
  t.impl()->wrapped_number = true;
  return t;
}

Tensor wrapped_scalar_for(const Scalar& s, const Tensor& t) {
  return wrapped_scalar(s, result_type(t, s), t.device());
}

}  // namespace ember
