// Tensor::register_post_accumulate_grad_hook: the autograd hook DistributedDataParallel
// starts its all_reduces from.
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

TEST_CASE("grad hooks: a post-accumulate hook sees the complete .grad, once per backward", "[autograd][hooks]") {
  Tensor w = from_vector<float>({1, 2, 3}, {3}).requires_grad_();
  std::vector<std::vector<float>> seen;
  int calls = 0;
  w.register_post_accumulate_grad_hook([&](const Tensor& p) {
    ++calls;
    CHECK(p.is_same(w));
    seen.push_back(p.grad().to_vector<float>());
  });
  // w is used twice: both contributions are in .grad before the hook runs (d/dw of
  // sum(w*w + 3w) = 2w + 3).
  ((w * w).sum() + (w * 3.0).sum()).backward();
  REQUIRE(calls == 1);
  CHECK(seen[0] == std::vector<float>{5, 7, 9});
  // A second backward without zero_grad: the hook sees the accumulated sum.
  (w * 2.0).sum().backward();
  REQUIRE(calls == 2);
  CHECK(seen[1] == std::vector<float>{7, 9, 11});
  // No call when backward does not reach w.
  Tensor v = from_vector<float>({1}, {1}).requires_grad_();
  (v * 2.0).sum().backward();
  CHECK(calls == 2);
}

TEST_CASE("grad hooks: order of the hooks, removal, and hooks that change the list", "[autograd][hooks]") {
  Tensor w = ones({2}).requires_grad_();
  std::string order;
  const int64_t a = w.register_post_accumulate_grad_hook([&](const Tensor&) { order += "a"; });
  int64_t c = -1;
  w.register_post_accumulate_grad_hook([&](const Tensor& p) {
    order += "b";
    if (c < 0) c = p.register_post_accumulate_grad_hook([&](const Tensor&) { order += "c"; });
  });
  w.sum().backward();
  CHECK(order == "ab");  // c was added during the pass: it runs from the next one
  order.clear();
  w.sum().backward();
  CHECK(order == "abc");
  CHECK(w.remove_post_accumulate_grad_hook(a));
  CHECK_FALSE(w.remove_post_accumulate_grad_hook(a));
  order.clear();
  w.sum().backward();
  CHECK(order == "bc");
}

TEST_CASE("grad hooks: an exception in a hook leaves backward(), bad registrations are refused", "[autograd][hooks]") {
  Tensor w = ones({2}).requires_grad_();
  w.register_post_accumulate_grad_hook([](const Tensor&) { throw std::runtime_error("from the hook"); });
  CHECK_THROWS_WITH(w.sum().backward(), Contains("from the hook"));

  Tensor leaf = ones({2}).requires_grad_();
  Tensor computed = leaf * 2.0;
  CHECK_THROWS_AS(computed.register_post_accumulate_grad_hook([](const Tensor&) {}), AutogradError);
  CHECK_THROWS_WITH(computed.register_post_accumulate_grad_hook([](const Tensor&) {}),
                    Contains("only leaf tensors"));
  CHECK_THROWS_WITH(ones({2}).register_post_accumulate_grad_hook([](const Tensor&) {}),
                    Contains("requires_grad_()"));
  CHECK_THROWS_WITH(leaf.register_post_accumulate_grad_hook(nullptr), Contains("the hook is empty"));
}
