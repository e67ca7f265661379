// ember/core/serialize.cpp — the safetensors reader and writer, and atomic file writes.
//
// Reading is two passes. The first reads only the 8-byte length and the JSON header and checks
// every claim the header makes against the file's real size: known dtypes, shapes whose byte
// counts match their offsets, offsets that tile the data buffer exactly. Only then does the
// second pass allocate each tensor (never more bytes than the file holds) and read its values
// straight into the tensor's storage.
#include "core/serialize.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/test_hooks.h"
#include "kernels/base/error.h"

#ifndef EMBER_VERSION_STRING
#define EMBER_VERSION_STRING "unknown"
#endif

namespace ember {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;  // keeps the header's key order: tensors load in file order

namespace {

// safetensors' own reader refuses headers over 100 MB; a header is a few bytes per tensor.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr bool kLittleEndianHost = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

const char* format_dtype(DType t) {
  switch (t) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
    case DType::Int32: return "I32";
    case DType::UInt8: return "U8";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType* out) {
  for (DType t : {kFloat32, kFloat64, kInt64, kInt32, kUInt8, kBool}) {
    if (s == format_dtype(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

// Reverses the bytes of each element in place (big-endian hosts only: the file is little-endian).
void swap_bytes(void* data, int64_t n, size_t elem) {
  if (elem == 1) return;
  auto* p = static_cast<unsigned char*>(data);
  for (int64_t i = 0; i < n; ++i) std::reverse(p + i * elem, p + (i + 1) * elem);
}

std::string errno_text() { return std::strerror(errno); }

// ---- the header ------------------------------------------------------------------------------

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;  // in the data buffer
};

struct Header {
  std::vector<Entry> entries;  // in the header's order
  Metadata metadata;
  uint64_t data_start = 0;     // file offset of the data buffer
};

// Every problem is reported as "safetensors file '<path>': <what>".
struct Reader {
  std::string path;
  std::ifstream in;
  uint64_t file_size = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw IOError("safetensors file '" + path + "': " + what);
  }

  explicit Reader(const std::string& p) : path(p) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) fail("cannot open it: no such file");
    if (fs::is_directory(st)) fail("is a folder, not a file");
    in.open(path, std::ios::binary);
    if (!in) fail("cannot open it: " + errno_text());
    file_size = fs::file_size(path, ec);
    if (ec) fail("cannot read its size: " + ec.message());
  }

  void read_at(uint64_t offset, void* dst, uint64_t bytes) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
    if (!in || static_cast<uint64_t>(in.gcount()) != bytes) {
      fail("read failed at byte " + std::to_string(offset) + " (" + std::to_string(bytes) +
           " bytes): the file is shorter than its header says (truncated, or changed while "
           "being read)");
    }
  }

  Header read_header() {
    if (file_size < 8) {
      fail("is " + std::to_string(file_size) + " bytes long, too short to be a safetensors file "
           "(it starts with an 8-byte header length); the file is truncated or of another kind");
    }
    unsigned char len_bytes[8];
    read_at(0, len_bytes, 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
    if (n > kMaxHeaderBytes) {
      fail("the first 8 bytes give a header length of " + std::to_string(n) + " bytes, over the "
           "format's limit of 100000000; this is not a safetensors file, or it is corrupt");
    }
    if (n > file_size - 8) {
      fail("the header length is " + std::to_string(n) + " bytes but only " +
           std::to_string(file_size - 8) + " bytes follow it: the file is truncated, or not a "
           "safetensors file");
    }
    if (n < 2) fail("the header length is " + std::to_string(n) + ": too short for a JSON object");
    std::string text(static_cast<size_t>(n), '\0');
    read_at(8, text.data(), n);
    if (text[0] != '{') {
      fail("the header does not start with '{' (it starts with byte " +
           std::to_string(static_cast<unsigned char>(text[0])) + "); not a safetensors file");
    }

    // Duplicate names would be silently merged by the JSON library: catch them while parsing.
    std::string duplicate;
    std::set<std::string> names;
    json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1) {
        const std::string key = parsed.get<std::string>();
        if (!names.insert(key).second && duplicate.empty()) duplicate = key;
      }
      return true;
    };
    json doc;
    try {
      doc = json::parse(text, on_event, /*allow_exceptions=*/true);
    } catch (const json::exception& e) {
      fail(std::string("the header is not valid JSON (") + e.what() + ")");
    }
    if (!duplicate.empty()) fail("the header names tensor '" + duplicate + "' twice");
    if (!doc.is_object()) fail("the header is not a JSON object");

