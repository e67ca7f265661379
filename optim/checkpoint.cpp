// ember/optim/checkpoint.cpp — one safetensors file per checkpoint (layout in checkpoint.h).
#include "optim/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "core/autograd/grad_mode.h"
#include "core/random.h"
#include "kernels/base/error.h"

namespace ember::optim {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormatVersion = "1";

void add_prefixed(NamedTensors& out, const std::string& prefix, const NamedTensors& in) {
  for (const auto& [name, t] : in) out.emplace_back(prefix + name, t);
}

// The loader settings that decide which samples its batches hold.
Metadata loader_settings(const LoaderState& loader) {
  return {{"loader.seed", std::to_string(loader.seed)},
          {"loader.batch_size", std::to_string(loader.batch_size)},
          {"loader.dataset_size", std::to_string(loader.dataset_size)},
          {"loader.shuffle", loader.shuffle ? "true" : "false"},
          {"loader.drop_last", loader.drop_last ? "true" : "false"}};
}

int64_t parse_int(const Metadata& m, const std::string& key, const std::string& path) {
  auto it = m.find(key);
  if (it == m.end()) {
    throw IOError("checkpoint '" + path + "': its metadata has no \"" + key + "\"");
  }
  try {
    size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw IOError("checkpoint '" + path + "': metadata \"" + key + "\" is \"" + it->second +
                "\", not a whole number >= 0");
}

// Copies of a state, to put back if loading fails half-way.
NamedTensors snapshot(const NamedTensors& state) {
  NamedTensors out;
  for (const auto& [k, t] : state) out.emplace_back(k, t.detach().clone());
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const TrainingParts& parts, const Progress& at,
                     const Metadata& extra) {
  EMBER_CHECK(parts.model != nullptr, "save_checkpoint('", path, "'): TrainingParts.model is not "
              "set; a checkpoint needs at least the model");
  NamedTensors tensors;
  add_prefixed(tensors, "model.", parts.model->state_dict());
  Metadata meta = extra;
  if (parts.optimizer) {
    add_prefixed(tensors, "optimizer.", parts.optimizer->state_dict());
    meta["optimizer"] = parts.optimizer->name();
  }
  if (parts.scheduler) add_prefixed(tensors, "scheduler.", parts.scheduler->state_dict());
  if (parts.loader) {
    for (const auto& kv : loader_settings(*parts.loader)) meta[kv.first] = kv.second;
  }
  tensors.emplace_back("rng.state", get_rng_state());
  meta["ember_checkpoint"] = kFormatVersion;
  meta["epoch"] = std::to_string(at.epoch);
  meta["batch"] = std::to_string(at.batch);
  meta["step"] = std::to_string(at.step);
  save(tensors, path, meta);
}

Progress load_checkpoint(const std::string& path, const TrainingParts& parts) {
  EMBER_CHECK(parts.model != nullptr, "load_checkpoint('", path, "'): TrainingParts.model is not "
              "set; a checkpoint restores at least the model");
  const SafetensorsFile file = load_file(path);
  const Metadata& meta = file.metadata;
  auto it = meta.find("ember_checkpoint");
  if (it == meta.end()) {
    throw IOError("'" + path + "' is a safetensors file but not an ember training checkpoint (no "
                  "\"ember_checkpoint\" in its metadata); to load weights alone use ember::load "
                  "and Module::load_state_dict");
  }
  if (it->second != kFormatVersion) {
    throw IOError("checkpoint '" + path + "' has format version " + it->second + "; this ember "
                  "reads version " + kFormatVersion);
  }
  Progress at;
  at.epoch = parse_int(meta, "epoch", path);
  at.batch = parse_int(meta, "batch", path);
  at.step = parse_int(meta, "step", path);

  NamedTensors model, optimizer, scheduler;
  Tensor rng;
  for (const auto& entry : file.tensors) {
    // Not a structured binding: C++17 does not let a lambda capture one (clang refuses).
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    auto strip = [&](const char* prefix, NamedTensors& into) {
      const size_t n = std::char_traits<char>::length(prefix);
      if (name.compare(0, n, prefix) != 0) return false;
      into.emplace_back(name.substr(n), t);
      return true;
    };
    if (strip("model.", model) || strip("optimizer.", optimizer) ||
        strip("scheduler.", scheduler)) {
      continue;
    }
    if (name == "rng.state") {
      rng = t;
      continue;
    }
    throw IOError("checkpoint '" + path + "': unexpected tensor '" + name + "' (an ember "
                  "checkpoint holds model.*, optimizer.*, scheduler.* and rng.state)");
  }
  auto fail = [&](const std::string& what) -> void {
    throw ValueError("checkpoint '" + path + "': " + what);
  };
  if (!rng.defined()) fail("it has no rng.state");
  if (parts.optimizer) {
    auto o = meta.find("optimizer");
    if (o == meta.end() || optimizer.empty()) {
      fail("it holds no optimizer state, but this run has a " + parts.optimizer->name());
    }
    if (o->second != parts.optimizer->name()) {
      fail("it was written by a run with " + o->second + ", this run uses " +
           parts.optimizer->name() + "; resume with the same optimizer");
    }
  }
  if (parts.scheduler && scheduler.empty()) {
    fail("it holds no LR scheduler state, but this run has a scheduler");
  }
  if (parts.loader) {
    for (const auto& [key, value] : loader_settings(*parts.loader)) {
      auto m = meta.find(key);
      if (m == meta.end()) fail("it records no data loader (no \"" + key + "\")");
      if (m->second != value) {
        fail(key + " is " + m->second + " in the checkpoint and " + value + " in this run: "
             "the resumed run would see other batches than the interrupted one; resume with the "
             "same settings");
      }
    }
    if (at.batch > parts.loader->batches_per_epoch) {
      fail("batch " + std::to_string(at.batch) + " is past the end of an epoch of " +
           std::to_string(parts.loader->batches_per_epoch) + " batches");
    }
  }

  // Each part checks all of its entries before it changes anything; if a later part refuses,
  // the earlier ones are put back, so a failed load leaves the run as it was.
  const NamedTensors model_before = snapshot(parts.model->state_dict());
  const NamedTensors optimizer_before =
      parts.optimizer ? snapshot(parts.optimizer->state_dict()) : NamedTensors{};
  try {
    try {
      parts.model->load_state_dict(model, /*strict=*/true);
    } catch (const ValueError& e) {
      fail(std::string("the model does not match: ") + e.what());
    }
    if (parts.optimizer) parts.optimizer->load_state_dict(optimizer);
    if (parts.scheduler) parts.scheduler->load_state_dict(scheduler);
    set_rng_state(rng);
  } catch (...) {
    parts.model->load_state_dict(model_before, /*strict=*/true);
    if (parts.optimizer) parts.optimizer->load_state_dict(optimizer_before);
    throw;
  }
  if (parts.loader && parts.loader->set_position) parts.loader->set_position(at.epoch, at.batch);
  return at;
}

// ---- the folder ------------------------------------------------------------------------------

namespace {
// "checkpoint-000001200.safetensors" -> 1200; -1 for any other name.
int64_t checkpoint_step(const std::string& filename) {
  const std::string prefix = "checkpoint-", suffix = ".safetensors";
  if (filename.size() <= prefix.size() + suffix.size()) return -1;
  if (filename.compare(0, prefix.size(), prefix) != 0) return -1;
  if (filename.compare(filename.size() - suffix.size(), suffix.size(), suffix) != 0) return -1;
  const std::string digits =
      filename.substr(prefix.size(), filename.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 18) return -1;
  for (char c : digits)
    if (c < '0' || c > '9') return -1;
  return std::stoll(digits);
}
}  // namespace

CheckpointDir::CheckpointDir(std::string dir, int keep_last)
    : dir_(std::move(dir)), keep_last_(keep_last) {
  EMBER_CHECK(keep_last >= 1, "CheckpointDir: keep_last must be >= 1, got ", keep_last);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) {
    throw IOError("cannot create the checkpoint folder '" + dir_ + "': " +
                  (ec ? ec.message() : std::string("a file of that name is in the way")));
  }
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".checkpoint-", 0) == 0 && name.find(".safetensors.tmp-") != std::string::npos) {
      fs::remove(entry.path(), ec);
    }
  }
}

std::vector<std::string> CheckpointDir::list() const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const int64_t step = checkpoint_step(entry.path().filename().string());
    if (step >= 0 && entry.is_regular_file(ec)) found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::optional<std::string> CheckpointDir::latest() const {
  const std::vector<std::string> all = list();
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::string CheckpointDir::save(const TrainingParts& parts, const Progress& at,
                                const Metadata& extra) {
  char name[64];
  std::snprintf(name, sizeof(name), "checkpoint-%09lld.safetensors",
                static_cast<long long>(at.step));
  const std::string path = (fs::path(dir_) / name).string();
  save_checkpoint(path, parts, at, extra);
  // Only now, with the new checkpoint complete and renamed into place, may old ones go.
  std::vector<std::string> all = list();
  std::error_code ec;
  for (size_t i = 0; i + static_cast<size_t>(keep_last_) < all.size(); ++i) {
    if (all[i] != path) fs::remove(all[i], ec);
  }
  return path;
}

}  // namespace ember::optim
