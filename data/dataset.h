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
  // DataLoader's background thread: it must not change the dataset.
  virtual Batch get_batch(const Tensor& indices) const = 0;
};

// Samples that are rows of tensors: sample i is (data[i], targets[i]), like
// torch.utils.data.TensorDataset. `transform`, if given, is applied to each batch's data after
// the rows are gathered (e.g. Compose({ToFloat(), Normalize(0.1307, 0.3081)}) for MNIST).
class TensorDataset : public Dataset {
 public:
  // data [N, ...] of any dtype, targets [N, ...] (usually int64 [N]), both on the CPU.
  TensorDataset(Tensor data, Tensor targets, Transform transform = {});

  int64_t size() const override { return data_.size(0); }
  Batch get_batch(const Tensor& indices) const override;
  // Sample i as a batch of one: data [1, ...], target [1, ...].
  Batch get(int64_t i) const;

  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }
  const Transform& transform() const { return transform_; }
  void set_transform(Transform transform) { transform_ = std::move(transform); }

 private:
  Tensor data_;     // contiguous, so that a batch is a row gather
  Tensor targets_;
  Transform transform_;
};

}  // namespace ember::data
