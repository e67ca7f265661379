// fuzz/targets/image.cpp — data::decode_image: format sniffing, JPEG through libjpeg, PNG through
// libpng, BMP through stb_image, the area resize.
//
// Input: byte 0 = target height - 1 (low 6 bits) and channels (bit 6: RGB, else gray), byte 1 =
// target width - 1 (low 6 bits), then the file.
//
// Properties:
//   - an image is decoded only if sniff_image_format recognised it;
//   - it is decoded at the size its header gives, read here independently of ember: PNG's IHDR,
//     BMP's info header, JPEG's SOF scaled by the M/8 that libjpeg is asked for (the smallest
//     whose output covers the target, else 8/8);
//   - the output is a function of the input alone: every byte of `out` is written, whatever the
//     scratch buffers and `out` held before (two decodes with different garbage agree);
//   - decoded to its own size, the image comes back unchanged (the resize is the identity);
//   - a refusal has a reason; a header claiming more than kMaxImagePixels is refused with the
//     claimed size and the file's size in the reason.
#include <cstring>
#include <string>

#include "data/image_decode.h"
#include "fuzz/targets/common.h"

namespace ember::fuzz {

namespace {

uint32_t be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t be32(const uint8_t* p) { return (be16(p) << 16) | be16(p + 2); }
uint32_t le16(const uint8_t* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8); }
uint32_t le32(const uint8_t* p) { return le16(p) | (le16(p + 2) << 16); }

struct Header {
  bool known = false;
  int64_t width = 0, height = 0;
};

// The first SOF segment of a JPEG, found as libjpeg finds markers: bytes that are not 0xFF between
// segments are skipped (libjpeg warns "extraneous bytes"), 0xFF fill bytes too.
Header jpeg_header(const uint8_t* b, size_t n) {
  size_t i = 2;  // after SOI
  while (i < n) {
    while (i < n && b[i] != 0xFF) ++i;
    while (i < n && b[i] == 0xFF) ++i;
    if (i >= n) break;
    const uint8_t m = b[i++];
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD8)) continue;  // no length
    if (m == 0xD9 || m == 0xDA || i + 2 > n) break;                   // EOI, SOS: no SOF before
    const size_t length = be16(b + i);
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      if (i + 7 > n) break;
      return {true, be16(b + i + 5), be16(b + i + 3)};
    }
    i += length;
  }
  return {};
}

Header png_header(const uint8_t* b, size_t n) {
  if (n < 24 || std::memcmp(b + 12, "IHDR", 4) != 0) return {};
  return {true, be32(b + 16), be32(b + 20)};
}

Header bmp_header(const uint8_t* b, size_t n) {
  if (n < 26) return {};
  if (le32(b + 14) == 12) return {true, le16(b + 18), le16(b + 20)};
  if (n < 34) return {};  // ember reads up to the compression field first
  const int64_t w = static_cast<int32_t>(le32(b + 18)), h = static_cast<int32_t>(le32(b + 22));
  return {true, w, h < 0 ? -h : h};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Decoded {
  std::string why;
  Bytes out;
  int64_t height = 0, width = 0;
  Bytes pixels;  // before the resize, interleaved
};

Decoded decode(const uint8_t* file, size_t n, int64_t H, int64_t W, int C, uint8_t garbage) {
  data::DecodeScratch scratch;
  scratch.pixels.assign(4096, garbage);
  scratch.rows.assign(4096, garbage == 0 ? 1e30f : -7.f);
  Decoded d;
  d.out.assign(static_cast<size_t>(H * W * C), garbage);
  d.why = data::decode_image(file, n, H, W, C, d.out.data(), scratch);
  d.height = scratch.decoded_height;
  d.width = scratch.decoded_width;
  d.pixels.assign(scratch.pixels.begin(),
                  scratch.pixels.begin() + std::min<size_t>(scratch.pixels.size(),
                                                            static_cast<size_t>(d.height * d.width * C)));
  return d;
}

}  // namespace

