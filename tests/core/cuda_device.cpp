// Device semantics (seed 004, seed 001): copies vs moves, mixed-device errors, the current
// device and its guard, the default device, the caching allocator's counters, out-of-memory,
// pinned memory, host access to CUDA tensors, and the same random numbers on both devices.
//
// Tests tagged [cuda] need a GPU and print "SKIPPED: <reason>" without one (CTest reports them
// as skipped). Tests tagged [device] check what a machine WITHOUT a GPU must do; on a GPU
// machine the ones that only hold without a GPU skip the other way.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "cuda_test_util.h"
#include "test_files.h"
#ifdef EMBER_CUDA_EMULATED
#include "kernels/emulator/emulator.h"
#endif

using namespace ember;
using ember::test::Bytes;
using ember::test::TempDir;
using ember::test::write_bytes;

namespace {

using test::contains;
using test::kCuda0;
using test::message_of;
using test::skip_with_gpu;
using test::skip_without_gpu;

// Puts the factories' default device back at the end of a scope, also when a check throws.
struct DefaultDeviceRestorer {
  Device saved = default_device();
  DefaultDeviceRestorer() = default;
  DefaultDeviceRestorer(const DefaultDeviceRestorer&) = delete;
  DefaultDeviceRestorer& operator=(const DefaultDeviceRestorer&) = delete;
  ~DefaultDeviceRestorer() { set_default_device(saved); }
};

// The small MLP of the allocator and training tests: 784 -> 128 -> ReLU -> 10.
std::shared_ptr<nn::Sequential> make_mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(784, 128),
                                          std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(128, 10));
}

optim::SGDOptions sgd_options() {
  optim::SGDOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  return o;
}

// One optimisation step; returns the loss (its item() waits for the GPU).
double train_step(nn::Sequential& model, nn::CrossEntropyLoss& criterion, optim::SGD& opt,
                  const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  const Tensor loss = criterion(model(x), y);
  loss.backward();
  opt.step();
  return loss.item();
}

// 256 samples of MNIST's shape, random but fixed.
std::pair<Tensor, Tensor> fake_mnist(uint64_t seed) {
  manual_seed(seed);
  return {randn({256, 784}), randint(0, 10, {256})};
}

}  // namespace

// =============================================================================================
// Without a GPU (CI, this project's build machines): nothing crashes, asking for CUDA explains.
// =============================================================================================

TEST_CASE("device: without a GPU, is_available() is false and device_count() is 0", "[device]") {
  if (skip_with_gpu()) return;
  CHECK_FALSE(cuda::is_available());
  CHECK(cuda::device_count() == 0);
  CHECK(std::string(cuda::unavailable_reason()).size() > 10);
}

TEST_CASE("device: without a GPU, asking for cuda is a DeviceError that says what to do",
          "[device]") {
  if (skip_with_gpu()) return;
  const std::string msg = message_of<DeviceError>([] { (void)empty({2}, Device("cuda")); });
  INFO(msg);
  CHECK(contains(msg, "cuda"));
  CHECK(contains(msg, "cpu"));  // the way out: use the CPU
  CHECK_THROWS_AS(zeros({2}, Device("cuda:0")), DeviceError);
  CHECK_THROWS_AS(ones({3}).cuda(), DeviceError);
  CHECK_THROWS_AS(ones({3}).to(Device("cuda")), DeviceError);
  // A module that cannot move stays where it was, intact.
  manual_seed(0);
  nn::Linear lin(3, 2);
  const std::vector<float> before = lin.weight.to_vector<float>();
  CHECK_THROWS_AS(lin.cuda(), DeviceError);
  CHECK(lin.weight.device().is_cpu());
  CHECK(lin.bias.device().is_cpu());
  CHECK(lin.weight.to_vector<float>() == before);
}

