// ember/data/idx.cpp — the IDX reader: whole file into memory, gunzip if needed, check the
// header against the byte count, copy the elements into a uint8 tensor.
//
// MNIST is small (47 MB of training pixels), so the simplest correct plan wins: read every byte,
// then validate with exact byte counts. Every check names the file and says what it found,
// because the usual failures are mundane — a download cut short, an HTML error page saved
// under the data file's name, labels and images swapped — and the message should make them
// obvious.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernels/base/error.h"
#include "data/mnist.h"
#include "kernels/base/loop.h"

namespace ember::data {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IOError(path + ": " + what);
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

std::string hex8(uint8_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02X", v);
  return buf;
}

uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The element types IDX defines; only 0x08 is read, the others get a precise refusal.
const char* idx_type_name(uint8_t t) {
  switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return nullptr;
  }
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) fail(path, "no such file.\n" + mnist_download_hint());
  if (fs::is_directory(st)) fail(path, "is a directory, expected an IDX file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0) fail(path, "cannot determine the file size");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    fail(path, "read error after " + std::to_string(in.gcount()) + " of " +
                   std::to_string(size) + " bytes");
  }
  return bytes;
}

bool is_gzip(const std::vector<uint8_t>& b, size_t at = 0) {
  return b.size() >= at + 2 && b[at] == 0x1f && b[at + 1] == 0x8b;
}

