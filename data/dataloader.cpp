// ember/data/dataloader.cpp — epochs, the shuffle order, and the worker threads.
//
// One Epoch object per `for` loop. Batch k of the epoch is
//   dataset.get_batch_for_epoch(order[k*B : (k+1)*B], epoch)
// (B = batch_size; the last batch may be shorter), made either on the consumer's thread when it
// is needed (num_workers = 0, prefetch off) or ahead of time by worker threads (the one prefetch
// thread, or num_workers of them). Every path calls the same make_batch(k), so the batches are
// identical whoever makes them.
//
// The workers and the consumer share, under one mutex (Workers::mu):
//   job          the epoch being worked on (null between epochs, for persistent workers)
//   next_claim   the next batch no worker has taken yet: claims go 0, 1, 2, ... in order
//   next_deliver the batch the consumer will ask for next
//   ready        finished batches by index (a map: batch 5 may finish before batch 4)
// and two condition variables:
//   worker:   wait until (stop, or next_claim < next_deliver + window) -> claim k = next_claim++
//             -> make batch k without the lock -> ready[k] = it -> notify ready_cv
//   consumer: wait until ready holds k (ready_cv) -> take it -> next_deliver = k + 1
//             -> notify work_cv (the window moved)
// window = num_workers * prefetch_factor bounds the batches in flight. The consumer asks for k
// only after k - 1, so next_deliver + window > k: batch k has been or will be claimed, and every
// claimed batch is finished (or fails) — the wait always ends.
//
// A failure while making batch k is stored in batch k's place as an exception_ptr and re-thrown
// by the consumer when it reaches k; no batch after k is claimed (`failed`). Ending an epoch (a
// new begin(), the loader's destructor, or its last batch) cancels its job and waits for the
// workers still making one of its batches — at most one batch each; the workers of a
// non-persistent epoch are then stopped and joined.
#include "data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/cuda.h"
#include "kernels/base/error.h"
#include "core/ops.h"
#include "kernels/base/parallel.h"
#include "kernels/base/philox.h"

namespace ember::data {

namespace {

// Mixed into the Philox key so that the loader's stream differs from other users of a seed
// (the global generator with manual_seed(0), say): "DataLoad" in ASCII.
constexpr uint64_t kShuffleStream = 0x446174614C6F6164ULL;

// `error`, re-thrown with `prefix` in front of its message and its type kept (so that a
// `catch (const IOError&)` around the loop still sees an IOError).
std::exception_ptr with_prefix(const std::exception_ptr& error, const std::string& prefix) {
  try {
    std::rethrow_exception(error);
  } catch (const OutOfMemoryError& e) {
    return std::make_exception_ptr(OutOfMemoryError(prefix + e.what()));
  } catch (const DeviceError& e) {
    return std::make_exception_ptr(DeviceError(prefix + e.what()));
  } catch (const ValueError& e) {
    return std::make_exception_ptr(ValueError(prefix + e.what()));
  } catch (const IOError& e) {
    return std::make_exception_ptr(IOError(prefix + e.what()));
  } catch (const AutogradError& e) {
    return std::make_exception_ptr(AutogradError(prefix + e.what()));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(Error(prefix + e.what()));
  } catch (...) {
    return std::make_exception_ptr(Error(prefix + "an exception that is not a std::exception"));
  }
}

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

// ---- one epoch's work, and the threads that do it --------------------------------------------

namespace {

struct Slot {
  Batch batch;
  std::exception_ptr error;
};

// What the workers need to make the batches of one epoch. Fields above the line are fixed for
// the epoch; those below are guarded by Workers::mu.
struct Job {
  std::shared_ptr<const Dataset> dataset;
  Tensor order;  // int64 [N]: the sample order
  int64_t epoch = 0;
  int64_t batch_size = 1;
  int64_t num_batches = 0;
  int64_t window = 2;         // batches claimed but not yet taken by the consumer, at most
  bool pin_memory = false;
  bool name_the_sample = false;  // num_workers > 0: errors say which worker and which sample
  // ----
  int64_t next_claim = 0, next_deliver = 0;
  std::map<int64_t, Slot> ready;
  int64_t busy = 0;      // workers making one of this job's batches right now
  bool failed = false;   // a batch failed: claim no further
  bool cancelled = false;