TEST_CASE("device: without a GPU, pin_memory() is a DeviceError", "[device]") {
  if (skip_with_gpu()) return;
  const Tensor t = ones({4});
  const std::string msg = message_of<DeviceError>([&] { (void)t.pin_memory(); });
  INFO(msg);
  CHECK_FALSE(msg.empty());
  CHECK_FALSE(t.is_pinned());
}

TEST_CASE("device: a DeviceGuard for the CPU does nothing", "[device]") {
  // Holds with and without a GPU: the guard must not touch the current CUDA device.
  const int before = cuda::is_available() ? cuda::current_device() : -1;
  {
    cuda::DeviceGuard guard(Device::cpu());
    if (cuda::is_available()) CHECK(cuda::current_device() == before);
    CHECK(ones({2}).device().is_cpu());
  }
  if (cuda::is_available()) CHECK(cuda::current_device() == before);
  // Parsing a device name never needs a GPU; using it does.
  CHECK(Device("cuda:99").index == 99);
  CHECK(Device("cuda").index == -1);
}

// =============================================================================================
// On a GPU.
// =============================================================================================

TEST_CASE("cuda device: Tensor::to, cuda() and cpu() return copies and leave the original alone",
          "[cuda]") {
  if (skip_without_gpu()) return;
  const Tensor c = tensor({1.0, 2.0, 3.0}, kFloat64);
  Tensor g = c.cuda();
  CHECK(c.device() == Device::cpu());
  CHECK(g.device() == kCuda0);  // "cuda" without an index is the current device, resolved
  CHECK_FALSE(g.is_same(c));
  CHECK(g.to_vector<double>() == std::vector<double>{1, 2, 3});

  g.add_(10.0);  // changing the copy leaves the original alone...
  CHECK(c.to_vector<double>() == std::vector<double>{1, 2, 3});
  Tensor h = g.cpu();
  CHECK(h.device().is_cpu());
  h.fill_(0.0);  // ...in both directions
  CHECK(g.to_vector<double>() == std::vector<double>{11, 12, 13});

  CHECK(c.to(Device("cuda")).device() == kCuda0);
  CHECK(c.to(Device("cuda:0")).device() == kCuda0);
  const Tensor f = c.to(TensorOptions(kFloat32).device("cuda"));
  CHECK(f.device() == kCuda0);
  CHECK(f.dtype() == kFloat32);
  CHECK(f.to_vector<float>() == std::vector<float>{1, 2, 3});
  // Already there: the same tensor, as in PyTorch.
  CHECK(g.to(kCuda0).is_same(g));
  CHECK(c.cpu().is_same(c));

  // A non-contiguous tensor arrives with its values in order.
  const Tensor m = arange(12.0, kFloat64).reshape({3, 4}).t();
  CHECK(m.cuda().to_vector<double>() == m.to_vector<double>());

  // .to() is differentiable: the gradient comes back to the CPU leaf.
  Tensor x = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_(true);
  const Tensor y = x.cuda();
  (y * y).sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().device().is_cpu());
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1.0, -2.0, 4.0});
}

