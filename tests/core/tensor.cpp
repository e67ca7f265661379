// Tensor basics: factories, layout and views, element access, conversions, printing, devices.
#include <algorithm>
#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

TEST_CASE("factories: values, dtypes and options", "[tensor]") {
  Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.dtype() == kFloat32);
  CHECK(z.device() == Device::cpu());
  CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(ones({4}, kFloat64).to_vector<double>() == std::vector<double>(4, 1.0));
  CHECK(full({2}, 7.5).to_vector<double>() == std::vector<double>{7.5, 7.5});
  CHECK(arange(5).to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(arange(1, 2, 0.25, kFloat64).to_vector<double>() == std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(linspace(0, 1, 5).to_vector<double>() == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  CHECK(eye(3).to_vector<double>() == std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(eye(2, 3, kFloat64).to_vector<double>() == std::vector<double>{1, 0, 0, 0, 1, 0});
  CHECK(eye(3, 2).shape() == Shape{3, 2});
  CHECK(eye(3, 2).to_vector<double>() == std::vector<double>{1, 0, 0, 1, 0, 0});
  CHECK(eye(0).numel() == 0);
  CHECK(eye(2).dtype() == kFloat32);
  CHECK_THROWS_WITH(eye(-1), Catch::Contains("n must be non-negative"));
  CHECK(tensor({1, 2, 3, 4, 5, 6}, {2, -1}).shape() == Shape{2, 3});
  CHECK(scalar_tensor(3.0).dim() == 0);
  CHECK(scalar_tensor(3.0).item() == 3.0);
  Tensor r = zeros({3}, TensorOptions(kFloat64).requires_grad());
  CHECK(r.requires_grad());
  CHECK(r.is_leaf());
  CHECK_THROWS_AS(zeros({2, -1}), ValueError);
  CHECK_THROWS_WITH(tensor({1, 2, 3}, {2, 2}), Contains("[2, 2]"));
  CHECK_THROWS_WITH(arange(0, 5, 0), Contains("step"));
}

TEST_CASE("factories: *_like and new_* keep dtype and device (seed 004)", "[tensor]") {
  Tensor x = empty({2}, kFloat64);
  for (const Tensor& t : {zeros_like(x), ones_like(x), empty_like(x), full_like(x, 2), rand_like(x),
                          randn_like(x), x.new_zeros({3, 4}), x.new_full({3, 4}, 9), x.new_ones({1}),
                          x.new_empty({5}), x.new_tensor({1, 2}, {2})}) {
    CHECK(t.dtype() == kFloat64);
    CHECK(t.device() == x.device());
  }
  CHECK(x.new_full({3, 4}, 9).to_vector<double>() == std::vector<double>(12, 9.0));
  CHECK(ones_like(x).shape() == x.shape());
  Tensor i = zeros({2}, kInt64);
  CHECK(zeros_like(i).dtype() == kInt64);
}

TEST_CASE("random: seeded, in range, and with the right moments", "[tensor][random]") {
  manual_seed(42);
  const auto a = rand({1000}).to_vector<float>();
  manual_seed(42);
  const auto b = rand({1000}).to_vector<float>();
  CHECK(a == b);
  const auto c = rand({1000}).to_vector<float>();
  CHECK(a != c);
  CHECK(*std::min_element(a.begin(), a.end()) >= 0.0f);
  CHECK(*std::max_element(a.begin(), a.end()) < 1.0f);

  const auto n = randn({20000}, kFloat64).to_vector<double>();
  double mean = 0, var = 0;
  for (double v : n) mean += v;
  mean /= n.size();
  for (double v : n) var += (v - mean) * (v - mean);
  var /= n.size();
  CHECK(std::fabs(mean) < 0.03);
  CHECK(std::fabs(var - 1.0) < 0.05);

  const auto ints = randint(3, 7, {1000}).to_vector<int64_t>();
  CHECK(*std::min_element(ints.begin(), ints.end()) == 3);
  CHECK(*std::max_element(ints.begin(), ints.end()) == 6);

  auto perm = randperm(100).to_vector<int64_t>();
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < 100; ++k) CHECK(sorted[k] == k);
  CHECK(perm != sorted);
}

TEST_CASE("random: the same seed gives the same numbers with any thread count", "[tensor][random]") {
  const int saved = get_num_threads();
  set_num_threads(1);
  manual_seed(7);
  const auto one = randn({100000}).to_vector<float>();
  set_num_threads(4);
  manual_seed(7);
  const auto four = randn({100000}).to_vector<float>();
  set_num_threads(saved);
  CHECK(one == four);
}

TEST_CASE("views share storage and have the expected layout", "[tensor][views]") {
  Tensor a = arange(12, kFloat64).reshape({3, 4});
  CHECK(a.strides() == Shape{4, 1});
  Tensor t = a.t();
  CHECK(t.shape() == Shape{4, 3});
  CHECK(t.strides() == Shape{1, 4});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.storage() == a.storage());
  Tensor n = a.narrow(1, 1, 2);
  CHECK(n.offset() == 1);
  CHECK(n.to_vector<double>() == std::vector<double>{1, 2, 5, 6, 9, 10});
  Tensor e = tensor({1, 2, 3}).unsqueeze(0).expand({4, 3});
  CHECK(e.strides() == Shape{0, 1});
  CHECK(e.to_vector<float>().size() == 12);
  Tensor s = a.select(0, -1);
  CHECK(s.to_vector<double>() == std::vector<double>{8, 9, 10, 11});
  CHECK(a[1].to_vector<double>() == std::vector<double>{4, 5, 6, 7});
  CHECK(a.flatten().shape() == Shape{12});
  CHECK(a.unsqueeze(1).squeeze().shape() == Shape{3, 4});
  CHECK(a.permute({1, 0}).contiguous().to_vector<double>() == t.to_vector<double>());

  // Writing through a view changes the base: they share storage and a version counter.
  const int64_t v0 = a.version();
  n.fill_(-1.0);
  CHECK(a.to_vector<double>()[1] == -1.0);
  CHECK(a.version() == v0 + 1);

  Tensor c = a.clone();
  c.zero_();
  CHECK(a.to_vector<double>()[0] == 0.0);  // arange starts at 0: use another element
  CHECK(a.to_vector<double>()[4] == 4.0);
  CHECK(c.storage() != a.storage());
  CHECK(a.contiguous().is_same(a));
  CHECK_FALSE(t.contiguous().is_same(t));
}

TEST_CASE("element access and conversions", "[tensor]") {
  Tensor x = tensor({1.5, -2.25, 3.0}, kFloat64);
  CHECK(x[1].item() == -2.25);
  CHECK(x.to(kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, -2, 3});
  CHECK(x.to(kFloat32).dtype() == kFloat32);
  CHECK(x.to(kFloat64).is_same(x));
  CHECK(x.to_vector<float>() == std::vector<float>{1.5f, -2.25f, 3.0f});
  CHECK(*x.data_ptr<double>() == 1.5);
  CHECK_THROWS_WITH(x.data_ptr<float>(), Contains("float64") && Contains("float32"));
  CHECK_THROWS_WITH(x.item(), Contains("one element"));
  CHECK(x.to(Device::cpu()).is_same(x));
  Tensor u;
  CHECK_FALSE(u.defined());
  CHECK_THROWS_WITH(u.shape(), Contains("undefined"));
  CHECK(from_vector<int64_t>({1, 2, 3, 4}, {2, 2}).dtype() == kFloat32);
  CHECK(from_vector<int64_t>({1, 2, 3, 4}, {2, 2}, kInt64).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 2, 3, 4});
}

