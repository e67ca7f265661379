// What the fuzzers found (fuzz/regressions/README.md has the list), each written down as a small
// test of the behaviour that was wrong, next to the replay of the exact input that found it
// (tests/data/fuzz_corpus.cpp). The PNG findings were holes in stb_image, which decoded PNG
// until libpng took over (data/image_decode.cpp); their tests stay, as tests of what libpng and
// ember's checks around it must still do with those inputs.

#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "test_files.h"

using namespace ember;
using namespace ember::data;
using Catch::Matchers::Contains;

namespace {

using test::Bytes;
using test::png_chunk;
using test::put_be32;
using test::put_le32;

// An 8-bit BMP of w x 1 pixels with a palette of `colours` entries (entry i = grey i * 40) and the
// given pixel indices.
Bytes palette_bmp(uint32_t colours, const std::vector<uint8_t>& indices) {
  const uint32_t w = static_cast<uint32_t>(indices.size());
  const uint32_t offset = 14 + 40 + 4 * colours, row = (w + 3) / 4 * 4;
  Bytes b = {'B', 'M'};
  put_le32(b, offset + row);
  put_le32(b, 0);
  put_le32(b, offset);
  put_le32(b, 40);
  put_le32(b, w);
  put_le32(b, 1);
  b.push_back(1), b.push_back(0), b.push_back(8), b.push_back(0);
  put_le32(b, 0);
  put_le32(b, row);
  put_le32(b, 2835);
  put_le32(b, 2835);
  put_le32(b, colours);
  put_le32(b, 0);
  for (uint32_t i = 0; i < colours; ++i) {
    const auto g = static_cast<uint8_t>(i * 40);
    b.push_back(g), b.push_back(g), b.push_back(g), b.push_back(0);
  }
  b.insert(b.end(), indices.begin(), indices.end());
  b.resize(offset + row, 0);
  return b;
}

// A palette PNG (colour type 3) of w x h pixels at `depth` bits, with `colours` palette entries
// (entry i = grey i * 40), the given indices row by row, each row under PNG filter `filter`
// (0 none, 1 sub, 2 up), Adam7-interlaced or not.
Bytes palette_png(uint32_t w, uint32_t h, int depth, uint32_t colours,
                  const std::vector<uint8_t>& indices, int filter = 0, bool interlaced = false) {
  Bytes b = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  for (int v : {depth, 3, 0, 0, interlaced ? 1 : 0}) ihdr.push_back(static_cast<uint8_t>(v));
  png_chunk(b, "IHDR", ihdr);
  Bytes plte;
  for (uint32_t i = 0; i < colours; ++i) plte.insert(plte.end(), 3, static_cast<uint8_t>(i * 40));
  png_chunk(b, "PLTE", plte);
  // The scanlines: one pass, or Adam7's seven (start x, start y, step x, step y).
  const uint32_t adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  const uint32_t whole[1][4] = {{0, 0, 1, 1}};
  Bytes rows;
  for (int p = 0; p < (interlaced ? 7 : 1); ++p) {
    const uint32_t* ps = interlaced ? adam7[p] : whole[0];
    Bytes prev;
    for (uint32_t y = ps[1]; y < h; y += ps[3]) {
      Bytes row;
      uint32_t bits = 0;
      for (uint32_t x = ps[0]; x < w; x += ps[2], bits += static_cast<uint32_t>(depth)) {
        if (bits % 8 == 0) row.push_back(0);
        row.back() |= static_cast<uint8_t>(indices[y * w + x] << (8 - depth - bits % 8));
      }
      if (row.empty()) break;
      if (prev.empty()) prev.assign(row.size(), 0);
      rows.push_back(static_cast<uint8_t>(filter));
      for (size_t i = 0; i < row.size(); ++i) {
        const uint8_t predictor = filter == 1 ? (i > 0 ? row[i - 1] : 0) : filter == 2 ? prev[i] : 0;
        rows.push_back(static_cast<uint8_t>(row[i] - predictor));
      }
      prev = row;
    }
  }
  Bytes z(compressBound(static_cast<uLong>(rows.size())));
  uLongf zn = static_cast<uLongf>(z.size());
  REQUIRE(compress(z.data(), &zn, rows.data(), static_cast<uLong>(rows.size())) == Z_OK);
  z.resize(zn);
  png_chunk(b, "IDAT", z);
  png_chunk(b, "IEND", {});
  return b;
}

std::string decode(const Bytes& file, std::vector<uint8_t>& out, uint8_t garbage) {
  DecodeScratch scratch;
  scratch.pixels.assign(1024, garbage);  // what an earlier, larger image left there
  out.assign(out.size(), garbage);
  return decode_image(file.data(), file.size(), 1, static_cast<int64_t>(out.size()), 1, out.data(),
                      scratch);
}

}  // namespace

