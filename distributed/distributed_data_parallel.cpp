// ember/distributed/distributed_data_parallel.cpp — buckets, hooks and the overlapped all_reduce
// (see distributed_data_parallel.h for the picture).
#include "distributed/distributed_data_parallel.h"

#include <chrono>
#include <unordered_set>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops.h"

namespace ember::nn {

struct DistributedDataParallel::Bucket {
  std::vector<size_t> params;  // indices into params_, in the order they were bucketed
  Tensor flat;                 // [numel]: every gradient of the bucket, one after the other
  int pending = 0;             // gradients not in yet this step
  distributed::WorkHandle work;
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Layer> module,
                                                 std::shared_ptr<distributed::ProcessGroup> group,
                                                 DistributedDataParallelOptions options)
    : module_(std::move(module)), group_(std::move(group)), options_(options) {
  EMBER_CHECK(module_, "DistributedDataParallel: the module is null");
  EMBER_CHECK(group_, "DistributedDataParallel: the process group is null");
  EMBER_CHECK(options_.bucket_cap_mb > 0 && options_.first_bucket_cap_mb > 0,
              "DistributedDataParallel: bucket sizes must be positive, got bucket_cap_mb ",
              options_.bucket_cap_mb, " and first_bucket_cap_mb ", options_.first_bucket_cap_mb);
  register_module("module", module_);

  // Every rank starts from rank 0's weights (and buffers).
  {
    NoGradGuard no_grad;
    for (const auto& [name, p] : module_->named_parameters())
      group_->broadcast(p.detach(), 0, "DDP: parameter " + name + " from rank 0");
    for (const auto& [name, b] : module_->named_buffers())
      group_->broadcast(b.detach(), 0, "DDP: buffer " + name + " from rank 0");
  }

  for (const auto& [name, p] : module_->named_parameters()) {
    if (!p.requires_grad()) continue;
    names_.push_back(name);
    params_.push_back(p);
  }
  // Buckets in reverse registration order; a bucket holds one dtype on one device.
  const size_t n = params_.size();
  bucket_of_.assign(n, 0);
  offset_of_.assign(n, 0);
  ready_.assign(n, false);
  double cap = options_.first_bucket_cap_mb * 1e6;
  int64_t bytes = 0, numel = 0;
  for (size_t k = n; k-- > 0;) {
    const Tensor& p = params_[k];
    const int64_t pbytes = p.numel() * static_cast<int64_t>(p.element_size());
    bool open_new = buckets_.empty();
    if (!open_new) {
      const Tensor& first = params_[buckets_.back()->params.front()];
      open_new = first.dtype() != p.dtype() || first.device() != p.device() ||
                 (bytes > 0 && static_cast<double>(bytes + pbytes) > cap);
    }
    if (open_new) {
      if (!buckets_.empty()) {
        buckets_.back()->flat = zeros({numel}, params_[buckets_.back()->params.front()].options());
        cap = options_.bucket_cap_mb * 1e6;
      }
      buckets_.push_back(std::make_unique<Bucket>());
      bytes = numel = 0;
    }
    bucket_of_[k] = buckets_.size() - 1;
    offset_of_[k] = numel;
    buckets_.back()->params.push_back(k);
    bytes += pbytes;
    numel += p.numel();
    stats_.bytes_per_step += pbytes;
  }
  if (!buckets_.empty())
    buckets_.back()->flat = zeros({numel}, params_[buckets_.back()->params.front()].options());
  reset_reduction();

  for (size_t k = 0; k < n; ++k)
    hook_ids_.push_back(params_[k].register_post_accumulate_grad_hook(
        [this, k](const Tensor&) { on_grad_ready(k); }));
}

DistributedDataParallel::~DistributedDataParallel() {
  for (size_t k = 0; k < params_.size(); ++k) params_[k].remove_post_accumulate_grad_hook(hook_ids_[k]);
  for (auto& b : buckets_) {
    if (!b->work) continue;
    try {
      b->work->wait();  // the engine must be done with the buffer before it is freed
    } catch (const Error&) {
    }
  }
}

std::vector<DistributedDataParallel::BucketInfo> DistributedDataParallel::buckets() const {
  std::vector<BucketInfo> out;
  for (const auto& b : buckets_) {
    BucketInfo info;
    for (size_t k : b->params) info.parameters.push_back(names_[k]);
    info.numel = b->flat.numel();
    info.bytes = info.numel * static_cast<int64_t>(b->flat.element_size());
    out.push_back(std::move(info));
  }
  return out;
}

void DistributedDataParallel::reset_reduction() {
  for (auto& b : buckets_) {
    b->pending = static_cast<int>(b->params.size());
    b->work.reset();
  }
  std::fill(ready_.begin(), ready_.end(), false);
  next_launch_ = 0;
  dirty_ = false;
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  if (dirty_) {
    // The last backward did not complete every bucket: a parameter got no gradient.
    std::string missing;
    for (size_t k = 0; k < params_.size(); ++k)
      if (!ready_[k]) missing += (missing.empty() ? "" : ", ") + names_[k];
    for (auto& b : buckets_)
      if (b->work) {
        try { b->work->wait(); } catch (const Error&) {}
      }
    reset_reduction();
    throw distributed::DistError(
        "DistributedDataParallel: the previous backward did not produce gradients for " + missing +
        ", so their buckets were never averaged (the ranks' gradients now differ). Parameters "
        "that do not take part in every forward need "
        "DistributedDataParallelOptions::find_unused_parameters = true");
  }
  if (options_.broadcast_buffers && group_->size() > 1) {
    NoGradGuard no_grad;
    for (const auto& [name, b] : module_->named_buffers())
      group_->broadcast(b.detach(), 0, "DDP: buffer " + name + " from rank 0");
  }
  Tensor out = (*module_)(input);
  if (options_.find_unused_parameters && sync_ && is_grad_enabled()) mark_unused(out);
  return out;
}

// Parameters the graph of `output` does not reach get no gradient in this backward: count
// them as ready now, with a zero share.
void DistributedDataParallel::mark_unused(const Tensor& output) {
  std::unordered_set<const autograd::Node*> seen;
  std::vector<const autograd::Node*> stack;
  if (output.defined() && output.grad_fn()) stack.push_back(output.grad_fn().get());
  while (!stack.empty()) {
    const autograd::Node* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    for (const auto& e : node->next_edges)
      if (e.fn) stack.push_back(e.fn.get());
  }
  for (size_t k = 0; k < params_.size(); ++k) {
    const auto acc = params_[k].impl()->grad_accumulator.lock();
    if (acc && seen.count(acc.get())) continue;
    Bucket& b = *buckets_[bucket_of_[k]];
    b.flat.narrow(0, offset_of_[k], params_[k].numel()).zero_();
    ready_[k] = true;
    dirty_ = true;
    if (--b.pending == 0) launch_ready_buckets();
  }
}

void DistributedDataParallel::on_grad_ready(size_t k) {
  if (!sync_) return;  // no_sync(): accumulate locally only
  EMBER_CHECK_T(distributed::DistError, !ready_[k], "DistributedDataParallel: the gradient of ", names_[k],
                " arrived twice in one backward pass (a second backward without a forward "
                "through the DistributedDataParallel in between?)");
  dirty_ = true;
  ready_[k] = true;
  Bucket& b = *buckets_[bucket_of_[k]];
  const Tensor& p = params_[k];
  b.flat.narrow(0, offset_of_[k], p.numel()).copy_(p.grad().reshape({-1}));
  if (--b.pending == 0) launch_ready_buckets();
}

void DistributedDataParallel::launch_ready_buckets() {
  // In bucket order on every rank, so that the ranks' collectives match.
  const bool all_ready = [&] {
    for (const auto& b : buckets_)
      if (b->pending > 0) return false;
    return true;
  }();
  if (!options_.overlap && !all_ready) return;
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->pending == 0) {
    Bucket& b = *buckets_[next_launch_];
    b.work = group_->all_reduce_async(b.flat, distributed::ReduceOp::Avg,
                                      "DDP bucket " + std::to_string(next_launch_) + " of " +
                                          std::to_string(buckets_.size()));
    ++next_launch_;
  }
  if (next_launch_ == buckets_.size()) finish_reduction();
}

void DistributedDataParallel::finish_reduction() {
  const auto start = std::chrono::steady_clock::now();
  try {
    for (auto& b : buckets_) b->work->wait();
  } catch (const Error&) {
    // The ranks disagreed (DistError): let every bucket finish, start clean next step.
    for (auto& b : buckets_) {
      try { b->work->wait(); } catch (const Error&) {}
    }
    reset_reduction();
    throw;
  }
  stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++stats_.synced_steps;
  NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k) {
    Tensor p = params_[k];
    const Tensor avg = buckets_[bucket_of_[k]]->flat.narrow(0, offset_of_[k], p.numel()).view(p.shape());
    if (Tensor g = p.grad(); g.defined()) g.copy_(avg);
    else p.set_grad(avg.clone());  // an unused parameter: the other ranks' share
  }
  reset_reduction();
}

}  // namespace ember::nn
