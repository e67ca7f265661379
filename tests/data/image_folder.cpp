// The image loader: decoding JPEG/PNG/BMP files written here (values, grayscale, RGB, the area
// resize, libjpeg's scaled decode), ImageFolder's layout rules, its skipping of broken files, its
// cache (reuse, invalidation, damage) and train_val_split. Everything is generated in a temp
// folder that is removed afterwards.
//
// PNG and BMP files come from stb_image_write, and PNGs of every colour type and bit depth from
// make_png below. JPEGs come from ember's own data::write_jpeg (libjpeg), not from stbi_write_jpg:
// stb's JPEG writer shifts negative ints (undefined behaviour), which the sanitizer build of the
// tests (-fsanitize=undefined, no recovery) stops at.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "test_files.h"

// stb_image_write is compiled into this test file only (static: its functions stay private here).
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

using namespace ember;
using namespace ember::data;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::error_of;
using test::read_bytes;
using test::write_bytes;

// A scratch folder for this file's tests.
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_images_") {}
};

// An interleaved image [h, w, c] as stb_image_write wants it.
struct Image {
  int w = 0, h = 0, c = 3;
  Bytes px;
  Image(int w_, int h_, int c_) : w(w_), h(h_), c(c_), px(static_cast<size_t>(w_ * h_ * c_)) {}
  uint8_t& at(int y, int x, int ch) { return px[static_cast<size_t>((y * w + x) * c + ch)]; }
};

Image solid(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  Image im(w, h, 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      im.at(y, x, 0) = r;
      im.at(y, x, 1) = g;
      im.at(y, x, 2) = b;
    }
  }
  return im;
}

// Gray level rising from 0 at the left to 255 at the right, the same in all three channels.
Image gradient(int w, int h) {
  Image im(w, h, 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const auto v = static_cast<uint8_t>(std::lround(255.0 * x / (w - 1)));
      for (int ch = 0; ch < 3; ++ch) im.at(y, x, ch) = v;
    }
  }
  return im;
}

// Something with texture, different for every `seed`.
Image pattern(int w, int h, int seed) {
  Image im(w, h, 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      im.at(y, x, 0) = static_cast<uint8_t>((x * 3 + seed * 40) % 256);
      im.at(y, x, 1) = static_cast<uint8_t>((y * 5 + seed * 17) % 256);
      im.at(y, x, 2) = static_cast<uint8_t>(((x + y) * 2 + seed * 90) % 256);
    }
  }
  return im;
}

// [h, w, c] interleaved -> a [c, h, w] tensor.
Tensor to_tensor(const Image& im) {
  Tensor t = empty({im.c, im.h, im.w}, kUInt8);
  uint8_t* p = t.data_ptr<uint8_t>();
  for (int c = 0; c < im.c; ++c) {
    for (int i = 0; i < im.h * im.w; ++i) p[c * im.h * im.w + i] = im.px[static_cast<size_t>(i * im.c + c)];
  }
  return t;
}

void write_jpg(const std::string& path, const Image& im, int quality = 95) {
  write_jpeg(path, to_tensor(im), quality);
}
void write_png(const std::string& path, const Image& im) {
  REQUIRE(stbi_write_png(path.c_str(), im.w, im.h, im.c, im.px.data(), im.w * im.c) != 0);
}
void write_bmp(const std::string& path, const Image& im) {
  REQUIRE(stbi_write_bmp(path.c_str(), im.w, im.h, im.c, im.px.data()) != 0);
}
std::vector<uint8_t> pixels(const Tensor& t) { return t.contiguous().to_vector<uint8_t>(); }

// A PNG written sample by sample: w x h pixels of colour type `colour` (0 gray, 2 RGB, 3 palette,
// 4 gray + alpha, 6 RGBA) at `depth` bits, `samples` holding each pixel's channels row by row
// (palette: the index). Adam7-interlaced or not; `palette` is PLTE's RGB triples and `trns`
// tRNS's bytes, each written when not empty. Row y takes filter y % 5 (none, sub, up, average,
// Paeth), so libpng undoes all five; the compressed rows are split over two IDAT chunks.
int png_channels(int colour) { return colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 1; }