TEST_CASE("fuzz finding: a BMP pixel whose colour index is past its palette is refused",
          "[data][image][fuzz]") {
  // stb_image looked index 200 up in a 4-entry palette, i.e. in its uninitialised stack array:
  // the decoded grey came out different from one decode to the next. Now the file is skipped
  // with the reason.
  std::vector<uint8_t> a(3), b(3);
  const Bytes bad = palette_bmp(4, {1, 200, 3});
  const std::string why = decode(bad, a, 0x00);
  CHECK_THAT(why, Contains("bad BMP: pixel 1 of row 0 has colour 200, but the palette holds 4 colours"));
  CHECK(decode(bad, b, 0xFF) == why);
  // Inside the palette it decodes, to the palette's greys, the same every time.
  const Bytes good = palette_bmp(4, {1, 0, 3});
  REQUIRE(decode(good, a, 0x00).empty());
  REQUIRE(decode(good, b, 0xFF).empty());
  CHECK(a == std::vector<uint8_t>{40, 0, 120});
  CHECK(a == b);
  // A full 256-colour palette needs no check.
  std::vector<uint8_t> c(2);
  CHECK(decode(palette_bmp(256, {255, 7}), c, 0x11).empty());
  CHECK(c == std::vector<uint8_t>{static_cast<uint8_t>(255 * 40), static_cast<uint8_t>(7 * 40)});
}

TEST_CASE("fuzz finding: a PNG pixel whose colour index is past its palette is refused",
          "[data][image][fuzz]") {
  // The same hole in stb_image's PNG decoder (found by CI's 60-s run): a 5x5 8-bit palette image
  // with 16 colours whose Paeth-filtered third row decodes to colour 22 at its first pixel.
  // stb_image looked indices up in a stack array it filled only with the file's entries, so such
  // a pixel came from uninitialised memory and two decodes differed. libpng colours it black and
  // warns; the PNG specification calls it an error, and ember refuses the file, naming the pixel.
  std::vector<uint8_t> a(4), b(4);
  const Bytes bad = palette_png(4, 1, 8, 4, {1, 200, 3, 0});
  const std::string why = decode(bad, a, 0x00);
  CHECK_THAT(why, Contains("bad PNG: pixel 1 of row 0 has colour 200, but the palette holds 4 colours"));
  CHECK(decode(bad, b, 0xFF) == why);
  // Inside the palette it decodes to the palette's greys, the same every time.
  const Bytes good = palette_png(4, 1, 8, 4, {1, 0, 3, 2});
  REQUIRE(decode(good, a, 0x00).empty());
  REQUIRE(decode(good, b, 0xFF).empty());
  CHECK(a == std::vector<uint8_t>{40, 0, 120, 80});
  CHECK(a == b);
  // The check sees the indices where they are in the image: packed 1-, 2- and 4-bit pixels,
  // filtered rows, and the seven passes of an interlaced image, where pixel (x, y) is not the x-th
  // of its row.
  std::vector<uint8_t> idx(8 * 8, 1);
  idx[5 * 8 + 6] = 3;  // pixel 6 of row 5 of an 8x8 image: in Adam7's sixth pass
  for (int depth : {2, 4, 8}) {
    for (int filter : {0, 1, 2}) {
      for (bool interlaced : {false, true}) {
        INFO("depth " << depth << ", filter " << filter << (interlaced ? ", interlaced" : ""));
        DecodeScratch scratch;
        std::vector<uint8_t> out(64);
        const Bytes png = palette_png(8, 8, depth, 3, idx, filter, interlaced);
        CHECK_THAT(decode_image(png.data(), png.size(), 8, 8, 1, out.data(), scratch),
                   Contains("bad PNG: pixel 6 of row 5 has colour 3, but the palette holds 3 colours"));
        const Bytes fine = palette_png(8, 8, depth, 4, idx, filter, interlaced);
        REQUIRE(decode_image(fine.data(), fine.size(), 8, 8, 1, out.data(), scratch).empty());
        CHECK(out[5 * 8 + 6] == 120);
        CHECK(out[0] == 40);
      }
    }
  }
  // 1-bit pixels with a one-colour palette: index 1 is past it.
  std::vector<uint8_t> c(8);
  CHECK_THAT(decode(palette_png(8, 1, 1, 1, {0, 0, 0, 0, 0, 0, 0, 1}), c, 0),
             Contains("bad PNG: pixel 7 of row 0 has colour 1, but the palette holds 1 colours"));
  // The 10-minute run's input: an IEND chunk claiming 148 bytes the file does not have. The pixel
  // is checked before libpng reads on to IEND, so the bad pixel is the reason, not the short IEND.
  Bytes iend_lies = palette_png(4, 1, 8, 4, {1, 200, 3, 0});
  iend_lies[iend_lies.size() - 9] = 148;  // IEND's length field: 00 00 00 94
  CHECK_THAT(decode(iend_lies, a, 0x00),
             Contains("bad PNG: pixel 1 of row 0 has colour 200, but the palette holds 4 colours"));
  // A full palette (2^depth colours) needs no check.
  std::vector<uint8_t> d(2);
  CHECK(decode(palette_png(2, 1, 1, 2, {1, 0}), d, 0).empty());
  CHECK(d == std::vector<uint8_t>{40, 0});
}