TEST_CASE("in-place ops: broadcasting, dtype conversion and errors", "[tensor]") {
  Tensor a = zeros({2, 3}, kFloat64);
  a.add_(tensor({1, 2, 3}, kFloat64));
  a.mul_(2.0);
  CHECK(a.to_vector<double>() == std::vector<double>{2, 4, 6, 2, 4, 6});
  a.copy_(tensor({7, 8, 9}, kFloat32));
  CHECK(a.to_vector<double>() == std::vector<double>{7, 8, 9, 7, 8, 9});
  a.sub_(ones({2, 3}, kFloat64), 3.0);
  a.div_(2.0);
  CHECK(a.to_vector<double>() == std::vector<double>{2, 2.5, 3, 2, 2.5, 3});
  CHECK_THROWS_WITH(a.add_(ones({3, 3}, kFloat64)), Contains("add_") && Contains("[3, 3]"));
}

TEST_CASE("errors name the op and the shapes", "[tensor][errors]") {
  CHECK_THROWS_WITH(ones({2, 3}) + ones({4}),
                    Contains("add") && Contains("[2, 3]") && Contains("[4]") && Contains("broadcast"));
  CHECK_THROWS_WITH(ones({2}, kBool) - ones({2}, kBool), Contains("sub") && Contains("bool"));
  CHECK_THROWS_WITH(ones({2, 3}).transpose(0, 2), Contains("transpose") && Contains("dim 2"));
  CHECK_THROWS_WITH(ones({2, 3}).t().view({6}), Contains("view") && Contains("reshape"));
  CHECK_THROWS_WITH(ones({2, 3}).sum({5}), Contains("sum") && Contains("dim 5"));
}

