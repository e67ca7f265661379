// C++ operators for tensors, so that `w * x + b` reads as it does in PyTorch. Each one is a
// call to an op card; a scalar becomes a 0-d tensor of the other operand's dtype and device.
#include "core/ops/common.h"

namespace ember {

using ops::scalar_like;

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double s) { return add(a, scalar_like(s, a)); }
Tensor operator-(const Tensor& a, double s) { return sub(a, scalar_like(s, a)); }
Tensor operator*(const Tensor& a, double s) { return mul(a, scalar_like(s, a)); }
Tensor operator/(const Tensor& a, double s) { return div(a, scalar_like(s, a)); }
Tensor operator+(double s, const Tensor& a) { return add(scalar_like(s, a), a); }
Tensor operator-(double s, const Tensor& a) { return sub(scalar_like(s, a), a); }
Tensor operator*(double s, const Tensor& a) { return mul(scalar_like(s, a), a); }
Tensor operator/(double s, const Tensor& a) { return div(scalar_like(s, a), a); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace ember
