// cross_entropy beyond [N, C]: logits [N, C, d1, ..., dk] with a class per position (as for
// segmentation), checked against the same rows laid out as [N * d1 * ... * dk, C]; and the
// precision of its float32 gradient at large logits. (Reductions, weights and ignore_index of
// the [N, C] form: tests/core/ops/linalg_loss.cpp; PyTorch's values: the fixtures.)
#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "nn/nn.h"

using namespace ember;

namespace {

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

void check_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> a = vals(got), b = vals(want);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    if (std::isnan(b[i])) CHECK(std::isnan(a[i]));
    else CHECK(a[i] == Approx(b[i]).margin(tol).epsilon(tol));
  }
}

// logits [N, C, d...] -> [N * d..., C]: the class dim moved last and the rest flattened.
Tensor rows_of(const Tensor& logits) {
  Shape perm = {0};
  for (int64_t d = 2; d < logits.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return logits.permute(perm).reshape({-1, logits.size(1)});
}

// N-d cross_entropy and its gradient against the 2-d one on the same rows, on `device`.
void check_nd_against_rows(Device device) {
  manual_seed(7);
  const Shape shape = {2, 4, 3, 5};  // N = 2, C = 4, positions 3 x 5
  const Tensor base = (randn(shape, kFloat64) * 2.0).to(device);
  Tensor target = randint(0, 4, {2, 3, 5}).to(device);
  target = masked_fill(target, randint(0, 5, {2, 3, 5}).to(device).eq(0), -100);  // some ignored
  const Tensor weight = tensor({0.5, 2.0, 1.0, 1.5}, kFloat64).to(device);
  for (const Reduction r : {Reduction::None, Reduction::Sum, Reduction::Mean}) {
    for (const bool weighted : {false, true}) {
      INFO("reduction " << static_cast<int>(r) << (weighted ? ", weighted" : ""));
      const Tensor w = weighted ? weight : Tensor();
      const Tensor x1 = base.detach().requires_grad_(), x2 = base.detach().requires_grad_();
      const Tensor nd = cross_entropy(x1, target, w, r);
      const Tensor flat = cross_entropy(rows_of(x2), target.reshape({-1}), w, r);
      if (r == Reduction::None) {
        CHECK(nd.shape() == Shape{2, 3, 5});
        check_close(nd.cpu(), flat.reshape({2, 3, 5}).cpu(), 1e-12);
      } else {
        check_close(nd.cpu(), flat.cpu(), 1e-12);
      }
      manual_seed(3);
      const Tensor g = randn(nd.shape(), kFloat64).to(device);
      nd.backward(g);
      flat.backward(r == Reduction::None ? g.reshape({-1}) : g);
      check_close(x1.grad().cpu(), x2.grad().cpu(), 1e-12);
    }
  }
}

// The example: float32 logits {1e4, 1e4, 0}, target 1. The gradient of the loss is
// softmax - onehot = {0.5, -0.5, 0}; it came out {0.49989, -0.50011, 0} because the backward
// used the log-sum-exp rounded to float32 (1e4 + log 2 is off by up to 5e-4 in float32).
void check_large_logits(Device device) {
  const Tensor x = tensor({1e4, 1e4, 0.0, -3e4, -3e4 + 2.0, -3e4 + 1.0}, {2, 3}).to(device).requires_grad_();
  const Tensor t = tensor({1, 2}, kInt64).to(device);
  const Tensor loss = cross_entropy(x, t, Tensor(), Reduction::Sum);
  loss.backward();
  const std::vector<double> g = vals(x.grad().cpu());
  CHECK(g[0] == Approx(0.5).epsilon(1e-6));
  CHECK(g[1] == Approx(-0.5).epsilon(1e-6));
  CHECK(g[2] == 0.0);
  // Row 2: logits {0, 2, 1} shifted by -3e4 (exact in float32): softmax of {0, 2, 1}.
  const double z = 1 + std::exp(2.0) + std::exp(1.0);
  CHECK(g[3] == Approx(1 / z).epsilon(1e-6));
  CHECK(g[4] == Approx(std::exp(2.0) / z).epsilon(1e-6));
  CHECK(g[5] == Approx(std::exp(1.0) / z - 1).epsilon(1e-6));
  CHECK(loss.item() == Approx(std::log(2.0) + std::log(z) - 1.0).epsilon(1e-6));
}

// label_smoothing with class indices against probability targets: a row's smoothed target is
// q = (1 - eps) onehot(t) + eps / C (zero for an ignored row), and for None and Sum the two forms
// are one formula, values and gradients alike. Mean divides both parts by the weight sum (the
// count) of the rows kept, as PyTorch 1.13 does (probability targets divide by all rows);
// checked from the None losses at eps = 0 and eps = 1.
void check_smoothing_against_probabilities(Device device) {
  manual_seed(11);
  const int64_t N = 7, C = 5;
  const Tensor base = (randn({N, C}, kFloat64) * 2.0).to(device);
  const Tensor target = tensor({0, 4, -100, 2, 2, -100, 1}, kInt64).to(device);
  const Tensor kept = target.ne(-100);
  const Tensor weight = tensor({0.5, 2.0, 1.0, 1.5, 0.75}, kFloat64).to(device);
  for (const double eps : {0.0, 0.1, 0.6, 1.0}) {
    const Tensor hot =
        nn::functional::one_hot(masked_fill(target, logical_not(kept), 0), C, kFloat64).to(device);
    const Tensor q = (hot * (1.0 - eps) + eps / C) * kept.unsqueeze(1);
    for (const bool weighted : {false, true}) {
      const Tensor w = weighted ? weight : Tensor();
      for (const Reduction r : {Reduction::None, Reduction::Sum}) {
        INFO("eps " << eps << (weighted ? ", weighted" : "") << ", reduction "
                    << static_cast<int>(r));
        const Tensor x1 = base.detach().requires_grad_(), x2 = base.detach().requires_grad_();
        const Tensor fused = cross_entropy(x1, target, w, r, -100, eps);
        const Tensor composed = cross_entropy(x2, q, w, r);
        check_close(fused.cpu(), composed.cpu(), 1e-12);
        manual_seed(5);
        const Tensor g = randn(fused.shape(), kFloat64).to(device);
        fused.backward(g);
        composed.backward(g);
        check_close(x1.grad().cpu(), x2.grad().cpu(), 1e-12);
      }
      INFO("eps " << eps << (weighted ? ", weighted" : "") << ", mean");
      const Tensor nll = cross_entropy(base, target, w, Reduction::None, -100, 0.0);
      const Tensor smooth = cross_entropy(base, target, w, Reduction::None, -100, 1.0);
      const double kept_weight =
          weighted
              ? sum(weight.index_select(0, masked_fill(target, logical_not(kept), 0)) * kept).item()
              : sum(kept).item();
      const double want = ((1.0 - eps) * sum(nll).item() + eps * sum(smooth).item()) / kept_weight;
      CHECK(cross_entropy(base, target, w, Reduction::Mean, -100, eps).item() ==
            Approx(want).epsilon(1e-12));
    }
  }
}

}  // namespace

