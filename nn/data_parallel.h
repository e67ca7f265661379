// ember/nn/data_parallel.h — nn::DataParallel: one process, several GPUs (seed 001's
// `net = nn.DataParallel(net)`).
//
//   auto net = std::make_shared<Net>();
//   net->to(Device::cuda(0));                   // the module lives on the first device
//   nn::DataParallel<Net> model(net);           // every visible GPU, or {0, 1} to choose
//   Tensor out = model(inputs);                 // inputs anywhere; out on cuda:0
//   loss_fn(out, target).backward();            // gradients end on net's own parameters
//
// Each forward:
//   1. replicate: every device but the first gets a copy of the parameters (a differentiable
//      .to(), so their gradients flow back to the originals) and of the buffers, set into a
//      replica module of the same type (built once, with M's default constructor or `factory`);
//      the first device uses the module itself;
//   2. scatter: the batch is cut along dim 0 into one chunk per device (torch.chunk's sizes:
//      ceil(N / devices) each, fewer chunks when N is small) and each chunk is copied there;
//   3. run: one host thread per device runs its replica on its chunk (each thread with its
//      device current and the caller's grad mode);
//   4. gather: the outputs are copied to the first device and concatenated along dim 0.
// Backward then runs through the gathers, the replicas and the parameter copies, on the
// calling thread, so .grad of the original parameters is the sum over devices — which, for a
// loss averaged over the whole batch, is the gradient of the whole batch on one device.
//
// Without CUDA, or with a single device, forward simply calls the module. For more speed, or
// for several machines, use DistributedDataParallel (distributed/distributed_data_parallel.h), as
// PyTorch also recommends: one process per GPU avoids the per-step replication and the threads.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

namespace detail {
// The non-template part of DataParallel<M>.
class DataParallelImpl {
 public:
  DataParallelImpl(std::shared_ptr<Layer> module, std::vector<int> device_ids,
                   std::function<std::shared_ptr<Layer>()> factory);
  Tensor forward(const Tensor& input);
  const std::vector<int>& device_ids() const { return device_ids_; }

 private:
  void sync_replica(size_t i);
  std::shared_ptr<Layer> module_;
  std::vector<int> device_ids_;
  std::function<std::shared_ptr<Layer>()> factory_;
  std::vector<std::shared_ptr<Layer>> replicas_;  // [0] is module_
};
}  // namespace detail

template <typename M>
class DataParallel : public Layer {
  static_assert(std::is_base_of<Layer, M>::value, "DataParallel: M must derive from nn::Layer");

 public:
  // device_ids: CUDA device indices, the module's own first (empty: every visible device).
  // factory: builds an empty replica of the module (default: std::make_shared<M>()); its
  // parameters must have the module's names and shapes.
  explicit DataParallel(std::shared_ptr<M> module, std::vector<int> device_ids = {},
                        std::function<std::shared_ptr<M>()> factory = nullptr)
      : module_(module),
        impl_(module, std::move(device_ids), make_factory(std::move(factory))) {
    register_module("module", module_);  // state_dict keys "module.<name>", as PyTorch's
  }

  std::string name() const override { return "DataParallel"; }
  Tensor forward(const Tensor& input) override { return impl_.forward(input); }
  M& module() { return *module_; }
  const std::vector<int>& device_ids() const { return impl_.device_ids(); }

 private:
  static std::function<std::shared_ptr<Layer>()> make_factory(std::function<std::shared_ptr<M>()> f) {
    if (f) return [f] { return std::static_pointer_cast<Layer>(f()); };
    if constexpr (std::is_default_constructible<M>::value) {
      return [] { return std::static_pointer_cast<Layer>(std::make_shared<M>()); };
    } else {
      return nullptr;  // DataParallelImpl says a factory is needed when it needs one
    }
  }
  std::shared_ptr<M> module_;
  detail::DataParallelImpl impl_;
};

}  // namespace ember::nn
