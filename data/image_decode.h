// ember/data/image_decode.h — one encoded image (JPEG, PNG or BMP) in, H x W x C bytes out (and a
// JPEG encoder, for making test images).
//
// The pipeline for one file, used by ImageFolder (data/image_folder.h) for every photo:
//
//   bytes --sniff--> JPEG: libjpeg(-turbo), with DCT-domain downscaling      --+
//                    PNG: libpng, at full size                                  |
//                    BMP: stb_image, at full size                               +--> area resize
//                    anything else: rejected with its reason                  --+    to H x W
//
// 1. The format comes from the first bytes (the "magic number"), never from the file name: the
//    Kaggle cats-vs-dogs folders hold files named .jpg that are not JPEGs.
// 2. JPEG: libjpeg can decode at 1/8, 2/8, ..., 8/8 of the full size by running a smaller inverse
//    DCT on each 8x8 block, which is much cheaper than decoding every pixel and shrinking later.
//    We pick the smallest scale M/8 whose output is still at least H x W, so the final resize
//    only ever shrinks from a slightly larger image (for a 500x375 photo and 50x50: 2/8, 125x94).
// 3. Grayscale uses the ITU-R BT.601 luma weights, Y = 0.299 R + 0.587 G + 0.114 B, which is what
//    OpenCV's cv2.IMREAD_GRAYSCALE gives (for a JPEG, OpenCV and ember both ask libjpeg for its
//    luma channel, which the encoder computed with the same weights).
// 4. The resize is an area (box) filter, see resize_area below.
//
// 5. PNG and BMP come out as 8-bit RGB, alpha dropped, no gamma correction; a 16-bit PNG sample
//    keeps its high byte, as OpenCV reads it.
//
// Decoding never throws for a bad file: decode_image returns the reason as a string (ImageFolder
// turns it into one warning line and skips the file). read_image, for a single file, throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember::data {

enum class ImageFormat { Unknown, JPEG, PNG, BMP };

// The format from the first bytes: FF D8 FF (JPEG), 89 'P' 'N' 'G' 0D 0A 1A 0A (PNG), 'B' 'M'
// plus a plausible header (BMP). Unknown for anything else, including too few bytes.
ImageFormat sniff_image_format(const uint8_t* bytes, size_t n);

// Buffers a decoding thread reuses from one image to the next (no allocation per image once
// they have grown to the largest image seen).
struct DecodeScratch {
  std::vector<uint8_t> file;    // the encoded bytes
  std::vector<uint8_t> pixels;  // the decoded image, rows of interleaved channels
  std::vector<float> rows;      // the resize's intermediate, see resize_area
  // The size the last successful decode_image produced before resizing: the header's size for
  // PNG and BMP, the header's size scaled by M/8 for a JPEG (see step 2 above).
  int64_t decoded_height = 0, decoded_width = 0;
};

// The most pixels an image's header may claim: 2^28 (268 megapixels, e.g. 16384 x 16384). A file
// whose header claims more is rejected before anything is allocated for it, with the claimed size
// and the file's real size in the reason: a forged or corrupt header must not make ember allocate
// gigabytes for a file of a few hundred bytes.
constexpr uint64_t kMaxImagePixels = uint64_t{1} << 28;

// Decodes the encoded image `bytes` [n] and writes it resized to `height` x `width` with
// `channels` (1: grayscale, 3: RGB) into `out`, planar: out[c * height * width + y * width + x]
// (one [C, H, W] sample). Returns "" on success, else why the image was rejected ("truncated
// JPEG: Premature end of JPEG file"); `out` is then unspecified. Thread-safe: one scratch per
// thread. A header claiming more than kMaxImagePixels pixels, or more pixel data than the file can
// hold (a PNG's deflate data expands at most 1032:1, an uncompressed BMP holds every row), is
// rejected before the image is decoded.
std::string decode_image(const uint8_t* bytes, size_t n, int64_t height, int64_t width,
                         int channels, uint8_t* out, DecodeScratch& scratch);

// Reads and decodes one file: a uint8 tensor [C, height, width] (C = 1 if grayscale, else 3).
// Throws ember::IOError naming the file and the reason when it cannot be read or decoded
// ("x.png: truncated PNG: its chunk 'IDAT' at byte 57 claims ...").
Tensor read_image(const std::string& path, int64_t height, int64_t width, bool grayscale = true);

// The other direction, with libjpeg: a uint8 image [C, H, W] (C = 1 or 3) as a baseline JPEG
// (quality 1..100, libjpeg's defaults: 4:2:0 chroma for colour). For tests, benchmarks and a look
// at samples. write_jpeg throws ember::IOError if the file cannot be written.
std::vector<uint8_t> encode_jpeg(const Tensor& image, int quality = 90);
void write_jpeg(const std::string& path, const Tensor& image, int quality = 90);

// Area (box-filter) resize of an interleaved image src [src_h, src_w, C] to a planar one
// dst [C, dst_h, dst_w]. Output pixel (y, x) is the average of the source over the rectangle
// [y * sh, (y + 1) * sh) x [x * sw, (x + 1) * sw) in source pixel units (sh = src_h / dst_h,
// sw = src_w / dst_w), each source pixel weighted by the area it shares with that rectangle —
// OpenCV's INTER_AREA when shrinking. When shrinking, every source pixel contributes and no
// detail aliases; when enlarging (a source smaller than the target) it is nearest-neighbour
// with a linear blend where an output pixel straddles two source pixels. Rounds to nearest.
// `rows` is scratch space (src_h * dst_w * C floats).
void resize_area(const uint8_t* src, int64_t src_h, int64_t src_w, int channels, uint8_t* dst,
                 int64_t dst_h, int64_t dst_w, std::vector<float>& rows);

// BT.601 luma of interleaved RGB, in place: pixels [n, 3] -> [n, 1], rounded to nearest with
// libjpeg's fixed-point weights (19595 R + 38470 G + 7471 B) / 65536, which sum to exactly 1.
void rgb_to_gray_bt601(uint8_t* pixels, size_t n);

// The whole file into `out` (resized to fit). Returns "" or why it could not be read
// ("cannot open: Permission denied"). Used by the dataset readers.
std::string read_file_bytes(const std::string& path, std::vector<uint8_t>& out);

namespace stb {
// stb_image, compiled once in data/stb_impl.cpp with its functions kept private to that file:
// decodes BMP bytes to interleaved RGB [h, w, 3] (malloc'ed: release with free_pixels), or
// returns nullptr and sets *reason to stb's reason. Only after decode_image's BMP checks.
unsigned char* decode_rgb(const uint8_t* bytes, size_t n, int* w, int* h, const char** reason);
void free_pixels(unsigned char* pixels);
}  // namespace stb

}  // namespace ember::data
