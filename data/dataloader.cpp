// ember/data/dataloader.cpp — epochs, the shuffle order, and the prefetching worker.
//
// One Epoch object per `for` loop. Batch k of the epoch is
//   dataset.get_batch(order[k*B : (k+1)*B])
// (B = batch_size; the last batch may be shorter), made either on the consumer's thread when it
// is needed (prefetch off) or ahead of time by a worker thread (prefetch on). Both paths call the
// same make_batch(k), so they give identical batches.
//
// The worker and the consumer share a queue of at most kQueueDepth finished batches, guarded by
// one mutex and two condition variables:
//   worker:   wait until the queue has room (or stop) -> make batch k -> push -> notify not_empty
//   consumer: wait until the queue is not empty (or the worker is done) -> pop -> notify not_full
// A failure while making batch k travels through the queue as an exception_ptr in batch k's place
// and is re-thrown by the consumer; the worker stops there. Shutting down (a new epoch, the
// loader's destructor) sets `stop`, wakes the worker and joins it; the worker checks `stop`
// between batches, so the wait is at most one batch.
#include "data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <utility>

#include "core/autograd/grad_mode.h"
#include "core/cuda.h"
#include "core/error.h"
#include "core/ops.h"
#include "kernels/philox.h"

namespace ember::data {

namespace {

constexpr size_t kQueueDepth = 2;

// Mixed into the Philox key so that the loader's stream differs from other users of a seed
// (the global generator with manual_seed(0), say): "DataLoad" in ASCII.
constexpr uint64_t kShuffleStream = 0x446174614C6F6164ULL;

}  // namespace

Tensor shuffled_order(int64_t n, uint64_t seed, int64_t epoch) {
  EMBER_CHECK(n >= 0, "shuffled_order: n must be non-negative, got ", n);
  Tensor t = empty({n}, TensorOptions(kInt64).device(Device::cpu()));  // filled on the host
  int64_t* p = t.data_ptr<int64_t>();
  std::iota(p, p + n, int64_t{0});
  // Fisher-Yates: position i swaps with a uniform j in [0, i]. The random bits for position i
  // are Philox(key, counter = (i, epoch)): a pure function of (seed, epoch, i). 64 random bits
  // reduced mod (i + 1) have a bias below 2^-30 for any dataset that fits in memory.
  const uint64_t key = seed ^ kShuffleStream;
  for (int64_t i = n - 1; i > 0; --i) {
    const kernels::Philox4 r =
        kernels::philox4x32(key, static_cast<uint64_t>(i), static_cast<uint64_t>(epoch));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    std::swap(p[i], p[bits % static_cast<uint64_t>(i + 1)]);
  }
  return t;
}

// ---- one epoch --------------------------------------------------------------------------------

struct DataLoader::Epoch {
  // Fixed for the epoch; the worker only reads them.
  std::shared_ptr<const Dataset> dataset;
  Tensor order;  // int64 [N]: the sample order
  int64_t batch_size = 1;
  bool pin_memory = false;
  int64_t num_batches = 0;
  int64_t first_batch = 0;  // a resumed epoch starts here
  bool prefetch = true;

  // Consumer side (the thread running the for loop).
  int64_t position = -1;  // index of `current`
  Batch current;
  bool finished = false;   // every batch delivered, or a batch failed
  bool abandoned = false;  // shut down before it finished

  // Shared with the worker, under `mu`.
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };
  std::mutex mu;
  std::condition_variable not_full, not_empty;
  std::deque<Slot> ready;
  bool stop = false;
  bool worker_done = false;
  std::thread worker;

  ~Epoch() { shutdown(); }

  // Batch k: gather rows order[k*B, k*B + len) and transform them. Data preparation never
  // records a graph.
  Batch make_batch(int64_t k) const {
    NoGradGuard no_grad;
    const int64_t start = k * batch_size;
    const int64_t len = std::min(batch_size, order.size(0) - start);
    Batch b = dataset->get_batch(order.narrow(0, start, len));
    if (pin_memory) {
      // Pinned on the worker thread, so the training loop's .to(cuda, non_blocking) can return
      // at once and the copy overlaps with the GPU's work on the previous batch.
      if (b.data.defined() && b.data.device().is_cpu()) b.data = b.data.pin_memory();
      if (b.target.defined() && b.target.device().is_cpu()) b.target = b.target.pin_memory();
    }
    return b;
  }

