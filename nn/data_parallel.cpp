// ember/nn/data_parallel.cpp — replicate, scatter, run on one thread per device, gather (see
// data_parallel.h).
#include "nn/data_parallel.h"

#include <exception>
#include <thread>

#include "core/autograd/grad_mode.h"
#include "core/cuda.h"
#include "core/ops.h"
#include "core/random.h"

namespace ember::nn::detail {

DataParallelImpl::DataParallelImpl(std::shared_ptr<Layer> module, std::vector<int> device_ids,
                                   std::function<std::shared_ptr<Layer>()> factory)
    : module_(std::move(module)), device_ids_(std::move(device_ids)), factory_(std::move(factory)) {
  EMBER_CHECK(module_, "DataParallel: the module is null");
  if (!cuda::is_available()) {
    device_ids_.clear();  // as PyTorch: without CUDA, forward just calls the module
    return;
  }
  if (device_ids_.empty())
    for (int d = 0; d < cuda::device_count(); ++d) device_ids_.push_back(d);
  for (int d : device_ids_)
    EMBER_CHECK_T(DeviceError, d >= 0 && d < cuda::device_count(), "DataParallel: device_ids has ",
                  d, ", but this process sees ", cuda::device_count(), " CUDA device(s)");
  const Device first = Device::cuda(device_ids_[0]);
  for (const auto& [name, t] : module_->named_parameters())
    EMBER_CHECK_T(DeviceError, t.device() == first, "DataParallel: the module must have its "
                  "parameters and buffers on ", first, " (device_ids[0]), but ", name, " is on ",
                  t.device(), ": call module->to(\"", first.str(), "\") first");
  for (const auto& [name, t] : module_->named_buffers())
    EMBER_CHECK_T(DeviceError, t.device() == first, "DataParallel: the module must have its "
                  "parameters and buffers on ", first, " (device_ids[0]), but buffer ", name,
                  " is on ", t.device(), ": call module->to(\"", first.str(), "\") first");
  replicas_.push_back(module_);
  if (device_ids_.size() > 1) {
    EMBER_CHECK(factory_, "DataParallel: the module type has no default constructor, so pass a "
                "factory that builds an empty replica of it");
    // The replicas' own initial weights are overwritten at every forward: do not let drawing
    // them move the global generator (the run must not depend on the number of devices).
    const Tensor rng = get_rng_state();
    for (size_t i = 1; i < device_ids_.size(); ++i) {
      std::shared_ptr<Layer> r = factory_();
      EMBER_CHECK(r, "DataParallel: the replica factory returned null");
      const auto mine = module_->named_parameters(), theirs = r->named_parameters();
      EMBER_CHECK(mine.size() == theirs.size(), "DataParallel: a replica has ", theirs.size(),
                  " parameters, the module ", mine.size(), ": the factory must build the same model");
      for (size_t k = 0; k < mine.size(); ++k)
        EMBER_CHECK(mine[k].first == theirs[k].first && mine[k].second.shape() == theirs[k].second.shape(),
                    "DataParallel: replica parameter ", theirs[k].first, " ", shape_str(theirs[k].second.shape()),
                    " does not match the module's ", mine[k].first, " ", shape_str(mine[k].second.shape()));
      r->to(Device::cuda(device_ids_[i]));
      r->train(module_->is_training());
      replicas_.push_back(std::move(r));
    }
    set_rng_state(rng);
  }
}

// Points replica i's parameters at differentiable copies of the module's (their grad_fn leads
// back to the originals), and copies the buffers. The replica's Tensor handles — its layers'
// members, its slots — stay the same objects; what they hold is replaced, as PyTorch's
// replicate() sets non-leaf tensors as the replica's attributes.
void DataParallelImpl::sync_replica(size_t i) {
  const Device device = Device::cuda(device_ids_[i]);
  Layer& replica = *replicas_[i];
  replica.train(module_->is_training());
  const auto mine = module_->parameters(), theirs = replica.parameters();
  for (size_t k = 0; k < mine.size(); ++k) {
    const Tensor copy = mine[k].to(device);
    TensorImpl* r = theirs[k].impl();
    const TensorImpl* s = copy.impl();
    r->storage = s->storage;
    r->shape = s->shape;
    r->strides = s->strides;
    r->offset = s->offset;
    r->dtype = s->dtype;
    r->grad_fn = s->grad_fn;
    r->output_nr = s->output_nr;
    r->requires_grad = s->requires_grad;
    r->grad.reset();
    r->grad_accumulator.reset();
  }
  NoGradGuard no_grad;
  auto bufs = module_->buffers(), replica_bufs = replica.buffers();
  for (size_t k = 0; k < bufs.size() && k < replica_bufs.size(); ++k) replica_bufs[k].copy_(bufs[k]);
}

Tensor DataParallelImpl::forward(const Tensor& input) {
  if (device_ids_.size() <= 1) {
    if (device_ids_.empty()) return (*module_)(input);
    return (*module_)(input.to(Device::cuda(device_ids_[0])));
  }
  EMBER_CHECK(input.dim() >= 1, "DataParallel: the input must have a batch dimension (dim 0) to "
              "split among the devices; it is 0-d");
  const int64_t n = input.size(0);
  EMBER_CHECK(n >= 1, "DataParallel: the batch is empty");
  const int64_t devices = static_cast<int64_t>(device_ids_.size());
  const int64_t chunk = (n + devices - 1) / devices;
  const size_t used = static_cast<size_t>((n + chunk - 1) / chunk);

  // Replicate and scatter on this thread: both are recorded on the tape.
  std::vector<Tensor> inputs(used), outputs(used);
  for (size_t i = 0; i < used; ++i) {
    if (i > 0) sync_replica(i);
    const int64_t start = static_cast<int64_t>(i) * chunk;
    inputs[i] = input.narrow(0, start, std::min(chunk, n - start)).to(Device::cuda(device_ids_[i]));
  }
  // Run: one thread per device.
  const bool grad = is_grad_enabled();
  std::vector<std::exception_ptr> errors(used);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < used; ++i) {
    threads.emplace_back([&, i] {
      try {
        set_grad_enabled(grad);
        cuda::DeviceGuard guard(device_ids_[i]);
        outputs[i] = (*replicas_[i])(inputs[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  // Gather on the first device.
  const Device first = Device::cuda(device_ids_[0]);
  for (auto& o : outputs) o = o.to(first);
  return cat(outputs, 0);
}

}  // namespace ember::nn::detail
