#include "op_cases.h"

namespace ember::test {

std::vector<OpCase>& op_cases() {
  static std::vector<OpCase> cases;
  return cases;
}

CaseRegistrar::CaseRegistrar(std::vector<OpCase> cases) {
  for (auto& c : cases) op_cases().push_back(std::move(c));
}

OpCase unary_case(const std::string& op, const std::string& label, std::function<Tensor()> input,
                  std::function<Tensor(const Tensor&)> f, bool differentiable) {
  OpCase c{op, label, [input] { return std::vector<Tensor>{input()}; },
           [f](const std::vector<Tensor>& x) { return f(x[0]); }};
  c.differentiable = differentiable;
  return c;
}

OpCase binary_case(const std::string& op, const std::string& label, std::function<Tensor()> a,
                   std::function<Tensor()> b, std::function<Tensor(const Tensor&, const Tensor&)> f) {
  return OpCase{op, label, [a, b] { return std::vector<Tensor>{a(), b()}; },
                [f](const std::vector<Tensor>& x) { return f(x[0], x[1]); }};
}

namespace {
Tensor uniform_f64(const Shape& shape, uint64_t seed, double lo, double hi) {
  manual_seed(seed);
  return rand(shape, kFloat64) * (hi - lo) + lo;
}
}  // namespace

Tensor leaf(const Shape& shape, uint64_t seed, double lo, double hi) {
  return uniform_f64(shape, seed, lo, hi).requires_grad_(true);
}

Tensor leaf_transposed(const Shape& shape, uint64_t seed, double lo, double hi) {
  if (shape.size() < 2) return leaf_strided(shape, seed, lo, hi);
  Shape swapped = shape;
  std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
  Tensor t = uniform_f64(swapped, seed, lo, hi).transpose(-1, -2).detach();
  return t.requires_grad_(true);
}

Tensor leaf_strided(const Shape& shape, uint64_t seed, double lo, double hi) {
  Shape wide = shape.empty() ? Shape{2} : shape;
  wide.back() *= 2;
  Tensor t = uniform_f64(wide, seed, lo, hi);
  t = t.slice(-1, 0, wide.back(), 2).detach();
  if (shape.empty()) t = t.reshape({});
  return t.requires_grad_(true);
}

Tensor leaf_away_from_zero(const Shape& shape, uint64_t seed, bool positive) {
  manual_seed(seed);
  Tensor mag = rand(shape, kFloat64) + 0.5;
  if (positive) return mag.requires_grad_(true);
  Tensor sign = rand(shape, kFloat64);
  Tensor s = (sign.gt(scalar_tensor(0.5, kFloat64))).to(kFloat64) * 2.0 - 1.0;
  return (mag * s).detach().requires_grad_(true);
}

Tensor indices(const Shape& shape, int64_t high, uint64_t seed) {
  manual_seed(seed);
  return randint(0, high, shape);
}

}  // namespace ember::test