TEST_CASE("cuda device: Module::to, cuda() and cpu() move parameters and buffers in place",
          "[cuda]") {
  if (skip_without_gpu()) return;
  manual_seed(0);
  nn::Linear lin(4, 3);
  const Tensor w = lin.weight, b = lin.bias;  // handles held outside the module
  const std::vector<float> w_values = w.to_vector<float>();
  nn::Module& returned = lin.cuda();
  CHECK(&returned == &lin);  // moves itself and returns itself (seed 004)
  CHECK(w.device() == kCuda0);
  CHECK(b.device() == kCuda0);
  CHECK(lin.weight.is_same(w));
  CHECK(w.requires_grad());
  CHECK(w.is_leaf());
  CHECK(w.to_vector<float>() == w_values);
  for (const Tensor& p : lin.parameters()) CHECK(p.device() == kCuda0);

  // It trains there: the gradients are CUDA tensors too, and cpu() brings them back along.
  lin(ones({2, 4}, kCuda0)).sum().backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().device() == kCuda0);
  lin.cpu();
  CHECK(w.device().is_cpu());
  CHECK(w.grad().device().is_cpu());
  lin.to(Device("cuda:0"));
  CHECK(w.device() == kCuda0);

  // A loss's class weights are a buffer: they move with the module.
  const Tensor logits = tensor({0.1, 2.0, -1.0, 0.5, 0.5, 3.0}, {2, 3}, kFloat32);
  const Tensor target = tensor({1, 2}, {2}, kInt64);
  nn::CrossEntropyLoss ce(tensor({1.0, 2.0, 0.5}, {3}, kFloat32));
  const Tensor class_weight = ce.weight;
  const double cpu_loss = ce(logits, target).item();
  ce.cuda();
  CHECK(class_weight.device() == kCuda0);
  CHECK(ce.weight.is_same(class_weight));
  for (const Tensor& buf : ce.buffers()) CHECK(buf.device() == kCuda0);
  CHECK(ce(logits.cuda(), target.cuda()).item() == Approx(cpu_loss).epsilon(1e-6));
  // Forgetting to move the criterion (seed 004's warning) is a clear error, not a crash.
  ce.cpu();
  const std::string msg =
      message_of<DeviceError>([&] { (void)ce(logits.cuda(), target.cuda()); });
  INFO(msg);
  CHECK(contains(msg, "cpu"));
  CHECK(contains(msg, "cuda:0"));

  // A Sequential moves its children recursively.
  auto mlp = make_mlp();
  mlp->cuda();
  for (const Tensor& p : mlp->parameters()) CHECK(p.device() == kCuda0);
  CHECK(mlp->at<nn::Linear>(2)->weight.device() == kCuda0);
}

TEST_CASE("cuda device: an op on tensors on different devices names the op and both devices",
          "[cuda]") {
  if (skip_without_gpu()) return;
  const Tensor c = ones({2, 3}), g = ones({2, 3}, kCuda0);
  auto check_message = [](const std::string& msg, const char* op) {
    INFO(msg);
    CHECK(contains(msg, op));
    CHECK(contains(msg, "cpu"));
    CHECK(contains(msg, "cuda:0"));
  };
  check_message(message_of<DeviceError>([&] { (void)add(c, g); }), "add");
  check_message(message_of<DeviceError>([&] { (void)(g * c); }), "mul");
  check_message(message_of<DeviceError>([&] { (void)matmul(g, ones({3, 2})); }), "matmul");
  check_message(message_of<DeviceError>([&] { (void)cat({c, g}, 0); }), "cat");
  check_message(message_of<DeviceError>([&] { (void)where(c.gt(c), g, g); }), "where");
  check_message(
      message_of<DeviceError>([&] { (void)index_select(g, 0, tensor({0, 1}, {2}, kInt64)); }),
      "index_select");
  check_message(
      message_of<DeviceError>([&] { (void)cross_entropy(g, tensor({0, 2}, {2}, kInt64)); }),
      "cross_entropy");
  check_message(message_of<DeviceError>([&] { g.clone().add_(c); }), "add_");
  // A layer: the message tells to move the model or the input.
  nn::Linear lin(3, 2);
  check_message(message_of<DeviceError>([&] { (void)lin(g); }), "Linear");
}

