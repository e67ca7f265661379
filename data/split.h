// ember/data/split.h — a seeded train/validation split of a TensorDataset.
//
// Seed 002 shuffles its samples once (np.random.shuffle) and keeps the last 10% for validation:
//   VAL_PCT = 0.1
//   val_size = int(len(X) * VAL_PCT)
//   train_X = X[:-val_size]; test_X = X[-val_size:]
// which reads in ember as
//   auto [train, val] = data::train_val_split(pets, 0.1, /*seed=*/0);
#pragma once

#include <cstdint>

#include "data/dataset.h"

namespace ember::data {

struct TrainValSplit {
  TensorDataset train, val;
};

// Shuffles the sample order with `seed` (the Philox permutation of data::shuffled_order, epoch 0,
// so the split does not touch the global generator), then the last int(n * val_fraction)
// samples of that order are the validation set, the others the training set (in shuffled
// order). Both halves are copies of the rows and keep the dataset's transform. val_fraction must
// be in [0, 1).
TrainValSplit train_val_split(const TensorDataset& dataset, double val_fraction, uint64_t seed);

}  // namespace ember::data
