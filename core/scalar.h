// ember/core/scalar.h — a plain C++ number where a tensor could stand: `x * 2`, `x + 0.5`,
// `x.add_(1)`, `pow(x, 3)`.
//
// Like a Python number in PyTorch, a Scalar remembers its kind — bool, integer or floating —
// because the kind decides the dtype of the result (core/promotion.h): an int64 tensor times 2
// stays int64, times 2.5 becomes float32. An integer keeps all 64 bits (a double would round
// values above 2^53), so `x + INT64_MAX` on an int64 tensor is exact.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/base/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  // Implicit from any arithmetic type, so every `double` parameter that became a Scalar still
  // takes what it took before.
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {  // NOLINT(google-explicit-constructor)
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v ? 1 : 0;
      d_ = v ? 1.0 : 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
      d_ = static_cast<double>(v);
    } else {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
      i_ = 0;
    }
  }

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return d_; }
  // The integer value (exact for Int and Bool; a Float is truncated toward zero).
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }

  // The dtype that holds this value exactly: bool, int64 or float64. (As an operand its
  // category counts, not this dtype: a float Scalar with a float32 tensor stays float32.)
  DType dtype() const {
    return kind_ == Kind::Bool ? kBool : kind_ == Kind::Int ? kInt64 : kFloat64;
  }

 private:
  Kind kind_;
  int64_t i_;
  double d_;
};

}  // namespace ember