TEST_CASE("fuzz finding: a PNG whose deflate data uses distance code 30 is refused",
          "[data][image][fuzz]") {
  // stb_image's inflater read the invalid distance codes 30 and 31 as distance 0 and copied
  // output bytes nothing had written (found by the 10-minute run); libpng's zlib refuses them. A
  // fixed-Huffman block by hand: the filter byte 0, the literal 10, then "length 3 at distance
  // code D", then the block's end.
  auto gray_png = [](uint32_t distance_code) {
    Bytes z = {0x78, 0x01};
    uint32_t acc = 0;
    int nbits = 0;
    auto bit = [&](uint32_t v) {
      acc |= (v & 1) << nbits;
      if (++nbits == 8) z.push_back(static_cast<uint8_t>(acc)), acc = 0, nbits = 0;
    };
    auto code = [&](uint32_t c, int len) {  // Huffman codes go most significant bit first
      for (int i = len - 1; i >= 0; --i) bit(c >> i);
    };
    bit(1), bit(1), bit(0);  // the last block; type 1 (fixed codes), least significant bit first
    code(0x30 + 0, 8);        // literal 0: the row's filter byte
    code(0x30 + 10, 8);       // literal 10: the first pixel
    code(1, 7);               // length code 257: 3 bytes
    code(distance_code, 5);   // fixed distance codes are 5 bits
    code(0, 7);               // end of block
    if (nbits > 0) z.push_back(static_cast<uint8_t>(acc));
    // The Adler-32 of what distance code 0 decodes to (the filter byte and 10, 10, 10, 10).
    const uint8_t rows[5] = {0, 10, 10, 10, 10};
    put_be32(z, static_cast<uint32_t>(adler32(adler32(0, nullptr, 0), rows, 5)));
    Bytes png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    Bytes ihdr;
    put_be32(ihdr, 4);
    put_be32(ihdr, 1);
    for (int v : {8, 0, 0, 0, 0}) ihdr.push_back(static_cast<uint8_t>(v));  // 8-bit gray
    png_chunk(png, "IHDR", ihdr);
    png_chunk(png, "IDAT", z);
    png_chunk(png, "IEND", {});
    return png;
  };
  std::vector<uint8_t> out(4);
  CHECK_THAT(decode(gray_png(30), out, 0),
             Contains("bad PNG: its compressed pixel data is corrupt (libpng: IDAT: invalid "
                      "distance code)"));
  CHECK_THAT(decode(gray_png(31), out, 0),
             Contains("bad PNG: its compressed pixel data is corrupt (libpng: IDAT: invalid "
                      "distance code)"));
  // Distance code 0 (distance 1) is the same stream made valid: the pixel repeated.
  REQUIRE(decode(gray_png(0), out, 0xEE).empty());
  CHECK(out == std::vector<uint8_t>{10, 10, 10, 10});
}

