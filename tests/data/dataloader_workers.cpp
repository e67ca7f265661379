// DataLoader workers (num_workers, prefetch_factor, persistent_workers), the seeded random
// augmentations (RandomCrop, RandomHorizontalFlip) and LazyImageFolder, which decodes on the fly.
//
// The promise under test: the batches are a function of (dataset, seed, epoch) alone — the same
// for every num_workers and every timing — and the workers never leave the loop hanging, whether
// a sample fails, the loop stops early or the loader is destroyed mid-epoch.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "test_files.h"

using namespace ember;
using namespace ember::data;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using test::counting_dataset;
using test::error_of;

template <typename T>
std::vector<T> values(const Tensor& t) {
  return t.to_vector<T>();
}

// The data and targets of every batch of one epoch, flattened, one entry per batch.
struct EpochValues {
  std::vector<std::vector<double>> data;
  std::vector<std::vector<int64_t>> targets;
  bool operator==(const EpochValues& o) const { return data == o.data && targets == o.targets; }
};

EpochValues one_epoch(DataLoader& loader) {
  EpochValues v;
  for (const Batch& b : loader) {
    v.data.push_back(values<double>(b.data.to(kFloat64)));
    v.targets.push_back(values<int64_t>(b.target));
  }
  return v;
}

// A dataset that records how it is called: how many get_batch calls, from how many distinct
// threads, and that sleeps a random 0..max_sleep_us in each call so that workers finish out of
// order. `fail_at` (when >= 0) makes any batch holding that sample throw.
struct ProbeState {
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> threads{0};  // distinct threads that ever called get_batch
  std::atomic<int64_t> fail_at{-1};
  int max_sleep_us = 0;
  int generation = 0;  // tells this probe's threads from an earlier probe's
};

class ProbeDataset : public Dataset {
 public:
  ProbeDataset(int64_t n, std::shared_ptr<ProbeState> state) : n_(n), state_(std::move(state)) {
    static std::atomic<int> generations{0};
    state_->generation = ++generations;
  }
  int64_t size() const override { return n_; }
  Batch get_batch(const Tensor& indices) const override {
    // A thread_local flag is fresh in every new thread, even if the OS reuses a thread id.
    thread_local int seen_generation = 0;
    if (seen_generation != state_->generation) {
      seen_generation = state_->generation;
      ++state_->threads;
    }
    ++state_->calls;
    if (state_->max_sleep_us > 0) {
      thread_local std::mt19937 rng(std::random_device{}());
      std::uniform_int_distribution<int> us(0, state_->max_sleep_us);
      std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
    }
    const std::vector<int64_t> ix = values<int64_t>(indices);
    for (int64_t i : ix) {
      if (i == state_->fail_at.load()) {
        throw ValueError("probe: sample " + std::to_string(i) + " is corrupt");
      }
    }
    Tensor t = from_vector<int64_t>(ix, {static_cast<int64_t>(ix.size())}, kInt64);
    return Batch{t * 10, t};
  }

 private:
  int64_t n_;
  std::shared_ptr<ProbeState> state_;
};

DataLoaderOptions opts(int64_t batch, bool shuffle, int workers, int prefetch_factor = 2,
                       bool persistent = false) {
  DataLoaderOptions o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.seed = 5;
  o.num_workers = workers;
  o.prefetch_factor = prefetch_factor;
  o.persistent_workers = persistent;
  return o;
}