Bytes make_png(uint32_t w, uint32_t h, int depth, int colour, const std::vector<uint16_t>& samples,
               bool interlaced, const Bytes& palette = {}, const Bytes& trns = {}) {
  const size_t channels = static_cast<size_t>(png_channels(colour));
  const size_t bpp = std::max<size_t>(1, channels * static_cast<size_t>(depth) / 8);  // filters'
  Bytes png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  Bytes ihdr;
  test::put_be32(ihdr, w);
  test::put_be32(ihdr, h);
  for (int v : {depth, colour, 0, 0, interlaced ? 1 : 0}) ihdr.push_back(static_cast<uint8_t>(v));
  test::png_chunk(png, "IHDR", ihdr);
  if (!palette.empty()) test::png_chunk(png, "PLTE", palette);
  if (!trns.empty()) test::png_chunk(png, "tRNS", trns);
  const uint32_t adam7[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  const uint32_t whole[1][4] = {{0, 0, 1, 1}};
  Bytes rows;
  for (int p = 0; p < (interlaced ? 7 : 1); ++p) {
    const uint32_t* ps = interlaced ? adam7[p] : whole[0];
    if (ps[0] >= w) continue;  // a pass without columns has no rows at all
    Bytes prev;
    for (uint32_t y = ps[1]; y < h; y += ps[3]) {
      Bytes row;
      uint32_t bits = 0;
      for (uint32_t x = ps[0]; x < w; x += ps[2]) {
        for (size_t c = 0; c < channels; ++c, bits += static_cast<uint32_t>(depth)) {
          const uint16_t v = samples[(size_t{y} * w + x) * channels + c];
          if (depth == 16) {
            row.push_back(static_cast<uint8_t>(v >> 8));
            row.push_back(static_cast<uint8_t>(v));
          } else {
            if (bits % 8 == 0) row.push_back(0);
            row.back() |= static_cast<uint8_t>(v << (8 - depth - static_cast<int>(bits % 8)));
          }
        }
      }
      if (prev.empty()) prev.assign(row.size(), 0);
      const int filter = static_cast<int>(y % 5);
      rows.push_back(static_cast<uint8_t>(filter));
      for (size_t i = 0; i < row.size(); ++i) {
        const int left = i >= bpp ? row[i - bpp] : 0, up = prev[i];
        const int up_left = i >= bpp ? prev[i - bpp] : 0;
        int predictor = 0;
        if (filter == 1) predictor = left;
        if (filter == 2) predictor = up;
        if (filter == 3) predictor = (left + up) / 2;
        if (filter == 4) {
          const int pa = std::abs(up - up_left), pb = std::abs(left - up_left);
          const int pc = std::abs(left + up - 2 * up_left);
          predictor = pa <= pb && pa <= pc ? left : pb <= pc ? up : up_left;
        }
        rows.push_back(static_cast<uint8_t>(row[i] - predictor));
      }
      prev = row;
    }
  }
  Bytes z(compressBound(static_cast<uLong>(rows.size())));
  uLongf zn = static_cast<uLongf>(z.size());
  REQUIRE(compress(z.data(), &zn, rows.data(), static_cast<uLong>(rows.size())) == Z_OK);
  const auto half = static_cast<std::ptrdiff_t>(zn / 2), end = static_cast<std::ptrdiff_t>(zn);
  test::png_chunk(png, "IDAT", Bytes(z.begin(), z.begin() + half));
  test::png_chunk(png, "IDAT", Bytes(z.begin() + half, z.begin() + end));
  test::png_chunk(png, "IEND", {});
  return png;
}

int max_abs_diff_to(const std::vector<uint8_t>& v, int value) {
  int d = 0;
  for (uint8_t x : v) d = std::max(d, std::abs(int{x} - value));
  return d;
}

ImageFolderOptions quiet(int64_t h = 16, int64_t w = 16, bool gray = true) {
  ImageFolderOptions o;
  o.height = h;
  o.width = w;
  o.grayscale = gray;
  o.threads = 2;
  o.verbose = false;
  return o;
}

// ROOT/cat: a.jpg b.png c.bmp d_empty.jpg e_truncated.jpg f_text.jpg .hidden
// ROOT/dog: a.jpg b.jpg c.png
// 6 images decode, 3 files are skipped.
void make_pets(const std::string& root) {
  fs::create_directories(fs::path(root) / "cat");
  fs::create_directories(fs::path(root) / "dog");
  auto p = [&](const std::string& rel) { return (fs::path(root) / rel).string(); };
  write_jpg(p("cat/a.jpg"), pattern(64, 48, 1));
  write_png(p("cat/b.png"), pattern(40, 40, 2));
  write_bmp(p("cat/c.bmp"), pattern(30, 20, 3));
  write_bytes(p("cat/d_empty.jpg"), {});
  write_jpg(p("cat/e_truncated.jpg"), pattern(64, 64, 4));
  Bytes whole = read_bytes(p("cat/e_truncated.jpg"));
  whole.resize(whole.size() / 2);
  write_bytes(p("cat/e_truncated.jpg"), whole);
  const std::string text = "hello, I am not a picture\n";
  write_bytes(p("cat/f_text.jpg"), Bytes(text.begin(), text.end()));
  write_bytes(p("cat/.hidden"), {1, 2, 3});
  write_jpg(p("dog/a.jpg"), pattern(50, 70, 5));
  write_jpg(p("dog/b.jpg"), pattern(80, 60, 6));
  write_png(p("dog/c.png"), pattern(33, 17, 7));
}

}  // namespace

// ---- decoding one image -----------------------------------------------------------------------

TEST_CASE("image_decode: the format comes from the magic bytes, not the name", "[data][image]") {
  TempDir dir;
  write_png(dir / "really_a_png.jpg", solid(8, 8, 10, 20, 30));
  write_jpg(dir / "really_a_jpeg.png", solid(8, 8, 10, 20, 30));
  write_bmp(dir / "really_a_bmp.dat", solid(8, 8, 10, 20, 30));
  const Bytes png = read_bytes(dir / "really_a_png.jpg");
  const Bytes jpg = read_bytes(dir / "really_a_jpeg.png");
  const Bytes bmp = read_bytes(dir / "really_a_bmp.dat");
  CHECK(sniff_image_format(png.data(), png.size()) == ImageFormat::PNG);
  CHECK(sniff_image_format(jpg.data(), jpg.size()) == ImageFormat::JPEG);
  CHECK(sniff_image_format(bmp.data(), bmp.size()) == ImageFormat::BMP);
  const std::string bm = "BM is how this text starts";
  CHECK(sniff_image_format(reinterpret_cast<const uint8_t*>(bm.data()), bm.size()) ==
        ImageFormat::Unknown);
  CHECK(sniff_image_format(jpg.data(), 2) == ImageFormat::Unknown);
  for (const char* name : {"really_a_png.jpg", "really_a_jpeg.png", "really_a_bmp.dat"}) {
    const Tensor t = read_image(dir / name, 4, 4, /*grayscale=*/false);
    CHECK(t.shape() == Shape{3, 4, 4});
    const std::vector<uint8_t> v = pixels(t);
    CHECK(max_abs_diff_to({v.begin(), v.begin() + 16}, 10) <= 3);
    CHECK(max_abs_diff_to({v.begin() + 16, v.begin() + 32}, 20) <= 3);
    CHECK(max_abs_diff_to({v.begin() + 32, v.end()}, 30) <= 3);
  }
}