// Owns a zlib inflate stream so that every exit path calls inflateEnd.
struct Inflater {
  z_stream zs{};
  Inflater(const std::string& path) {
    // 15 = the largest window; +16 = expect a gzip header and trailer (not raw zlib).
    if (inflateInit2(&zs, 15 + 16) != Z_OK) fail(path, "zlib could not start a gzip decoder");
  }
  ~Inflater() { inflateEnd(&zs); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

// gunzip in memory. A gzip file may hold several members back to back (`cat a.gz b.gz`); they
// decompress to the concatenation, as with gunzip. zlib checks each member's CRC-32 and length.
std::vector<uint8_t> gunzip(const std::string& path, const std::vector<uint8_t>& gz) {
  // The last four bytes of a gzip file hold the uncompressed size mod 2^32: a good first guess
  // for the output buffer. In a damaged file they are arbitrary, so the guess is capped by
  // deflate's largest possible ratio (about 1032:1).
  size_t guess = 1 << 16;
  if (gz.size() >= 18) {
    const uint8_t* t = gz.data() + gz.size() - 4;
    const size_t isize = uint32_t{t[0]} | (uint32_t{t[1]} << 8) | (uint32_t{t[2]} << 16) |
                         (uint32_t{t[3]} << 24);
    guess = std::clamp<size_t>(isize, guess, std::max(guess, gz.size() * 1032));
  }
  std::vector<uint8_t> out(guess);
  size_t produced = 0, fed = 0;  // bytes written to `out`, bytes of `gz` handed to zlib
  Inflater inf(path);
  z_stream& zs = inf.zs;
  auto consumed = [&] { return fed - zs.avail_in; };
  const std::string where_hint =
      " (the file is gzip-compressed; the position counts compressed bytes)";
  for (;;) {
    if (zs.avail_in == 0 && fed < gz.size()) {  // zlib counts in uInt: feed at most 1 GiB at a time
      const size_t chunk = std::min<size_t>(gz.size() - fed, size_t{1} << 30);
      zs.next_in = const_cast<Bytef*>(gz.data() + fed);
      zs.avail_in = static_cast<uInt>(chunk);
      fed += chunk;
    }
    if (produced == out.size()) out.resize(out.size() * 2);
    const size_t room = std::min<size_t>(out.size() - produced, size_t{1} << 30);
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(room);
    const int ret = inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;
    if (ret == Z_STREAM_END) {
      const size_t at = consumed();
      if (at == gz.size()) break;
      if (is_gzip(gz, at)) {  // another member follows
        inflateReset(&zs);
        continue;
      }
      fail(path, std::to_string(gz.size() - at) + " bytes of garbage after the end of the gzip "
                 "stream at byte " + std::to_string(at) + where_hint +
                 ": the file is corrupt; download it again");
    }
    if (ret == Z_OK) continue;
    if (ret == Z_BUF_ERROR && zs.avail_in == 0 && fed == gz.size()) {
      fail(path, "the gzip stream ends early, at byte " + std::to_string(gz.size()) +
                 " of the compressed file, after " + std::to_string(produced) +
                 " decompressed bytes: the download was cut short; download the file again");
    }
    if (ret == Z_BUF_ERROR) continue;  // no progress this round only because a buffer was full
    if (ret == Z_MEM_ERROR) fail(path, "out of memory while decompressing");
    fail(path, std::string("corrupt gzip data near byte ") + std::to_string(consumed()) +
               where_hint + ": " + (zs.msg ? zs.msg : "zlib error " + std::to_string(ret)) +
               "; download the file again");
  }
  out.resize(produced);
  return out;
}

// "pixel data for 60000 images of 28x28", "labels for 60000 items", "data for a 2x3x4 array".
std::string describe(const std::vector<int64_t>& dims) {
  if (dims.size() == 3) {
    return "pixel data for " + std::to_string(dims[0]) + " images of " + std::to_string(dims[1]) +
           "x" + std::to_string(dims[2]);
  }
  if (dims.size() == 1) return "labels for " + std::to_string(dims[0]) + " items";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return "data for a " + s + " array";
}

}  // namespace

std::vector<uint8_t> read_maybe_gzipped(const std::string& path) {
  std::vector<uint8_t> bytes = read_all(path);
  return is_gzip(bytes) ? gunzip(path, bytes) : bytes;
}

Tensor read_idx(const std::string& path, IdxKind kind) {
  std::vector<uint8_t> raw = read_all(path);
  const bool gz = is_gzip(raw);
  const std::vector<uint8_t> bytes = gz ? gunzip(path, raw) : std::move(raw);
  // Byte positions below count in what the parser sees: for a .gz file, the decompressed data.
  const std::string of = gz ? " of the decompressed data" : "";
  const size_t n = bytes.size();

  // ---- magic number: 00 00 <type> <ndims> ----
  if (n < 4) {
    fail(path, "truncated at byte " + std::to_string(n) + of +
               ": an IDX file starts with a 4-byte magic number (0x00000801 for labels, "
               "0x00000803 for images)");
  }
  const uint32_t magic = big_endian32(bytes.data());
  const uint8_t type = bytes[2], ndims = bytes[3];
  if (bytes[0] != 0 || bytes[1] != 0 || idx_type_name(type) == nullptr) {
    std::string why = "wrong magic " + hex32(magic) +
                      ", expected 0x00000801 (labels) or 0x00000803 (images)";
    if (bytes[0] == '<') {
      why += ": the file starts with '<', it is probably an HTML page saved by a failed download";
    } else {
      why += ": this is not an MNIST IDX file";
    }
    fail(path, why);
  }
  if (type != 0x08) {
    fail(path, "element type " + hex8(type) + " (" + idx_type_name(type) + ", magic " +
               hex32(magic) + ") is not supported: ember reads only unsigned-byte IDX files "
               "(type 0x08), which is what MNIST and Fashion-MNIST use");
  }
  if (ndims == 0) fail(path, "the header says 0 dimensions (magic " + hex32(magic) + ")");
  if (ndims > kernels::kMaxDims) {  // IDX allows 255; ember's ops take at most 12
    fail(path, "holds a " + std::to_string(ndims) + "-d array (magic " + hex32(magic) +
               "), but ember's tensors have at most " + std::to_string(kernels::kMaxDims) +
               " dimensions");
  }
  const int want = kind == IdxKind::Labels ? 1 : kind == IdxKind::Images ? 3 : 0;
  if (want != 0 && ndims != want) {
    const char* what = ndims == 1 ? " (labels)" : ndims == 3 ? " (images)" : "";
    fail(path, "holds a " + std::to_string(ndims) + "-d array" + what + ", magic " +
               hex32(magic) + ", but " + (want == 1 ? "labels" : "images") +
               " were expected, magic " + (want == 1 ? "0x00000801" : "0x00000803") +
               (ndims == 1 || ndims == 3 ? ": are the labels and images files swapped?" : ""));
  }

  // ---- dims: ndims big-endian uint32 ----
  const size_t header = 4 + 4 * size_t{ndims};
  if (n < header) {
    fail(path, "truncated at byte " + std::to_string(n) + of + ": the header of a " +
               std::to_string(ndims) + "-d IDX file is " + std::to_string(header) + " bytes");
  }
  std::vector<int64_t> dims(ndims);
  int64_t count = 1, layout = 1;
  for (size_t d = 0; d < ndims; ++d) {
    dims[d] = big_endian32(bytes.data() + 4 + 4 * d);
    // Each size is below 2^32, so checking the running product against 2^62 keeps it exact. The
    // sizes are checked without the zeros too: a tensor's strides are that product, so even an
    // empty [2^32-1, 2^32-1, 2^32-1, 0] array has no layout (found by fuzz/targets/idx.cpp).
    const int64_t size = std::max<int64_t>(dims[d], 1);
    if (layout > (int64_t{1} << 62) / size) {
      std::string sizes;
      for (size_t k = 0; k < ndims; ++k) {
        sizes += (k ? "x" : "") + std::to_string(big_endian32(bytes.data() + 4 + 4 * k));
      }
      fail(path, "the header claims a " + sizes + " array, sizes that multiply to more than "
                 "2^62 (leaving out any 0), but the file holds " + std::to_string(n - header) +
                 " bytes of data after its " + std::to_string(header) + "-byte header" + of +
                 ": the header is corrupt");
    }
    layout *= size;
    count *= dims[d];
  }

  // ---- exactly `count` bytes of data follow ----
  const size_t expected = static_cast<size_t>(count);
  const size_t found = n - header;
  if (found < expected) {
    fail(path, "truncated at byte " + std::to_string(n) + of + ": expected " +
               std::to_string(expected) + " bytes of " + describe(dims) + " after the " +
               std::to_string(header) + "-byte header, found " + std::to_string(found) +
               "; the file is incomplete, download it again");
  }
  if (found > expected) {
    fail(path, std::to_string(found - expected) + " bytes of trailing garbage after byte " +
               std::to_string(header + expected) + of + ", where the " + describe(dims) +
               " ends: the file is corrupt or its header is wrong");
  }

  // A host tensor whatever the default device is (filled by memcpy here).
  Tensor out = empty(Shape(dims.begin(), dims.end()), TensorOptions(kUInt8).device(Device::cpu()));
  if (expected > 0) std::memcpy(out.raw_data(), bytes.data() + header, expected);
  return out;
}

}  // namespace ember::data