    Header h;
    h.data_start = 8 + n;
    const uint64_t buffer_size = file_size - h.data_start;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      const std::string& name = it.key();
      const json& v = it.value();
      if (name == "__metadata__") {
        if (!v.is_object()) fail("__metadata__ is not a JSON object of strings");
        for (auto m = v.begin(); m != v.end(); ++m) {
          if (!m.value().is_string()) {
            fail("__metadata__[\"" + m.key() + "\"] is not a string (the format allows only "
                 "string values)");
          }
          h.metadata[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      h.entries.push_back(parse_entry(name, v, buffer_size));
    }
    check_offsets(h.entries, buffer_size);
    return h;
  }

  Entry parse_entry(const std::string& name, const json& v, uint64_t buffer_size) const {
    const std::string where = "tensor '" + name + "'";
    if (!v.is_object()) fail(where + ": its header entry is not a JSON object");
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!v.contains(field)) fail(where + ": its header entry has no \"" + field + "\"");
    }
    Entry e;
    e.name = name;
    const json& dt = v["dtype"];
    if (!dt.is_string()) fail(where + ": \"dtype\" is not a string");
    if (!parse_dtype(dt.get<std::string>(), &e.dtype)) {
      fail(where + " has dtype " + dt.get<std::string>() + ", which ember does not have (it "
           "reads F32, F64, I64, I32, U8 and BOOL); convert the tensor before saving it, e.g. "
           "tensor.float() in PyTorch");
    }
    const json& shape = v["shape"];
    if (!shape.is_array()) fail(where + ": \"shape\" is not an array");
    // The element count, checked against the buffer as it grows, so that no product overflows.
    uint64_t numel = 1;
    const uint64_t max_numel = buffer_size / dtype_size(e.dtype);
    bool empty = false;
    for (const json& d : shape) {
      if (!d.is_number_unsigned()) fail(where + ": the shape holds " + d.dump() +
                                        ", not a non-negative integer");
      const uint64_t size = d.get<uint64_t>();
      if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(where + ": shape entry " + std::to_string(size) + " is too large");
      }
      e.shape.push_back(static_cast<int64_t>(size));
      if (size == 0) empty = true;
      if (!empty) {
        if (size > max_numel || numel > max_numel / size) {
          fail(where + ": its shape " + shape.dump() + " needs more bytes than the file's " +
               std::to_string(buffer_size) + " bytes of data (a corrupt or forged header)");
        }
        numel *= size;
      }
    }
    if (empty) numel = 0;
    const json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      fail(where + ": \"data_offsets\" is not a pair of non-negative integers [BEGIN, END]");
    }
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    if (e.begin > e.end) {
      fail(where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
           "] end before they begin");
    }
    if (e.end > buffer_size) {
      fail(where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
           "] reach past the end of the data (" + std::to_string(buffer_size) + " bytes): the "
           "file is truncated, or its header is corrupt");
    }
    const uint64_t bytes = numel * dtype_size(e.dtype);
    if (e.end - e.begin != bytes) {
      fail(where + ": shape " + shape.dump() + " of " + format_dtype(e.dtype) + " needs " +
           std::to_string(bytes) + " bytes but data_offsets [" + std::to_string(e.begin) + ", " +
           std::to_string(e.end) + "] hold " + std::to_string(e.end - e.begin));
    }
    return e;
  }

  // The tensors must tile [0, buffer_size): sorted by BEGIN, each starts where the last ended.
  void check_offsets(const std::vector<Entry>& entries, uint64_t buffer_size) const {
    std::vector<const Entry*> sorted;
    for (const Entry& e : entries) sorted.push_back(&e);
    std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
      return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    uint64_t at = 0;
    const Entry* prev = nullptr;
    for (const Entry* e : sorted) {
      if (e->begin < at) {
        fail("tensors '" + prev->name + "' and '" + e->name + "' overlap (bytes " +
             std::to_string(e->begin) + " to " + std::to_string(std::min(at, e->end)) +
             " of the data)");
      }
      if (e->begin > at) {
        fail("bytes " + std::to_string(at) + " to " + std::to_string(e->begin) + " of the data "
             "belong to no tensor (a hole before tensor '" + e->name + "'); the header is corrupt");
      }
      at = e->end;
      prev = e;
    }
    if (at != buffer_size) {
      fail("the tensors cover " + std::to_string(at) + " bytes of data but the file holds " +
           std::to_string(buffer_size) + " after its header (" +
           (at < buffer_size ? "extra bytes at the end" : "the file is truncated") + ")");
    }
  }

  Tensor read_tensor(const Header& h, const Entry& e) {
    // Bounded by the checks above: e.end - e.begin bytes, inside the file.
    Tensor t = empty(e.shape, TensorOptions(e.dtype).device(Device::cpu()));
    if (t.numel() == 0) return t;
    read_at(h.data_start + e.begin, t.raw_data(), e.end - e.begin);
    if (!kLittleEndianHost) swap_bytes(t.raw_data(), t.numel(), dtype_size(e.dtype));
    if (e.dtype == kBool) {
      const auto* p = static_cast<const unsigned char*>(t.raw_data());
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (p[i] > 1) {
          fail("tensor '" + e.name + "' (BOOL) holds the byte " + std::to_string(p[i]) +
               " at element " + std::to_string(i) + "; a BOOL is 0 or 1");
        }
      }
    }
    return t;
  }
};