TEST_CASE("image_decode: a solid colour decodes and resizes to that colour", "[data][image]") {
  TempDir dir;
  const uint8_t r = 200, g = 120, b = 40;
  // BT.601 luma of (200, 120, 40): 0.299*200 + 0.587*120 + 0.114*40 = 134.78 -> 135
  const int luma = 135;
  write_jpg(dir / "c.jpg", solid(120, 90, r, g, b));
  write_png(dir / "c.png", solid(120, 90, r, g, b));
  write_bmp(dir / "c.bmp", solid(120, 90, r, g, b));
  for (const char* name : {"c.jpg", "c.png", "c.bmp"}) {
    INFO(name);
    // Shrinking (to 13x17, not a divisor of the size), keeping the size, and enlarging.
    for (const auto& hw : std::vector<std::pair<int64_t, int64_t>>{{13, 17}, {90, 120}, {100, 200}}) {
      const Tensor rgb = read_image(dir / name, hw.first, hw.second, /*grayscale=*/false);
      REQUIRE(rgb.shape() == Shape{3, hw.first, hw.second});
      REQUIRE(rgb.dtype() == kUInt8);
      const std::vector<uint8_t> v = pixels(rgb);
      const size_t plane = static_cast<size_t>(hw.first * hw.second);
      CHECK(max_abs_diff_to({v.begin(), v.begin() + plane}, r) <= 2);
      CHECK(max_abs_diff_to({v.begin() + plane, v.begin() + 2 * plane}, g) <= 2);
      CHECK(max_abs_diff_to({v.begin() + 2 * plane, v.end()}, b) <= 2);
      const Tensor gray = read_image(dir / name, hw.first, hw.second, /*grayscale=*/true);
      REQUIRE(gray.shape() == Shape{1, hw.first, hw.second});
      CHECK(max_abs_diff_to(pixels(gray), luma) <= 2);
    }
  }
  // Lossless formats: exact.
  CHECK(max_abs_diff_to(pixels(read_image(dir / "c.png", 7, 9, true)), luma) == 0);
  CHECK(max_abs_diff_to(pixels(read_image(dir / "c.bmp", 7, 9, true)), luma) == 0);
}

TEST_CASE("image_decode: every PNG colour type and bit depth, interlaced or not, decodes exactly",
          "[data][image][png]") {
  // What a PNG's samples become (OpenCV's reading, and stb_image's before libpng): 8-bit RGB,
  // a 16-bit sample's high byte, 1-, 2- and 4-bit gray scaled to 0..255 (v * 255 / (2^depth - 1)),
  // palette entries looked up, alpha and tRNS dropped. 13 x 11 pixels: Adam7's passes come out
  // ragged, and the first pass is one pixel wide.
  const uint32_t w = 13, h = 11;
  const size_t npix = size_t{w} * h;
  const Bytes palette = {10, 20, 30, 200, 100, 0, 0, 255, 7, 90, 90, 90, 1, 2, 3, 250, 251, 252};
  const std::vector<std::pair<int, std::vector<int>>> kinds = {
      {0, {1, 2, 4, 8, 16}}, {2, {8, 16}}, {3, {1, 2, 4, 8}}, {4, {8, 16}}, {6, {8, 16}}};
  for (const auto& [colour, depths] : kinds) {
    for (int depth : depths) {
      for (bool interlaced : {false, true}) {
        for (bool with_trns : {false, true}) {
          if (with_trns && (colour == 4 || colour == 6)) continue;  // alpha already: no tRNS
          INFO("colour type " << colour << ", depth " << depth << (interlaced ? ", interlaced" : "")
                              << (with_trns ? ", tRNS" : ""));
          const size_t channels = static_cast<size_t>(png_channels(colour));
          const uint32_t max = (1u << depth) - 1;
          const uint32_t colours = colour == 3 ? std::min<uint32_t>(max + 1, 6) : 0;
          auto eight = [&](uint16_t v) {
            return static_cast<uint8_t>(depth == 16 ? v >> 8 : depth < 8 ? v * 255 / max : v);
          };
          std::vector<uint16_t> samples;
          std::vector<uint8_t> want;  // interleaved RGB
          for (uint32_t i = 0; i < npix; ++i) {
            const size_t first = samples.size();
            for (uint32_t c = 0; c < channels; ++c) {
              const uint32_t v = (i % w) * 7919u + (i / w) * 104729u + c * 31337u;
              samples.push_back(static_cast<uint16_t>(colour == 3 ? v % colours : v & max));
            }
            for (size_t c = 0; c < 3; ++c) {
              const uint16_t s = samples[first + (colour == 2 || colour == 6 ? c : 0)];
              want.push_back(colour == 3 ? palette[3 * s + c] : eight(s));
            }
          }
          Bytes trns;  // palette: alpha of the first entries; gray, RGB: one colour (2 bytes each)
          if (with_trns && colour == 3) {
            trns = {0, 128, 255};
            trns.resize(std::min(3u, colours));
          }
          for (size_t c = 0; with_trns && colour != 3 && c < channels; ++c) {
            trns.push_back(static_cast<uint8_t>(samples[c] >> 8));
            trns.push_back(static_cast<uint8_t>(samples[c]));
          }
          const Bytes plte(palette.begin(), palette.begin() + 3 * colours);
          const Bytes png = make_png(w, h, depth, colour, samples, interlaced, plte, trns);
          DecodeScratch scratch;
          std::vector<uint8_t> out(3 * npix, 0xEE);
          REQUIRE(decode_image(png.data(), png.size(), h, w, 3, out.data(), scratch) == "");
          CHECK(scratch.decoded_height == h);
          CHECK(scratch.decoded_width == w);
          std::vector<uint8_t> got(3 * npix);  // planar -> interleaved
          for (size_t i = 0; i < npix; ++i) {
            for (size_t c = 0; c < 3; ++c) got[3 * i + c] = out[c * npix + i];
          }
          CHECK(got == want);
          // Grayscale is the BT.601 luma of the same RGB.
          std::vector<uint8_t> gray(npix), luma = want;
          rgb_to_gray_bt601(luma.data(), npix);
          luma.resize(npix);
          REQUIRE(decode_image(png.data(), png.size(), h, w, 1, gray.data(), scratch) == "");
          CHECK(gray == luma);
        }
      }
    }
  }
}

