// ember/optim/checkpoint.h — training checkpoints: everything a run needs to go on after a crash
// and end with the same parameters, bit for bit on the CPU, as a run that never stopped.
//
//   optim::TrainingParts parts{&model, &optimizer, &scheduler, &train_loader};
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
//                          steps, the hyper-parameters (optim/state_dict.cpp)
//   scheduler.<name>       the LR scheduler's state_dict(), when there is one
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
#include <optional>
#include <string>
#include <vector>

#include "core/serialize.h"
#include "data/dataloader.h"
#include "nn/module.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"

namespace ember::optim {

// What a checkpoint covers. The model is required; the others are saved and restored when set.
struct TrainingParts {
  nn::Module* model = nullptr;
  Optimizer* optimizer = nullptr;
  LRScheduler* scheduler = nullptr;
  data::DataLoader* loader = nullptr;  // the training loader: its position in its epoch
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