// ---- atomic writes ---------------------------------------------------------------------------

class FdSink final : public FileSink {
 public:
  // `fault`: the save fault this write must stop at (core/test_hooks.h), None for all but one.
  FdSink(int fd, std::string tmp, int64_t expected, test_hooks::Action fault)
      : fd_(fd),
        tmp_(std::move(tmp)),
        half_(expected > 0 ? expected / 2 : 0),
        fault_(fault != test_hooks::Action::None),
        action_(fault) {}

  void write(const void* data, size_t bytes) override {
    const auto* p = static_cast<const char*>(data);
    while (bytes > 0) {
      // In chunks, so a test fault lands in the middle of a large tensor too.
      size_t chunk = std::min<size_t>(bytes, size_t{1} << 20);
      if (fault_ && written_ < half_) chunk = std::min<size_t>(chunk, half_ - written_);
      const ssize_t n = ::write(fd_, p, chunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw IOError("cannot write '" + tmp_ + "': " + errno_text());
      }
      p += n;
      bytes -= static_cast<size_t>(n);
      written_ += static_cast<uint64_t>(n);
      if (fault_ && written_ >= half_) trigger();
    }
  }

 private:
  [[noreturn]] void trigger() {
    ::fsync(fd_);  // the half-written file is really on disk, as after a crash
    test_hooks::stop(action_, "save fault: paused writing '" + tmp_ + "' after " +
                                  std::to_string(written_) + " bytes");
  }

  int fd_;
  std::string tmp_;
  uint64_t half_;
  uint64_t written_ = 0;
  bool fault_;
  test_hooks::Action action_;
};

}  // namespace

const char* version_string() { return EMBER_VERSION_STRING; }

