// ember/data/dataloader.h — mini-batches from a Dataset, shuffled per epoch, prepared ahead.
//
// The tutorial's
//   train_loader = DataLoader(train_dataset, shuffle=True, batch_size=64)
//   for batch_idx, (inputs, target) in enumerate(train_loader): ...
// reads in ember as
//   data::DataLoader train_loader(train_dataset, {/*batch_size=*/64, /*shuffle=*/true});
//   for (const data::Batch& b : train_loader) { ... b.data ... b.target ... }
//
// Each `for` loop over the loader is one epoch: begin() starts it. With shuffle, the order of an
// epoch is a permutation computed from (seed, epoch number) alone — the same seed replays the
// same orders, every epoch gets a new one, and the global generator (manual_seed, randn, dropout)
// is neither used nor disturbed, so model initialisation does not depend on the data order.
//
// Prefetch: while the training step works on batch k, a background thread already gathers and
// transforms batches k+1 and k+2 (a queue of depth 2; it waits when the queue is full). An
// exception thrown while preparing a batch (a failing transform, say) is re-thrown by the loop
// at that batch. Leaving the loop early is fine: the worker waits idle and is stopped and joined
// by the next begin() or by the loader's destructor. One thread uses a loader at a time.
//
// Workers (num_workers = N > 0, PyTorch's DataLoader(num_workers=N)): N threads each make whole
// batches (gather the samples + transform), up to N * prefetch_factor batches ahead of the loop,
// and the loop receives them in the epoch's order. Which worker makes which batch depends on
// timing, but batch k is always the same function of (dataset, order, k), so the batches are
// bit-identical for every N, including 0. An exception in a worker reaches the loop at that
// batch, of the same type, its message prefixed with the worker and the sample that failed:
//   "DataLoader worker 1: sample 1234: truncated JPEG: ..."
// Workers are threads, not processes: the dataset's get_batch is called from several threads at
// once, so it must be safe to call concurrently (every dataset in data/ is: see dataset.h), and
// so must the transforms and augmentations it runs (data/transforms.h's keep no state; a lambda
// of yours that counts or caches needs a lock). Each worker runs its tensor ops on its own
// thread, as PyTorch's workers run with one thread each: the CPU thread pool (set_num_threads)
// stays free for the training loop. The prefetch thread (num_workers = 0) shares the pool.
//
// How `prefetch` and `num_workers` relate: num_workers = 0 is today's loader — with `prefetch`
// one background thread keeps prefetch_factor (default 2) batches ready, without it each batch
// is made on the loop's thread when it is needed, and an exception comes out unchanged. With
// num_workers > 0 the workers are the prefetching, and `prefetch` is not used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <type_traits>

#include "data/dataset.h"
#include "data/sampler.h"

namespace ember::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;    // a new sample order every epoch (else 0, 1, 2, ...)
  bool drop_last = false;  // skip a last batch smaller than batch_size
  uint64_t seed = 0;       // the shuffle order of epoch e is a function of (seed, e)
  bool prefetch = true;    // num_workers = 0: prepare the next batches on a background thread
  // Threads that make batches in parallel (0: none besides the prefetch thread). Batches arrive
  // in order and are the same for every value; see "Workers" above.
  int num_workers = 0;
  // Batches made ahead per worker (PyTorch's default, 2): at most num_workers * prefetch_factor
  // batches (or prefetch_factor with num_workers = 0 and prefetch) wait finished or in the works.
  int prefetch_factor = 2;
  // Keep the worker threads from one epoch to the next (else they are started by every begin()
  // and joined when the epoch ends). Needs num_workers > 0.
  bool persistent_workers = false;
  // Put each batch in pinned (page-locked) host memory, so that batch.data.to(cuda, true)
  // copies asynchronously (PyTorch's pin_memory=True). Needs a usable GPU.
  bool pin_memory = false;
  // The order of each epoch comes from here instead (data/sampler.h: a DistributedSampler gives
  // each rank its share); then `shuffle` must be false — the sampler shuffles.
  std::shared_ptr<const Sampler> sampler;
};

// The sample order a shuffled epoch uses: a permutation of 0..n-1 (int64 [n]) drawn by
// Fisher-Yates from Philox counters keyed by `seed`, with the epoch in the high counter word.
Tensor shuffled_order(int64_t n, uint64_t seed, int64_t epoch);

class DataLoader {
 public:
  class Iterator;

  // Takes a copy of the dataset (a TensorDataset or MNIST copies tensor handles, not data).
  template <typename D,
            typename = std::enable_if_t<std::is_base_of_v<Dataset, std::decay_t<D>>>>
  explicit DataLoader(D&& dataset, DataLoaderOptions options = {})
      : DataLoader(std::shared_ptr<const Dataset>(
                       std::make_shared<std::decay_t<D>>(std::forward<D>(dataset))),
                   options) {}
  // Shares a dataset with its other owners.
  explicit DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  ~DataLoader();  // stops and joins the workers (those of an unfinished epoch too)
  DataLoader(DataLoader&&) noexcept = default;
  DataLoader& operator=(DataLoader&& other) noexcept;
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts the next epoch (ending an unfinished one) and returns its first batch.
  Iterator begin();
  Iterator end() const;

  // Batches per epoch: ceil(N / batch_size), or floor with drop_last — len(loader) in PyTorch.
  int64_t size() const;
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  // The epoch number the latest begin() started (0 for the first loop), -1 before any.
  int64_t epoch() const { return epoch_; }
  // The next begin() runs epoch e (e.g. when resuming from a checkpoint).
  void set_epoch(int64_t e) { next_epoch_ = e; next_first_batch_ = 0; }
  // The next begin() runs epoch e from its batch b (0 <= b <= size()), skipping batches
  // 0..b-1 without making them: how a run resumed from a checkpoint taken in the middle of an
  // epoch sees exactly the batches the interrupted run had not trained on yet. The epochs after
  // it start at batch 0 again.
  void set_position(int64_t epoch, int64_t batch);
  // The index of the batch the current epoch's iterator points at (its last batch once the
  // epoch is over; -1 before any epoch): within a training loop's body, the batch being trained.
  int64_t batch_index() const;
  // The sample order of epoch e: shuffled_order(N, seed, e) with shuffle, else 0..N-1.
  Tensor order(int64_t e) const;

 private:
  struct Epoch;    // one pass over the data: its order, the batches made so far
  struct Workers;  // the threads that make batches; kept here with persistent_workers
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = -1;
  int64_t next_epoch_ = 0;
  int64_t next_first_batch_ = 0;
  std::shared_ptr<Epoch> current_;
  std::shared_ptr<Workers> workers_;  // persistent_workers only
};

// An input iterator over one epoch. Iterators taken from the same begin() share its position.
class DataLoader::Iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using pointer = const Batch*;
  using reference = const Batch&;

  const Batch& operator*() const;
  const Batch* operator->() const { return &**this; }
  // Moves to the next batch: waits for the worker, re-throws its exception if it failed.
  Iterator& operator++();
  // An iterator equals end() once its epoch has delivered every batch.
  bool operator==(const Iterator& other) const { return done() == other.done(); }
  bool operator!=(const Iterator& other) const { return !(*this == other); }

 private:
  friend class DataLoader;
  explicit Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {}
  bool done() const;
  std::shared_ptr<Epoch> epoch_;
};

}  // namespace ember::data
