#include "data/sampler.h"

#include <vector>

#include "kernels/base/error.h"
#include "data/dataloader.h"

namespace ember::data {

DistributedSampler::DistributedSampler(int64_t num_replicas, int64_t rank, DistributedSamplerOptions options)
    : num_replicas_(num_replicas), rank_(rank), options_(options) {
  EMBER_CHECK(num_replicas >= 1, "DistributedSampler: num_replicas must be at least 1, got ", num_replicas);
  EMBER_CHECK(rank >= 0 && rank < num_replicas, "DistributedSampler: rank ", rank,
              " is outside 0..", num_replicas - 1, " (num_replicas ", num_replicas, ")");
}

int64_t DistributedSampler::length(int64_t n) const {
  return options_.drop_last ? n / num_replicas_ : (n + num_replicas_ - 1) / num_replicas_;
}

Tensor DistributedSampler::indices(int64_t n, int64_t epoch) const {
  EMBER_CHECK(n >= 1 || options_.drop_last, "DistributedSampler: the dataset is empty, so there "
              "is nothing to pad ", num_replicas_, " equal shares with");
  const Tensor order = options_.shuffle ? shuffled_order(n, options_.seed, epoch) : arange(0, n, 1, kInt64);
  const std::vector<int64_t> all = order.to_vector<int64_t>();
  const int64_t per_rank = length(n), total = per_rank * num_replicas_;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank));
  for (int64_t pos = rank_; pos < total; pos += num_replicas_)
    mine.push_back(all[static_cast<size_t>(pos % n)]);  // pos >= n: the padding repeats the start
  return from_vector(mine, {per_rank}, kInt64);
}

}  // namespace ember::data