// Waits up to `limit` for `pred`, polling; returns whether it became true.
template <typename F>
bool eventually(F&& pred, std::chrono::milliseconds limit = std::chrono::milliseconds(2000)) {
  const auto t0 = Clock::now();
  while (!pred()) {
    if (Clock::now() - t0 > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

// ---- workers ----------------------------------------------------------------------------------

TEST_CASE("DataLoader workers: the same batches for num_workers 0, 1, 2, 3", "[data][dataloader]") {
  // A transform, shuffle, a short last batch, and two epochs (each its own order).
  const TensorDataset ds = counting_dataset(103, ToFloat{});
  DataLoaderOptions serial = opts(8, true, 0);
  serial.prefetch = false;  // every batch made on this thread: the reference
  DataLoader reference(ds, serial);
  const EpochValues e0 = one_epoch(reference), e1 = one_epoch(reference);
  REQUIRE(e0.targets.size() == 13);
  CHECK(e0.targets.back().size() == 7);
  CHECK(e0.targets != e1.targets);
  for (int workers : {0, 1, 2, 3}) {
    for (int pf : {1, 2, 5}) {
      for (bool persistent : {false, true}) {
        if (persistent && workers == 0) continue;
        INFO("num_workers " << workers << " prefetch_factor " << pf << " persistent "
                            << persistent);
        DataLoader loader(ds, opts(8, true, workers, pf, persistent));
        CHECK(one_epoch(loader) == e0);
        CHECK(one_epoch(loader) == e1);
      }
    }
  }
}

TEST_CASE("DataLoader workers: batches arrive in order although the workers finish out of order",
          "[data][dataloader]") {
  auto state = std::make_shared<ProbeState>();
  state->max_sleep_us = 2000;
  DataLoader loader(ProbeDataset(60, state), opts(2, true, 3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::vector<int64_t> expected = values<int64_t>(loader.order(epoch));
    std::vector<int64_t> got;
    for (const Batch& b : loader) {
      for (int64_t v : values<int64_t>(b.target)) got.push_back(v);
      CHECK(values<int64_t>(b.data) == values<int64_t>(b.target * 10));
    }
    CHECK(got == expected);
  }
  CHECK(state->calls == 60);  // 30 batches per epoch, each made once
}

TEST_CASE("DataLoader workers: at most num_workers * prefetch_factor batches ahead",
          "[data][dataloader]") {
  struct Case {
    int workers, pf;
    bool prefetch;
    int64_t ahead;  // batches made beyond the one the loop holds
  };
  for (const Case c : {Case{2, 3, true, 6}, Case{1, 1, true, 1}, Case{3, 2, true, 6},
                       Case{0, 1, true, 1}, Case{0, 4, true, 4}, Case{0, 2, false, 0}}) {
    INFO("num_workers " << c.workers << " prefetch_factor " << c.pf << " prefetch " << c.prefetch);
    auto state = std::make_shared<ProbeState>();
    DataLoaderOptions o = opts(1, false, c.workers, c.pf);
    o.prefetch = c.prefetch;
    DataLoader loader(ProbeDataset(100, state), o);
    DataLoader::Iterator it = loader.begin();  // the loop holds batch 0
    CHECK(eventually([&] { return state->calls.load() == 1 + c.ahead; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // and no more come
    CHECK(state->calls == 1 + c.ahead);
    ++it;  // holds batch 1: the window moves by one
    CHECK(eventually([&] { return state->calls.load() == 2 + c.ahead; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(state->calls == 2 + c.ahead);
  }
}

TEST_CASE("DataLoader workers: persistent workers are kept across epochs, others are not",
          "[data][dataloader]") {
  for (bool persistent : {true, false}) {
    INFO("persistent " << persistent);
    auto state = std::make_shared<ProbeState>();
    state->max_sleep_us = 200;
    DataLoader loader(ProbeDataset(40, state), opts(2, true, 2, 2, persistent));
    std::vector<EpochValues> epochs;
    for (int e = 0; e < 4; ++e) epochs.push_back(one_epoch(loader));
    // Four epochs, each with its own order; the threads: the same two throughout, or new ones
    // each epoch (at least one per epoch does some work).
    CHECK(epochs[0].targets != epochs[1].targets);
    if (persistent) {
      CHECK(state->threads <= 2);
    } else {
      CHECK(state->threads >= 4);
    }
    // An epoch left early, then a full one: persistent workers drop the old epoch's work.
    for (const Batch& b : loader) {
      (void)b;
      break;
    }
    CHECK(loader.epoch() == 4);
    loader.set_epoch(1);
    CHECK(one_epoch(loader) == epochs[1]);
  }
}

TEST_CASE("DataLoader workers: a failing sample names the worker and the sample, keeps its type",
          "[data][dataloader]") {
  auto state = std::make_shared<ProbeState>();
  state->fail_at = 37;
  state->max_sleep_us = 300;
  for (bool persistent : {false, true}) {
    INFO("persistent " << persistent);
    DataLoader loader(ProbeDataset(64, state), opts(4, true, 2, 2, persistent));
    // Where sample 37 lands in epoch 0's order: the batches before it are delivered.
    const std::vector<int64_t> order = values<int64_t>(loader.order(0));
    const int64_t pos = std::find(order.begin(), order.end(), 37) - order.begin();
    int delivered = 0;
    const std::string msg = error_of<ValueError>([&] {
      for (const Batch& b : loader) {
        (void)b;
        ++delivered;
      }
    });
    CHECK(delivered == pos / 4);
    CHECK_THAT(msg, Contains("DataLoader worker "));
    CHECK_THAT(msg, Contains(": sample 37: probe: sample 37 is corrupt"));
    // The loader is still usable: once the sample is mended, the next epoch runs to its end.
    state->fail_at = -1;
    CHECK(one_epoch(loader).targets.size() == 16);
    state->fail_at = 37;
  }
  // A failure in the first batch comes out of begin(); the batch that fails only as a whole (a
  // transform that rejects batches of 3) says so.
  state->fail_at = 0;
  DataLoader first(ProbeDataset(8, state), opts(4, false, 2));
  CHECK_THAT(error_of<ValueError>([&] { first.begin(); }), Contains("sample 0: probe"));
  Transform picky = [](const Tensor& d) {
    if (d.size(0) == 3) throw ValueError("picky: no batches of 3");
    return d;
  };
  DataLoader whole(counting_dataset(9, picky), opts(3, false, 2));
  const std::string msg = error_of<ValueError>([&] { whole.begin(); });
  CHECK_THAT(msg, Contains("DataLoader worker "));
  CHECK_THAT(msg, Contains("batch 0 (samples 0, ...; each alone works): picky: no batches of 3"));
  // num_workers = 0 keeps the exception exactly as thrown.
  DataLoader plain(counting_dataset(9, picky), opts(3, false, 0));
  CHECK(error_of<ValueError>([&] { plain.begin(); }) == "picky: no batches of 3");
}

TEST_CASE("DataLoader workers: leaving early and destroying mid-epoch join without hanging",
          "[data][dataloader]") {
  auto state = std::make_shared<ProbeState>();
  state->max_sleep_us = 3000;
  const auto t0 = Clock::now();
  for (bool persistent : {false, true}) {
    {
      DataLoader loader(ProbeDataset(1000, state), opts(1, true, 3, 4, persistent));
      DataLoader::Iterator it = loader.begin();
      ++it;
    }  // destroyed with 12 batches in flight
    DataLoader::Iterator stale = [&] {
      DataLoader loader(ProbeDataset(1000, state), opts(1, true, 2, 2, persistent));
      return loader.begin();
    }();  // the iterator outlives its loader and says so
    CHECK_THAT(error_of<Error>([&] { ++stale; }), Contains("epoch was ended"));
    // Many short epochs, some left after a few batches.
    DataLoader loader(ProbeDataset(30, state), opts(2, true, 2, 1, persistent));
    for (int epoch = 0; epoch < 30; ++epoch) {
      int k = 0;
      for (const Batch& b : loader) {
        (void)b;
        if (epoch % 2 == 0 && ++k == 3) break;
      }
    }
    DataLoader moved = std::move(loader);
    CHECK(one_epoch(moved).targets.size() == 15);
  }
  // Each shutdown waits for at most one batch per worker (3 ms each): far below this.
  CHECK(Clock::now() - t0 < std::chrono::seconds(20));
}

TEST_CASE("DataLoader workers: options are checked", "[data][dataloader]") {
  const TensorDataset ds = counting_dataset(4);
  CHECK_THAT(error_of<ValueError>([&] { DataLoader(ds, opts(1, false, -1)); }),
             Contains("num_workers must be >= 0 (0 = no worker threads besides the prefetch thread), got -1"));
  CHECK_THAT(error_of<ValueError>([&] { DataLoader(ds, opts(1, false, 2, 0)); }),
             Contains("prefetch_factor (batches made ahead per worker) must be at least 1, got 0"));
  CHECK_THAT(error_of<ValueError>([&] { DataLoader(ds, opts(1, false, 0, 2, true)); }),
             Contains("persistent_workers keeps worker threads across epochs, but num_workers "
                      "is 0"));
}

// ---- augmentations ----------------------------------------------------------------------------

TEST_CASE("RandomHorizontalFlip: mirrors rows exactly, p = 0 and p = 1, any dtype",
          "[data][augment]") {
  // Two images [2, 2, 3] with distinct values.
  const Tensor img = arange(0, 24, 1, kInt64).reshape({2, 2, 2, 3}).to(kUInt8);
  const Tensor idx = tensor({3, 8}, kInt64);
  const Tensor flipped = RandomHorizontalFlip{1.0, 0}(img, idx, 0);
  CHECK(flipped.dtype() == kUInt8);
  CHECK(values<int64_t>(flipped.to(kInt64)) ==
        std::vector<int64_t>{2, 1, 0, 5, 4, 3, 8, 7, 6, 11, 10, 9,
                             14, 13, 12, 17, 16, 15, 20, 19, 18, 23, 22, 21});
  CHECK(values<int64_t>(RandomHorizontalFlip{0.0, 0}(img, idx, 0).to(kInt64)) ==
        values<int64_t>(img.to(kInt64)));
  // float32, an even width: [1, 1, 1, 4]
  const Tensor f = tensor({1.5, 2.5, 3.5, 4.5}, kFloat32).reshape({1, 1, 1, 4});
  CHECK(values<float>(RandomHorizontalFlip{1.0, 0}(f, tensor({0}, kInt64), 0)) ==
        std::vector<float>{4.5f, 3.5f, 2.5f, 1.5f});
  // p = 0.5: roughly half of 400 samples are flipped, the same ones on every call.
  const Tensor many = arange(0, 400 * 2, 1, kInt64).reshape({400, 1, 1, 2}).to(kFloat32);
  const Tensor ids = arange(0, 400, 1, kInt64);
  const Tensor a = RandomHorizontalFlip{0.5, 9}(many, ids, 3);
  const Tensor b = RandomHorizontalFlip{0.5, 9}(many, ids, 3);
  CHECK(values<float>(a) == values<float>(b));
  const std::vector<float> av = values<float>(a);
  int n_flipped = 0;
  for (int i = 0; i < 400; ++i) n_flipped += av[2 * i] > av[2 * i + 1];
  CHECK(n_flipped > 150);
  CHECK(n_flipped < 250);
  CHECK_THAT(error_of<ValueError>([&] { RandomHorizontalFlip{1.5, 0}(img, idx, 0); }),
             Contains("p is a probability, got 1.5"));
  CHECK_THAT(error_of<ValueError>([&] { RandomHorizontalFlip{}(img, tensor({1}, kInt64), 0); }),
             Contains("expected indices int64 [2]"));
}

TEST_CASE("RandomCrop: with padding, every output is one window of the zero-padded image",
          "[data][augment]") {
  // One 3x3 image 1..9 padded by 1 is this 5x5; a 3x3 crop is one of its 9 windows.
  const Tensor img = arange(1, 10, 1, kInt64).reshape({1, 1, 3, 3}).to(kFloat32);
  int padded[5][5] = {};
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 3; ++x) padded[y + 1][x + 1] = 1 + 3 * y + x;
  }
  std::set<int> windows_seen;
  for (int64_t sample = 0; sample < 200; ++sample) {
    const std::vector<float> got =
        values<float>(RandomCrop{3, 3, 1, 7}(img, tensor({static_cast<double>(sample)}, kInt64), 0));
    int match = -1;
    for (int top = 0; top < 3 && match < 0; ++top) {
      for (int left = 0; left < 3 && match < 0; ++left) {
        bool same = true;
        for (int y = 0; y < 3; ++y) {
          for (int x = 0; x < 3; ++x) same = same && got[3 * y + x] == padded[top + y][left + x];
        }
        if (same) match = 3 * top + left;
      }
    }
    INFO("sample " << sample);
    REQUIRE(match >= 0);
    windows_seen.insert(match);
  }
  CHECK(windows_seen.size() == 9);  // every position is drawn
  // Without padding, a 2x2 crop of a 2x3 image: one of 2 windows; uint8 works the same.
  const Tensor small = arange(0, 6, 1, kInt64).reshape({1, 1, 2, 3}).to(kUInt8);
  std::set<std::vector<int64_t>> crops;
  for (int64_t s = 0; s < 50; ++s) {
    crops.insert(values<int64_t>(
        RandomCrop{2, 2, 0, 1}(small, tensor({static_cast<double>(s)}, kInt64), 0).to(kInt64)));
  }
  CHECK(crops == std::set<std::vector<int64_t>>{{0, 1, 3, 4}, {1, 2, 4, 5}});
  CHECK_THAT(error_of<ValueError>([&] { RandomCrop{4, 4, 0, 0}(small, tensor({0}, kInt64), 0); }),
             Contains("a 4x4 crop does not fit in a 2x3 image padded by 0"));
}

TEST_CASE("Augmentations: a function of (seed, epoch, sample), the same for any num_workers",
          "[data][augment][dataloader]") {
  // 64 random 8x8 RGB images, cropped to 6x6 with padding 2 and flipped.
  manual_seed(3);
  const Tensor images = (rand({64, 3, 8, 8}) * 255).to(kUInt8);
  TensorDataset ds(images, arange(0, 64, 1, kInt64), ToFloat{});
  ds.set_augmentation(ComposeAugmentations({RandomCrop{6, 6, 2, 11}, RandomHorizontalFlip{0.5, 12}}));
  // The same sample in a different batch position or batch gives the same crop.
  const Tensor a = ds.get_batch_for_epoch(tensor({5, 9}, kInt64), 0).data;
  const Tensor b = ds.get_batch_for_epoch(tensor({9}, kInt64), 0).data;
  CHECK(values<float>(a.narrow(0, 1, 1)) == values<float>(b));
  // A new epoch draws new crops (for some samples: a draw may repeat by chance).
  const Tensor all = arange(0, 64, 1, kInt64);
  CHECK(values<float>(ds.get_batch_for_epoch(all, 0).data) !=
        values<float>(ds.get_batch_for_epoch(all, 1).data));
  // Another seed too.
  TensorDataset other(images, arange(0, 64, 1, kInt64), ToFloat{});
  other.set_augmentation(RandomCrop{6, 6, 2, 99});
  TensorDataset same_seed(images, arange(0, 64, 1, kInt64), ToFloat{});
  same_seed.set_augmentation(RandomCrop{6, 6, 2, 11});
  CHECK(values<float>(other.get_batch(all).data) != values<float>(same_seed.get_batch(all).data));

  DataLoaderOptions serial = opts(5, true, 0);
  serial.prefetch = false;
  DataLoader reference(ds, serial);
  const EpochValues e0 = one_epoch(reference), e1 = one_epoch(reference);
  CHECK(e0.data.size() == 13);
  for (int workers : {1, 2, 3}) {
    INFO("num_workers " << workers);
    DataLoader loader(ds, opts(5, true, workers));
    CHECK(one_epoch(loader) == e0);
    CHECK(one_epoch(loader) == e1);
  }
}

// ---- LazyImageFolder --------------------------------------------------------------------------

TEST_CASE("LazyImageFolder: decodes on every get what ImageFolder decodes up front",
          "[data][dataloader][image]") {
  test::TempDir dir("ember_test_lazy_");
  fs::create_directories(dir / "Cat");
  fs::create_directories(dir / "Dog");
  manual_seed(4);
  for (int i = 0; i < 6; ++i) {
    const Tensor photo = (rand({3, 20, 24}) * 255).to(kUInt8);
    write_jpeg(dir / ((i < 3 ? "Cat/" : "Dog/") + std::to_string(i) + ".jpg"), photo);
  }
  ImageFolderOptions o;
  o.height = 12;
  o.width = 16;
  o.grayscale = false;
  o.use_cache = false;
  o.verbose = false;
  o.threads = 1;
  const ImageFolder eager(dir.str(), o);
  const LazyImageFolder lazy(dir.str(), o);
  REQUIRE(lazy.size() == 6);
  CHECK(lazy.classes() == eager.classes());
  const Tensor all = arange(0, 6, 1, kInt64);
  const Batch b = lazy.get_batch(all);
  CHECK(b.data.shape() == Shape{6, 3, 12, 16});
  CHECK(values<int64_t>(b.data.to(kInt64)) == values<int64_t>(eager.images().to(kInt64)));
  CHECK(values<int64_t>(b.target) == std::vector<int64_t>{0, 0, 0, 1, 1, 1});

  // With an augmentation, through workers: the same batches for 0 and 2 workers.
  const LazyImageFolder augmented(dir.str(), o, ToFloat{},
                                  ComposeAugmentations({RandomCrop{10, 10, 2, 1},
                                                        RandomHorizontalFlip{0.5, 2}}));
  DataLoaderOptions serial = opts(4, true, 0);
  serial.prefetch = false;
  DataLoader reference(augmented, serial), workers(augmented, opts(4, true, 2));
  const EpochValues e0 = one_epoch(reference);
  CHECK(e0.data[0].size() == 4 * 3 * 10 * 10);
  CHECK(one_epoch(workers) == e0);

  // A corrupt file: an IOError through the loader that names the worker, the sample and the file.
  test::write_bytes(dir / "Dog/4.jpg", test::Bytes{0xFF, 0xD8, 0xFF, 0x00, 0x01});
  DataLoader broken(LazyImageFolder(dir.str(), o), opts(2, false, 2));
  const std::string msg = error_of<IOError>([&] { (void)one_epoch(broken); });
  CHECK_THAT(msg, Contains("DataLoader worker "));
  CHECK_THAT(msg, Contains(": sample 4: LazyImageFolder: cannot decode '"));
  CHECK_THAT(msg, Contains("4.jpg"));
}