TEST_CASE("fuzz finding: an empty IDX array with huge sizes is refused, not laid out",
          "[data][fuzz]") {
  // [16975630, 354156544, 0, 0, 0, 16777471, 4278190134] holds no element, so the file (its
  // header alone) matched its size; but the tensor's strides, the products of the sizes with the
  // zeros counted as 1, overflowed int64 in contiguous_strides (UBSan: signed overflow). read_idx
  // now refuses sizes that multiply past 2^62 with or without zeros.
  test::TempDir dir("ember_test_idx_empty_");
  const std::string path = dir / "huge.idx";
  Bytes file = {0, 0, 8, 3};
  for (uint32_t d : {0xFFFFFFF0u, 0u, 0xFFFFFFF0u}) put_be32(file, d);
  test::write_bytes(path, file);
  CHECK_THAT(test::error_of<IOError>([&] { read_idx(path); }),
             Contains("the header claims a 4294967280x0x4294967280 array, sizes that multiply "
                      "to more than 2^62 (leaving out any 0), but the file holds 0 bytes"));
  // An empty array with sane sizes still loads.
  test::write_bytes(path, {0, 0, 8, 3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7});
  CHECK(read_idx(path).shape() == Shape{5, 0, 7});
}

TEST_CASE("fuzz finding: a PNG cut inside its IHDR still gets the size check", "[data][image][fuzz]") {
  // The file ends two bytes after IHDR's height (4 x 2024686176): the pixel limit was checked only
  // when the bit depth and colour type were there too, so stb's "Very large image (corrupt?)" was
  // the reason, without the sizes. The limit is read from IHDR's bytes before libpng reads the
  // header, which it would refuse as cut short, without the sizes either.
  const Bytes png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 'I', 'H', 'D', 'R',
                     0, 0, 0, 4, 0x78, 0xAE, 0x42, 0x60, 0x82};
  DecodeScratch scratch;
  std::vector<uint8_t> out(4);
  CHECK_THAT(decode_image(png.data(), png.size(), 2, 2, 1, out.data(), scratch),
             Contains("bad PNG: the header claims 4x2024686176 pixels") &&
                 Contains("in a file of 25 bytes"));
}

TEST_CASE("fuzz finding: an IDX array of more dimensions than ember's ops take is refused",
          "[data][fuzz]") {
  // IDX allows 255 dimensions. read_idx returned a 16-d tensor, which every op then refused
  // ("contiguous: tensors with more than 12 dimensions are not supported"): the error came far
  // from the file. Now the reader says it.
  test::TempDir dir("ember_test_idx_rank_");
  const std::string path = dir / "16d.idx";
  Bytes file = {0, 0, 8, 16};
  for (int d = 0; d < 16; ++d) put_be32(file, 1);
  file.push_back(42);
  test::write_bytes(path, file);
  CHECK_THAT(test::error_of<IOError>([&] { read_idx(path); }),
             Contains("holds a 16-d array (magic 0x00000810), but ember's tensors have at "
                      "most 12 dimensions"));
}