  bool claimable() const {
    return !cancelled && !failed && next_claim < num_batches &&
           next_claim < next_deliver + window;
  }

  // Batch k: gather rows order[k*B, k*B + len) and transform them. Data preparation never
  // records a graph.
  Batch make_batch(int64_t k) const {
    NoGradGuard no_grad;
    const int64_t start = k * batch_size;
    const int64_t len = std::min(batch_size, order.size(0) - start);
    Batch b = dataset->get_batch_for_epoch(order.narrow(0, start, len), epoch);
    if (pin_memory) {
      // Pinned on the worker thread, so the training loop's .to(cuda, non_blocking) can return
      // at once and the copy overlaps with the GPU's work on the previous batch.
      if (b.data.defined() && b.data.device().is_cpu()) b.data = b.data.pin_memory();
      if (b.target.defined() && b.target.device().is_cpu()) b.target = b.target.pin_memory();
    }
    return b;
  }

  // make_batch(k) on worker `w`, its exception caught. A dataset gets a whole batch at once, so
  // when one fails we do not know which sample did: we ask for the batch's samples one at a time
  // (cheap next to a failed epoch) and name the first that fails on its own, with its message.
  Slot make_slot(int64_t k, int w) const {
    Slot s;
    try {
      s.batch = make_batch(k);
      return s;
    } catch (...) {
      s.error = std::current_exception();
    }
    if (!name_the_sample) return s;
    const std::string worker = "DataLoader worker " + std::to_string(w) + ": ";
    const int64_t start = k * batch_size;
    const int64_t len = std::min(batch_size, order.size(0) - start);
    const int64_t* idx = order.data_ptr<int64_t>() + start;
    for (int64_t i = 0; i < len; ++i) {
      try {
        NoGradGuard no_grad;
        (void)dataset->get_batch_for_epoch(order.narrow(0, start + i, 1), epoch);
      } catch (...) {
        s.error = with_prefix(std::current_exception(),
                              worker + "sample " + std::to_string(idx[i]) + ": ");
        return s;
      }
    }
    // Every sample works alone: the batch as a whole failed (a transform that cannot take it).
    s.error = with_prefix(s.error, worker + "batch " + std::to_string(k) + " (samples " +
                                       std::to_string(idx[0]) + ", ...; each alone works): ");
    return s;
  }
};

}  // namespace

struct DataLoader::Workers {
  std::mutex mu;
  std::condition_variable work_cv;   // workers wait here for a claimable batch (or stop)
  std::condition_variable ready_cv;  // the consumer waits here for its batch (and for busy == 0)
  std::shared_ptr<Job> job;          // null: nothing to do
  bool stop = false;
  std::vector<std::thread> threads;

  explicit Workers(int n) {
    threads.reserve(static_cast<size_t>(n));
    try {
      for (int w = 0; w < n; ++w) threads.emplace_back([this, w] { run(w); });
    } catch (...) {  // could not start a thread: stop those that did start
      shut_down();
      throw;
    }
  }
  ~Workers() { shut_down(); }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  void shut_down() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
  }

  void run(int w) {
    // One thread per worker, as in PyTorch: the workers run side by side, and the CPU pool stays
    // free for the training loop (kernels/base/parallel.h).
    kernels::set_this_thread_serial(true);
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || (job && job->claimable()); });
      if (stop) return;
      const std::shared_ptr<Job> j = job;
      const int64_t k = j->next_claim++;
      ++j->busy;
      lock.unlock();
      Slot slot = j->make_slot(k, w);
      lock.lock();
      --j->busy;
      if (slot.error) j->failed = true;
      if (!j->cancelled) j->ready.emplace(k, std::move(slot));
      // notify_all: the consumer waits for one particular k, and shutdown waits for busy == 0.
      ready_cv.notify_all();
    }
  }

  // Hands `j` to the workers.
  void start(std::shared_ptr<Job> j) {
    {
      std::lock_guard<std::mutex> lock(mu);
      job = std::move(j);
    }
    work_cv.notify_all();
  }

  // Batch k of `j`, waiting for it if needed.
  Slot take(Job& j, int64_t k) {
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mu);
      ready_cv.wait(lock, [&] { return j.ready.count(k) != 0; });
      auto it = j.ready.find(k);
      slot = std::move(it->second);
      j.ready.erase(it);
      j.next_deliver = k + 1;
    }
    work_cv.notify_all();  // the window moved: one more batch may be claimed
    return slot;
  }

  // No more batches of `j`; returns once no worker is making one.
  void cancel(Job& j) {
    std::unique_lock<std::mutex> lock(mu);
    j.cancelled = true;
    if (job.get() == &j) job.reset();
    ready_cv.wait(lock, [&] { return j.busy == 0; });
    j.ready.clear();
  }
};