TEST_CASE("image_decode: grayscale is BT.601 luma, RGB keeps the channels apart", "[data][image]") {
  TempDir dir;
  // Pure red, green, blue: luma 0.299, 0.587, 0.114 of 255 = 76, 150, 29.
  const std::vector<std::pair<Image, std::vector<int>>> cases = {
      {solid(16, 16, 255, 0, 0), {255, 0, 0, 76}},
      {solid(16, 16, 0, 255, 0), {0, 255, 0, 150}},
      {solid(16, 16, 0, 0, 255), {0, 0, 255, 29}}};
  for (const auto& c : cases) {
    write_png(dir / "p.png", c.first);
    const std::vector<uint8_t> rgb = pixels(read_image(dir / "p.png", 4, 4, false));
    for (int ch = 0; ch < 3; ++ch) {
      CHECK(max_abs_diff_to({rgb.begin() + 16 * ch, rgb.begin() + 16 * (ch + 1)}, c.second[ch]) == 0);
    }
    CHECK(max_abs_diff_to(pixels(read_image(dir / "p.png", 4, 4, true)), c.second[3]) == 0);
  }
  uint8_t px[9] = {255, 0, 0, 0, 255, 0, 10, 20, 30};
  rgb_to_gray_bt601(px, 3);
  CHECK(int{px[0]} == 76);
  CHECK(int{px[1]} == 150);
  CHECK(int{px[2]} == 18);  // 0.299*10 + 0.587*20 + 0.114*30 = 18.16
}

TEST_CASE("image_decode: the area resize averages exactly what each output pixel covers",
          "[data][image]") {
  std::vector<float> scratch;
  {  // 4x4 -> 2x2: each output is the mean of a 2x2 block.
    const uint8_t src[16] = {0, 10, 100, 110, 20, 30, 120, 130, 200, 210, 0, 0, 220, 230, 0, 4};
    uint8_t dst[4];
    resize_area(src, 4, 4, 1, dst, 2, 2, scratch);
    CHECK(std::vector<int>(dst, dst + 4) == std::vector<int>{15, 115, 215, 1});
  }
  {  // 1x3 -> 1x2: output 0 covers [0, 1.5): (0 + 0.5 * 90) / 1.5 = 30; output 1: (45 + 180) / 1.5.
    const uint8_t src[3] = {0, 90, 180};
    uint8_t dst[2];
    resize_area(src, 1, 3, 1, dst, 1, 2, scratch);
    CHECK(int{dst[0]} == 30);
    CHECK(int{dst[1]} == 150);
  }
  {  // Enlarging 1x2 -> 1x4 repeats each pixel (nearest neighbour).
    const uint8_t src[2] = {10, 50};
    uint8_t dst[4];
    resize_area(src, 1, 2, 1, dst, 1, 4, scratch);
    CHECK(std::vector<int>(dst, dst + 4) == std::vector<int>{10, 10, 50, 50});
  }
  {  // Interleaved RGB in, planar out: [1, 2, 3] -> [3, 1, 1].
    const uint8_t src[6] = {10, 20, 30, 50, 60, 71};
    uint8_t dst[3];
    resize_area(src, 1, 2, 3, dst, 1, 1, scratch);
    CHECK(std::vector<int>(dst, dst + 3) == std::vector<int>{30, 40, 51});  // 50.5 rounds up
  }
}

TEST_CASE("image_decode: a resized gradient stays a gradient", "[data][image]") {
  TempDir dir;
  write_png(dir / "g.png", gradient(200, 150));
  write_jpg(dir / "g.jpg", gradient(200, 150), 95);
  for (const char* name : {"g.png", "g.jpg"}) {
    INFO(name);
    const Tensor t = read_image(dir / name, 10, 20, true);
    const std::vector<uint8_t> v = pixels(t);
    for (int y = 0; y < 10; ++y) {
      for (int x = 0; x < 20; ++x) {
        // Output column x averages source columns [10x, 10x + 10): mean 255 * (10x + 4.5) / 199.
        const double expected = 255.0 * (10.0 * x + 4.5) / 199.0;
        CHECK(std::abs(v[y * 20 + x] - expected) <= 3.0);
        if (x > 0) CHECK(v[y * 20 + x] > v[y * 20 + x - 1]);
      }
    }
  }
}

TEST_CASE("image_decode: libjpeg's scaled decode matches a full decode then the area resize",
          "[data][image]") {
  // 500x375 -> 50x50 decodes at scale 2/8 (125x94) and shrinks that; the reference decodes at
  // full size and shrinks that. On smooth content the two agree to about one gray level. Hard
  // edges differ more, by up to a fifth of the step, because the two paths sample the edge on
  // different grids; any intermediate size (3/8 ... 7/8) does the same, so this is the resize's
  // doing, not the reduced IDCT's.
  TempDir dir;
  for (bool edges : {false, true}) {
    Image im(500, 375, 3);
    for (int y = 0; y < im.h; ++y) {
      for (int x = 0; x < im.w; ++x) {
        double v = 128 + 60 * std::sin(x * 0.05) * std::cos(y * 0.04);
        if (edges) v += (x / 60 + y / 45) % 2 ? 40 : -40;
        for (int c = 0; c < 3; ++c) {
          im.at(y, x, c) = static_cast<uint8_t>(std::clamp(v + 20 * c - 20, 0.0, 255.0));
        }
      }
    }
    write_jpg(dir / "big.jpg", im, 90);
    for (bool gray : {true, false}) {
      INFO("grayscale " << gray << ", edges " << edges);
      const int C = gray ? 1 : 3;
      const Tensor full = read_image(dir / "big.jpg", 375, 500, gray);  // scale 8/8
      // full [C, 375, 500] planar -> interleaved for resize_area.
      const std::vector<uint8_t> f = pixels(full);
      std::vector<uint8_t> hwc(f.size());
      for (int c = 0; c < C; ++c) {
        for (size_t i = 0; i < 375 * 500; ++i) hwc[i * C + c] = f[c * 375 * 500 + i];
      }
      std::vector<uint8_t> reference(static_cast<size_t>(C * 50 * 50));
      std::vector<float> scratch;
      resize_area(hwc.data(), 375, 500, C, reference.data(), 50, 50, scratch);
      const std::vector<uint8_t> fast = pixels(read_image(dir / "big.jpg", 50, 50, gray));
      double sum = 0, signed_sum = 0;
      int worst = 0;
      for (size_t i = 0; i < fast.size(); ++i) {
        const int d = int{fast[i]} - int{reference[i]};
        sum += std::abs(d);
        signed_sum += d;
        worst = std::max(worst, std::abs(d));
      }
      const double n = static_cast<double>(fast.size());
      CHECK(std::abs(signed_sum / n) < 0.2);  // no bias
      CHECK(sum / n < (edges ? 4.0 : 1.0));
      CHECK(worst <= (edges ? 20 : 4));
    }
  }
}