TEST_CASE("fuzz finding: a BMP compression code of 2^31 or more is refused, not decoded as zeros",
          "[data][image][fuzz]") {
  // stb_image reads the compression field as a signed int, so 0xFFFFFF00 passed its "1, 2 or >= 4:
  // unsupported" test as a negative number and the file was decoded as uncompressed; our row count
  // check had let it through as "compressed". A 174-byte file with a height of 16775430 became 84
  // million pixels of zeros (251 MB and half a minute under ASan).
  Bytes bmp = palette_bmp(16, {1, 2, 3, 4, 5});
  const uint32_t height = 16775430, compression = 0xFFFFFF00u;
  for (int k = 0; k < 4; ++k) {
    bmp[22 + k] = static_cast<uint8_t>(height >> (8 * k));
    bmp[30 + k] = static_cast<uint8_t>(compression >> (8 * k));
  }
  std::vector<uint8_t> out(4);
  CHECK_THAT(decode(bmp, out, 0),
             Contains("bad BMP: compression 4294967040 is not supported (ember reads uncompressed "
                      "and BI_BITFIELDS BMPs)"));
  // RLE (1 and 2), which stb never read, gets the same plain answer.
  bmp[30] = 1, bmp[31] = bmp[32] = bmp[33] = 0;
  CHECK_THAT(decode(bmp, out, 0), Contains("bad BMP: compression 1 is not supported"));
}

TEST_CASE("fuzz finding: a BMP header claiming too many pixels is refused with both sizes, "
          "whatever its compression field says", "[data][image][fuzz][limits]") {
  // The fuzzer's file claimed 2013278614x2030028665 pixels and compression 2768258665; the
  // compression check came first, so the reason was "compression ... is not supported" and the
  // forged size went unnamed. The size is now checked first.
  Bytes bmp = palette_bmp(16, {1, 2, 3, 4, 5});
  const uint32_t width = 100000, height = 100000, compression = 0xA5000069u;
  for (int k = 0; k < 4; ++k) {
    bmp[18 + k] = static_cast<uint8_t>(width >> (8 * k));
    bmp[22 + k] = static_cast<uint8_t>(height >> (8 * k));
    bmp[30 + k] = static_cast<uint8_t>(compression >> (8 * k));
  }
  std::vector<uint8_t> out(4);
  CHECK_THAT(decode(bmp, out, 0),
             Contains("bad BMP: the header claims 100000x100000 pixels (10000000000), more than "
                      "ember decodes (268435456), in a file of " + std::to_string(bmp.size()) +
                      " bytes"));
}

TEST_CASE("fuzz finding: a palette BMP whose pixel offset lies inside its headers is refused",
          "[data][image][fuzz]") {
  // Pixel offset 0: stb_image's palette size (offset - 14 - 40) / 4 came out negative, passed its
  // "0 or more than 256" test, and no palette was read: every pixel took its colour from stb's
  // uninitialised stack array, so two decodes of the same file differed.
  Bytes bmp = palette_bmp(16, {1, 2, 3, 4, 5});
  for (int k = 0; k < 4; ++k) bmp[10 + k] = 0;
  std::vector<uint8_t> out(5);
  CHECK_THAT(decode(bmp, out, 0),
             Contains("bad BMP: its pixel data starts at byte 0, too early for the palette its "
                      "8-bit pixels need (the headers alone take 54 bytes)"));
  CHECK(decode(bmp, out, 0) == decode(bmp, out, 0xFF));
}

TEST_CASE("fuzz finding: a PNG chunk longer than the file is refused without allocating its claim",
          "[data][image][fuzz][limits]") {
  // stb_image grew its compressed-data buffer to an IDAT chunk's claimed length before reading
  // it: a 150-byte file claiming 2^31 bytes made it allocate 2 GiB (libFuzzer's out-of-memory).
  // libpng reads a chunk in pieces of at most 8 KiB, so the file ends first, and the reason says
  // which chunk claimed what.
  Bytes png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  png_chunk(png, "IHDR", {0, 0, 0, 4, 0, 0, 0, 4, 8, 0, 0, 0, 0});  // 4x4 gray
  const Bytes idat = {0x7F, 0xFF, 0xFF, 0xFF, 'I', 'D', 'A', 'T', 0x78, 0x9C, 1, 2, 3, 4, 5, 6};
  png.insert(png.end(), idat.begin(), idat.end());
  std::vector<uint8_t> out(4);
  CHECK_THAT(decode(png, out, 0),
             Contains("truncated PNG: its chunk 'IDAT' at byte 33 claims 2147483647 bytes, but the "
                      "file has 8 bytes after the chunk's header"));
  // The fuzzer's file had a made-up IHDR CRC, which stb_image never checked; libpng does.
  png[32] ^= 0xFF;
  CHECK_THAT(decode(png, out, 0), Contains("bad PNG: IHDR: CRC error"));
}

