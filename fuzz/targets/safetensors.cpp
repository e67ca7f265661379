// fuzz/targets/safetensors.cpp — ember's safetensors reader (core/serialize.h): load_file,
// load, load_metadata, and save for the round trip.
//
// Properties: a refusal is an ember::IOError naming the file; a file that loads gives the same
// tensors through load() and the same metadata through load_metadata(); its tensors' bytes add
// up to exactly the data buffer after the header (the format allows no holes); and saving what
// was loaded, then loading that, gives the same names, dtypes, shapes, bytes and metadata.
#include <cstring>
#include <string>

#include "kernels/base/error.h"
#include "core/serialize.h"
#include "fuzz/targets/common.h"

namespace ember::fuzz {

namespace {

bool same(const NamedTensors& a, const NamedTensors& b, std::string* why) {
  if (a.size() != b.size()) {
    *why = std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " tensors";
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor x = a[i].second.contiguous(), y = b[i].second.contiguous();
    if (a[i].first != b[i].first || x.dtype() != y.dtype() || x.shape() != y.shape() ||
        std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.numel()) * x.element_size()) != 0) {
      *why = "tensor " + std::to_string(i) + " ('" + a[i].first + "' vs '" + b[i].first + "')";
      return false;
    }
  }
  return true;
}

}  // namespace

void safetensors(const uint8_t* data, size_t n) {
  static MemFile file("safetensors");
  file.assign(data, n);
  SafetensorsFile f;
  try {
    f = load_file(file.path());
  } catch (const IOError& e) {
    const std::string msg = e.what();
    FUZZ_CHECK(msg.find(file.path()) != std::string::npos, "the message must name the file: " + msg);
    return;
  }
  std::string why;
  FUZZ_CHECK(load_metadata(file.path()) == f.metadata, "load_metadata disagrees with load_file");
  FUZZ_CHECK(same(load(file.path()), f.tensors, &why), "load disagrees with load_file: " + why);

  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | data[i];
  uint64_t total = 0;
  for (const auto& [name, t] : f.tensors) total += static_cast<uint64_t>(t.numel()) * t.element_size();
  FUZZ_CHECK(total == n - 8 - header, "the tensors hold " + std::to_string(total) +
                                          " bytes, the data buffer is " + std::to_string(n - 8 - header));

  const std::string copy = scratch_dir() + "/roundtrip.safetensors";
  save(f.tensors, copy, f.metadata);
  const SafetensorsFile g = load_file(copy);
  FUZZ_CHECK(same(g.tensors, f.tensors, &why), "the round trip changed " + why);
  for (const auto& [key, value] : f.metadata) {
    if (key == "ember_version") continue;
    FUZZ_CHECK(g.metadata.count(key) && g.metadata.at(key) == value, "metadata '" + key + "' was lost");
  }
}

}  // namespace ember::fuzz
