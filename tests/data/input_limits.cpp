// Forged headers: a file whose header claims far more data than the file holds — 2^40 elements, a
// 100000x100000 image — is refused before anything is allocated for the claim, with a message that
// gives the claimed size and the file's real size. The readers: IDX (plain and gzip), PNG, BMP and
// JPEG (data/image_decode.h: kMaxImagePixels, PNG's deflate bound, libjpeg's memory limit) and
// safetensors.
//
// "Before anything is allocated": a 2^40-element uint8 tensor or a 30 GB decoded image cannot be
// allocated on a test machine, so an attempt would end in std::bad_alloc (or the OOM killer), not
// in the IOError or the reason asserted here; and no storage is alive afterwards.
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "core/serialize.h"
#include "core/storage.h"
#include "data/data.h"
#include "test_files.h"

using namespace ember;
using namespace ember::data;
using Catch::Matchers::Contains;

namespace {

using test::Bytes;
using test::error_of;
using test::write_bytes;

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_limits_") {}
};

using test::png_chunk;
using test::put_be32;
using test::put_le32;

Bytes idx_header(const std::vector<uint32_t>& dims) {
  Bytes b = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) put_be32(b, d);
  return b;
}

Bytes gzip(const Bytes& in) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  Bytes out(deflateBound(&zs, in.size()) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A PNG whose IHDR says w x h (8-bit, colour type `color`) followed by a small IDAT.
Bytes forged_png(uint32_t w, uint32_t h, uint8_t color) {
  Bytes b = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  for (uint8_t v : {uint8_t{8}, color, uint8_t{0}, uint8_t{0}, uint8_t{0}}) ihdr.push_back(v);
  png_chunk(b, "IHDR", ihdr);
  png_chunk(b, "IDAT", {0x78, 0x9C, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01});
  png_chunk(b, "IEND", {});
  return b;
}

// A 24-bit BMP whose info header says w x h, with `pixels` bytes of data after it.
Bytes forged_bmp(int32_t w, int32_t h, size_t pixels) {
  Bytes b = {'B', 'M'};
  put_le32(b, static_cast<uint32_t>(54 + pixels));
  put_le32(b, 0);
  put_le32(b, 54);
  put_le32(b, 40);
  put_le32(b, static_cast<uint32_t>(w));
  put_le32(b, static_cast<uint32_t>(h));
  b.push_back(1), b.push_back(0), b.push_back(24), b.push_back(0);
  for (int i = 0; i < 6; ++i) put_le32(b, 0);
  b.resize(b.size() + pixels, 0x80);
  return b;
}

// A real JPEG with the size in its SOF0 segment replaced.
Bytes forged_jpeg(uint16_t w, uint16_t h) {
  Bytes b = encode_jpeg(full({1, 16, 16}, 100, kUInt8), 90);
  for (size_t i = 2; i + 8 < b.size(); ++i) {
    if (b[i] == 0xFF && b[i + 1] == 0xC0) {  // SOF0: FF C0 len(2) precision(1) height(2) width(2)
      b[i + 5] = static_cast<uint8_t>(h >> 8), b[i + 6] = static_cast<uint8_t>(h);
      b[i + 7] = static_cast<uint8_t>(w >> 8), b[i + 8] = static_cast<uint8_t>(w);
      return b;
    }
  }
  FAIL("no SOF0 in the JPEG encode_jpeg made");
  return b;
}

std::string decode_reason(const Bytes& file, int64_t h = 50, int64_t w = 50) {
  DecodeScratch scratch;
  std::vector<uint8_t> out(static_cast<size_t>(h * w));
  return decode_image(file.data(), file.size(), h, w, 1, out.data(), scratch);
}

}  // namespace

TEST_CASE("limits: an IDX header claiming 2^40 elements is refused with both sizes", "[data][limits]") {
  TempDir dir;
  const int64_t storages = Storage::live_count();
  Bytes file = idx_header({1 << 20, 1 << 20});  // 2^40 bytes claimed
  file.insert(file.end(), {1, 2, 3, 4});
  write_bytes(dir / "forged", file);
  const std::string msg = error_of<IOError>([&] { read_idx(dir / "forged"); });
  CHECK_THAT(msg, Contains(dir / "forged") && Contains("expected 1099511627776 bytes") &&
                      Contains("found 4"));
  // gzip: the same, counted in decompressed bytes.
  write_bytes(dir / "forged.gz", gzip(file));
  const std::string gz = error_of<IOError>([&] { read_idx(dir / "forged.gz"); });
  CHECK_THAT(gz, Contains("expected 1099511627776 bytes") && Contains("found 4") &&
                     Contains("of the decompressed data"));
  // Sizes whose product passes 2^62: the claimed sizes and the bytes there are.
  Bytes huge = idx_header({0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu});
  huge.insert(huge.end(), 7, 0);
  write_bytes(dir / "huge", huge);
  CHECK_THAT(error_of<IOError>([&] { read_idx(dir / "huge"); }),
             Contains("4294967295x4294967295x4294967295 array") && Contains("holds 7 bytes of data"));
  CHECK(Storage::live_count() == storages);
}