void image(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const int64_t H = 1 + (data[0] & 0x3F), W = 1 + (data[1] & 0x3F);
  const int C = (data[0] & 0x40) ? 3 : 1;
  const uint8_t* file = data + 2;
  const size_t n = size - 2;

  const data::ImageFormat format = data::sniff_image_format(file, n);
  const Decoded a = decode(file, n, H, W, C, 0x00);
  const Decoded b = decode(file, n, H, W, C, 0xFF);
  FUZZ_CHECK(a.why == b.why, "two decodes disagree: '" + a.why + "' vs '" + b.why + "'");
  const Header header = format == data::ImageFormat::JPEG ? jpeg_header(file, n)
                        : format == data::ImageFormat::PNG ? png_header(file, n)
                        : format == data::ImageFormat::BMP ? bmp_header(file, n)
                                                           : Header{};
  if (!a.why.empty()) {
    FUZZ_CHECK(a.why.find_first_not_of(' ') != std::string::npos, "empty reason");
    // (PNG and BMP: the size comes first in their headers. A JPEG may fail on a segment before
    // its SOF; tests/data/fuzz_corpus.cpp checks a forged SOF directly.)
    if (header.known && format != data::ImageFormat::JPEG && header.width >= 0 &&
        static_cast<uint64_t>(header.width) * static_cast<uint64_t>(header.height) >
            data::kMaxImagePixels) {
      const std::string claimed = std::to_string(header.width) + "x" + std::to_string(header.height);
      FUZZ_CHECK(a.why.find(claimed) != std::string::npos &&
                     a.why.find(std::to_string(n) + " bytes") != std::string::npos,
                 "a header claiming " + claimed + " pixels must be refused with both sizes: " + a.why);
    }
    return;
  }
  FUZZ_CHECK(format != data::ImageFormat::Unknown, "decoded a file whose format is unknown");
  FUZZ_CHECK(a.out == b.out, "the output depends on what the buffers held before");
  FUZZ_CHECK(a.height == b.height && a.width == b.width && a.pixels == b.pixels,
             "the decoded image depends on what the buffers held before");
  FUZZ_CHECK(header.known, "decoded, but no size in its header");
  FUZZ_CHECK(static_cast<uint64_t>(header.width) * static_cast<uint64_t>(header.height) <=
                 data::kMaxImagePixels, "decoded an image over the pixel limit");
  int64_t want_h = header.height, want_w = header.width;
  if (format == data::ImageFormat::JPEG) {
    for (int m = 1; m <= 8; ++m) {
      want_h = ceil_div(header.height * m, 8);
      want_w = ceil_div(header.width * m, 8);
      if (want_h >= H && want_w >= W) break;
    }
  }
  FUZZ_CHECK(a.height == want_h && a.width == want_w,
             "decoded at " + std::to_string(a.width) + "x" + std::to_string(a.height) +
                 ", the header says " + std::to_string(want_w) + "x" + std::to_string(want_h));

  // The identity resize: decode at the decoded size and compare with the decoder's own pixels.
  // (For a JPEG that size asks libjpeg for a possibly different scale, so only PNG and BMP.)
  if (format != data::ImageFormat::JPEG && a.height * a.width <= 64 * 64) {
    const Decoded same = decode(file, n, a.height, a.width, C, 0x55);
    FUZZ_CHECK(same.why.empty(), "decodes at " + std::to_string(H) + "x" + std::to_string(W) +
                                     " but not at its own size: " + same.why);
    const int64_t P = a.height * a.width;
    for (int64_t p = 0; p < P; ++p) {
      for (int c = 0; c < C; ++c) {
        FUZZ_CHECK(same.out[static_cast<size_t>(c * P + p)] == same.pixels[static_cast<size_t>(p * C + c)],
                   "resizing to the same size changed pixel " + std::to_string(p));
      }
    }
  }
}

}  // namespace ember::fuzz
