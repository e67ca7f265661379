// fuzz/targets/idx.cpp — data::read_idx (plain and gzip) against the IDX format, written again
// here from its description in data/idx.h:
//   00 00 08 d    magic: element type 0x08 (unsigned byte), d > 0 dimensions
//   d sizes       big-endian uint32 each
//   the elements  exactly prod(sizes) bytes, nothing after
// plus two limits of ember's: at most 12 dimensions (kernels::kMaxDims, what its ops take), and
// sizes that, leaving out zeros, multiply to at most 2^62 (a tensor's strides must fit in an
// int64, even for an empty array)
// and gzip (RFC 1952) decoded by zlib directly, members back to back as gunzip does.
//
// Properties: read_idx accepts a file exactly when it is valid; what it returns re-serialises to
// the very bytes it read; IdxKind::Labels / Images accept exactly the 1-d / 3-d files; a refusal
// is an ember::IOError that starts with the path and, for a file shorter or longer than its header
// says, gives both sizes.
#include <zlib.h>

#include <string>

#include "kernels/base/error.h"
#include "data/idx.h"
#include "fuzz/targets/common.h"

namespace ember::fuzz {

namespace {

struct Spec {
  bool header_ok = false;  // magic, type, d > 0 and all d sizes present
  bool valid = false;
  std::vector<int64_t> dims;
  uint64_t expected = 0;   // prod(sizes), saturated at UINT64_MAX
  uint64_t layout = 0;     // prod(max(size, 1)), saturated at UINT64_MAX
  uint64_t found = 0;      // bytes after the header
};

Spec check_spec(const Bytes& b) {
  Spec s;
  if (b.size() < 4 || b[0] != 0 || b[1] != 0 || b[2] != 0x08 || b[3] == 0) return s;
  const size_t d = b[3], header = 4 + 4 * d;
  if (b.size() < header) return s;
  s.header_ok = true;
  bool zero = false, overflow = false;
  uint64_t count = 1;
  for (size_t k = 0; k < d; ++k) {
    const uint8_t* p = b.data() + 4 + 4 * k;
    const uint64_t v = (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | p[3];
    s.dims.push_back(static_cast<int64_t>(v));
    if (v == 0) {
      zero = true;
    } else if (overflow || count > UINT64_MAX / v) {
      overflow = true;
    } else {
      count *= v;
    }
  }
  s.layout = overflow ? UINT64_MAX : count;
  s.expected = zero ? 0 : s.layout;
  s.found = b.size() - header;
  s.valid = s.expected == s.found && s.layout <= (uint64_t{1} << 62) && d <= 12;
  return s;
}

// gunzip with zlib: false for a corrupt or cut stream, or garbage after a member.
bool gunzip(const uint8_t* data, size_t n, Bytes& out) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return false;
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(n);
  out.clear();
  uint8_t buf[1 << 14];
  bool ok = false;
  for (;;) {
    zs.next_out = buf;
    zs.avail_out = sizeof(buf);
    const int ret = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), buf, buf + (sizeof(buf) - zs.avail_out));
    if (ret == Z_STREAM_END) {
      if (zs.avail_in == 0) {
        ok = true;
        break;
      }
      if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      break;  // garbage after the stream
    }
    if (ret == Z_OK) continue;
    if (ret == Z_BUF_ERROR && zs.avail_out == 0) continue;
    break;  // Z_BUF_ERROR with room left: the input ended early; anything else: corrupt
  }
  inflateEnd(&zs);
  return ok;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Tensor -> IDX bytes.
Bytes serialise(const Tensor& t) {
  Bytes b = {0, 0, 0x08, static_cast<uint8_t>(t.dim())};
  for (int64_t d = 0; d < t.dim(); ++d) {
    const uint64_t v = static_cast<uint64_t>(t.size(d));
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
  }
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.raw_data());
  b.insert(b.end(), p, p + c.numel());
  return b;
}

// read_idx's answer: the tensor, or "" and the message.
struct Answer {
  Tensor tensor;
  std::string error;
};

Answer answer(const MemFile& file, data::IdxKind kind) {
  Answer a;
  try {
    a.tensor = data::read_idx(file.path(), kind);
  } catch (const IOError& e) {
    a.error = e.what();
    FUZZ_CHECK(a.error.rfind(file.path() + ": ", 0) == 0, "the message must name the file: " + a.error);
  }
  return a;
}

}  // namespace

void idx(const uint8_t* data, size_t n) {
  static MemFile file("idx");
  file.assign(data, n);
  const bool gz = n >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  Bytes plain;
  const bool unzipped = gz ? gunzip(data, n, plain) : (plain.assign(data, data + n), true);
  const Spec spec = unzipped ? check_spec(plain) : Spec{};

  const Answer any = answer(file, data::IdxKind::Any);
  FUZZ_CHECK(any.tensor.defined() == spec.valid,
             spec.valid ? "a valid file was refused: " + any.error : "an invalid file was accepted");
  if (spec.valid) {
    FUZZ_CHECK(any.tensor.dtype() == kUInt8, "not uint8");
    FUZZ_CHECK(serialise(any.tensor) == plain, "the tensor does not re-serialise to the file's bytes");
  } else if (spec.header_ok && !gz && spec.dims.size() <= 12) {
    // The header is readable but the data is not as long as it says: both sizes are named.
    if (spec.layout > (uint64_t{1} << 62)) {
      // Past 2^62 the message gives the claimed sizes, and the data there is.
      std::string sizes;
      for (size_t k = 0; k < spec.dims.size(); ++k) {
        sizes += (k ? "x" : "") + std::to_string(spec.dims[k]);
      }
      FUZZ_CHECK(contains(any.error, sizes) && contains(any.error, std::to_string(spec.found)),
                 "the message must give the claimed sizes and the actual size: " + any.error);
    } else if (spec.found < spec.expected) {
      FUZZ_CHECK(contains(any.error, std::to_string(spec.expected)) &&
                     contains(any.error, std::to_string(spec.found)),
                 "the message must give the claimed and the actual size: " + any.error);
    } else {
      FUZZ_CHECK(contains(any.error, std::to_string(spec.found - spec.expected)),
                 "the message must give the size of the extra data: " + any.error);
    }
  }
  // MNIST's rank checks: labels are 1-d, images 3-d.
  const size_t rank = spec.valid ? spec.dims.size() : 0;
  const Answer labels = answer(file, data::IdxKind::Labels);
  FUZZ_CHECK(labels.tensor.defined() == (spec.valid && rank == 1), "IdxKind::Labels");
  const Answer images = answer(file, data::IdxKind::Images);
  FUZZ_CHECK(images.tensor.defined() == (spec.valid && rank == 3), "IdxKind::Images");
}

}  // namespace ember::fuzz