TEST_CASE("cross_entropy: label_smoothing agrees with smoothed probability targets",
          "[cross_entropy]") {
  check_smoothing_against_probabilities(Device::cpu());
}

TEST_CASE("cross_entropy: label_smoothing and probability targets, hand-computed",
          "[cross_entropy]") {
  // One row, logits {0, ln 2, ln 5} (softmax {1/8, 2/8, 5/8}), target 2, eps 0.3, C = 3:
  // loss = 0.7 * -ln(5/8) + 0.1 * -(ln(1/8) + ln(2/8) + ln(5/8)).
  const Tensor x = tensor({0.0, std::log(2.0), std::log(5.0)}, {1, 3}, kFloat64).requires_grad_();
  const Tensor loss = cross_entropy(x, tensor({2}, kInt64), Tensor(), Reduction::Mean, -100, 0.3);
  const double want = -0.7 * std::log(5.0 / 8) - 0.1 * std::log(10.0 / 512);
  CHECK(loss.item() == Approx(want).epsilon(1e-14));
  loss.backward();  // softmax - smoothed target {0.1, 0.1, 0.8}
  const std::vector<double> g = vals(x.grad());
  CHECK(g[0] == Approx(0.125 - 0.1).epsilon(1e-14));
  CHECK(g[1] == Approx(0.25 - 0.1).epsilon(1e-14));
  CHECK(g[2] == Approx(0.625 - 0.8).epsilon(1e-14));

  // Probability targets: the gradient of the target is -log_softmax (times the weight).
  const Tensor p = tensor({0.2, 0.3, 0.5}, {1, 3}, kFloat64).requires_grad_();
  const Tensor y = x.detach().requires_grad_();
  cross_entropy(y, p, tensor({1.0, 2.0, 4.0}, kFloat64), Reduction::Sum).backward();
  const std::vector<double> gp = vals(p.grad());
  CHECK(gp[0] == Approx(std::log(8.0)).epsilon(1e-14));
  CHECK(gp[1] == Approx(-2.0 * std::log(2.0 / 8)).epsilon(1e-14));
  CHECK(gp[2] == Approx(-4.0 * std::log(5.0 / 8)).epsilon(1e-14));

  // The module carries the option.
  nn::CrossEntropyLoss criterion(Tensor(), Reduction::Mean, -100, 0.3);
  CHECK(criterion.forward(x.detach(), tensor({2}, kInt64)).item() == Approx(want).epsilon(1e-14));
  CHECK_THROWS_WITH(nn::CrossEntropyLoss(Tensor(), Reduction::Mean, -100, 1.5),
                    Catch::Matchers::Contains("label_smoothing"));
  CHECK_THROWS_WITH(cross_entropy(x, tensor({2}, kInt64), Tensor(), Reduction::Mean, -100, -0.1),
                    Catch::Matchers::Contains("between 0.0 and 1.0"));
  CHECK_THROWS_WITH(cross_entropy(x, p.detach(), Tensor(), Reduction::Mean, 1),
                    Catch::Matchers::Contains("ignore_index"));
  CHECK_THROWS_WITH(cross_entropy(x, zeros({1, 4}, kFloat64)),
                    Catch::Matchers::Contains("class probabilities"));
}

TEST_CASE("cross_entropy: logits [N, C, d1, d2] are the rows of [N * d1 * d2, C]", "[cross_entropy]") {
  check_nd_against_rows(Device::cpu());
}

TEST_CASE("cross_entropy: the float32 gradient keeps its precision at large logits", "[cross_entropy]") {
  check_large_logits(Device::cpu());
}

TEST_CASE("cross_entropy on cuda: N-d logits and large float32 logits", "[cuda][cross_entropy]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  check_nd_against_rows(Device::cuda(0));
  check_large_logits(Device::cuda(0));
  check_smoothing_against_probabilities(Device::cuda(0));
}
