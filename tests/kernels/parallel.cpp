// ember's CPU thread pool (kernels/base/parallel.h): every index once, exceptions, nesting, two
// callers at once, idle workers that sleep, and results that do not depend on the thread count.
#include <atomic>
#include <ctime>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "kernels/base/parallel.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace ember;
using kernels::in_parallel_region;
using kernels::parallel_for;

namespace {

struct ThreadCountGuard {
  int saved = get_num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

// Same shape, dtype and values (float32 widens to double exactly; no NaN arises here).
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         a.to_vector<double>() == b.to_vector<double>();
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

TEST_CASE("parallel_for: every index exactly once, for any size, grain and thread count",
          "[parallel]") {
  ThreadCountGuard restore;
  for (int threads : {1, 2, 3, 5}) {
    set_num_threads(threads);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{100003}}) {
      for (int64_t grain : {int64_t{1}, int64_t{64}, int64_t{32768}}) {
        CAPTURE(threads, n, grain);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int64_t> calls{0}, empty_chunks{0};
        // (No Catch2 assertion inside a chunk: they are not thread-safe.)
        parallel_for(5, 5 + n, grain, [&](int64_t b, int64_t e) {
          if (b >= e) ++empty_chunks;
          ++calls;
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i - 5)]++;
        });
        int64_t wrong = 0;
        for (auto& h : hits) wrong += h.load() != 1;
        CHECK(wrong == 0);
        CHECK(empty_chunks.load() == 0);
        // Chunks are at least `grain` long (the last may be shorter only when there is one).
        CHECK(calls.load() <= std::max<int64_t>(1, n / grain));
      }
    }
  }
}

