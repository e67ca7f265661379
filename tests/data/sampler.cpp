// data::DistributedSampler, alone and in a DataLoader (the multi-process run is in tests/distributed).
#include <algorithm>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
std::vector<int64_t> share(int64_t replicas, int64_t rank, int64_t n, int64_t epoch,
                           data::DistributedSamplerOptions o) {
  return data::DistributedSampler(replicas, rank, o).indices(n, epoch).to_vector<int64_t>();
}
}  // namespace

TEST_CASE("DistributedSampler: equal, disjoint shares that cover the epoch", "[data][sampler]") {
  for (int64_t replicas : {1, 2, 3, 4}) {
    for (int64_t n : {1, 7, 12, 101}) {
      for (bool drop_last : {false, true}) {
        if (drop_last && n < replicas) continue;
        data::DistributedSamplerOptions o;
        o.drop_last = drop_last;
        o.seed = 9;
        std::vector<int64_t> all;
        const int64_t per_rank = drop_last ? n / replicas : (n + replicas - 1) / replicas;
        for (int64_t r = 0; r < replicas; ++r) {
          const auto mine = share(replicas, r, n, 0, o);
          CHECK(static_cast<int64_t>(mine.size()) == per_rank);
          CHECK(data::DistributedSampler(replicas, r, o).length(n) == per_rank);
          all.insert(all.end(), mine.begin(), mine.end());
        }
        const std::set<int64_t> distinct(all.begin(), all.end());
        for (int64_t i : all) CHECK((i >= 0 && i < n));
        if (drop_last) {
          CHECK(distinct.size() == all.size());  // no repeats
          CHECK(static_cast<int64_t>(all.size()) == n - n % replicas);
        } else {
          CHECK(static_cast<int64_t>(distinct.size()) == n);  // everything, plus the padding
        }
      }
    }
  }
}

TEST_CASE("DistributedSampler: a new shuffle each epoch, the same on every rank, set by the seed", "[data][sampler]") {
  data::DistributedSamplerOptions o;
  o.seed = 4;
  const int64_t n = 50;
  // Rank r's share of epoch e is positions r, r + 2, ... of the epoch's one order.
  const auto order0 = data::shuffled_order(n, 4, 0).to_vector<int64_t>();
  const auto r0 = share(2, 0, n, 0, o), r1 = share(2, 1, n, 0, o);
  for (size_t i = 0; i < r0.size(); ++i) {
    CHECK(r0[i] == order0[2 * i]);
    CHECK(r1[i] == order0[2 * i + 1]);
  }
  CHECK(share(2, 0, n, 1, o) != r0);  // epoch 1 is another order
  CHECK(share(2, 0, n, 1, o) == share(2, 0, n, 1, o));
  o.seed = 5;
  CHECK(share(2, 0, n, 0, o) != r0);
  o.shuffle = false;
  CHECK(share(2, 1, 5, 0, o) == std::vector<int64_t>{1, 3, 0});  // padded with the first sample
}

TEST_CASE("DistributedSampler: in a DataLoader, and bad arguments", "[data][sampler]") {
  const Tensor x = arange(0, 23, 1, kFloat32).reshape({23, 1});
  const Tensor y = arange(0, 23, 1, kInt64);
  data::DataLoaderOptions lo;
  lo.batch_size = 5;
  lo.sampler = std::make_shared<data::DistributedSampler>(2, 1);
  data::DataLoader loader(std::make_shared<data::TensorDataset>(x, y), lo);
  CHECK(loader.size() == 3);  // 12 samples of rank 1 in batches of 5
  std::vector<int64_t> got;
  for (const data::Batch& b : loader) {
    const auto t = b.target.to_vector<int64_t>();
    got.insert(got.end(), t.begin(), t.end());
  }
  CHECK(got == lo.sampler->indices(23, 0).to_vector<int64_t>());

  CHECK_THROWS_WITH(data::DistributedSampler(2, 2), Contains("rank 2 is outside 0..1"));
  CHECK_THROWS_WITH(data::DistributedSampler(0, 0), Contains("num_replicas must be at least 1"));
  lo.shuffle = true;
  CHECK_THROWS_WITH(data::DataLoader(std::make_shared<data::TensorDataset>(x, y), lo),
                    Contains("set shuffle = false"));
}
