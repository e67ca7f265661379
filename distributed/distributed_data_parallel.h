// ember/distributed/distributed_data_parallel.h — nn::DistributedDataParallel: one model, one process
// per GPU (or per CPU socket), each training on its own share of every batch.
//
//   auto group = distributed::init_process_group();             // mpirun -np N prog
//   auto net = std::make_shared<Net>();
//   net->to(group->device());
//   nn::DistributedDataParallel model(net, group);       // every rank now has rank 0's weights
//   optim::SGD opt(model.parameters(), {...});           // any optimizer, unchanged
//   for (const data::Batch& b : loader) {                // loader with a data::DistributedSampler
//     opt.zero_grad();
//     loss_fn(model(b.data), b.target).backward();       // gradients averaged over the ranks
//     opt.step();                                        // ... so every rank takes the same step
//   }
//
// How the gradients are averaged, and why it costs little:
//   - At construction the parameters are cut into buckets of about 25 MB (the first one 1 MB, so
//     that communication starts early), in REVERSE registration order: backward produces the
//     last layer's gradients first.
//   - Each parameter has a post-accumulate-grad hook (Tensor::register_post_accumulate_grad_hook):
//     when backward has finished its gradient, the hook copies it into its bucket's flat buffer.
//     When a bucket's last gradient is in, its all_reduce(avg) starts at once — asynchronously,
//     on the group's communication thread (MPI) or NCCL's stream — while backward goes on
//     computing the earlier layers' gradients. Buckets start in bucket order on every rank, so
//     the ranks' collectives always match.
//   - The hook that completes the last bucket waits for all of them and copies the averages back
//     into each parameter's .grad. When backward() returns, .grad holds the average over the
//     ranks of the per-rank gradients: with equal per-rank batches and a mean loss, exactly the
//     gradient of one process on the concatenated batch.
// no_sync() turns this off for gradient accumulation: gradients only accumulate locally, and the
// first backward after it averages the accumulated sum.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "nn/module.h"

namespace ember::nn {

struct DistributedDataParallelOptions {
  double bucket_cap_mb = 25;       // PyTorch's default; the first bucket is capped at 1 MB
  double first_bucket_cap_mb = 1;
  // Send rank 0's buffers (a batch norm's running statistics) to every rank before each forward.
  bool broadcast_buffers = true;
  // Parameters that did not take part in this forward get no gradient, so their buckets would
  // never be complete. With this on, forward() looks for them in the graph it built and counts
  // them as ready (their share is zero). Off by default: it walks the graph every step. Without
  // it, an unused parameter makes the next forward() throw a DistError that names it.
  bool find_unused_parameters = false;
  // Start each bucket's all_reduce as soon as it is complete (true), or all of them after the
  // last gradient (false: no overlap with backward; bench_ddp measures the difference).
  bool overlap = true;
};

class DistributedDataParallel : public Layer {
 public:
  // Broadcasts `module`'s parameters and buffers from rank 0 (a collective: every rank must
  // construct its DistributedDataParallel at the same point) and hooks its parameters.
  // Parameters must not change afterwards (no new ones, no set_data to another device).
  DistributedDataParallel(std::shared_ptr<Layer> module,
                          std::shared_ptr<distributed::ProcessGroup> group = distributed::default_group(),
                          DistributedDataParallelOptions options = {});
  ~DistributedDataParallel() override;

  std::string name() const override { return "DistributedDataParallel"; }
  Tensor forward(const Tensor& input) override;
  Layer& module() { return *module_; }
  const std::shared_ptr<Layer>& module_ptr() const { return module_; }
  distributed::ProcessGroup& group() { return *group_; }

  // While the returned guard lives, backward passes only accumulate gradients locally
  // (PyTorch's `with model.no_sync():`). The first backward after it averages the sum.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(&ddp), previous_(ddp.sync_) { ddp.sync_ = false; }
    ~NoSyncGuard() { if (ddp_) ddp_->sync_ = previous_; }
    NoSyncGuard(NoSyncGuard&& o) noexcept : ddp_(o.ddp_), previous_(o.previous_) { o.ddp_ = nullptr; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(NoSyncGuard&&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool previous_;
  };
  NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  // The buckets: which parameters (by name) each holds, and its size.
  struct BucketInfo {
    std::vector<std::string> parameters;
    int64_t numel = 0;
    int64_t bytes = 0;
  };
  std::vector<BucketInfo> buckets() const;

  // What communication cost: backward passes that averaged gradients, and the time they spent
  // blocked at their end waiting for all_reduces to finish (the part not hidden behind backward).
  struct CommStats {
    int64_t synced_steps = 0;
    double wait_s = 0;
    int64_t bytes_per_step = 0;
  };
  const CommStats& comm_stats() const { return stats_; }
  void reset_comm_stats() {
    stats_.synced_steps = 0;
    stats_.wait_s = 0;
  }

 private:
  struct Bucket;
  void on_grad_ready(size_t param);
  void launch_ready_buckets();
  void finish_reduction();
  void reset_reduction();
  void mark_unused(const Tensor& output);

  std::shared_ptr<Layer> module_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  DistributedDataParallelOptions options_;
  std::vector<std::string> names_;
  std::vector<Tensor> params_;
  std::vector<int64_t> hook_ids_;
  std::vector<size_t> bucket_of_;     // param -> bucket
  std::vector<int64_t> offset_of_;    // param -> element offset in its bucket
  std::vector<bool> ready_;           // param -> its gradient is in its bucket this step
  std::vector<std::unique_ptr<Bucket>> buckets_;
  size_t next_launch_ = 0;            // buckets are started in order
  bool sync_ = true;
  bool dirty_ = false;                // a reduction is under way (or was left half done)
  CommStats stats_;
};

}  // namespace ember::nn