TEST_CASE("parallel_for: work runs on several threads and each of them sees a region",
          "[parallel]") {
  ThreadCountGuard restore;
  set_num_threads(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<int> outside{0};
  parallel_for(0, 3000, 1, [&](int64_t, int64_t) {
    if (!in_parallel_region()) ++outside;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let every member claim one
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  CHECK(outside.load() == 0);
  CHECK(ids.size() >= 2);
  CHECK_FALSE(in_parallel_region());
}

TEST_CASE("parallel_for: a loop inside a chunk runs on that chunk's thread", "[parallel]") {
  ThreadCountGuard restore;
  set_num_threads(2);
  std::atomic<int> foreign{0}, inner_calls{0};
  parallel_for(0, 8, 1, [&](int64_t, int64_t) {
    const auto me = std::this_thread::get_id();
    parallel_for(0, 1 << 20, 1, [&](int64_t b, int64_t e) {
      ++inner_calls;
      if (std::this_thread::get_id() != me || b != 0 || e != (1 << 20)) ++foreign;
    });
  });
  CHECK(foreign.load() == 0);
  CHECK(inner_calls.load() >= 2);  // one per outer chunk
}

TEST_CASE("parallel_for: an exception in a chunk reaches the caller, and the pool goes on",
          "[parallel]") {
  ThreadCountGuard restore;
  set_num_threads(2);
  std::atomic<int64_t> done{0};
  auto throwing = [&] {
    parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
      if (b <= 40 && 40 < e) throw std::runtime_error("chunk with index 40 failed");
      done += e - b;
    });
  };
  CHECK_THROWS_WITH(throwing(), "chunk with index 40 failed");
  CHECK(done.load() < 64);
  CHECK_FALSE(in_parallel_region());
  // The next region runs in full.
  std::atomic<int64_t> sum{0};
  parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  CHECK(sum.load() == 64 * 63 / 2);
}

TEST_CASE("parallel_for: two threads calling at once both get every index", "[parallel]") {
  ThreadCountGuard restore;
  set_num_threads(2);
  auto job = [](int64_t n) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    for (int round = 0; round < 50; ++round) {
      parallel_for(0, n, 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
    }
    int64_t wrong = 0;
    for (auto& h : hits) wrong += h.load() != 50;
    return wrong;
  };
  int64_t wrong_a = -1, wrong_b = -1;
  std::thread a([&] { wrong_a = job(5000); });
  std::thread b([&] { wrong_b = job(7001); });
  a.join();
  b.join();
  CHECK(wrong_a == 0);
  CHECK(wrong_b == 0);
}

TEST_CASE("parallel_for: idle workers sleep instead of spinning", "[parallel]") {
  ThreadCountGuard restore;
  set_num_threads(2);
  std::atomic<int64_t> sink{0};
  parallel_for(0, 1 << 16, 1024, [&](int64_t b, int64_t e) { sink += e - b; });
  REQUIRE(sink.load() == (1 << 16));
  // A spinning worker would use the whole 200 ms of a core; a sleeping one next to nothing.
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double used = process_cpu_seconds() - before;
  INFO("CPU time used by the process while idle: " << used * 1e3 << " ms");
  CHECK(used < 0.05);
}

TEST_CASE("matmul: the same bits for 1, 2 and 3 threads, panels and all", "[parallel][matmul]") {
  ThreadCountGuard restore;
  manual_seed(31);
  struct Case { int64_t m, k, n; bool ta, tb; };
  // Small (one call), tall (row panels), wide (column panels), a ragged last panel, transposes.
  const std::vector<Case> cases = {{7, 13, 5, false, false},   {64, 784, 512, false, false},
                                   {784, 64, 512, true, false}, {64, 512, 784, false, true},
                                   {300, 257, 130, true, true}, {1000, 33, 70, false, false}};
  for (const Case& c : cases) {
    for (DType dt : {kFloat32, kFloat64}) {
      CAPTURE(c.m, c.k, c.n, c.ta, c.tb, dt);
      const Tensor a = c.ta ? randn({c.k, c.m}, dt).t() : randn({c.m, c.k}, dt);
      const Tensor b = c.tb ? randn({c.n, c.k}, dt).t() : randn({c.k, c.n}, dt);
      set_num_threads(1);
      const Tensor one = matmul(a, b);
      set_num_threads(2);
      const Tensor two = matmul(a, b);
      set_num_threads(3);
      const Tensor three = matmul(a, b);
      CHECK(same_bits(one, two));
      CHECK(same_bits(one, three));
      // And the panels add up to the right product.
      const Tensor want = matmul(a.to(kFloat64), b.to(kFloat64));
      CHECK((one.to(kFloat64) - want).abs().max().item() <= (dt == kFloat32 ? 1e-3 : 1e-10));
    }
  }
}

TEST_CASE("training: three SGD steps of a conv net give the same weights for 1, 2 and 3 threads",
          "[parallel][e2e]") {
  ThreadCountGuard restore;
  auto train = [](int threads) {
    set_num_threads(threads);
    manual_seed(8);
    nn::Sequential model(std::make_shared<nn::Conv2d>(3, 8, 3), std::make_shared<nn::ReLU>(),
                         std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                         std::make_shared<nn::Linear>(8 * 7 * 7, 200), std::make_shared<nn::ReLU>(),
                         std::make_shared<nn::Linear>(200, 10));
    optim::SGDOptions o;
    o.lr = 0.05;
    o.momentum = 0.9;
    optim::SGD opt(model.parameters(), o);
    nn::CrossEntropyLoss criterion;
    const Tensor x = randn({33, 3, 16, 16});
    const Tensor y = (rand({33}) * 10.0).to(kInt64);
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      criterion(model(x), y).backward();
      opt.step();
    }
    return model.parameters();
  };
  const std::vector<Tensor> one = train(1), two = train(2), three = train(3);
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(one[i], two[i]));
    CHECK(same_bits(one[i], three[i]));
  }
}

TEST_CASE("parallel_for: a thread set serial runs its loops alone, other threads are unaffected",
          "[parallel]") {
  ThreadCountGuard restore;
  set_num_threads(3);
  std::atomic<int> calls{0}, foreign{0};
  std::thread t([&] {
    kernels::set_this_thread_serial(true);
    const auto me = std::this_thread::get_id();
    parallel_for(0, 1 << 20, 1, [&](int64_t b, int64_t e) {
      ++calls;
      if (std::this_thread::get_id() != me || b != 0 || e != (1 << 20)) ++foreign;
    });
  });
  t.join();
  CHECK(calls.load() == 1);
  CHECK(foreign.load() == 0);
  CHECK_FALSE(kernels::this_thread_serial());  // the flag is the thread's own
  // This thread still splits its loops.
  std::atomic<int> chunks{0};
  parallel_for(0, 1 << 20, 1, [&](int64_t, int64_t) { ++chunks; });
  CHECK(chunks.load() > 1);
}
