// C++ operators for tensors, so that `w * x + b` reads as it does in PyTorch. Each one is a
// call to an op card; a C++ number is a Scalar, which promotes as a number (x * 2 keeps an
// int64 tensor int64, x * 2.5 makes it float32: core/promotion.h).
#include "core/ops/common.h"

namespace ember {

using ops::wrap;

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& s) { return add(a, s); }
Tensor operator-(const Tensor& a, const Scalar& s) { return sub(a, s); }
Tensor operator*(const Tensor& a, const Scalar& s) { return mul(a, s); }
Tensor operator/(const Tensor& a, const Scalar& s) { return div(a, s); }
Tensor operator+(const Scalar& s, const Tensor& a) { return add(wrap(s, a), a); }
Tensor operator-(const Scalar& s, const Tensor& a) {
  EMBER_CHECK(!s.is_bool(), "sub: subtraction with a bool is not supported (as in PyTorch)");
  return sub(wrap(s, a), a);
}
Tensor operator*(const Scalar& s, const Tensor& a) { return mul(wrap(s, a), a); }
Tensor operator/(const Scalar& s, const Tensor& a) {
  return div(wrapped_scalar(s, ops::float_result(result_type(a, s)), a.device()), a);
}
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace ember