TEST_CASE("image_decode: broken files are rejected with a reason, never a crash",
          "[data][image]") {
  TempDir dir;
  DecodeScratch scratch;
  std::vector<uint8_t> out(3 * 8 * 8);
  auto reason = [&](const Bytes& b) {
    return decode_image(b.data(), b.size(), 8, 8, 3, out.data(), scratch);
  };
  CHECK(reason({}) == "empty file (0 bytes)");
  const std::string html = "<!DOCTYPE html><html>404 not found</html>";
  CHECK_THAT(reason(Bytes(html.begin(), html.end())), Contains("text file starting with"));
  CHECK_THAT(reason({'G', 'I', 'F', '8', '9', 'a', 0, 0}), Contains("GIF"));
  CHECK_THAT(reason({0x00, 0x01, 0xFE, 0x80}), Contains("not a JPEG, PNG or BMP"));

  write_jpg(dir / "a.jpg", pattern(64, 64, 1));
  write_png(dir / "a.png", pattern(64, 64, 1));
  write_bmp(dir / "a.bmp", pattern(64, 64, 1));
  const Bytes jpg = read_bytes(dir / "a.jpg");
  const Bytes png = read_bytes(dir / "a.png");
  const Bytes bmp = read_bytes(dir / "a.bmp");
  REQUIRE(reason(jpg).empty());
  REQUIRE(reason(png).empty());
  REQUIRE(reason(bmp).empty());
  // Cut in the pixel data, in the header, and just before the end-of-image marker.
  CHECK_THAT(reason(Bytes(jpg.begin(), jpg.begin() + jpg.size() / 2)), Contains("truncated JPEG"));
  CHECK_THAT(reason(Bytes(jpg.begin(), jpg.begin() + 40)), Contains("JPEG"));
  CHECK_THAT(reason(Bytes(jpg.begin(), jpg.end() - 2)), Contains("truncated JPEG"));
  // PNG (libpng): cut in the pixel data, in the header, before IEND; a flipped bit; a bad header.
  // The reason names the chunk the file ends in and what it claims.
  const Bytes half(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2));
  CHECK_THAT(reason(half), Contains("truncated PNG: its chunk 'IDAT' at byte ") &&
                               Contains("bytes after the chunk's header: the file is cut short"));
  CHECK_THAT(reason(Bytes(png.begin(), png.begin() + 20)),
             Contains("truncated PNG: its chunk 'IHDR' at byte 8 claims 13 bytes, but the file has "
                      "4 bytes after the chunk's header"));
  CHECK_THAT(reason(Bytes(png.begin(), png.end() - 12)),
             Contains("truncated PNG: the file ends after " + std::to_string(png.size() - 12) +
                      " bytes, where the chunk after 'IDAT' should begin (a PNG ends with an IEND "
                      "chunk)"));
  // A flipped bit in the compressed rows: zlib stops at it (what it reports depends on the bit),
  // or, where the stream still inflates, the chunk's CRC does. A flipped bit in the CRC itself.
  Bytes flipped = png;
  flipped[png.size() / 2] ^= 0x10;
  CHECK_THAT(reason(flipped),
             Contains("bad PNG: its compressed pixel data is corrupt (libpng: IDAT: "));
  flipped = png;
  flipped[png.size() - 13] ^= 0x10;  // the last byte of the IDAT chunk's CRC (IEND takes 12)
  CHECK_THAT(reason(flipped),
             Contains("bad PNG: its compressed pixel data is corrupt (libpng: IDAT: CRC error)"));
  Bytes bad_colour(png.begin(), png.begin() + 33);  // the signature and IHDR, colour type 5
  bad_colour[25] = 5;
  const uint32_t crc = static_cast<uint32_t>(crc32(0, bad_colour.data() + 12, 17));
  for (int k = 0; k < 4; ++k) bad_colour[29 + k] = static_cast<uint8_t>(crc >> (24 - 8 * k));
  CHECK_THAT(reason(bad_colour), Contains("bad PNG: Invalid IHDR data (after libpng's warning: "
                                          "Invalid color type in IHDR)"));
  CHECK_THAT(reason(Bytes(bmp.begin(), bmp.begin() + bmp.size() / 2)), Contains("truncated BMP"));
  // A JPEG whose pixel data is garbage: JPEG has no checksum, so this may decode (to garbage)
  // or be rejected, but it must not crash, hang or exit.
  Bytes garbled = jpg;
  for (size_t i = garbled.size() / 3; i < garbled.size() - 2; ++i) {
    garbled[i] = static_cast<uint8_t>(i * 131 % 251);
  }
  reason(garbled);
  // A JPEG cut at a restart-free point and padded with zeros: libjpeg reads on into the zeros.
  Bytes zeros(jpg.begin(), jpg.begin() + jpg.size() / 2);
  zeros.resize(jpg.size(), 0);
  CHECK_FALSE(reason(zeros).empty());
  // read_image throws for them, naming the file.
  write_bytes(dir / "cut.jpg", Bytes(jpg.begin(), jpg.begin() + jpg.size() / 2));
  CHECK_THAT(error_of<IOError>([&] { read_image(dir / "cut.jpg", 8, 8); }),
             Contains("cut.jpg") && Contains("truncated JPEG") &&
                 Contains("(replace the file with an intact copy, or leave it out)"));
  write_bytes(dir / "cut.png", half);
  CHECK_THAT(error_of<IOError>([&] { read_image(dir / "cut.png", 8, 8); }),
             Contains("cut.png: truncated PNG: its chunk 'IDAT'") &&
                 Contains("(replace the file with an intact copy, or leave it out)"));
  CHECK_THAT(error_of<IOError>([&] { read_image(dir / "missing.jpg", 8, 8); }),
             Contains("does not exist"));
}