TEST_CASE("fuzz finding: a PNG whose first IDAT chunk is empty decodes like one without it",
          "[data][image][fuzz]") {
  // stb_image copied an empty IDAT met before any data into its still-null buffer, memcpy(NULL,
  // p, 0), which UBSan stops on (found by CI's 60-s run). An empty IDAT is legal and holds nothing:
  // the file must decode to the same pixels as the file without it, wherever the empty ones are.
  const Bytes rows = {0, 10, 20, 30, 40};  // filter byte 0, then a 4x1 8-bit gray row
  Bytes z(compressBound(static_cast<uLong>(rows.size())));
  uLongf zn = static_cast<uLongf>(z.size());
  REQUIRE(compress(z.data(), &zn, rows.data(), static_cast<uLong>(rows.size())) == Z_OK);
  z.resize(zn);
  auto gray_png = [&](int empty_before, int empty_after) {
    Bytes png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    Bytes ihdr;
    put_be32(ihdr, 4);
    put_be32(ihdr, 1);
    for (int v : {8, 0, 0, 0, 0}) ihdr.push_back(static_cast<uint8_t>(v));
    png_chunk(png, "IHDR", ihdr);
    for (int i = 0; i < empty_before; ++i) png_chunk(png, "IDAT", {});
    png_chunk(png, "IDAT", Bytes(z.begin(), z.begin() + 3));  // the stream split over two chunks
    for (int i = 0; i < empty_after; ++i) png_chunk(png, "IDAT", {});
    png_chunk(png, "IDAT", Bytes(z.begin() + 3, z.end()));
    png_chunk(png, "IEND", {});
    return png;
  };
  for (const auto& [before, after] : {std::pair{0, 0}, {1, 0}, {2, 1}, {0, 2}}) {
    CAPTURE(before, after);
    std::vector<uint8_t> out(4);
    REQUIRE(decode(gray_png(before, after), out, 0xEE).empty());
    CHECK(out == std::vector<uint8_t>{10, 20, 30, 40});
  }
  // Only an empty IDAT: there are no rows, and libpng says so.
  Bytes none = gray_png(0, 0);
  none.resize(33);  // the signature and IHDR
  png_chunk(none, "IDAT", {});
  png_chunk(none, "IEND", {});
  std::vector<uint8_t> out(4);
  CHECK_THAT(decode(none, out, 0), Contains("bad PNG: Not enough image data"));
}

TEST_CASE("fuzz finding: a BMP with no pixels is refused before stb_image walks its rows",
          "[data][image][fuzz][limits]") {
  // The fuzzer's 78-byte file claimed 0x16776963 pixels at 1 bit: no pixels, so no size limit
  // applied, and stb_image stepped through all 16.7 million empty rows before failing (seconds
  // per decode: a timeout). Zero width or zero height is refused from the header.
  for (const auto& [w, h] : {std::pair<int32_t, int32_t>{0, 16776963}, {5, 0}, {0, -3}}) {
    CAPTURE(w, h);
    Bytes bmp = palette_bmp(16, {1, 2, 3, 4, 5});
    for (int k = 0; k < 4; ++k) {
      bmp[18 + k] = static_cast<uint8_t>(static_cast<uint32_t>(w) >> (8 * k));
      bmp[22 + k] = static_cast<uint8_t>(static_cast<uint32_t>(h) >> (8 * k));
    }
    std::vector<uint8_t> out(4);
    CHECK_THAT(decode(bmp, out, 0),
               Contains("bad BMP: the header claims " + std::to_string(w) + "x" +
                        std::to_string(h < 0 ? -h : h) + " pixels, an image with no pixels"));
  }
}