TEST_CASE("printing looks like PyTorch, with shape and dtype", "[tensor][print]") {
  CHECK(tensor({1, 2, 3}).str() == "tensor([1., 2., 3.], shape=[3], dtype=float32)");
  CHECK(tensor({1, 2, 3, 4}, {2, 2}, kInt64).str() ==
        "tensor([[1, 2],\n        [3, 4]], shape=[2, 2], dtype=int64)");
  CHECK(tensor({0.5, -1.25}, kFloat64).str() ==
        "tensor([ 0.5000, -1.2500], shape=[2], dtype=float64)");
  CHECK(scalar_tensor(2.5).str() == "tensor(2.5000, shape=[], dtype=float32)");
  Tensor x = tensor({1, 2}, TensorOptions().requires_grad());
  CHECK(x.str() == "tensor([1., 2.], shape=[2], dtype=float32, requires_grad=True)");
  CHECK_THAT((x * 2.0).str(), Contains("grad_fn=<MulBackward>"));
  CHECK_THAT(tensor({1e-7, 1.0}).str(), Contains("e-07"));
  CHECK_THAT(zeros({2000}).str(), Contains("...") && Contains("shape=[2000]"));
  CHECK(tensor({1, 0}).gt(tensor({0, 0})).str() == "tensor([ True, False], shape=[2], dtype=bool)");
}

TEST_CASE("devices: parsing and the CPU-only situation", "[device]") {
  CHECK(Device("cpu").is_cpu());
  CHECK(Device("cuda").is_cuda());
  CHECK(Device("cuda").index == -1);
  CHECK(Device("cuda:1").index == 1);
  CHECK(Device("cuda:12").str() == "cuda:12");
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda1", "CPU"}) {
    CHECK_THROWS_WITH(Device(bad), Contains("expected"));
  }
  if (!cuda::is_available()) {
    CHECK(cuda::device_count() == 0);
    CHECK_THROWS_AS(ones({2}).to(Device("cuda")), DeviceError);
    CHECK_THROWS_AS(ones({2}).cuda(), DeviceError);
    CHECK_THROWS_AS(zeros({2}, Device::cuda(0)), DeviceError);
    try {
      ones({2}).cuda();
    } catch (const DeviceError& e) {
      CHECK_THAT(e.what(), Contains("cuda") && Contains("cpu"));
    }
  }
}

TEST_CASE("threads: set_num_threads is honoured and results do not depend on it", "[threads]") {
  const int saved = get_num_threads();
  manual_seed(1);
  Tensor a = randn({300, 200}, kFloat64);
  set_num_threads(1);
  CHECK(get_num_threads() == 1);
  const auto s1 = (a.exp() * 2.0).sum({0}).to_vector<double>();
  set_num_threads(3);
  CHECK(get_num_threads() == 3);
  const auto s3 = (a.exp() * 2.0).sum({0}).to_vector<double>();
  set_num_threads(saved);
  CHECK(s1 == s3);
}

TEST_CASE("set_data swaps the data behind every handle of a leaf", "[tensor]") {
  Tensor p = ones({2}, TensorOptions().requires_grad());
  Tensor alias = p;  // e.g. an optimizer's reference
  (p * 3.0).sum().backward();
  p.set_data(tensor({5, 6}, kFloat64));
  CHECK(alias.dtype() == kFloat64);
  CHECK(alias.to_vector<double>() == std::vector<double>{5, 6});
  CHECK(alias.grad().dtype() == kFloat64);
  CHECK(alias.grad().to_vector<double>() == std::vector<double>{3, 3});
  CHECK(alias.requires_grad());
  CHECK_THROWS_WITH((p * 2.0).set_data(p), Contains("leaf"));
}

TEST_CASE("reductions over dim 0 of a 0-d tensor", "[tensor]") {
  Tensor s = scalar_tensor(3.0, kFloat64);
  CHECK(s.sum({0}).item() == 3.0);
  CHECK(s.mean({-1}, true).item() == 3.0);
  CHECK_THROWS_WITH(s.sum({1}), Contains("dim 1"));
}