TEST_CASE("image_decode: extraneous bytes before a marker are tolerated (Kaggle's case)",
          "[data][image]") {
  // libjpeg warns "Corrupt JPEG data: N extraneous bytes before marker 0xd9" for junk between the
  // pixel data and the end marker; the pixels are intact, so the image must load unchanged.
  TempDir dir;
  write_jpg(dir / "a.jpg", pattern(64, 48, 3));
  const Bytes jpg = read_bytes(dir / "a.jpg");
  REQUIRE(jpg[jpg.size() - 2] == 0xFF);
  REQUIRE(jpg[jpg.size() - 1] == 0xD9);
  Bytes junk(jpg.begin(), jpg.end() - 2);
  for (uint8_t b : {0x12, 0x34, 0x56, 0x78}) junk.push_back(b);
  junk.push_back(0xFF);
  junk.push_back(0xD9);
  DecodeScratch scratch;
  std::vector<uint8_t> a(3 * 48 * 64), b(3 * 48 * 64);
  REQUIRE(decode_image(jpg.data(), jpg.size(), 48, 64, 3, a.data(), scratch).empty());
  REQUIRE(decode_image(junk.data(), junk.size(), 48, 64, 3, b.data(), scratch).empty());
  CHECK(a == b);
}

TEST_CASE("image_decode: encode_jpeg / write_jpeg round trip", "[data][image]") {
  TempDir dir;
  for (int c : {1, 3}) {
    INFO("channels " << c);
    Image im = pattern(37, 23, 2);  // odd sizes: partial 8x8 blocks and 16x16 MCUs
    Image src(37, 23, c);
    for (int y = 0; y < 23; ++y) {
      for (int x = 0; x < 37; ++x) {
        for (int k = 0; k < c; ++k) src.at(y, x, k) = static_cast<uint8_t>(60 + (im.at(y, x, k) / 2));
      }
    }
    const Tensor t = to_tensor(src);
    const std::vector<uint8_t> bytes = encode_jpeg(t, 100);
    REQUIRE(bytes.size() > 4);
    CHECK(sniff_image_format(bytes.data(), bytes.size()) == ImageFormat::JPEG);
    write_jpeg(dir / "rt.jpg", t, 100);
    CHECK(read_bytes(dir / "rt.jpg") == bytes);
    const std::vector<uint8_t> back = pixels(read_image(dir / "rt.jpg", 23, 37, c == 1));
    const std::vector<uint8_t> orig = pixels(t);
    double sum = 0;
    for (size_t i = 0; i < orig.size(); ++i) sum += std::abs(int{back[i]} - int{orig[i]});
    CHECK(sum / static_cast<double>(orig.size()) < (c == 1 ? 1.0 : 4.0));  // colour: 4:2:0 chroma
  }
  CHECK_THROWS_AS(encode_jpeg(zeros({2, 4, 4}, kUInt8)), ValueError);
  CHECK_THROWS_AS(encode_jpeg(zeros({3, 4, 4}, kFloat32)), ValueError);
  CHECK_THROWS_AS(encode_jpeg(zeros({1, 4, 4}, kUInt8), 0), ValueError);
  CHECK_THAT(error_of<IOError>([&] { write_jpeg(dir / "no/such/dir/x.jpg", zeros({1, 4, 4}, kUInt8)); }),
             Contains("cannot create"));
}

// ---- ImageFolder ------------------------------------------------------------------------------

TEST_CASE("ImageFolder: classes, labels, order, counts and skipped files", "[data][image]") {
  TempDir dir;
  const std::string root = dir / "pets";
  make_pets(root);
  ImageFolderOptions o = quiet(12, 10, true);
  o.use_cache = false;
  const ImageFolder pets(root, o);
  CHECK(pets.classes() == std::vector<std::string>{"cat", "dog"});
  CHECK(pets.size() == 6);
  CHECK(pets.images().shape() == Shape{6, 1, 12, 10});
  CHECK(pets.images().dtype() == kUInt8);
  CHECK(pets.labels().dtype() == kInt64);
  CHECK(pets.labels().to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 1, 1, 1});
  CHECK(pets.class_counts() == std::vector<int64_t>{3, 3});
  CHECK(pets.summary() == "cat: 3, dog: 3");
  CHECK_FALSE(pets.from_cache());
  REQUIRE(pets.skipped() == 3);
  const std::vector<SkippedFile>& s = pets.skipped_files();
  CHECK(s[0].path == "cat/d_empty.jpg");
  CHECK(s[0].reason == "empty file (0 bytes)");
  CHECK(s[1].path == "cat/e_truncated.jpg");
  CHECK_THAT(s[1].reason, Contains("truncated JPEG"));
  CHECK(s[2].path == "cat/f_text.jpg");
  CHECK_THAT(s[2].reason, Contains("text file"));
  // Sample order is class, then file name: each sample equals that file decoded on its own.
  const std::vector<std::string> order = {"cat/a.jpg", "cat/b.png", "cat/c.bmp",
                                          "dog/a.jpg", "dog/b.jpg", "dog/c.png"};
  for (size_t i = 0; i < order.size(); ++i) {
    INFO(order[i]);
    const Tensor alone = read_image((fs::path(root) / order[i]).string(), 12, 10, true);
    CHECK(pixels(pets.images().narrow(0, static_cast<int64_t>(i), 1)) == pixels(alone));
  }
  // RGB: 3 channels, the same files.
  o.grayscale = false;
  const ImageFolder rgb(root, o);
  CHECK(rgb.images().shape() == Shape{6, 3, 12, 10});
  CHECK(pixels(rgb.images().narrow(0, 4, 1)) ==
        pixels(read_image((fs::path(root) / "dog/b.jpg").string(), 12, 10, false)));
  // A batch through the DataLoader.
  DataLoader loader(pets, {4});
  const Batch b = *loader.begin();
  CHECK(b.data.shape() == Shape{4, 1, 12, 10});
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 1});
}

TEST_CASE("ImageFolder: the thread count does not change the result", "[data][image]") {
  TempDir dir;
  const std::string root = dir / "pets";
  make_pets(root);
  for (int i = 0; i < 20; ++i) {
    write_jpg((fs::path(root) / "dog" / ("x" + std::to_string(i) + ".jpg")).string(),
              pattern(40 + i, 30 + i, i));
  }
  ImageFolderOptions o = quiet(9, 11, false);
  o.use_cache = false;
  o.threads = 1;
  const ImageFolder one(root, o);
  o.threads = 5;
  const ImageFolder five(root, o);
  o.threads = 0;
  const ImageFolder all(root, o);
  CHECK(one.size() == 26);
  CHECK(pixels(one.images()) == pixels(five.images()));
  CHECK(pixels(one.images()) == pixels(all.images()));
  CHECK(one.labels().to_vector<int64_t>() == five.labels().to_vector<int64_t>());
}

