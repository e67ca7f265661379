// ember/data/dataset.h — what a DataLoader draws batches from.
//
// Like torch.utils.data.Dataset, but batch-at-a-time: instead of fetching N samples one by one
// and stacking them (PyTorch's default collate), a Dataset is asked for all the samples of a
// batch at once, by index. For a dataset that lives in one tensor — MNIST does — that is a
// single index_select per tensor: one contiguous copy of the chosen rows.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "data/transforms.h"

namespace ember::data {

// One mini-batch: data [B, ...] and target [B, ...] (class indices: int64 [B]).
struct Batch {
  Tensor data;
  Tensor target;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  // Number of samples.
  virtual int64_t size() const = 0;
  // The samples at `indices` (int64 [B], values in [0, size())), in that order. Called from the
  // DataLoader's background threads — with num_workers > 1 from several at once — so it must
  // not change the dataset, and anything it does keep (a cache, a file handle, scratch buffers)
  // must be guarded or per thread. TensorDataset (MNIST, CIFAR10, the in-memory ImageFolder)
  // only reads its tensors, and LazyImageFolder decodes into per-thread scratch: both are safe.
  virtual Batch get_batch(const Tensor& indices) const = 0;
  // The same samples as epoch `epoch` sees them: what the DataLoader calls. A dataset with random
  // augmentations draws them from (seed, epoch, sample index), so that every epoch sees new
  // crops and flips while the batches stay the same for any number of workers; the others
  // ignore the epoch (the default).
  virtual Batch get_batch_for_epoch(const Tensor& indices, int64_t epoch) const {
    (void)epoch;
    return get_batch(indices);
  }
};

// Samples that are rows of tensors: sample i is (data[i], targets[i]), like
// torch.utils.data.TensorDataset. `transform`, if given, is applied to each batch's data after
// the rows are gathered (e.g. Compose({ToFloat(), Normalize(0.1307, 0.3081)}) for MNIST).
// An augmentation (set_augmentation: RandomCrop, RandomHorizontalFlip, ...) runs between the two,
// drawn per sample and epoch; get_batch without an epoch uses epoch 0.
class TensorDataset : public Dataset {
 public:
  // data [N, ...] of any dtype, targets [N, ...] (usually int64 [N]), both on the CPU.
  TensorDataset(Tensor data, Tensor targets, Transform transform = {});

  int64_t size() const override { return data_.size(0); }
  Batch get_batch(const Tensor& indices) const override;
  Batch get_batch_for_epoch(const Tensor& indices, int64_t epoch) const override;
  // Sample i as a batch of one: data [1, ...], target [1, ...].
  Batch get(int64_t i) const;

  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }
  const Transform& transform() const { return transform_; }
  void set_transform(Transform transform) { transform_ = std::move(transform); }
  const Augmentation& augmentation() const { return augmentation_; }
  void set_augmentation(Augmentation augmentation) { augmentation_ = std::move(augmentation); }

 private:
  Tensor data_;     // contiguous, so that a batch is a row gather
  Tensor targets_;
  Transform transform_;
  Augmentation augmentation_;
};

}  // namespace ember::data