TEST_CASE("cuda device: DeviceGuard sets and restores the current device", "[cuda]") {
  if (skip_without_gpu()) return;
  const int before = cuda::current_device();
  REQUIRE(before >= 0);
  REQUIRE(before < cuda::device_count());
  {
    cuda::DeviceGuard guard(0);
    CHECK(cuda::current_device() == 0);
    CHECK(zeros({2}, Device("cuda")).device() == kCuda0);  // "cuda" = the current device
  }
  CHECK(cuda::current_device() == before);
  {
    cuda::DeviceGuard guard(Device("cuda:0"));
    CHECK(cuda::current_device() == 0);
  }
  CHECK(cuda::current_device() == before);
  try {  // restored on the way out of an exception too
    cuda::DeviceGuard guard(0);
    throw std::runtime_error("leaving the scope");
  } catch (const std::runtime_error&) {
  }
  CHECK(cuda::current_device() == before);
  cuda::set_device(0);
  CHECK(cuda::current_device() == 0);
  if (cuda::device_count() >= 2) {
    {
      cuda::DeviceGuard guard(1);
      CHECK(cuda::current_device() == 1);
      const Tensor t = zeros({2}, Device("cuda"));
      CHECK(t.device() == Device::cuda(1));
      {
        cuda::DeviceGuard inner(Device::cuda(0));
        CHECK(cuda::current_device() == 0);
        // An op runs on its tensors' device whatever the current device is.
        CHECK((t + t).device() == Device::cuda(1));
      }
      CHECK(cuda::current_device() == 1);
    }
    CHECK(cuda::current_device() == 0);
    cuda::set_device(1);
    CHECK(cuda::current_device() == 1);
  }
  cuda::set_device(before);
  CHECK(cuda::current_device() == before);
}

TEST_CASE("cuda device: set_default_device(\"cuda\") makes factories create CUDA tensors",
          "[cuda]") {
  if (skip_without_gpu()) return;
  const Device saved = default_device();
  {
    DefaultDeviceRestorer restore;
    set_default_device(Device("cuda"));
    CHECK(zeros({2}).device() == kCuda0);
    CHECK(ones({2, 3}).device() == kCuda0);
    CHECK(empty({4}).device() == kCuda0);
    CHECK(full({2}, 3.0).device() == kCuda0);
    CHECK(scalar_tensor(1.0).device() == kCuda0);
    CHECK(rand({5}).device() == kCuda0);
    CHECK(randn({5}).device() == kCuda0);
    CHECK(randint(0, 5, {3}).device() == kCuda0);
    CHECK(arange(5.0).device() == kCuda0);
    CHECK(arange(1.0, 2.0, 0.25).device() == kCuda0);
    CHECK(linspace(0.0, 1.0, 5).device() == kCuda0);
    CHECK(eye(3).device() == kCuda0);
    const Tensor t = tensor({1.0, 2.0, 3.0});
    CHECK(t.device() == kCuda0);
    CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3});
    CHECK(arange(5.0).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4});
    // Naming only a dtype keeps the default device; naming a device wins.
    CHECK(zeros({2}, kFloat64).device() == kCuda0);
    CHECK(zeros({2}, Device::cpu()).device().is_cpu());
    // Layers built now have their parameters on the GPU (torch.set_default_device).
    nn::Linear lin(3, 2);
    CHECK(lin.weight.device() == kCuda0);
  }
  CHECK(default_device() == saved);
  CHECK(zeros({2}).device() == (saved.is_cuda() ? kCuda0 : Device::cpu()));
}