void write_file_atomically(const std::string& path, const std::function<void(FileSink&)>& fill,
                           int64_t expected_bytes) {
  const test_hooks::Action fault = test_hooks::next_save_fault();
  const fs::path target(path);
  EMBER_CHECK(!target.filename().empty(), "write_file_atomically: '", path, "' names no file");
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    throw IOError("cannot write '" + path + "': the folder '" + folder.string() +
                  "' does not exist (create it first)");
  }
  static std::atomic<int> counter{0};
  const std::string tmp = (folder / ("." + target.filename().string() + ".tmp-" +
                                     std::to_string(::getpid()) + "-" +
                                     std::to_string(counter++))).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IOError("cannot create '" + tmp + "' to write '" + path + "': " + errno_text());
  bool open = true;
  try {
    FdSink sink(fd, tmp, expected_bytes, fault);
    fill(sink);
    if (::fsync(fd) != 0) throw IOError("cannot flush '" + tmp + "' to disk: " + errno_text());
    open = false;
    if (::close(fd) != 0) throw IOError("cannot close '" + tmp + "': " + errno_text());
  } catch (...) {
    if (open) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw IOError("cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
  // The rename is an update of the folder: fsync it, or a power cut may forget it.
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

// ---- save ------------------------------------------------------------------------------------

void save(const NamedTensors& tensors, const std::string& path, const Metadata& metadata) {
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK(!name.empty(), "save('", path, "'): a tensor has an empty name");
    EMBER_CHECK(name != "__metadata__", "save('", path, "'): \"__metadata__\" is the format's "
                "reserved key and cannot name a tensor");
    EMBER_CHECK(names.insert(name).second, "save('", path, "'): two tensors are named '", name,
                "'; names must be unique");
    EMBER_CHECK(t.defined(), "save('", path, "'): tensor '", name, "' is undefined");
  }

  // Row-major host copies (the same tensor when it already is one).
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  for (const auto& entry : tensors) host.push_back(entry.second.detach().cpu().contiguous());

  // Data order: widest elements first (stable), so with the 8-byte-aligned header every tensor
  // starts at a multiple of its element size, as in files written by the safetensors library.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return host[a].element_size() > host[b].element_size();
  });
  std::vector<uint64_t> begin(tensors.size());
  uint64_t at = 0;
  for (size_t i : order) {
    begin[i] = at;
    at += static_cast<uint64_t>(host[i].numel()) * host[i].element_size();
  }
  const uint64_t data_bytes = at;

  json header = json::object();
  json meta = json::object();
  meta["format"] = "pt";
  for (const auto& [k, v] : metadata) meta[k] = v;
  meta["ember_version"] = version_string();
  header["__metadata__"] = meta;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t bytes = static_cast<uint64_t>(host[i].numel()) * host[i].element_size();
    header[tensors[i].first] = {{"dtype", format_dtype(host[i].dtype())},
                                {"shape", host[i].shape()},
                                {"data_offsets", {begin[i], begin[i] + bytes}}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {  // a name or metadata string that is not valid UTF-8
    throw ValueError("save('" + path + "'): a tensor name or metadata string is not valid UTF-8 (" +
                     e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // pad: the data starts 8-byte aligned
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(text.size() >> (8 * i));

  write_file_atomically(
      path,
      [&](FileSink& out) {
        out.write(len_bytes, 8);
        out.write(text.data(), text.size());
        for (size_t i : order) {
          const Tensor& t = host[i];
          const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
          if (bytes == 0) continue;
          if (kLittleEndianHost) {
            out.write(t.raw_data(), bytes);
          } else {
            std::vector<unsigned char> swapped(static_cast<const unsigned char*>(t.raw_data()),
                                               static_cast<const unsigned char*>(t.raw_data()) + bytes);
            swap_bytes(swapped.data(), t.numel(), t.element_size());
            out.write(swapped.data(), bytes);
          }
        }
      },
      static_cast<int64_t>(8 + text.size() + data_bytes));
}

// ---- load ------------------------------------------------------------------------------------

SafetensorsFile load_file(const std::string& path, Device device) {
  Reader r(path);
  const Header h = r.read_header();
  SafetensorsFile out;
  out.metadata = h.metadata;
  out.tensors.reserve(h.entries.size());
  for (const Entry& e : h.entries) {
    Tensor t = r.read_tensor(h, e);
    if (!device.is_cpu()) t = t.to(device);
    out.tensors.emplace_back(e.name, t);
  }
  return out;
}

NamedTensors load(const std::string& path, Device device) {
  return load_file(path, device).tensors;
}

Metadata load_metadata(const std::string& path) {
  Reader r(path);
  return r.read_header().metadata;
}

}  // namespace ember
