// ember/data/sampler.h — which samples an epoch visits, in which order (torch.utils.data.Sampler).
//
// A DataLoader without a sampler visits 0..N-1, or a shuffled order with `shuffle`. A sampler
// replaces that: DataLoaderOptions::sampler. The loader asks it for the order of each epoch by
// the epoch's number, so nothing has to be told about epochs (no set_epoch to forget, which in
// PyTorch silently repeats the first epoch's order).
#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"

namespace ember::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The indices (int64 [length(dataset_size)], each in [0, dataset_size)) of epoch `epoch`.
  virtual Tensor indices(int64_t dataset_size, int64_t epoch) const = 0;
  virtual int64_t length(int64_t dataset_size) const = 0;
};

// Each of `num_replicas` processes (the ranks of a distributed::ProcessGroup) gets its own share of the
// dataset, all shares of equal length so that every rank runs the same number of steps (a rank
// with one step more would wait forever in its extra all_reduce):
//   1. the epoch's order: shuffled_order(N, seed, epoch) with shuffle (the same on every rank,
//      a new one each epoch), else 0..N-1;
//   2. padded by repeating its first samples up to a multiple of num_replicas (each rank gets
//      ceil(N / R)), or, with drop_last, cut down to one (each rank gets floor(N / R));
//   3. rank r takes positions r, r + R, r + 2R, ... — the ranks' shares are disjoint and
//      together they are the whole epoch (plus the padding).
// As PyTorch's DistributedSampler. Give the loader the per-rank batch size: the global batch is
// num_replicas times it.
struct DistributedSamplerOptions {
  bool shuffle = true;
  uint64_t seed = 0;       // the same on every rank
  bool drop_last = false;  // drop the tail instead of padding
};

class DistributedSampler final : public Sampler {
 public:
  DistributedSampler(int64_t num_replicas, int64_t rank, DistributedSamplerOptions options = {});
  Tensor indices(int64_t dataset_size, int64_t epoch) const override;
  int64_t length(int64_t dataset_size) const override;
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }

 private:
  int64_t num_replicas_, rank_;
  DistributedSamplerOptions options_;
};

}  // namespace ember::data
