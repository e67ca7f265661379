// examples/common/distributed.h — what --distributed does in the examples (mnist_mlp,
// cats_vs_dogs): under `mpirun -np N prog --distributed`, the N processes ("ranks") train one
// model with DistributedDataParallel, each on its share of every epoch.
//
// The example targets define EMBER_EXAMPLE_DIST and link ember::distributed when CMake found MPI;
// elsewhere (and in the fuzz targets, which compile the examples' sources) --distributed stops
// with a message saying what to install.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/ember.h"
#include "data/data.h"
#include "nn/nn.h"
#if defined(EMBER_EXAMPLE_DIST)
#include "distributed/distributed.h"
#endif

namespace examples {

struct Ranks {
  int rank = 0, size = 1;
  int local_size = 1;  // ranks on this machine
#if defined(EMBER_EXAMPLE_DIST)
  std::shared_ptr<ember::distributed::ProcessGroup> group;
#endif

  // Joins the job mpirun started. Ranks other than 0 send their stdout to /dev/null, so the
  // seed's lines are printed once (errors still reach stderr). When the example did not ask for
  // a thread count, the cores are shared among the ranks of this machine.
  static Ranks start(bool threads_given) {
    Ranks r;
#if defined(EMBER_EXAMPLE_DIST)
    r.group = ember::distributed::init_process_group();
    r.rank = r.group->rank();
    r.size = r.group->size();
    if (const char* n = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) r.local_size = std::max(1, std::atoi(n));
    if (r.rank != 0 && !std::freopen("/dev/null", "w", stdout))
      throw ember::Error("cannot send the stdout of rank " + std::to_string(r.rank) + " to /dev/null");
    if (!threads_given) ember::set_num_threads(std::max(1, ember::get_num_threads() / r.local_size));
#else
    (void)threads_given;
    throw ember::Error("--distributed needs ember::distributed, which this build does not have (CMake "
                       "found no MPI): install libopenmpi-dev and openmpi-bin, then configure and "
                       "build again");
#endif
    return r;
  }

  bool distributed() const {
#if defined(EMBER_EXAMPLE_DIST)
    return static_cast<bool>(group);
#else
    return false;
#endif
  }

  // One GPU per rank: cuda:<local rank> when the rank has GPUs (and --device was not given).
  ember::Device device(const ember::Device& chosen, const std::string& requested) const {
#if defined(EMBER_EXAMPLE_DIST)
    if (group && requested.empty() && chosen.is_cuda()) return group->device();
#endif
    (void)requested;
    return chosen;
  }

  // The loader of the training set: this rank's share of each epoch, shuffled per epoch.
  void share(ember::data::DataLoaderOptions& options) const {
    if (!distributed()) return;
    ember::data::DistributedSamplerOptions so;
    so.shuffle = options.shuffle;
    so.seed = options.seed;
    options.sampler = std::make_shared<ember::data::DistributedSampler>(size, rank, so);
    options.shuffle = false;  // the sampler shuffles
  }

  // What trains: `model`, or with --distributed the model in a DistributedDataParallel (which
  // starts every rank from rank 0's weights and averages the gradients in backward).
  std::shared_ptr<ember::nn::Layer> wrap(std::shared_ptr<ember::nn::Layer> model) const {
#if defined(EMBER_EXAMPLE_DIST)
    if (group) return std::make_shared<ember::nn::DistributedDataParallel>(model, group);
#endif
    return model;
  }

  // Returns when every rank has called it (nothing without --distributed).
  void barrier() const {
#if defined(EMBER_EXAMPLE_DIST)
    if (group) group->barrier();
#endif
  }

  // "distributed: 2 ranks, global batch 128 (2 x 64)".
  void print(int64_t batch_size) const {
    if (!distributed()) return;
    std::printf("distributed: %d ranks, global batch %lld (%d x %lld)\n", size,
                static_cast<long long>(size * batch_size), size, static_cast<long long>(batch_size));
  }
};

}  // namespace examples
