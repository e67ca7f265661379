// cross_entropy beyond [N, C]: logits [N, C, d1, ..., dk] with a class per position (as for
// segmentation), checked against the same rows laid out as [N * d1 * ... * dk, C]; and the
// precision of its float32 gradient at large logits. (Reductions, weights and ignore_index of
// the [N, C] form: tests/core/ops/linalg_loss.cpp; PyTorch's values: the fixtures.)
#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "core/ember.h"

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

}  // namespace

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
}
