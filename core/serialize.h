// ember/core/serialize.h — tensors on disk in the safetensors format, the one PyTorch users
// exchange weights in (safetensors.torch.save_file / load_file).
//
//   ember::save(model.state_dict(), "mlp.safetensors");          // names such as "layer_1.weight"
//   auto tensors = ember::load("mlp.safetensors", Device("cuda"));
//   model.load_state_dict(tensors);                               // nn/module.h
//
// and in Python:
//
//   from safetensors.torch import load_file
//   model.load_state_dict(load_file("mlp.safetensors"))
//
// The format (https://github.com/huggingface/safetensors, "Format"):
//
//   bytes 0..7   N, the length of the JSON header: an unsigned 64-bit little-endian integer
//   bytes 8..    the header, N bytes of UTF-8 JSON (may end in spaces):
//                  {"__metadata__": {"format": "pt", ...},          string -> string, optional
//                   "layer_1.weight": {"dtype": "F32", "shape": [512, 784],
//                                      "data_offsets": [BEGIN, END]}, ...}
//   then         the byte buffer: each tensor's values, row-major, little-endian, at
//                [BEGIN, END) counted from the start of the buffer. The tensors cover the whole
//                buffer, with no holes and no overlaps.
//
// ember reads and writes the dtypes it has: F32, F64, I64, U8 and BOOL (one byte, 0 or 1).
// Every file ember writes carries __metadata__ {"format": "pt", "ember_version": "..."}, and is
// written to a temporary file in the same folder, flushed to disk (fsync) and renamed into place:
// a crash leaves either the old file or the new one, never half of one.
//
// A file that is truncated or corrupt, a header that lies about sizes or offsets, an unknown
// dtype: load() raises ember::IOError naming the file and the problem. Nothing is allocated
// before the header has been checked against the file's real size, so a forged header cannot
// make ember allocate more memory than the file holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"

namespace ember {

// (name, tensor) pairs in order; the same type as nn::NamedTensors (Module::state_dict()).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// The header's __metadata__: free-form strings.
using Metadata = std::map<std::string, std::string>;

// The ember version written into every file's __metadata__ ("0.1.0").
const char* version_string();

// Writes `tensors` (any device, any layout; each is copied to the CPU in row-major order) to
// `path`, atomically. Names must be unique and non-empty; "__metadata__" is reserved. `metadata`
// is added to the header; "format" defaults to "pt" and "ember_version" is always ember's.
// Throws ValueError for bad arguments and IOError when the file cannot be written (the old file,
// if there was one, is then left as it was).
void save(const NamedTensors& tensors, const std::string& path, const Metadata& metadata = {});

// Reads every tensor of a safetensors file, in the header's order, onto `device`.
NamedTensors load(const std::string& path, Device device = Device::cpu());

// Tensors and metadata together.
struct SafetensorsFile {
  NamedTensors tensors;
  Metadata metadata;
};
SafetensorsFile load_file(const std::string& path, Device device = Device::cpu());
// Only the header's __metadata__ (reads and checks the header, not the tensors' bytes).
Metadata load_metadata(const std::string& path);

// ---- atomic files ------------------------------------------------------------------------------

// Where write_file_atomically's callback sends the bytes.
class FileSink {
 public:
  virtual ~FileSink() = default;
  virtual void write(const void* data, size_t bytes) = 0;
};

// Creates `path` with the bytes `fill` writes: into a temporary file in the same folder
// (".<name>.tmp-<pid>-<n>"), flushed and fsynced, then renamed over `path`, and the folder fsynced
// so the rename itself is on disk. If anything fails — `fill` throws, the disk is full — the
// temporary file is removed and `path` is untouched; the error (an IOError for I/O problems) is
// re-thrown.
//
// In builds with test hooks, an armed save fault (core/test_hooks.h) stops one of these writes
// half-way through its temporary file and kills the process, or pauses it for a test to kill: how
// tests/e2e/kill_resume.cpp crashes a checkpoint write.
void write_file_atomically(const std::string& path, const std::function<void(FileSink&)>& fill,
                           int64_t expected_bytes = -1);

}  // namespace ember