TEST_CASE("ImageFolder: layout errors say what layout is expected", "[data][image]") {
  TempDir dir;
  ImageFolderOptions o = quiet();
  CHECK_THAT(error_of<IOError>([&] { ImageFolder(dir / "nope", o); }),
             Contains("does not exist") && Contains("PetImages/Cat"));
  write_bytes(dir / "file", {1});
  CHECK_THAT(error_of<IOError>([&] { ImageFolder(dir / "file", o); }), Contains("is a file"));
  // Images directly in the root: no class folders.
  fs::create_directories(dir / "flat");
  write_jpg(dir / "flat/a.jpg", solid(8, 8, 1, 2, 3));
  CHECK_THAT(error_of<IOError>([&] { ImageFolder(dir / "flat", o); }),
             Contains("no class folders") && Contains("1 files directly") &&
                 Contains("one sub-folder per class"));
  fs::create_directories(dir / "none");
  CHECK_THAT(error_of<IOError>([&] { ImageFolder(dir / "none", o); }),
             Contains("no class folders"));
  // An empty class folder (hidden files do not count).
  fs::create_directories(dir / "pets/Cat");
  fs::create_directories(dir / "pets/Dog");
  write_jpg(dir / "pets/Cat/a.jpg", solid(8, 8, 1, 2, 3));
  write_bytes(dir / "pets/Dog/.DS_Store", {0});
  CHECK_THAT(error_of<IOError>([&] { ImageFolder(dir / "pets", o); }),
             Contains("Dog") && Contains("holds no files") && Contains("PetImages"));
  // Nothing decodes.
  fs::create_directories(dir / "broken/a");
  write_bytes(dir / "broken/a/x.jpg", {});
  write_bytes(dir / "broken/a/y.jpg", {'h', 'i'});
  CHECK_THAT(error_of<IOError>([&] { ImageFolder(dir / "broken", o); }),
             Contains("none of the 2 files") && Contains("a/x.jpg: empty file"));
  // Bad options.
  o.height = 0;
  CHECK_THROWS_AS(ImageFolder(dir / "pets", o), ValueError);
  CHECK_THAT(pet_images_hint(), Contains("kagglecatsanddogs"));
}

TEST_CASE("ImageFolder: the cache is reused when nothing changed", "[data][image]") {
  TempDir dir;
  const std::string root = dir / "pets";
  make_pets(root);
  const ImageFolderOptions o = quiet(12, 10, true);
  const ImageFolder first(root, o);
  CHECK_FALSE(first.from_cache());
  REQUIRE_FALSE(first.cache_path().empty());
  CHECK(fs::is_regular_file(first.cache_path()));
  CHECK(fs::path(first.cache_path()).parent_path() == fs::path(root) / ".ember-cache");
  // The cache folder inside the root is not taken for a class.
  const ImageFolder second(root, o);
  CHECK(second.from_cache());
  CHECK(second.classes() == first.classes());
  CHECK(pixels(second.images()) == pixels(first.images()));
  CHECK(second.labels().to_vector<int64_t>() == first.labels().to_vector<int64_t>());
  REQUIRE(second.skipped() == first.skipped());
  for (int64_t i = 0; i < first.skipped(); ++i) {
    CHECK(second.skipped_files()[i].path == first.skipped_files()[i].path);
    CHECK(second.skipped_files()[i].reason == first.skipped_files()[i].reason);
  }
  CHECK(second.summary() == first.summary());
  // Other options: their own cache file, built on first use.
  const ImageFolder rgb(root, quiet(12, 10, false));
  CHECK_FALSE(rgb.from_cache());
  CHECK(rgb.cache_path() != first.cache_path());
  CHECK(ImageFolder(root, quiet(12, 10, false)).from_cache());
  CHECK(ImageFolder(root, o).from_cache());
  // use_cache = false neither reads nor writes one.
  ImageFolderOptions off = o;
  off.use_cache = false;
  const ImageFolder uncached(root, off);
  CHECK_FALSE(uncached.from_cache());
  CHECK(uncached.cache_path().empty());
  // A cache folder of one's own.
  ImageFolderOptions own = o;
  own.cache_dir = dir / "my-cache";
  const ImageFolder a(root, own);
  CHECK_FALSE(a.from_cache());
  CHECK(fs::path(a.cache_path()).parent_path() == fs::path(dir / "my-cache"));
  CHECK(ImageFolder(root, own).from_cache());
}

TEST_CASE("ImageFolder: a changed folder rebuilds the cache", "[data][image]") {
  TempDir dir;
  const std::string root = dir / "pets";
  make_pets(root);
  const ImageFolderOptions o = quiet(12, 10, true);
  const ImageFolder first(root, o);
  REQUIRE(ImageFolder(root, o).from_cache());
  const std::string cat_a = (fs::path(root) / "cat/a.jpg").string();

  SECTION("a file's content changes") {
    write_jpg(cat_a, solid(64, 48, 250, 250, 250));
    const ImageFolder after(root, o);
    CHECK_FALSE(after.from_cache());
    CHECK(max_abs_diff_to(pixels(after.images().narrow(0, 0, 1)), 250) <= 2);
    CHECK(pixels(after.images().narrow(0, 1, 5)) == pixels(first.images().narrow(0, 1, 5)));
    const ImageFolder again(root, o);
    CHECK(again.from_cache());
    CHECK(pixels(again.images()) == pixels(after.images()));
  }
  SECTION("a file is touched (same bytes, new mtime)") {
    fs::last_write_time(cat_a, fs::last_write_time(cat_a) + std::chrono::seconds(5));
    const ImageFolder after(root, o);
    CHECK_FALSE(after.from_cache());
    CHECK(pixels(after.images()) == pixels(first.images()));
    CHECK(ImageFolder(root, o).from_cache());
  }
  SECTION("a file is added") {
    write_png((fs::path(root) / "dog/d.png").string(), solid(20, 20, 9, 9, 9));
    const ImageFolder after(root, o);
    CHECK_FALSE(after.from_cache());
    CHECK(after.size() == 7);
    CHECK(after.class_counts() == std::vector<int64_t>{3, 4});
  }
  SECTION("a file is removed") {
    fs::remove(fs::path(root) / "dog/b.jpg");
    const ImageFolder after(root, o);
    CHECK_FALSE(after.from_cache());
    CHECK(after.class_counts() == std::vector<int64_t>{3, 2});
  }
  SECTION("a broken file is fixed") {
    write_jpg((fs::path(root) / "cat/d_empty.jpg").string(), solid(10, 10, 1, 1, 1));
    const ImageFolder after(root, o);
    CHECK_FALSE(after.from_cache());
    CHECK(after.skipped() == 2);
    CHECK(after.class_counts() == std::vector<int64_t>{4, 3});
  }
  SECTION("a class is added") {
    fs::create_directories(fs::path(root) / "bird");
    write_png((fs::path(root) / "bird/x.png").string(), solid(20, 20, 9, 9, 9));
    const ImageFolder after(root, o);
    CHECK_FALSE(after.from_cache());
    CHECK(after.classes() == std::vector<std::string>{"bird", "cat", "dog"});
    CHECK(after.labels().to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 1, 2, 2, 2});
  }
}

