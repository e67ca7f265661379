// ember/data/split.cpp — train_val_split: one permutation, two index_selects.
#include "data/split.h"

#include <cmath>

#include "kernels/base/error.h"
#include "core/ops.h"
#include "data/dataloader.h"

namespace ember::data {

TrainValSplit train_val_split(const TensorDataset& dataset, double val_fraction, uint64_t seed) {
  EMBER_CHECK(val_fraction >= 0.0 && val_fraction < 1.0,
              "train_val_split: val_fraction must be in [0, 1) (0.1 keeps 10% for validation), "
              "got ", val_fraction);
  const int64_t n = dataset.size();
  // int() in Python truncates towards zero, as the cast does.
  const int64_t n_val = static_cast<int64_t>(static_cast<double>(n) * val_fraction);
  const Tensor order = shuffled_order(n, seed, /*epoch=*/0);
  const Tensor train_idx = order.narrow(0, 0, n - n_val);
  const Tensor val_idx = order.narrow(0, n - n_val, n_val);
  return TrainValSplit{
      TensorDataset(index_select(dataset.data(), 0, train_idx),
                    index_select(dataset.targets(), 0, train_idx), dataset.transform()),
      TensorDataset(index_select(dataset.data(), 0, val_idx),
                    index_select(dataset.targets(), 0, val_idx), dataset.transform())};
}

}  // namespace ember::data
