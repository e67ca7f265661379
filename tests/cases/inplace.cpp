// Op cases for the in-place updates: add_, sub_, mul_, div_, copy_, fill_, zero_. Forward only
// (an in-place update has no backward); each case updates a clone, so the inputs stay as built,
// and covers a broadcast operand, a strided or transposed target, or full overlap (x.op_(x)).
#include "op_cases.h"

namespace ember::test {
namespace {

using Inputs = std::vector<Tensor>;

// x.clone() updated by `update`, without recording (the inputs require grad).
OpCase inplace_case(const std::string& op, const std::string& label, std::function<Inputs()> in,
                    std::function<void(Tensor&, const Inputs&)> update) {
  return OpCase{op, label, std::move(in),
                [update](const Inputs& x) {
                  NoGradGuard no_grad;
                  Tensor t = x[0].detach().clone();
                  update(t, x);
                  return t;
                },
                false};
}

// A strided view into a fresh buffer, updated in place (the target itself not contiguous).
Tensor strided_target(const Tensor& like) {
  NoGradGuard no_grad;
  Shape wide = like.shape();
  wide.back() *= 2;
  Tensor buf = zeros(wide, like.dtype());
  Tensor t = buf.slice(-1, 0, wide.back(), 2);
  t.copy_(like.detach());
  return t;
}

EMBER_OP_CASES({
    inplace_case("add_", "[3, 4] += [4] * 2.5", [] { return Inputs{leaf({3, 4}, 301), leaf({4}, 302)}; },
                 [](Tensor& t, const Inputs& x) { t.add_(x[1], 2.5); }),
    inplace_case("add_", "strided target += scalar", [] { return Inputs{leaf({2, 5}, 303)}; },
                 [](Tensor& t, const Inputs&) {
                   Tensor s = strided_target(t);
                   s.add_(0.75);
                   t.copy_(s);
                 }),
    inplace_case("add_", "x += x (full overlap)", [] { return Inputs{leaf({7}, 304)}; },
                 [](Tensor& t, const Inputs&) { t.add_(t); }),
    inplace_case("sub_", "transposed [4, 3] -= [4, 1]",
                 [] { return Inputs{leaf_transposed({4, 3}, 305), leaf({4, 1}, 306)}; },
                 [](Tensor& t, const Inputs& x) {
                   Tensor tt = t.t().contiguous().t();  // a transposed target
                   tt.sub_(x[1]);
                   t.copy_(tt);
                 }),
    inplace_case("sub_", "int64 [6] -= 3", [] { return Inputs{indices({6}, 9, 307)}; },
                 [](Tensor& t, const Inputs&) { t.sub_(3); }),
    inplace_case("mul_", "[2, 3, 4] *= strided [3, 4]",
                 [] { return Inputs{leaf({2, 3, 4}, 308), leaf_strided({3, 4}, 309)}; },
                 [](Tensor& t, const Inputs& x) { t.mul_(x[1]); }),
    inplace_case("mul_", "x *= x (full overlap)", [] { return Inputs{leaf({3, 3}, 310)}; },
                 [](Tensor& t, const Inputs&) { t.mul_(t); }),
    inplace_case("div_", "[5, 2] /= [2] away from zero",
                 [] { return Inputs{leaf({5, 2}, 311), leaf_away_from_zero({2}, 312)}; },
                 [](Tensor& t, const Inputs& x) { t.div_(x[1]); }),
    inplace_case("div_", "int64 [8] floor-divided by -3", [] { return Inputs{indices({8}, 21, 313) - 10}; },
                 [](Tensor& t, const Inputs&) { t.div_(-3, "floor"); }),
    inplace_case("copy_", "[3, 4] <- transposed [3, 4]",
                 [] { return Inputs{leaf({3, 4}, 314), leaf_transposed({3, 4}, 315)}; },
                 [](Tensor& t, const Inputs& x) { t.copy_(x[1]); }),
    inplace_case("copy_", "float64 [2, 3] <- int64 [3] broadcast",
                 [] { return Inputs{leaf({2, 3}, 316), indices({3}, 50, 317)}; },
                 [](Tensor& t, const Inputs& x) { t.copy_(x[1]); }),
    inplace_case("fill_", "strided target filled with -1.5", [] { return Inputs{leaf({4, 3}, 318)}; },
                 [](Tensor& t, const Inputs&) {
                   Tensor s = strided_target(t);
                   s.fill_(-1.5);
                   t.copy_(s);
                 }),
    inplace_case("fill_", "int64 [5] filled with 2^62 + 1 (exact)", [] { return Inputs{indices({5}, 9, 319)}; },
                 [](Tensor& t, const Inputs&) { t.fill_((int64_t{1} << 62) + 1); }),
    inplace_case("zero_", "[3, 5] zeroed", [] { return Inputs{leaf({3, 5}, 320)}; },
                 [](Tensor& t, const Inputs&) { t.zero_(); }),
});

}  // namespace
}  // namespace ember::test
