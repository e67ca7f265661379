// ember/data/dataset.cpp — TensorDataset: a batch is one index_select per tensor.
#include "data/dataset.h"

#include "kernels/base/error.h"
#include "core/ops.h"

namespace ember::data {

TensorDataset::TensorDataset(Tensor data, Tensor targets, Transform transform)
    : transform_(std::move(transform)) {
  EMBER_CHECK(data.defined() && targets.defined(),
              "TensorDataset: data and targets must both be defined tensors");
  EMBER_CHECK(data.dim() >= 1 && targets.dim() >= 1, "TensorDataset: data ",
              shape_str(data.shape()), " and targets ", shape_str(targets.shape()),
              " need a first dimension that counts the samples");
  EMBER_CHECK(data.size(0) == targets.size(0), "TensorDataset: data has ", data.size(0),
              " samples (shape ", shape_str(data.shape()), ") but targets has ", targets.size(0),
              " (shape ", shape_str(targets.shape()), "): they must pair up row by row");
  EMBER_CHECK_T(DeviceError, !data.is_cuda() && !targets.is_cuda(),
                "TensorDataset: keep the dataset on the CPU and move each batch with "
                "batch.data.to(device): got data on ", data.device().str(), " and targets on ",
                targets.device().str());
  // Detached: a dataset is input, never part of a graph. Contiguous: a batch is then a plain
  // copy of whole rows (index_select's fast path).
  data_ = data.detach().contiguous();
  targets_ = targets.detach().contiguous();
}

Batch TensorDataset::get_batch(const Tensor& indices) const {
  return get_batch_for_epoch(indices, 0);
}

Batch TensorDataset::get_batch_for_epoch(const Tensor& indices, int64_t epoch) const {
  Batch b{index_select(data_, 0, indices), index_select(targets_, 0, indices)};
  if (augmentation_) b.data = augmentation_(b.data, indices, epoch);
  if (transform_) b.data = transform_(b.data);
  return b;
}

Batch TensorDataset::get(int64_t i) const {
  EMBER_CHECK(i >= 0 && i < size(), "TensorDataset: sample ", i, " out of range for a dataset of ",
              size(), " samples");
  return get_batch(tensor({static_cast<double>(i)}, kInt64));
}

}  // namespace ember::data
