// fuzz/make_seeds.cpp — writes the seed corpora fuzz/corpus/<target>/ (small valid inputs of every
// kind each reader knows, plus a few broken ones), so that they can be made again and checked:
//
//   build/fuzz/fuzz_make_seeds fuzz/corpus
//
// Every seed is made here from nothing but ember's own writers (encode_jpeg, save), libjpeg (the
// progressive and CMYK JPEGs), zlib (gzip and the PNG chunks, written by hand) and byte layouts
// written out below, so the output is the same on every machine.
#include <zlib.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

// jpeglib.h uses FILE and size_t without including their headers: <cstdio> must come first.
#include <jpeglib.h>

#include "core/ember.h"
#include "core/serialize.h"
#include "data/image_decode.h"
#include "fuzz/targets/common.h"

using namespace ember;
using ember::fuzz::Bytes;
namespace fs = std::filesystem;

namespace {

fs::path g_out;

void seed(const std::string& target, const std::string& name, const Bytes& bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  fuzz::write_file((dir / name).string(), bytes.data(), bytes.size());
}

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}
void put_le16(Bytes& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void put_le32(Bytes& b, uint32_t v) {
  put_le16(b, v & 0xFFFF);
  put_le16(b, v >> 16);
}

// A deterministic test pattern.
uint8_t pattern(int x, int y, int c) { return static_cast<uint8_t>(x * 37 + y * 91 + c * 53 + x * y); }

Bytes gzip(const Bytes& in) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  Bytes out(deflateBound(&zs, in.size()) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

Bytes zlib_compress(const Bytes& in) {
  uLongf size = compressBound(in.size());
  Bytes out(size);
  compress2(out.data(), &size, in.data(), in.size(), 9);
  out.resize(size);
  return out;
}

// ---- IDX ----------------------------------------------------------------------------------------

Bytes idx(const std::vector<uint32_t>& dims) {
  Bytes b = {0, 0, 8, static_cast<uint8_t>(dims.size())};
  size_t count = 1;
  for (uint32_t d : dims) {
    put_be32(b, d);
    count *= d;
  }
  for (size_t i = 0; i < count; ++i) b.push_back(static_cast<uint8_t>(i * 7 % 251));
  return b;
}

void idx_seeds() {
  const Bytes labels = idx({10}), images = idx({2, 3, 4});
  seed("idx", "labels", labels);
  seed("idx", "images", images);
  seed("idx", "matrix", idx({3, 5}));
  seed("idx", "empty", idx({0}));
  seed("idx", "labels.gz", gzip(labels));
  seed("idx", "images.gz", gzip(images));
  Bytes two = gzip(Bytes(images.begin(), images.begin() + 9));
  const Bytes rest = gzip(Bytes(images.begin() + 9, images.end()));
  two.insert(two.end(), rest.begin(), rest.end());
  seed("idx", "two-members.gz", two);
  seed("idx", "truncated", Bytes(images.begin(), images.end() - 3));
  Bytes garbage = labels;
  garbage.push_back(0xEE);
  seed("idx", "trailing", garbage);
}

// ---- CIFAR-10 -------------------------------------------------------------------------------

void cifar10_seeds() {
  Bytes two;
  for (int r = 0; r < 2; ++r) {
    two.push_back(static_cast<uint8_t>(r * 7));
    for (int i = 0; i < 3072; ++i) two.push_back(pattern(i % 32, i / 32, r));
  }
  seed("cifar10", "one", Bytes(two.begin(), two.begin() + 3073));
  seed("cifar10", "two", two);
  Bytes bad_label = two;
  bad_label[3073] = 10;
  seed("cifar10", "label-10", bad_label);
  seed("cifar10", "cut", Bytes(two.begin(), two.end() - 100));
}

// ---- images ---------------------------------------------------------------------------------

// The image target's 2-byte prefix: target height and width (1..64), gray or RGB.
Bytes with_target(int h, int w, bool rgb, const Bytes& file) {
  Bytes b = {static_cast<uint8_t>((h - 1) | (rgb ? 0x40 : 0)), static_cast<uint8_t>(w - 1)};
  b.insert(b.end(), file.begin(), file.end());
  return b;
}

Tensor test_image(int c, int h, int w) {
  std::vector<uint8_t> v;
  for (int k = 0; k < c; ++k) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) v.push_back(pattern(x, y, k));
    }
  }
  return from_vector(v, {c, h, w}, kUInt8);
}