TEST_CASE("ImageFolder: a damaged cache is ignored and rebuilt", "[data][image]") {
  TempDir dir;
  const std::string root = dir / "pets";
  make_pets(root);
  const ImageFolderOptions o = quiet(12, 10, true);
  const ImageFolder first(root, o);
  const std::string cache = first.cache_path();
  const Bytes good = read_bytes(cache);
  REQUIRE(good.size() > 6 * 120);

  auto expect_rebuilt = [&](const Bytes& damaged) {
    write_bytes(cache, damaged);
    const ImageFolder after(root, o);
    CHECK_FALSE(after.from_cache());
    CHECK(pixels(after.images()) == pixels(first.images()));
    CHECK(read_bytes(cache) == good);  // rewritten
    CHECK(ImageFolder(root, o).from_cache());
  };
  SECTION("truncated") { expect_rebuilt(Bytes(good.begin(), good.begin() + good.size() - 100)); }
  SECTION("cut in the header") { expect_rebuilt(Bytes(good.begin(), good.begin() + 30)); }
  SECTION("empty") { expect_rebuilt({}); }
  SECTION("one pixel byte flipped") {
    Bytes bad = good;
    bad[bad.size() - 50] ^= 0x40;
    expect_rebuilt(bad);
  }
  SECTION("a header count made huge") {
    Bytes bad = good;
    bad[8 + 4 + 4 + 24 + 7] = 0x7F;  // the top byte of #classes
    expect_rebuilt(bad);
  }
  SECTION("not a cache at all") {
    const std::string text = "this is not a cache";
    expect_rebuilt(Bytes(text.begin(), text.end()));
  }
}

TEST_CASE("ImageFolder: an unwritable cache folder means no cache, not an error",
          "[data][image]") {
  TempDir dir;
  const std::string root = dir / "pets";
  make_pets(root);
  write_bytes(dir / "a_file", {1});
  ImageFolderOptions o = quiet(12, 10, true);
  o.cache_dir = dir / "a_file/cache";  // below a regular file: cannot be created
  const ImageFolder a(root, o);
  CHECK(a.size() == 6);
  CHECK_FALSE(a.from_cache());
  CHECK(a.cache_path().empty());
  CHECK_FALSE(ImageFolder(root, o).from_cache());
}

// ---- train_val_split --------------------------------------------------------------------------

TEST_CASE("train_val_split: sizes, disjoint halves, determinism, transform", "[data][image]") {
  const int64_t n = 25;
  const Tensor x = arange(0, n, 1, kInt64).reshape({n, 1});
  const Tensor y = arange(100, 100 + n, 1, kInt64);
  const TensorDataset ds(x, y, [](const Tensor& t) { return t.to(kFloat32); });
  const TrainValSplit s = train_val_split(ds, 0.1, 7);
  CHECK(s.val.size() == 2);  // int(25 * 0.1) = 2, as the seed's val_size
  CHECK(s.train.size() == 23);
  std::vector<int64_t> tv = s.train.data().reshape({-1}).to_vector<int64_t>();
  std::vector<int64_t> vv = s.val.data().reshape({-1}).to_vector<int64_t>();
  // Rows stay paired with their targets.
  const std::vector<int64_t> tt = s.train.targets().to_vector<int64_t>();
  for (size_t i = 0; i < tv.size(); ++i) CHECK(tt[i] == tv[i] + 100);
  std::set<int64_t> all(tv.begin(), tv.end());
  for (int64_t v : vv) CHECK(all.insert(v).second);  // disjoint
  CHECK(all.size() == static_cast<size_t>(n));       // and together everything
  // The shuffled order of shuffled_order(n, seed, 0): train first, validation last.
  const std::vector<int64_t> order = shuffled_order(n, 7, 0).to_vector<int64_t>();
  CHECK(std::vector<int64_t>(order.begin(), order.begin() + 23) == tv);
  CHECK(std::vector<int64_t>(order.begin() + 23, order.end()) == vv);
  // Same seed, same split; another seed, another.
  const TrainValSplit again = train_val_split(ds, 0.1, 7);
  CHECK(again.val.data().reshape({-1}).to_vector<int64_t>() == vv);
  const TrainValSplit other = train_val_split(ds, 0.1, 8);
  CHECK(other.train.data().reshape({-1}).to_vector<int64_t>() != tv);
  // The transform comes along.
  CHECK(s.train.get(0).data.dtype() == kFloat32);
  CHECK(s.val.get(0).data.dtype() == kFloat32);
  // Edge cases.
  CHECK(train_val_split(ds, 0.0, 1).val.size() == 0);
  CHECK(train_val_split(ds, 0.0, 1).train.size() == n);
  CHECK(train_val_split(ds, 0.5, 1).val.size() == 12);
  CHECK_THROWS_AS(train_val_split(ds, 1.0, 1), ValueError);
  CHECK_THROWS_AS(train_val_split(ds, -0.1, 1), ValueError);
}