  void run_worker() {
    for (int64_t k = first_batch; k < num_batches; ++k) {
      {
        std::unique_lock<std::mutex> lock(mu);
        not_full.wait(lock, [&] { return stop || ready.size() < kQueueDepth; });
        if (stop) break;
      }
      Slot slot;
      try {
        slot.batch = make_batch(k);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = static_cast<bool>(slot.error);
      {
        std::lock_guard<std::mutex> lock(mu);
        ready.push_back(std::move(slot));
      }
      not_empty.notify_one();
      if (failed) break;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      worker_done = true;
    }
    not_empty.notify_one();
  }

  void start() {
    position = first_batch - 1;
    if (prefetch && first_batch < num_batches) worker = std::thread([this] { run_worker(); });
    advance();
  }

  // Batch k from the queue (prefetch) or made right here.
  Batch take(int64_t k) {
    if (!prefetch) return make_batch(k);
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mu);
      not_empty.wait(lock, [&] { return !ready.empty() || worker_done; });
      // The worker makes every batch unless stopped or failed, and a failure is queued.
      EMBER_CHECK_T(Error, !ready.empty(), "DataLoader: the worker stopped before batch ", k);
      slot = std::move(ready.front());
      ready.pop_front();
    }
    not_full.notify_one();
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.batch);
  }

  void check_not_abandoned() const {
    EMBER_CHECK_T(Error, !abandoned,
                  "DataLoader: this iterator's epoch was ended, because a new epoch was started "
                  "(begin() was called again) or the DataLoader was destroyed; loop over the "
                  "loader again to start a fresh epoch");
  }

  void advance() {
    check_not_abandoned();
    if (finished) return;
    current = Batch{};  // let the previous batch go before waiting for the next
    ++position;
    if (position >= num_batches) {
      finished = true;
      shutdown();
      return;
    }
    try {
      current = take(position);
    } catch (...) {
      finished = true;
      shutdown();
      throw;
    }
  }

  // Stops the worker (if any) and waits for it; idempotent.
  void shutdown() {
    if (!finished) abandoned = true;
    if (!worker.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    not_full.notify_all();
    worker.join();
    ready.clear();
  }
};

// ---- the loader -------------------------------------------------------------------------------

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  EMBER_CHECK(dataset_ != nullptr, "DataLoader: got a null dataset");
  EMBER_CHECK(options_.batch_size >= 1, "DataLoader: batch_size must be at least 1, got ",
              options_.batch_size);
  EMBER_CHECK_T(DeviceError, !options_.pin_memory || cuda::is_available(), "DataLoader: "
                "pin_memory needs a usable CUDA device (", cuda::unavailable_reason(),
                "); set pin_memory = cuda::is_available()");
  EMBER_CHECK(!(options_.sampler && options_.shuffle), "DataLoader: a sampler and shuffle=true "
              "together: the sampler decides the order (a DistributedSampler shuffles by "
              "itself), so set shuffle = false");
}

DataLoader::~DataLoader() {
  if (current_) current_->shutdown();
}

DataLoader& DataLoader::operator=(DataLoader&& other) noexcept {
  if (this != &other) {
    if (current_) current_->shutdown();
    dataset_ = std::move(other.dataset_);
    options_ = other.options_;
    epoch_ = other.epoch_;
    next_epoch_ = other.next_epoch_;
    next_first_batch_ = other.next_first_batch_;
    current_ = std::move(other.current_);
  }
  return *this;
}

int64_t DataLoader::size() const {
  const int64_t n = options_.sampler ? options_.sampler->length(dataset_->size()) : dataset_->size();
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

Tensor DataLoader::order(int64_t e) const {
  const int64_t n = dataset_->size();
  if (options_.sampler) return options_.sampler->indices(n, e);
  return options_.shuffle ? shuffled_order(n, options_.seed, e) : arange(0, n, 1, kInt64);
}

DataLoader::Iterator DataLoader::begin() {
  if (current_) current_->shutdown();
  current_.reset();
  epoch_ = next_epoch_++;
  auto e = std::make_shared<Epoch>();
  e->dataset = dataset_;
  e->order = order(epoch_);
  e->batch_size = options_.batch_size;
  e->num_batches = size();
  e->first_batch = next_first_batch_;
  next_first_batch_ = 0;
  e->prefetch = options_.prefetch;
  e->pin_memory = options_.pin_memory;
  current_ = e;
  e->start();
  return Iterator(std::move(e));
}

DataLoader::Iterator DataLoader::end() const { return Iterator(nullptr); }

void DataLoader::set_position(int64_t epoch, int64_t batch) {
  EMBER_CHECK(epoch >= 0, "DataLoader::set_position: epoch must be >= 0, got ", epoch);
  EMBER_CHECK(batch >= 0 && batch <= size(), "DataLoader::set_position: batch ", batch,
              " is outside this loader's epoch of ", size(), " batches (a checkpoint of a run "
              "with another batch size or dataset?)");
  next_epoch_ = epoch;
  next_first_batch_ = batch;
}

int64_t DataLoader::batch_index() const {
  if (!current_) return -1;
  return std::min(current_->position, current_->num_batches - 1);
}

// ---- the iterator -----------------------------------------------------------------------------

bool DataLoader::Iterator::done() const { return !epoch_ || epoch_->finished; }

const Batch& DataLoader::Iterator::operator*() const {
  EMBER_CHECK_T(Error, !done(), "DataLoader: dereferenced the end of an epoch");
  epoch_->check_not_abandoned();
  return epoch_->current;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  EMBER_CHECK_T(Error, epoch_ != nullptr, "DataLoader: incremented the end() iterator");
  epoch_->advance();
  return *this;
}

}  // namespace ember::data