// libjpeg, for what encode_jpeg does not make: progressive and CMYK files.
Bytes jpeg_special(int w, int h, bool progressive, bool cmyk) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = cmyk ? 4 : 3;
  cinfo.in_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  if (cmyk) jpeg_set_colorspace(&cinfo, JCS_YCCK);  // writes an Adobe marker
  jpeg_set_quality(&cinfo, 80, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(w * cinfo.input_components));
  while (cinfo.next_scanline < cinfo.image_height) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < cinfo.input_components; ++c) {
        row[static_cast<size_t>(x * cinfo.input_components + c)] =
            pattern(x, static_cast<int>(cinfo.next_scanline), c);
      }
    }
    JSAMPROW p = row.data();
    jpeg_write_scanlines(&cinfo, &p, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

void png_chunk(Bytes& b, const char* type, const Bytes& data) {
  put_be32(b, static_cast<uint32_t>(data.size()));
  Bytes body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  b.insert(b.end(), body.begin(), body.end());
  put_be32(b, static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
}

// A PNG of w x h pixels: colour type (0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA), bit depth
// 8 or 16, Adam7-interlaced or not; every row with filter 0 (none).
Bytes png(int w, int h, int color, int depth, bool interlaced) {
  const int channels = color == 2 ? 3 : color == 4 ? 2 : color == 6 ? 4 : 1;
  const int bytes_per_sample = depth / 8;
  Bytes b = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  Bytes ihdr;
  put_be32(ihdr, static_cast<uint32_t>(w));
  put_be32(ihdr, static_cast<uint32_t>(h));
  for (int v : {depth, color, 0, 0, interlaced ? 1 : 0}) ihdr.push_back(static_cast<uint8_t>(v));
  png_chunk(b, "IHDR", ihdr);
  if (color == 3) {
    Bytes plte;
    for (int i = 0; i < 16; ++i) {
      for (int c = 0; c < 3; ++c) plte.push_back(static_cast<uint8_t>(i * 16 + c * 40));
    }
    png_chunk(b, "PLTE", plte);
  }
  // Adam7: pass k samples x = x0 + i * dx, y = y0 + j * dy.
  const int passes[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                            {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  const int whole[1][4] = {{0, 0, 1, 1}};
  Bytes raw;
  for (int p = 0; p < (interlaced ? 7 : 1); ++p) {
    const int* q = interlaced ? passes[p] : whole[0];
    for (int y = q[1]; y < h; y += q[3]) {
      if (q[0] >= w) break;
      raw.push_back(0);
      for (int x = q[0]; x < w; x += q[2]) {
        for (int c = 0; c < channels; ++c) {
          const uint8_t v = color == 3 ? pattern(x, y, 0) % 16 : pattern(x, y, c);
          for (int k = 0; k < bytes_per_sample; ++k) raw.push_back(static_cast<uint8_t>(v + k));
        }
      }
    }
  }
  png_chunk(b, "IDAT", zlib_compress(raw));
  png_chunk(b, "IEND", {});
  return b;
}

// A BMP: bpp 24 (BGR rows), 32 (BI_BITFIELDS), 8 (16-colour palette) or 1 (2 colours); bottom-up
// rows unless top_down; the 40-byte info header, or OS/2's 12-byte one.
Bytes bmp(int w, int h, int bpp, bool top_down, bool os2) {
  const int row = (w * bpp + 31) / 32 * 4;
  const int colours = bpp <= 8 ? (bpp == 1 ? 2 : 16) : 0;
  const int info = os2 ? 12 : 40, masks = bpp == 32 ? 12 : 0;
  const int palette = colours * (os2 ? 3 : 4);
  const uint32_t offset = 14 + info + masks + palette;
  Bytes b = {'B', 'M'};
  put_le32(b, offset + static_cast<uint32_t>(row * h));
  put_le32(b, 0);
  put_le32(b, offset);
  put_le32(b, static_cast<uint32_t>(info));
  if (os2) {
    put_le16(b, static_cast<uint32_t>(w));
    put_le16(b, static_cast<uint32_t>(h));
    put_le16(b, 1);
    put_le16(b, static_cast<uint32_t>(bpp));
  } else {
    put_le32(b, static_cast<uint32_t>(w));
    put_le32(b, static_cast<uint32_t>(top_down ? -h : h));
    put_le16(b, 1);
    put_le16(b, static_cast<uint32_t>(bpp));
    put_le32(b, bpp == 32 ? 3 : 0);  // BI_BITFIELDS or BI_RGB
    put_le32(b, static_cast<uint32_t>(row * h));
    put_le32(b, 2835);
    put_le32(b, 2835);
    put_le32(b, static_cast<uint32_t>(colours));
    put_le32(b, 0);
    if (bpp == 32) {
      put_le32(b, 0x00FF0000);
      put_le32(b, 0x0000FF00);
      put_le32(b, 0x000000FF);
    }
  }
  for (int i = 0; i < colours; ++i) {
    b.push_back(static_cast<uint8_t>(i * 15));
    b.push_back(static_cast<uint8_t>(255 - i * 15));
    b.push_back(static_cast<uint8_t>(i * 7));
    if (!os2) b.push_back(0);
  }
  for (int y = 0; y < h; ++y) {
    Bytes r(static_cast<size_t>(row), 0);
    for (int x = 0; x < w; ++x) {
      if (bpp == 24 || bpp == 32) {
        for (int c = 0; c < bpp / 8; ++c) r[static_cast<size_t>(x * bpp / 8 + c)] = pattern(x, y, c);
      } else if (bpp == 8) {
        r[static_cast<size_t>(x)] = pattern(x, y, 0) % 16;
      } else if (pattern(x, y, 0) & 1) {
        r[static_cast<size_t>(x / 8)] |= static_cast<uint8_t>(0x80 >> (x % 8));
      }
    }
    b.insert(b.end(), r.begin(), r.end());
  }
  return b;
}

void image_seeds() {
  seed("image", "jpeg-gray", with_target(6, 8, false, data::encode_jpeg(test_image(1, 12, 16), 90)));
  seed("image", "jpeg-rgb", with_target(5, 5, true, data::encode_jpeg(test_image(3, 15, 20), 75)));
  seed("image", "jpeg-rgb-as-gray", with_target(30, 40, false, data::encode_jpeg(test_image(3, 15, 20), 50)));
  seed("image", "jpeg-progressive", with_target(8, 8, true, jpeg_special(24, 17, true, false)));
  seed("image", "jpeg-cmyk", with_target(4, 6, true, jpeg_special(13, 9, false, true)));
  seed("image", "jpeg-progressive-cmyk", with_target(3, 3, false, jpeg_special(10, 10, true, true)));
  seed("image", "png-gray", with_target(4, 4, false, png(7, 5, 0, 8, false)));
  seed("image", "png-rgb", with_target(3, 9, true, png(9, 6, 2, 8, false)));
  seed("image", "png-palette", with_target(2, 2, true, png(5, 5, 3, 8, false)));
  seed("image", "png-gray-alpha", with_target(6, 3, false, png(4, 4, 4, 8, false)));
  seed("image", "png-rgba16", with_target(3, 3, true, png(6, 4, 6, 16, false)));
  seed("image", "png-interlaced", with_target(10, 10, true, png(11, 9, 2, 8, true)));
  seed("image", "bmp-24", with_target(3, 4, true, bmp(7, 5, 24, false, false)));
  seed("image", "bmp-24-top-down", with_target(5, 5, false, bmp(6, 3, 24, true, false)));
  seed("image", "bmp-32-bitfields", with_target(2, 2, true, bmp(4, 4, 32, false, false)));
  seed("image", "bmp-8-palette", with_target(3, 3, false, bmp(5, 6, 8, false, false)));
  seed("image", "bmp-1", with_target(4, 4, false, bmp(9, 4, 1, false, false)));
  seed("image", "bmp-os2", with_target(2, 3, true, bmp(3, 3, 24, false, true)));
  const char gif[] = "GIF89a\x01\x00\x01\x00\x00\x00\x00;";
  seed("image", "gif", with_target(1, 1, false, Bytes(gif, gif + sizeof(gif) - 1)));
  const std::string html = "<html><body>404 Not Found</body></html>";
  seed("image", "html", with_target(1, 1, false, Bytes(html.begin(), html.end())));
  const Bytes jpeg = data::encode_jpeg(test_image(1, 16, 16), 90);
  seed("image", "jpeg-truncated", with_target(4, 4, false, Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2)));
}

void resize_seeds() {
  auto r = [](const std::string& name, std::vector<int> head, int pixels) {
    Bytes b(head.begin(), head.end());
    for (int i = 0; i < pixels; ++i) b.push_back(pattern(i, i / 7, 0));
    seed("resize", name, b);
  };
  r("shrink-gray", {15, 20, 3, 4, 0, 0}, 16 * 21);
  r("shrink-rgb", {9, 9, 2, 5, 1, 0}, 10 * 10 * 3);
  r("grow", {2, 3, 10, 7, 0, 0}, 12);
  r("odd-ratio", {6, 40, 4, 13, 1, 0}, 7 * 41 * 3);
  r("constant", {20, 20, 6, 3, 2, 77}, 0);
  r("identity", {11, 4, 0, 0, 5, 0}, 12 * 5 * 3);
  r("one-pixel", {0, 0, 63, 63, 0, 0}, 1);
}

void image_cache_seeds() {
  const Bytes valid = fuzz::image_cache_seed();
  seed("image_cache", "valid", valid);
  seed("image_cache", "cut", Bytes(valid.begin(), valid.begin() + valid.size() / 2));
  Bytes flipped = valid;
  flipped[flipped.size() - 20] ^= 0x10;
  seed("image_cache", "pixel-flipped", flipped);
  seed("image_cache", "empty", {});
}

void safetensors_seeds() {
  auto save_seed = [](const std::string& name, const NamedTensors& t, const Metadata& m) {
    const std::string path = fuzz::scratch_dir() + "/seed.safetensors";
    save(t, path, m);
    seed("safetensors", name, fuzz::read_file(path));
  };
  save_seed("weights", {{"layer.weight", arange(0, 6).to(kFloat32).reshape({2, 3})},
                        {"layer.bias", tensor({0.5, -1.5})}}, {});
  save_seed("dtypes", {{"f64", arange(0, 4).to(kFloat64).reshape({1, 2, 2})},
                       {"i64", arange(0, 3, 1, kInt64)},
                       {"u8", arange(0, 5).to(kUInt8)},
                       {"bool", tensor({1.0, 0.0, 1.0}).to(kBool)},
                       {"scalar", scalar_tensor(3.0)}},
            {{"note", "seed"}, {"step", "12"}});
  save_seed("empty-tensor", {{"nothing", zeros({0, 4})}}, {});
  save_seed("no-tensors", {}, {{"only", "metadata"}});
}

void cmdline_seeds() {
  auto c = [](const std::string& name, int example, const std::string& args) {
    Bytes b = {static_cast<uint8_t>(example)};
    b.insert(b.end(), args.begin(), args.end());
    seed("cmdline", name, b);
  };
  c("mnist-defaults", 0, "");
  c("mnist-flags", 0, "--epochs\n1\n--batch-size\n32\n--lr\n0.01\n--momentum\n0.9\n--threads\n1");
  c("mnist-limits", 0, "--train-limit\n100\n--test-limit\n10\n--log-interval\n5\n--seed\n7");
  c("mnist-run-flags", 0, "--save-dir\nruns\n--save-every\n50\n--keep-last\n2\n--log-dir\nlog\n--log-every\n3");
  c("mnist-resume", 0, "--resume\n--save-dir\nruns");
  c("mnist-bad-number", 0, "--epochs\nzero");
  c("mnist-help", 0, "--help");
  c("cifar-device", 1, "--device\ncpu\n--epochs\n2\n--log-interval\n100");
  c("cifar-cuda", 1, "--device\ncuda:1");
  c("cifar-unknown-flag", 1, "--nope");
  c("cats-flags", 2, "--val-fraction\n0.2\n--no-cache\n--batch-size\n10\n--lr\n0.001");
  c("cats-nvtx", 2, "--nvtx\n--threads\n2");
  c("cats-bad-fraction", 2, "--val-fraction\n1.5");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds OUTPUT_FOLDER   (fuzz/corpus in the source tree)\n";
    return 2;
  }
  g_out = argv[1];
  idx_seeds();
  cifar10_seeds();
  image_seeds();
  resize_seeds();
  image_cache_seeds();
  safetensors_seeds();
  cmdline_seeds();
  std::cout << "seeds written to " << g_out.string() << "\n";
  return 0;
}