TEST_CASE("limits: a 100000x100000 PNG or BMP is refused before decoding, with both sizes",
          "[data][image][limits]") {
  const Bytes png = forged_png(100000, 100000, 2);
  const std::string p = decode_reason(png);
  CHECK_THAT(p, Contains("bad PNG: the header claims 100000x100000 pixels (10000000000)") &&
                    Contains("in a file of " + std::to_string(png.size()) + " bytes"));
  const Bytes bmp = forged_bmp(100000, 100000, 16);
  CHECK_THAT(decode_reason(bmp), Contains("bad BMP: the header claims 100000x100000 pixels") &&
                                     Contains("in a file of 70 bytes"));
  // Top-down BMPs have a negative height: the same limit.
  CHECK_THAT(decode_reason(forged_bmp(100000, -100000, 16)), Contains("100000x100000 pixels"));
  // Through read_image: an IOError naming the file.
  TempDir dir;
  write_bytes(dir / "big.png", png);
  CHECK_THAT(error_of<IOError>([&] { read_image(dir / "big.png", 50, 50); }),
             Contains(dir / "big.png") && Contains("100000x100000"));
}

TEST_CASE("limits: a PNG claiming more pixel rows than its bytes can inflate to is refused",
          "[data][image][limits]") {
  // 16000x16000 RGBA is under the pixel limit, but its 1 GB of rows cannot come out of 80 bytes
  // (deflate expands at most 1032:1). Without the check ember would allocate the decoded image,
  // 768 MB of RGB, before libpng found the rows missing.
  const Bytes png = forged_png(16000, 16000, 6);
  CHECK_THAT(decode_reason(png),
             Contains("truncated PNG: the header claims 16000x16000 pixels (1024016000 bytes of "
                      "pixel rows), but the file is " + std::to_string(png.size()) + " bytes"));
  // A real, small PNG passes the check (a solid 300x200 image compresses far below 1:1032).
}

TEST_CASE("limits: a BMP shorter than its rows names the claimed size", "[data][image][limits]") {
  const Bytes bmp = forged_bmp(640, 480, 1000);
  CHECK_THAT(decode_reason(bmp),
             Contains("truncated BMP: the header claims 640x480 pixels at 24 bits, which need "
                      "921654 bytes, but the file is 1054 bytes"));
}

TEST_CASE("limits: a JPEG claiming 65500x65500 pixels is refused after its header",
          "[data][image][limits]") {
  const Bytes jpeg = forged_jpeg(65500, 65500);
  CHECK_THAT(decode_reason(jpeg),
             Contains("bad JPEG: the header claims 65500x65500 pixels (4290250000)") &&
                 Contains("in a file of " + std::to_string(jpeg.size()) + " bytes"));
  // Under the limit the header is believed, and the missing data is what fails.
  CHECK_THAT(decode_reason(forged_jpeg(1000, 800)), Contains("JPEG"));
}

TEST_CASE("limits: a safetensors header claiming a huge shape is refused with both sizes",
          "[limits]") {
  TempDir dir;
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,4398046511104]}})";
  Bytes file;
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), 16, 0);
  write_bytes(dir / "forged.safetensors", file);
  CHECK_THAT(error_of<IOError>([&] { load(dir / "forged.safetensors"); }),
             Contains("[1048576,1048576]") && Contains("16 bytes of data"));
}

TEST_CASE("limits: a progressive JPEG that would need over 1 GiB of coefficients is refused",
          "[data][image][limits]") {
  // A progressive JPEG keeps every DCT coefficient of the image while its scans arrive: 128 bytes
  // per 8x8 block and component. 16000x16000 pixels is under the pixel limit, but as CMYK (four
  // components, two of them at full resolution) that is 1.28 GB; libjpeg is told it may use 1 GiB
  // and gives up before allocating. The file is the image fuzzer's progressive CMYK seed (2 bytes
  // of target size, then the JPEG) with its SOF2 size replaced.
  Bytes jpeg = test::read_bytes(std::string(EMBER_FUZZ_DIR) + "/corpus/image/jpeg-progressive-cmyk");
  REQUIRE(jpeg.size() > 100);
  jpeg.erase(jpeg.begin(), jpeg.begin() + 2);
  bool patched = false;
  for (size_t i = 2; i + 8 < jpeg.size() && !patched; ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC2) {  // SOF2: FF C2 len(2) precision(1) h(2) w(2)
      jpeg[i + 5] = 16000 >> 8, jpeg[i + 6] = 16000 & 0xFF;
      jpeg[i + 7] = 16000 >> 8, jpeg[i + 8] = 16000 & 0xFF;
      patched = true;
    }
  }
  REQUIRE(patched);
  CHECK_THAT(decode_reason(jpeg), Contains("bad JPEG: decoding it needs more than 1024 MiB of memory"));
}