// With "cuda" as the default device, code that fills a tensor on the host must still create it
// on the host: a TensorOptions naming only a dtype means the default device. Factories that go
// through a host buffer (tensor, from_vector, linspace, randperm), pin_memory, the DataLoader's
// shuffle and the data readers once wrote host data into device memory here — a crash on a GPU
// machine. In the emulation build hostcheck makes that crash too.
TEST_CASE("cuda device: with \"cuda\" as the default device, host-side work stays on the host",
          "[cuda]") {
  if (skip_without_gpu()) return;
#ifdef EMBER_CUDA_EMULATED
  struct HostCheck {
    unsigned saved = emu::checks();
    HostCheck() { emu::set_checks(saved | emu::kHostcheck); }
    ~HostCheck() { emu::set_checks(saved); }
  } hostcheck;
#endif
  TempDir dir;
  // An IDX file of 3 labels, written before the default changes.
  write_bytes(dir / "labels.idx", Bytes{0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9});
  DefaultDeviceRestorer restore;
  set_default_device(Device("cuda"));
  CHECK(from_vector<int64_t>({4, 5, 6}, {3}, kInt64).to_vector<int64_t>() ==
        std::vector<int64_t>{4, 5, 6});
  CHECK(tensor({1.5, 2.5}).to_vector<double>() == std::vector<double>{1.5, 2.5});
  CHECK(linspace(0.0, 1.0, 3).to_vector<double>() == std::vector<double>{0, 0.5, 1});
  manual_seed(1);
  const Tensor perm = randperm(6);
  CHECK(perm.device() == kCuda0);
  std::vector<int64_t> p = perm.to_vector<int64_t>();
  std::sort(p.begin(), p.end());
  CHECK(p == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  const Tensor pinned = ones({4}, Device::cpu()).pin_memory();
  CHECK(pinned.is_pinned());
  CHECK(pinned.device().is_cpu());
  const Tensor order = data::shuffled_order(5, 3, 0);
  CHECK(order.device().is_cpu());
  CHECK(order.numel() == 5);
  const Tensor labels = data::read_idx(dir / "labels.idx");
  CHECK(labels.device().is_cpu());
  CHECK(labels.to_vector<uint8_t>() == std::vector<uint8_t>{7, 0, 9});
}

TEST_CASE("cuda device: *_like and new_* keep the device and the dtype", "[cuda]") {
  if (skip_without_gpu()) return;
  const Tensor g = rand({3, 4}, TensorOptions(kFloat64).device("cuda"));
  const std::vector<std::pair<const char*, Tensor>> made = {
      {"empty_like", empty_like(g)},       {"zeros_like", zeros_like(g)},
      {"ones_like", ones_like(g)},         {"full_like", full_like(g, 2.5)},
      {"rand_like", rand_like(g)},         {"randn_like", randn_like(g)},
      {"new_zeros", g.new_zeros({2})},     {"new_ones", g.new_ones({2})},
      {"new_full", g.new_full({2}, -1.0)}, {"new_empty", g.new_empty({2})},
      {"new_tensor", g.new_tensor({1.0, 2.0}, {2})}};
  for (const auto& [name, t] : made) {
    INFO(name);
    CHECK(t.device() == kCuda0);
    CHECK(t.dtype() == kFloat64);
  }
  CHECK(zeros_like(g).to_vector<double>() == std::vector<double>(12, 0.0));
  CHECK(ones_like(g).to_vector<double>() == std::vector<double>(12, 1.0));
  CHECK(full_like(g, 2.5).to_vector<double>() == std::vector<double>(12, 2.5));
  CHECK(g.new_full({2}, -1.0).to_vector<double>() == std::vector<double>{-1.0, -1.0});
  CHECK(g.new_tensor({1.0, 2.0}, {2}).to_vector<double>() == std::vector<double>{1.0, 2.0});
  CHECK(zeros_like(g).shape() == g.shape());
}

TEST_CASE("cuda device: an invalid device index is a DeviceError naming the valid range",
          "[cuda]") {
  if (skip_without_gpu()) return;
  const std::string last = "cuda:" + std::to_string(cuda::device_count() - 1);
  auto check_message = [&](const std::string& msg) {
    INFO(msg);
    CHECK(contains(msg, "99"));
    CHECK(contains(msg, last));  // e.g. "... valid devices are cuda:0 to cuda:1"
  };
  check_message(message_of<DeviceError>([] { (void)empty({2}, Device("cuda:99")); }));
  check_message(message_of<DeviceError>([] { (void)ones({2}).to(Device("cuda:99")); }));
  check_message(message_of<DeviceError>([] { cuda::set_device(99); }));
  check_message(message_of<DeviceError>([] { (void)cuda::resolve(Device("cuda:99")); }));
  check_message(message_of<DeviceError>([] { cuda::DeviceGuard guard(99); }));
  // Nothing changed on the way.
  CHECK(cuda::current_device() >= 0);
  CHECK(ones({2}, kCuda0).sum().item() == 2.0);
}

TEST_CASE("cuda device: a steady training loop allocates nothing new from the driver", "[cuda]") {
  if (skip_without_gpu()) return;
  manual_seed(0);
  auto model = make_mlp();
  model->cuda();
  nn::CrossEntropyLoss criterion;
  optim::SGD opt(model->parameters(), sgd_options());
  auto [x_cpu, y_cpu] = fake_mnist(1);
  const Tensor x = x_cpu.narrow(0, 0, 64).cuda(), y = y_cpu.narrow(0, 0, 64).cuda();

  // Warm-up: the first steps create the gradients and momentum buffers and fill the cache.
  for (int step = 0; step < 3; ++step) train_step(*model, criterion, opt, x, y);
  cuda::synchronize();
  const cuda::AllocatorStats before = cuda::allocator_stats();
  const int64_t allocated_before = cuda::memory_allocated();
  for (int step = 0; step < 5; ++step) train_step(*model, criterion, opt, x, y);
  cuda::synchronize();
  const cuda::AllocatorStats after = cuda::allocator_stats();
  INFO("cudaMalloc calls " << before.cuda_malloc_calls << " -> " << after.cuda_malloc_calls
                           << ", cudaFree calls " << before.cuda_free_calls << " -> "
                           << after.cuda_free_calls << ", cache hits " << before.cache_hits
                           << " -> " << after.cache_hits);
  CHECK(after.cuda_malloc_calls == before.cuda_malloc_calls);
  CHECK(after.cuda_free_calls == before.cuda_free_calls);
  CHECK(after.cache_hits > before.cache_hits);  // the steps did allocate, from the cache
  CHECK(cuda::memory_allocated() == allocated_before);  // and nothing leaked
}

TEST_CASE("cuda device: memory_allocated, memory_reserved, max_memory_allocated, empty_cache",
          "[cuda]") {
  if (skip_without_gpu()) return;
  constexpr int64_t kBytes = int64_t{64} << 20;  // 64 MiB
  cuda::synchronize();
  cuda::empty_cache();  // so the 64 MiB below come from the driver, not from an earlier test
  const int64_t base = cuda::memory_allocated();
  cuda::reset_peak_memory_stats();
  CHECK(cuda::max_memory_allocated() == base);
  {
    const Tensor t = empty({kBytes / 4}, TensorOptions(kFloat32).device("cuda"));
    CHECK(cuda::memory_allocated() >= base + kBytes);
    CHECK(cuda::memory_reserved() >= cuda::memory_allocated());
    CHECK(cuda::max_memory_allocated() >= base + kBytes);
  }
  CHECK(cuda::memory_allocated() == base);      // freed...
  const int64_t reserved = cuda::memory_reserved();
  CHECK(reserved >= base + kBytes);             // ...but kept in the cache
  CHECK(cuda::max_memory_allocated() >= base + kBytes);  // the peak remembers
  cuda::empty_cache();
  const int64_t reserved_after = cuda::memory_reserved();
  INFO("reserved " << reserved << " -> " << reserved_after << " after empty_cache, allocated "
                   << cuda::memory_allocated());
  CHECK(reserved_after <= reserved - kBytes);
  CHECK(reserved_after >= cuda::memory_allocated());
  cuda::reset_peak_memory_stats();
  CHECK(cuda::max_memory_allocated() == cuda::memory_allocated());
  // Explicit device indices mean the same as the current device here.
  CHECK(cuda::memory_allocated(0) == cuda::memory_allocated());
}

TEST_CASE("cuda device: out of memory is an OutOfMemoryError and the GPU still works after",
          "[cuda]") {
  if (skip_without_gpu()) return;
  const size_t total = cuda::get_device_properties(0).total_memory;
  REQUIRE(total > 0);
  const int64_t allocated = cuda::memory_allocated();
  const auto too_many = static_cast<int64_t>(total) * 2;
  const std::string msg = message_of<OutOfMemoryError>(
      [&] { (void)empty({too_many}, TensorOptions(kUInt8).device("cuda")); });
  INFO(msg);
  CHECK(contains(msg, "free"));
  CHECK(contains(msg, "total"));
  // An OutOfMemoryError is a DeviceError, as torch.cuda.OutOfMemoryError is a RuntimeError.
  CHECK_THROWS_AS(empty({too_many}, TensorOptions(kUInt8).device("cuda")), DeviceError);
  CHECK(cuda::memory_allocated() == allocated);
  const Tensor t = ones({1 << 20}, kCuda0);
  CHECK(t.sum().item() == static_cast<double>(1 << 20));
  cuda::synchronize();
}

TEST_CASE("cuda device: pin_memory() and non-blocking copies", "[cuda]") {
  if (skip_without_gpu()) return;
  manual_seed(3);
  const Tensor h = rand({(1 << 20) + 3});
  CHECK_FALSE(h.is_pinned());
  const Tensor p = h.pin_memory();
  CHECK(p.is_pinned());
  CHECK(p.device().is_cpu());
  CHECK_FALSE(h.is_pinned());  // a copy, the original is unchanged
  CHECK(p.to_vector<float>() == h.to_vector<float>());
  CHECK(p.pin_memory().is_same(p));  // already pinned: returned as is

  const Tensor g = p.to(kCuda0, /*non_blocking=*/true);
  cuda::synchronize();
  CHECK(g.device() == kCuda0);
  CHECK(g.to_vector<float>() == h.to_vector<float>());
  // Back to the host without blocking: lands in pinned memory.
  const Tensor back = (g * 2.0).to(Device::cpu(), /*non_blocking=*/true);
  cuda::synchronize();
  CHECK(back.is_pinned());
  CHECK(back.to_vector<float>() == (h * 2.0).to_vector<float>());
  // Pageable memory with non_blocking=true still arrives complete.
  CHECK(h.to(kCuda0, true).to_vector<float>() == h.to_vector<float>());
}

TEST_CASE("cuda device: item(), to_vector() and printing of CUDA tensors", "[cuda]") {
  if (skip_without_gpu()) return;
  const Tensor g = tensor({1.5, -2.0, 3.25}, TensorOptions(kFloat64).device("cuda"));
  CHECK(g.to_vector<double>() == std::vector<double>{1.5, -2.0, 3.25});
  CHECK(g.to_vector<float>() == std::vector<float>{1.5f, -2.0f, 3.25f});
  CHECK(g.sum().item() == 2.75);
  CHECK(g.select(0, 2).item() == 3.25);  // a view with an offset
  CHECK(g.max().item() == 3.25);
  CHECK(arange(5.0, TensorOptions(kInt64).device("cuda")).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(g.gt(scalar_tensor(0.0, TensorOptions(kFloat64).device("cuda"))).to_vector<uint8_t>() ==
        std::vector<uint8_t>{1, 0, 1});
  CHECK(g.argmax().item<int64_t>() == 2);
  const Tensor m = arange(6.0, TensorOptions(kFloat32).device("cuda")).reshape({2, 3});
  CHECK(m.t().to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_AS(m.item(), ValueError);  // more than one element

  std::ostringstream os;
  os << g;
  INFO(os.str());
  CHECK(contains(os.str(), "device='cuda:0'"));
  CHECK(contains(os.str(), "3.25"));
  CHECK(contains(m.str(), "device='cuda:0'"));
  CHECK_FALSE(contains(g.cpu().str(), "device="));
}

TEST_CASE("cuda device: manual_seed gives the same random numbers on the CPU and the GPU",
          "[cuda]") {
  if (skip_without_gpu()) return;
  const Shape shape = {1000003};  // odd, not a multiple of Philox's 4 outputs
  for (DType dt : {kFloat32, kFloat64}) {
    INFO(dt);
    manual_seed(42);
    const Tensor a = rand(shape, TensorOptions(dt).device("cuda"));
    manual_seed(42);
    const Tensor b = rand(shape, dt);
    CHECK(a.device() == kCuda0);
    CHECK(a.to_vector<double>() == b.to_vector<double>());  // uniform: bit for bit

    manual_seed(43);
    const Tensor n_gpu = randn(shape, TensorOptions(dt).device("cuda"));
    manual_seed(43);
    const Tensor n_cpu = randn(shape, dt);
    const std::vector<double> x = n_gpu.to_vector<double>(), y = n_cpu.to_vector<double>();
    // Normal: Box-Muller's log, sqrt and cos may differ by an ulp between the two libms.
    const double tol = dt == kFloat32 ? 1e-6 : 1e-12;
    int64_t bad = 0, first = -1;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::fabs(x[i] - y[i]) > tol * (1.0 + std::fabs(y[i]))) {
        if (first < 0) first = static_cast<int64_t>(i);
        ++bad;
      }
    }
    INFO(bad << " normals differ, first at " << first);
    CHECK(bad == 0);
  }
  // Both devices advance the generator by the same amount.
  manual_seed(7);
  (void)rand({5}, kCuda0);
  const Tensor after_gpu = rand({9});
  manual_seed(7);
  (void)rand({5});
  const Tensor after_cpu = rand({9});
  CHECK(after_gpu.to_vector<float>() == after_cpu.to_vector<float>());
  // randint on both devices too.
  manual_seed(9);
  const Tensor ri_gpu = randint(-3, 1000, {4097}, TensorOptions(kInt64).device("cuda"));
  manual_seed(9);
  const Tensor ri_cpu = randint(-3, 1000, {4097});
  CHECK(ri_gpu.to_vector<int64_t>() == ri_cpu.to_vector<int64_t>());
}

TEST_CASE("cuda device: 20 training steps on the CPU and on the GPU give the same losses",
          "[cuda]") {
  if (skip_without_gpu()) return;
  manual_seed(0);
  auto cpu_model = make_mlp();
  auto gpu_model = make_mlp();
  {
    NoGradGuard no_grad;  // the same initial weights on both
    const std::vector<Tensor> src = cpu_model->parameters();
    std::vector<Tensor> dst = gpu_model->parameters();
    REQUIRE(src.size() == dst.size());
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  gpu_model->cuda();
  nn::CrossEntropyLoss cpu_loss, gpu_loss;
  gpu_loss.cuda();
  optim::SGD cpu_opt(cpu_model->parameters(), sgd_options());
  optim::SGD gpu_opt(gpu_model->parameters(), sgd_options());
  auto [x, y] = fake_mnist(2);
  const Tensor xg = x.cuda(), yg = y.cuda();
  for (int step = 0; step < 20; ++step) {
    const int64_t start = (step % 4) * 64;
    const double lc = train_step(*cpu_model, cpu_loss, cpu_opt, x.narrow(0, start, 64),
                                 y.narrow(0, start, 64));
    const double lg = train_step(*gpu_model, gpu_loss, gpu_opt, xg.narrow(0, start, 64),
                                 yg.narrow(0, start, 64));
    INFO("step " << step << ": cpu loss " << lc << ", cuda loss " << lg);
    CHECK(lg == Approx(lc).margin(1e-4));
  }
  const std::vector<Tensor> pc = cpu_model->parameters(), pg = gpu_model->parameters();
  for (size_t i = 0; i < pc.size(); ++i) {
    INFO("parameter " << i);
    CHECK(pg[i].device() == kCuda0);
    const std::vector<float> a = pc[i].to_vector<float>(), b = pg[i].to_vector<float>();
    float worst = 0.0f;
    for (size_t j = 0; j < a.size(); ++j) worst = std::max(worst, std::fabs(a[j] - b[j]));
    CHECK(worst < 1e-4f);
  }
}
