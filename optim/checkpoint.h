// ember/optim/checkpoint.h — training checkpoints: everything a run needs to go on after a crash
// and end with the same parameters, bit for bit on the CPU, as a run that never stopped.
//
//   optim::TrainingParts parts{&model, &optimizer, &scheduler, optim::loader_state(train_loader)};
//   optim::CheckpointDir checkpoints("runs/mnist", /*keep_last=*/3);
//   optim::Progress at;                                // the next batch to train: epoch 0, batch 0
//   if (auto path = checkpoints.latest()) at = optim::load_checkpoint(*path, parts);
//   ... after each optimizer step: ++at.step; at.batch = batch_idx + 1;
//       if (at.step % 100 == 0) checkpoints.save(parts, at);
//
// A checkpoint is one safetensors file (core/serialize.h):
//
//   model.<name>           the model's state_dict() ("model.layer_1.weight", ...)
//   optimizer.<name>       the optimizer's state_dict(): SGD momentum buffers, Adam's moments and
//                          steps, each parameter group's hyper-parameters (optim/state_dict.cpp)
//   scheduler.<name>       the LR scheduler's state_dict(), when there is one (SequentialLR and
//                          ChainedScheduler include their schedulers')
//
// Checkpoints written before parameter groups and chainable schedulers (no
// optimizer.param_groups.0.params; scheduler.{last_epoch, base_lr}) still load.
//   rng.state              the global generator (get_rng_state: uint8 [16]), which feeds the CPU's
//                          and the GPU's random tensors alike
//   __metadata__           format "pt", ember_version, ember_checkpoint "1", epoch, batch, step,
//                          optimizer (its name), and the loader's seed, batch_size,
//                          dataset_size, shuffle and drop_last
//
// The DataLoader's position is (epoch, batch): its shuffle order is a function of (seed, epoch),
// so restoring the position replays exactly the batches the interrupted run had not trained on.
// Resuming with a loader of another seed, batch size or dataset would not: load_checkpoint
// refuses it and says which setting differs.
//
// Files are written atomically (a temporary file in the same folder, fsynced, renamed), and
// CheckpointDir deletes old checkpoints only after the new one is complete.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/serialize.h"
#include "nn/module.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace ember::optim {

// The training loader as a checkpoint sees it, in plain values (optim does not depend on
// data/): the settings that decide which samples its batches hold, its number of batches per
// epoch, and how to put it at a position. loader_state() below fills it from a data::DataLoader.
struct LoaderState {
  uint64_t seed = 0;
  int64_t batch_size = 0;
  int64_t dataset_size = 0;
  bool shuffle = false;
  bool drop_last = false;
  int64_t batches_per_epoch = 0;
  // Called by load_checkpoint with the position to resume at (epoch, next batch).
  std::function<void(int64_t epoch, int64_t batch)> set_position;
};

// The state of any loader with options() (seed, batch_size, shuffle, drop_last), dataset().size(),
// size() and set_position(epoch, batch), such as data::DataLoader. The loader must outlive the
// TrainingParts that hold its state.
template <typename Loader>
LoaderState loader_state(Loader& loader) {
  LoaderState s;
  const auto& o = loader.options();
  s.seed = static_cast<uint64_t>(o.seed);
  s.batch_size = static_cast<int64_t>(o.batch_size);
  s.dataset_size = static_cast<int64_t>(loader.dataset().size());
  s.shuffle = o.shuffle;
  s.drop_last = o.drop_last;
  s.batches_per_epoch = static_cast<int64_t>(loader.size());
  s.set_position = [&loader](int64_t epoch, int64_t batch) { loader.set_position(epoch, batch); };
  return s;
}

// What a checkpoint covers. The model is required; the others are saved and restored when set.
struct TrainingParts {
  nn::Module* model = nullptr;
  Optimizer* optimizer = nullptr;
  LRScheduler* scheduler = nullptr;
  std::optional<LoaderState> loader;  // the training loader: its position in its epoch
};

// Where a run is: the next batch to train is batch `batch` of epoch `epoch` (batch may equal
// the loader's size: the epoch's batches are all trained, its end-of-epoch work is not done yet),
// after `step` optimizer steps in all.
struct Progress {
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t step = 0;
};

// Writes a checkpoint of `parts` at `at` to `path`, atomically. `extra` is added to the metadata.
void save_checkpoint(const std::string& path, const TrainingParts& parts, const Progress& at,
                     const Metadata& extra = {});

// Restores `parts` from a checkpoint and returns where the run was; the loader (when given) is
// set to resume at that position. Everything is checked before anything changes: a file that is
// not an ember checkpoint, another optimizer, another loader setting, a model whose keys or
// shapes differ — each is an error (IOError for the file, ValueError for the rest) that names
// the file and what differs.
Progress load_checkpoint(const std::string& path, const TrainingParts& parts);

// A folder of checkpoints named checkpoint-<step, 9 digits>.safetensors, newest last.
class CheckpointDir {
 public:
  // Creates the folder if needed. keep_last >= 1: how many checkpoints save() keeps. Removes the
  // temporary files a killed writer left behind (".checkpoint-*.tmp-*"): one run per folder.
  explicit CheckpointDir(std::string dir, int keep_last = 3);

  // Writes checkpoint-<at.step>.safetensors, then deletes all but the newest keep_last. Returns
  // the new file's path.
  std::string save(const TrainingParts& parts, const Progress& at, const Metadata& extra = {});

  // Every checkpoint in the folder, oldest first (by step).
  std::vector<std::string> list() const;
  // The newest checkpoint, if any.
  std::optional<std::string> latest() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int keep_last_;
};

}  // namespace ember::optim