// ---- one epoch (the consumer's side) ----------------------------------------------------------

struct DataLoader::Epoch {
  std::shared_ptr<Job> job;
  std::shared_ptr<Workers> workers;  // null: every batch is made on the consumer's thread
  int64_t num_batches = 0;
  int64_t first_batch = 0;  // a resumed epoch starts here

  int64_t position = -1;  // index of `current`
  Batch current;
  bool finished = false;   // every batch delivered, or a batch failed
  bool abandoned = false;  // shut down before it finished

  ~Epoch() { shutdown(); }

  void start() {
    position = first_batch - 1;
    if (workers) workers->start(job);
    advance();
  }

  // Batch k from the workers, or made right here.
  Batch take(int64_t k) {
    if (!workers) return job->make_batch(k);
    Slot slot = workers->take(*job, k);
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

  // Ends the job and lets go of the workers (joining them unless they are persistent, in which
  // case the loader still holds them); idempotent.
  void shutdown() {
    if (!finished) abandoned = true;
    if (!workers) return;
    workers->cancel(*job);
    workers.reset();
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
  EMBER_CHECK(options_.num_workers >= 0, "DataLoader: num_workers must be >= 0 (0 = no worker "
              "threads besides the prefetch thread), got ", options_.num_workers);
  EMBER_CHECK(options_.prefetch_factor >= 1, "DataLoader: prefetch_factor (batches made ahead "
              "per worker) must be at least 1, got ", options_.prefetch_factor);
  EMBER_CHECK(!options_.persistent_workers || options_.num_workers > 0, "DataLoader: "
              "persistent_workers keeps worker threads across epochs, but num_workers is 0: set "
              "num_workers > 0 or persistent_workers = false");
  EMBER_CHECK(!(options_.sampler && options_.shuffle), "DataLoader: a sampler and shuffle=true "
              "together: the sampler decides the order (a DistributedSampler shuffles by "
              "itself), so set shuffle = false");
}

DataLoader::~DataLoader() {
  if (current_) current_->shutdown();
  workers_.reset();  // the last owner of persistent workers: joins them
}

DataLoader& DataLoader::operator=(DataLoader&& other) noexcept {
  if (this != &other) {
    if (current_) current_->shutdown();
    current_.reset();
    workers_.reset();
    dataset_ = std::move(other.dataset_);
    options_ = other.options_;
    epoch_ = other.epoch_;
    next_epoch_ = other.next_epoch_;
    next_first_batch_ = other.next_first_batch_;
    current_ = std::move(other.current_);
    workers_ = std::move(other.workers_);
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
  auto job = std::make_shared<Job>();
  job->dataset = dataset_;
  job->order = order(epoch_).contiguous();  // make_slot reads it as int64_t*
  job->epoch = epoch_;
  job->batch_size = options_.batch_size;
  job->num_batches = size();
  job->next_claim = job->next_deliver = next_first_batch_;
  job->pin_memory = options_.pin_memory;
  const int threads = options_.num_workers > 0 ? options_.num_workers : options_.prefetch ? 1 : 0;
  job->window = static_cast<int64_t>(std::max(threads, 1)) * options_.prefetch_factor;
  job->name_the_sample = options_.num_workers > 0;

  auto e = std::make_shared<Epoch>();
  e->job = job;
  e->num_batches = job->num_batches;
  e->first_batch = next_first_batch_;
  next_first_batch_ = 0;
  if (threads > 0 && e->first_batch < e->num_batches) {
    if (options_.persistent_workers) {
      if (!workers_) workers_ = std::make_shared<Workers>(threads);
      e->workers = workers_;
    } else {
      e->workers = std::make_shared<Workers>(threads);
    }
  }
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
