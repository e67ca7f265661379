// ember/data/image_decode.cpp — sniffing, the libjpeg decoder with its error handling, the area
// resize and the grayscale conversion. See data/image_decode.h for the pipeline.
#include "data/image_decode.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <utility>

// jpeglib.h uses FILE and size_t without including their headers: <cstdio> must come first.
#include <jpeglib.h>
#include <jerror.h>
#include <zlib.h>

#include "kernels/base/error.h"

namespace ember::data {

namespace {

// A decoded image may take at most this many bytes before resizing (per decoding thread).
// Larger is almost surely a corrupt header; real photos stay far below, and a JPEG is decoded
// already scaled down.
constexpr size_t kMaxDecodedBytes = size_t{1} << 30;

uint32_t le16(const uint8_t* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8); }
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// ---- JPEG through libjpeg ---------------------------------------------------------------------
//
// libjpeg reports a fatal error by calling err->error_exit, whose default prints the message and
// calls exit(): one bad photo would end the program. The standard remedy is an error manager that
// longjmp()s back to the caller instead, which then destroys the decompressor and reports the
// file as skipped.
//
// libjpeg also has "warnings": damage it can decode around (it fills the missing part of the
// image with gray, for instance). We must decide which damage still gives a correct image:
//   tolerated  JWRN_EXTRANEOUS_DATA  "Corrupt JPEG data: N extraneous bytes before marker 0xd9":
//                                    junk between two segments; every pixel decodes correctly.
//                                    Some of the Kaggle cats-vs-dogs photos have it, and OpenCV
//                                    (the seed's cv2.imread) loads them too.
//              JWRN_JFIF_MAJOR, JWRN_ADOBE_XFORM, JWRN_BOGUS_ICC: metadata oddities (an unknown
//                                    JFIF version, an unknown colour transform code, a damaged
//                                    ICC profile, which we do not use anyway).
//   fatal      everything else — above all JWRN_JPEG_EOF "Premature end of JPEG file" (a
//              truncated download: the bottom of the photo would be gray), bad Huffman codes,
//              premature end of a data segment, lost restart markers. The image would contain
//              made-up pixels, so the file is skipped like an unreadable one.
// A fatal warning longjmp()s out at once, like an error, so no time is spent decoding the rest.
//
// Nothing with a destructor may live in a stack frame that longjmp() crosses or in the frame of
// the setjmp() after it is called; so jpeg_decode_raw below is C-style (plain structs, a char
// buffer for the message), and the C++ caller turns its result into a std::string.

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg hands us a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool is_warning;  // the jump came from a fatal warning, not an error
};

bool tolerated_warning(int code) {
  return code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM ||
         code == JWRN_BOGUS_ICC;
}

[[noreturn]] void jpeg_on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (cinfo->err->msg_code == JERR_NO_BACKING_STORE) {
    // libjpeg wanted more than mem->max_memory_to_use (a progressive JPEG keeps every DCT
    // coefficient of the image) and, having no temporary files, gives up with this code.
    std::snprintf(err->message, sizeof(err->message),
                  "decoding it needs more than %zu MiB of memory (a progressive JPEG keeps the "
                  "whole image's coefficients): the image is too large or its header corrupt",
                  kMaxDecodedBytes >> 20);
  } else {
    (*cinfo->err->format_message)(cinfo, err->message);
  }
  err->is_warning = false;
  std::longjmp(err->jump, 1);
}

void jpeg_on_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;  // trace output: ignore
  if (tolerated_warning(cinfo->err->msg_code)) return;
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  err->is_warning = true;
  std::longjmp(err->jump, 1);
}

struct JpegResult {
  bool ok;
  bool is_warning;       // failed on a fatal warning (damaged data), not an error
  bool adobe_inverted;   // CMYK output in Adobe's inverted convention
  bool cmyk;             // output has 4 channels, C M Y K
  int width, height, components;
  char message[JMSG_LENGTH_MAX];
};

// Decodes a JPEG at the smallest scale M/8 (M = 1..8) whose output is at least min_h x min_w,
// into `pixels` (rows of `components` interleaved channels): 1 for gray (want_gray), 3 for RGB,
// 4 for CMYK/YCCK files, which libjpeg cannot turn into RGB or gray itself.
JpegResult jpeg_decode_raw(const uint8_t* bytes, size_t n, int64_t min_h, int64_t min_w,
                           bool want_gray, std::vector<uint8_t>& pixels) {
  JpegResult r{};
  jpeg_decompress_struct cinfo;
  JpegErrorManager jerr;
  cinfo.err = jpeg_std_error(&jerr.pub);
  jerr.pub.error_exit = jpeg_on_error;
  jerr.pub.emit_message = jpeg_on_message;
  jerr.message[0] = '\0';
  jerr.is_warning = false;
  if (setjmp(jerr.jump)) {
    jpeg_destroy_decompress(&cinfo);
    r.ok = false;
    r.is_warning = jerr.is_warning;
    std::memcpy(r.message, jerr.message, sizeof(r.message));
    return r;
  }
  jpeg_create_decompress(&cinfo);
  // What libjpeg may take for its own buffers (it asks before allocating the big ones, and then
  // fails with JERR_NO_BACKING_STORE, see jpeg_on_error).
  cinfo.mem->max_memory_to_use = static_cast<long>(kMaxDecodedBytes);
  jpeg_mem_src(&cinfo, bytes, static_cast<unsigned long>(n));
  jpeg_read_header(&cinfo, TRUE);
  // The header's size is all libjpeg has read so far: refuse an absurd one before anything is
  // allocated for it.
  const uint64_t claimed = uint64_t{cinfo.image_width} * uint64_t{cinfo.image_height};
  if (claimed > kMaxImagePixels) {
    std::snprintf(jerr.message, sizeof(jerr.message),
                  "the header claims %ux%u pixels (%llu), more than ember decodes (%llu), in a "
                  "file of %zu bytes: the header is corrupt or the image is too large",
                  cinfo.image_width, cinfo.image_height, static_cast<unsigned long long>(claimed),
                  static_cast<unsigned long long>(kMaxImagePixels), n);
    jerr.is_warning = false;
    std::longjmp(jerr.jump, 1);
  }

  r.cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  r.adobe_inverted = cinfo.saw_Adobe_marker;
  // Gray from a YCbCr file is its Y channel: libjpeg then skips the chroma IDCTs altogether.
  cinfo.out_color_space = r.cmyk ? JCS_CMYK : want_gray ? JCS_GRAYSCALE : JCS_RGB;
  // The accurate integer IDCT (bit-exact across libjpeg-turbo's SIMD paths, so every machine
  // decodes the same bytes). Plain chroma upsampling: the image is shrunk afterwards anyway.
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = FALSE;
  for (unsigned m = 1; m <= 8; ++m) {
    cinfo.scale_num = m;
    cinfo.scale_denom = 8;
    jpeg_calc_output_dimensions(&cinfo);
    if (cinfo.output_width >= min_w && cinfo.output_height >= min_h) break;
  }
  jpeg_start_decompress(&cinfo);
  r.width = static_cast<int>(cinfo.output_width);
  r.height = static_cast<int>(cinfo.output_height);
  r.components = cinfo.output_components;
  const size_t row_bytes = size_t{cinfo.output_width} * static_cast<size_t>(r.components);
  if (row_bytes * cinfo.output_height > kMaxDecodedBytes) {
    std::snprintf(jerr.message, sizeof(jerr.message),
                  "image of %ux%u pixels is too large to decode", cinfo.image_width,
                  cinfo.image_height);
    jerr.is_warning = false;
    std::longjmp(jerr.jump, 1);
  }
  try {
    pixels.resize(row_bytes * cinfo.output_height);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW rows[16];
    const JDIMENSION want = std::min<JDIMENSION>(16, cinfo.output_height - cinfo.output_scanline);
    for (JDIMENSION i = 0; i < want; ++i) {
      rows[i] = pixels.data() + (cinfo.output_scanline + i) * row_bytes;
    }
    jpeg_read_scanlines(&cinfo, rows, want);
  }
  // Reads up to the end-of-image marker, so a file cut short after its last pixel row is caught.
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  r.ok = true;
  return r;
}

// Silences libjpeg's encoder warnings (it has none that matter for our inputs).
void jpeg_ignore_message(j_common_ptr, int) {}

struct JpegEncoded {
  bool ok;
  unsigned char* data;  // malloc'ed, owned by the caller
  unsigned long size;
  char message[JMSG_LENGTH_MAX];
};

// Encodes interleaved rows [h, w, components] (1: gray, 3: RGB) as a baseline JPEG with libjpeg's
// defaults (4:2:0 chroma for colour, standard Huffman tables). C-style for setjmp, as above.
JpegEncoded jpeg_encode_raw(const uint8_t* pixels, int w, int h, int components, int quality) {
  JpegEncoded r{};
  // Output goes to a buffer we allocate, large enough that libjpeg never has to grow it (a JPEG
  // stays well below twice the raw size), so the error path knows what to free.
  const unsigned long capacity = 2ul * w * h * components + 65536;
  unsigned char* const buffer = static_cast<unsigned char*>(std::malloc(capacity));
  if (buffer == nullptr) throw std::bad_alloc();
  unsigned char* out = buffer;
  unsigned long size = capacity;
  jpeg_compress_struct cinfo;
  JpegErrorManager jerr;
  cinfo.err = jpeg_std_error(&jerr.pub);
  jerr.pub.error_exit = jpeg_on_error;
  jerr.pub.emit_message = jpeg_ignore_message;
  jerr.message[0] = '\0';
  if (setjmp(jerr.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    r.ok = false;
    std::memcpy(r.message, jerr.message, sizeof(r.message));
    return r;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t row_bytes = static_cast<size_t>(w) * static_cast<size_t>(components);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels + cinfo.next_scanline * row_bytes);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  if (out != buffer) std::free(buffer);  // libjpeg grew the buffer after all: `out` is its own
  r.ok = true;
  r.data = out;
  r.size = size;
  return r;
}

// CMYK [n, 4] -> RGB [n, 3] in place. Photoshop (the source of nearly every CMYK JPEG) writes the
// channels inverted, 255 = no ink, and marks the file with an Adobe segment; then R = C * K / 255.
void cmyk_to_rgb(uint8_t* p, size_t n, bool inverted) {
  for (size_t i = 0; i < n; ++i) {
    int c = p[4 * i], m = p[4 * i + 1], y = p[4 * i + 2], k = p[4 * i + 3];
    if (!inverted) {
      c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
    }
    p[3 * i] = static_cast<uint8_t>((c * k + 127) / 255);
    p[3 * i + 1] = static_cast<uint8_t>((m * k + 127) / 255);
    p[3 * i + 2] = static_cast<uint8_t>((y * k + 127) / 255);
  }
}

// ---- what a header claims, checked before decoding -------------------------------------------

// "" if an image of w x h pixels may be decoded, else why not (the claimed size and the file's).
std::string too_many_pixels(uint64_t w, uint64_t h, size_t n) {
  if (w * h <= kMaxImagePixels) return "";  // w, h < 2^32: the product cannot overflow
  return "the header claims " + std::to_string(w) + "x" + std::to_string(h) + " pixels (" +
         std::to_string(w * h) + "), more than ember decodes (" +
         std::to_string(kMaxImagePixels) + "), in a file of " + std::to_string(n) +
         " bytes: the header is corrupt or the image is too large";
}

// A PNG's IHDR against the file: stb_image allocates the whole decompressed image as soon as it
// has read the header, so a 100-byte file claiming 16000x16000 pixels would cost a gigabyte. The
// pixel rows are deflate-compressed, and deflate expands at most 1032:1 (a 258-byte match coded
// in 2 bits), so a file of n bytes can hold at most 1032 n bytes of rows. Returns "" when the
// header is plausible or not there (stb then reports what is wrong).
std::string png_header_check(const uint8_t* b, size_t n) {
  if (n < 24 || std::memcmp(b + 12, "IHDR", 4) != 0) return "";
  const uint64_t w = be32(b + 16), h = be32(b + 20);
  const std::string why = too_many_pixels(w, h, n);
  if (!why.empty()) return "bad PNG: " + why;
  if (n < 26) return "";  // no bit depth and colour type: stb says the file is cut short
  const uint64_t depth = b[24];
  uint64_t channels = 0;
  switch (b[25]) {  // colour type
    case 0: case 3: channels = 1; break;  // gray, palette
    case 4: channels = 2; break;          // gray + alpha
    case 2: channels = 3; break;          // RGB
    case 6: channels = 4; break;          // RGBA
    default: return "";                   // stb names the bad colour type
  }
  const uint64_t rows = h * (1 + (w * channels * depth + 7) / 8);  // a filter byte per row
  if (rows > 1032 * static_cast<uint64_t>(n)) {
    return "truncated PNG: the header claims " + std::to_string(w) + "x" + std::to_string(h) +
           " pixels (" + std::to_string(rows) + " bytes of pixel rows), but the file is " +
           std::to_string(n) + " bytes, which deflate expands to at most " +
           std::to_string(1032 * static_cast<uint64_t>(n)) +
           ": the file is cut short or its header corrupt";
  }
  // stb_image grows its buffer for the compressed rows to each IDAT chunk's length before it reads
  // the chunk, so a 150-byte file whose IDAT claims 2^31 bytes made it allocate 2 GiB. Every chunk
  // up to IEND must hold the bytes it claims (stb fails on a short one anyway, after allocating).
  for (size_t at = 8; at + 8 <= n;) {
    const uint64_t length = be32(b + at);
    const std::string type(reinterpret_cast<const char*>(b + at + 4), 4);
    if (type == "IEND") break;
    if (length > n - at - 8) {
      return "truncated PNG: its chunk '" + type + "' at byte " + std::to_string(at) + " claims " +
             std::to_string(length) + " bytes, but the file has " + std::to_string(n - at - 8) +
             " bytes after the chunk's header: the file is cut short or the chunk's length corrupt";
    }
    at += 12 + static_cast<size_t>(length);
  }
  return "";
}

// stb_image reads past the end of a truncated BMP as zeros and reports success, so we check that
// the file holds all of its pixel rows first. Returns "" if complete (or if the header gives no
// width or depth to size the rows by: stb then refuses it).
std::string bmp_truncation(const uint8_t* b, size_t n) {
  if (n < 26) return "truncated BMP: " + std::to_string(n) + " bytes is less than its header";
  const uint32_t file_size = le32(b + 2), pixel_offset = le32(b + 10), header_size = le32(b + 14);
  int64_t width = 0, height = 0;
  uint32_t bpp = 0, compression = 0;
  if (header_size == 12) {  // OS/2 BITMAPCOREHEADER
    width = le16(b + 18);
    height = le16(b + 20);
    bpp = le16(b + 24);
  } else if (n >= 34) {
    width = static_cast<int32_t>(le32(b + 18));
    height = static_cast<int32_t>(le32(b + 22));
    bpp = le16(b + 28);
    compression = le32(b + 30);
  } else {
    return "truncated BMP: " + std::to_string(n) + " bytes is less than its header";
  }
  // The claimed size first, whatever else the header says: a forged header is refused naming it.
  const uint64_t abs_width = static_cast<uint64_t>(width < 0 ? -width : width);
  const uint64_t abs_height = static_cast<uint64_t>(height < 0 ? -height : height);
  const std::string why = too_many_pixels(abs_width, abs_height, n);
  if (!why.empty()) return "bad BMP: " + why;
  // No pixels: stb_image would walk every one of the (up to 2^31) empty rows before failing, a
  // second or more for an 80-byte file (found by the fuzzer as a timeout).
  if (abs_width == 0 || abs_height == 0) {
    return "bad BMP: the header claims " + std::to_string(width) + "x" + std::to_string(abs_height) +
           " pixels, an image with no pixels: the header is corrupt";
  }
  // stb_image decodes BI_RGB (0) and BI_BITFIELDS (3) and refuses 1, 2 and 4 to 2^31 - 1, but
  // it reads the field as a signed int: 2^31 and above pass as "uncompressed", and the rows
  // the file does not hold come out as zeros (a 174-byte file decoded to 84 million pixels).
  if (compression != 0 && compression != 3) {
    return "bad BMP: compression " + std::to_string(compression) + " is not supported (ember "
           "reads uncompressed and BI_BITFIELDS BMPs)";
  }
  uint64_t needed = 0;
  if (width > 0 && bpp > 0) {
    const uint64_t row = (static_cast<uint64_t>(width) * bpp + 31) / 32 * 4;
    needed = pixel_offset + row * abs_height;
  } else {
    needed = file_size;  // no rows to count: only the header's own total size can tell
  }
  if (needed > n) {
    return "truncated BMP: the header claims " + std::to_string(width) + "x" +
           std::to_string(abs_height) + " pixels at " + std::to_string(bpp) +
           " bits, which need " + std::to_string(needed) + " bytes, but the file is " +
           std::to_string(n) + " bytes";
  }
  return "";
}

// stb_image looks every pixel of a 1-, 4- or 8-bit BMP up in its palette without checking that
// the index is inside the palette the file holds: an index past it reads stb's uninitialised stack
// array (pal[256][4]), so such an image would come out different from one decode to the next,
// showing whatever the stack held. We refuse the file instead. The palette size is the one stb
// reads: the entries that fit between the info header and the pixel data. Returns "" when every
// index is inside it (or when stb refuses the file for another reason anyway).
std::string bmp_palette_check(const uint8_t* b, size_t n) {
  if (n < 30) return "";
  const int64_t offset = le32(b + 10), header_size = le32(b + 14);
  int64_t width = 0, height = 0, palette = 0;
  uint32_t bpp = 0;
  if (header_size == 12) {  // OS/2: 3-byte entries, counted as stb counts them
    width = le16(b + 18);
    height = le16(b + 20);
    bpp = le16(b + 24);
    palette = (offset - 14 - 24) / 3;
  } else {
    width = static_cast<int32_t>(le32(b + 18));
    height = static_cast<int32_t>(le32(b + 22));
    bpp = le16(b + 28);
    palette = (offset - 14 - header_size) >> 2;
  }
  if (bpp != 1 && bpp != 4 && bpp != 8) return "";
  // A pixel offset inside the headers gives stb a negative palette size, which passes its "0 or
  // more than 256" test: it then reads no palette at all and colours every pixel from its
  // uninitialised array.
  if (palette < 0) {
    return "bad BMP: its pixel data starts at byte " + std::to_string(offset) +
           ", too early for the palette its " + std::to_string(bpp) + "-bit pixels need (the " +
           "headers alone take " + std::to_string(14 + header_size) + " bytes)";
  }
  if (palette == 0 || palette > 256 || palette >= (int64_t{1} << bpp) || width <= 0) return "";
  if (height < 0) height = -height;
  const int64_t row = bpp == 1 ? (width + 7) / 8 : bpp == 4 ? (width + 1) / 2 : width;
  const int64_t stride = (row + 3) / 4 * 4;
  if (offset + stride * height > static_cast<int64_t>(n)) return "";  // bmp_truncation's case
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* r = b + offset + y * stride;
    for (int64_t x = 0; x < width; ++x) {
      const int index = bpp == 8 ? r[x]
                        : bpp == 4 ? (r[x / 2] >> (x % 2 == 0 ? 4 : 0)) & 15
                                   : (r[x / 8] >> (7 - x % 8)) & 1;
      if (index >= palette) {
        return "bad BMP: pixel " + std::to_string(x) + " of row " + std::to_string(y) +
               " has colour " + std::to_string(index) + ", but the palette holds " +
               std::to_string(palette) + " colours";
      }
    }
  }
  return "";
}

// The same for PNG, and one more hole. stb_image looks every pixel of a palette image (colour
// type 3) up in a 256-entry stack array of which it filled only the PLTE chunk's entries, without
// checking the index, so a pixel past the file's palette comes out of uninitialised memory (the PNG
// specification calls such an index an error). And stb's inflater takes the invalid distance codes
// 30 and 31 as distance 0, copying bytes of its output buffer that nothing has written yet. So the
// compressed rows are inflated here first with zlib (raw deflate; stb skips the Adler-32 check
// too): a stream that zlib finds corrupt is refused, as PIL and libpng refuse it; and where a
// palette holds fewer than 2^depth colours, the rows are unfiltered as stb will and a pixel past
// the palette is refused. This costs one extra inflate per PNG, a small part of decoding it.
// Returns "" when the data is sound, or broken in a way that stb reports itself (no PLTE, rows
// missing, a bad filter byte).
std::string png_data_check(const uint8_t* b, size_t n) {
  if (n < 29 || std::memcmp(b + 12, "IHDR", 4) != 0) return "";
  const uint64_t w = be32(b + 16), h = be32(b + 20);
  const int depth = b[24], colour = b[25], interlace = b[28];
  // The chunks as stb reads them: the last PLTE before IEND counts, the IDATs are one stream.
  int64_t palette = 0;
  bool iphone = false;  // Apple's CgBI PNGs: raw deflate, without the zlib header
  std::vector<uint8_t> z;
  for (size_t at = 8; at + 8 <= n;) {
    const uint64_t length = be32(b + at);
    const char* type = reinterpret_cast<const char*>(b + at + 4);
    if (std::memcmp(type, "IEND", 4) == 0) break;  // stb stops here, whatever IEND's length says
    if (length > n - at - 8) return "";  // png_header_check's case
    if (std::memcmp(type, "CgBI", 4) == 0) iphone = true;
    if (std::memcmp(type, "PLTE", 4) == 0) palette = length % 3 == 0 ? static_cast<int64_t>(length / 3) : 0;
    if (std::memcmp(type, "IDAT", 4) == 0) z.insert(z.end(), b + at + 8, b + at + 8 + length);
    at += 12 + static_cast<size_t>(length);
  }
  const size_t skip = iphone ? 0 : 2;
  if (z.size() <= skip) return "";
  const bool check_palette = colour == 3 && (depth == 1 || depth == 2 || depth == 4 || depth == 8) &&
                             interlace <= 1 && w > 0 && h > 0 && palette > 0 &&
                             palette < (int64_t{1} << depth);

  // Adam7's seven passes (x start, y start, x step, y step), or the whole image as one pass.
  struct Pass { uint64_t x0, y0, dx, dy; };
  const Pass adam7[7] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                         {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  const Pass whole[1] = {{0, 0, 1, 1}};
  const Pass* passes = interlace ? adam7 : whole;
  const int npasses = interlace ? 7 : 1;
  auto extent = [](uint64_t size, uint64_t start, uint64_t step) {
    return size > start ? (size - start + step - 1) / step : 0;
  };
  // Inflate row by row (a row buffer, not the whole image), without the Adler-32 check, which
  // stb does not make either.
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) return "";
  struct End { z_stream* z; ~End() { inflateEnd(z); } } end{&zs};
  zs.next_in = z.data() + skip;
  zs.avail_in = static_cast<uInt>(z.size() - skip);
  int status = Z_OK;
  auto read = [&zs, &status](uint8_t* dst, size_t len) {
    zs.next_out = dst;
    zs.avail_out = static_cast<uInt>(len);
    while (zs.avail_out > 0 && (status = inflate(&zs, Z_NO_FLUSH)) == Z_OK) {}
    return zs.avail_out == 0;
  };
  auto corrupt = [&zs]() {
    return "bad PNG: its compressed pixel data is corrupt (zlib: " +
           std::string(zs.msg ? zs.msg : "data error") + ", after " + std::to_string(zs.total_out) +
           " bytes of rows)";
  };

  std::vector<uint8_t> row, prev, cur;
  for (int p = 0; check_palette && p < npasses; ++p) {
    const Pass& ps = passes[p];
    const uint64_t pw = extent(w, ps.x0, ps.dx), ph = extent(h, ps.y0, ps.dy);
    if (pw == 0 || ph == 0) continue;
    const size_t bytes = static_cast<size_t>((pw * depth + 7) / 8);
    row.resize(1 + bytes);
    prev.assign(bytes, 0);
    cur.assign(bytes, 0);
    for (uint64_t y = 0; y < ph; ++y) {
      if (!read(row.data(), row.size())) return status == Z_DATA_ERROR ? corrupt() : "";
      const int filter = row[0];
      if (filter > 4) return "";  // stb: "invalid filter"
      for (size_t i = 0; i < bytes; ++i) {  // undo the filter; one byte per pixel step
        const int a = i > 0 ? cur[i - 1] : 0, up = prev[i], c = i > 0 ? prev[i - 1] : 0;
        int predictor = 0;
        switch (filter) {
          case 1: predictor = a; break;
          case 2: predictor = up; break;
          case 3: predictor = (a + up) / 2; break;
          case 4: {  // Paeth: the neighbour closest to a + up - c
            const int pa = std::abs(up - c), pb = std::abs(a - c), pc = std::abs(a + up - 2 * c);
            predictor = pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
            break;
          }
          default: break;
        }
        cur[i] = static_cast<uint8_t>(row[1 + i] + predictor);
      }
      for (uint64_t x = 0; x < pw; ++x) {
        const uint64_t bit = x * depth;
        const int index = (cur[bit / 8] >> (8 - depth - bit % 8)) & ((1 << depth) - 1);
        if (index >= palette) {
          return "bad PNG: pixel " + std::to_string(ps.x0 + x * ps.dx) + " of row " +
                 std::to_string(ps.y0 + y * ps.dy) + " has colour " + std::to_string(index) +
                 ", but the palette holds " + std::to_string(palette) + " colours";
        }
      }
      std::swap(prev, cur);
    }
  }
  // The rest of the stream (all of it, for an image without the palette check).
  uint8_t sink[16384];
  while (read(sink, sizeof sink)) {}
  return status == Z_DATA_ERROR ? corrupt() : "";
}

// stb_image 2.27 allocates its buffer for the compressed rows at the first IDAT chunk that holds
// bytes, but copies every IDAT into it, so an empty IDAT before that one is copied into a null
// buffer (memcpy(NULL, p, 0): undefined behaviour, found by CI's 60-s fuzz run). An empty IDAT
// carries nothing and is legal, so stb is given a copy of the file without those chunks. Returns
// false (and leaves `copy` alone) when the file has none, which is nearly always.
bool png_without_leading_empty_idat(const uint8_t* b, size_t n, std::vector<uint8_t>& copy) {
  std::vector<std::pair<size_t, size_t>> drop;  // [begin, end) of each chunk to leave out
  for (size_t at = 8; at + 8 <= n;) {
    const uint64_t length = be32(b + at);
    const char* type = reinterpret_cast<const char*>(b + at + 4);
    if (std::memcmp(type, "IEND", 4) == 0 || length > n - at - 8) break;
    const bool idat = std::memcmp(type, "IDAT", 4) == 0;
    if (idat && length > 0) break;  // stb has its buffer from here on
    const size_t end = std::min(n, at + 12 + static_cast<size_t>(length));  // the CRC may be cut
    if (idat) drop.emplace_back(at, end);
    at = end;
  }
  if (drop.empty()) return false;
  copy.clear();
  size_t from = 0;
  for (const auto& [begin, end] : drop) {
    copy.insert(copy.end(), b + from, b + begin);
    from = end;
  }
  copy.insert(copy.end(), b + from, b + n);
  return true;
}

// ---- what a file that is not an image is ------------------------------------------------------

std::string describe_unknown(const uint8_t* b, size_t n) {
  auto starts = [&](const char* s) {
    const size_t k = std::strlen(s);
    return n >= k && std::memcmp(b, s, k) == 0;
  };
  const char* kSupported = " (ember reads JPEG, PNG and BMP)";
  if (starts("GIF87a") || starts("GIF89a")) return std::string("GIF image") + kSupported;
  if (starts("II*") || starts("MM")) {
    if (n >= 4 && ((b[0] == 'I' && b[3] == 0) || (b[0] == 'M' && b[2] == 0 && b[3] == '*'))) {
      return std::string("TIFF image") + kSupported;
    }
  }
  if (n >= 12 && starts("RIFF") && std::memcmp(b + 8, "WEBP", 4) == 0) {
    return std::string("WebP image") + kSupported;
  }
  if (n < 3 && n >= 1 && b[0] == 0xFF && (n == 1 || b[1] == 0xD8)) {
    return "truncated JPEG: the file ends after " + std::to_string(n) + " byte(s)";
  }
  // Text (an HTML error page saved as .jpg, a note): show how it starts.
  const size_t k = std::min<size_t>(n, 24);
  bool text = true;
  for (size_t i = 0; i < k; ++i) {
    if (!std::isprint(b[i]) && !std::isspace(b[i])) text = false;
  }
  if (text) {
    std::string start(reinterpret_cast<const char*>(b), k);
    for (char& c : start) {
      if (std::isspace(static_cast<unsigned char>(c))) c = ' ';
    }
    return "not an image: a text file starting with \"" + start + "\"";
  }
  char hex[64];
  std::snprintf(hex, sizeof(hex), "%02X %02X %02X %02X", n > 0 ? b[0] : 0, n > 1 ? b[1] : 0,
                n > 2 ? b[2] : 0, n > 3 ? b[3] : 0);
  return std::string("not a JPEG, PNG or BMP file (it starts with bytes ") + hex + ")";
}

}  // namespace

ImageFormat sniff_image_format(const uint8_t* b, size_t n) {
  if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::JPEG;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (n >= 8 && std::memcmp(b, kPng, 8) == 0) return ImageFormat::PNG;
  if (n >= 18 && b[0] == 'B' && b[1] == 'M') {
    // "BM" alone is common in text; require a DIB header size that BMP writers use.
    const uint32_t h = le32(b + 14);
    if (h == 12 || h == 40 || h == 52 || h == 56 || h == 64 || h == 108 || h == 124) {
      return ImageFormat::BMP;
    }
  }
  return ImageFormat::Unknown;
}

void rgb_to_gray_bt601(uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t y = 19595u * p[3 * i] + 38470u * p[3 * i + 1] + 7471u * p[3 * i + 2];
    p[i] = static_cast<uint8_t>((y + 32768u) >> 16);
  }
}

namespace {

// For each output index o of an axis of `src` -> `dst` samples: the source indices and weights of
// the area filter, taps [offset[o], offset[o + 1]).
struct AreaTaps {
  std::vector<int32_t> offset, index;
  std::vector<float> weight;
};

AreaTaps area_taps(int64_t src, int64_t dst) {
  AreaTaps t;
  t.offset.reserve(static_cast<size_t>(dst) + 1);
  t.offset.push_back(0);
  const double scale = static_cast<double>(src) / static_cast<double>(dst);
  for (int64_t o = 0; o < dst; ++o) {
    const double lo = static_cast<double>(o) * scale, hi = static_cast<double>(o + 1) * scale;
    const int64_t first = static_cast<int64_t>(std::floor(lo));
    const int64_t last = std::min<int64_t>(src - 1, static_cast<int64_t>(std::ceil(hi)) - 1);
    for (int64_t i = first; i <= last; ++i) {
      // The length of [lo, hi) inside source pixel [i, i + 1), as a fraction of hi - lo.
      const double overlap = std::min(hi, static_cast<double>(i + 1)) -
                             std::max(lo, static_cast<double>(i));
      if (overlap <= 1e-9) continue;
      t.index.push_back(static_cast<int32_t>(i));
      t.weight.push_back(static_cast<float>(overlap / scale));
    }
    t.offset.push_back(static_cast<int32_t>(t.index.size()));
  }
  return t;
}

}  // namespace

void resize_area(const uint8_t* src, int64_t src_h, int64_t src_w, int channels, uint8_t* dst,
                 int64_t dst_h, int64_t dst_w, std::vector<float>& rows) {
  const int64_t C = channels;
  const AreaTaps tx = area_taps(src_w, dst_w), ty = area_taps(src_h, dst_h);
  // Pass 1, along x: rows[y, ox, c] = sum over taps of src[y, i, c] * w, for every source row.
  const size_t row_len = static_cast<size_t>(dst_w * C);
  rows.resize(static_cast<size_t>(src_h) * row_len + row_len);
  float* acc = rows.data() + static_cast<size_t>(src_h) * row_len;  // one output row, [ox, c]
  for (int64_t y = 0; y < src_h; ++y) {
    const uint8_t* s = src + y * src_w * C;
    float* r = rows.data() + y * row_len;
    for (int64_t ox = 0; ox < dst_w; ++ox) {
      for (int64_t c = 0; c < C; ++c) {
        float v = 0.f;
        for (int32_t t = tx.offset[ox]; t < tx.offset[ox + 1]; ++t) {
          v += tx.weight[t] * static_cast<float>(s[tx.index[t] * C + c]);
        }
        r[ox * C + c] = v;
      }
    }
  }
  // Pass 2, along y: dst[c, oy, ox] = sum over taps of rows[i, ox, c] * w, rounded.
  for (int64_t oy = 0; oy < dst_h; ++oy) {
    std::fill(acc, acc + row_len, 0.f);
    for (int32_t t = ty.offset[oy]; t < ty.offset[oy + 1]; ++t) {
      const float w = ty.weight[t];
      const float* r = rows.data() + static_cast<size_t>(ty.index[t]) * row_len;
      for (size_t k = 0; k < row_len; ++k) acc[k] += w * r[k];
    }
    for (int64_t ox = 0; ox < dst_w; ++ox) {
      for (int64_t c = 0; c < C; ++c) {
        const float v = std::min(255.f, std::max(0.f, acc[ox * C + c] + 0.5f));
        dst[(c * dst_h + oy) * dst_w + ox] = static_cast<uint8_t>(v);
      }
    }
  }
}

std::string decode_image(const uint8_t* bytes, size_t n, int64_t height, int64_t width,
                         int channels, uint8_t* out, DecodeScratch& scratch) {
  EMBER_CHECK(channels == 1 || channels == 3, "decode_image: channels must be 1 or 3, got ",
              channels);
  EMBER_CHECK(height > 0 && width > 0, "decode_image: the target size must be positive, got ",
              height, "x", width);
  if (n == 0) return "empty file (0 bytes)";
  const bool gray = channels == 1;
  int64_t h = 0, w = 0;
  switch (sniff_image_format(bytes, n)) {
    case ImageFormat::JPEG: {
      const JpegResult r = jpeg_decode_raw(bytes, n, height, width, gray, scratch.pixels);
      if (!r.ok) {
        const std::string msg = r.message;
        const bool truncated = msg.find("Premature end") != std::string::npos;
        return std::string(truncated ? "truncated JPEG: " : r.is_warning ? "damaged JPEG: "
                                                                          : "bad JPEG: ") +
               msg;
      }
      h = r.height;
      w = r.width;
      const size_t npix = static_cast<size_t>(h * w);
      if (r.cmyk) {
        cmyk_to_rgb(scratch.pixels.data(), npix, r.adobe_inverted);
        if (gray) rgb_to_gray_bt601(scratch.pixels.data(), npix);
      } else if (r.components != channels) {
        return "bad JPEG: libjpeg gave " + std::to_string(r.components) + " channels, wanted " +
               std::to_string(channels);
      }
      break;
    }
    case ImageFormat::PNG:
    case ImageFormat::BMP: {
      const bool png = sniff_image_format(bytes, n) == ImageFormat::PNG;
      std::string why = png ? png_header_check(bytes, n) : bmp_truncation(bytes, n);
      if (why.empty()) why = png ? png_data_check(bytes, n) : bmp_palette_check(bytes, n);
      if (!why.empty()) return why;
      int iw = 0, ih = 0;
      const char* reason = "unknown error";
      std::vector<uint8_t> without_empty_idat;
      const bool copied = png && png_without_leading_empty_idat(bytes, n, without_empty_idat);
      unsigned char* p = copied ? stb::decode_rgb(without_empty_idat.data(), without_empty_idat.size(),
                                                  &iw, &ih, &reason)
                                : stb::decode_rgb(bytes, n, &iw, &ih, &reason);
      if (p == nullptr) return std::string(png ? "bad PNG: " : "bad BMP: ") + reason;
      h = ih;
      w = iw;
      const size_t npix = static_cast<size_t>(h * w);
      try {
        scratch.pixels.assign(p, p + npix * 3);
      } catch (...) {
        stb::free_pixels(p);
        throw;
      }
      stb::free_pixels(p);
      if (gray) rgb_to_gray_bt601(scratch.pixels.data(), npix);
      break;
    }
    case ImageFormat::Unknown:
      return describe_unknown(bytes, n);
  }
  if (h <= 0 || w <= 0) return "image of " + std::to_string(w) + "x" + std::to_string(h) + " pixels";
  resize_area(scratch.pixels.data(), h, w, channels, out, height, width, scratch.rows);
  scratch.decoded_height = h;
  scratch.decoded_width = w;
  return "";
}

std::string read_file_bytes(const std::string& path, std::vector<uint8_t>& out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::string("cannot open: ") + std::strerror(errno);
  std::string err;
  out.clear();
  if (std::fseek(f, 0, SEEK_END) != 0) {
    err = std::string("cannot seek: ") + std::strerror(errno);
  } else {
    const long size = std::ftell(f);
    if (size < 0) {
      err = std::string("cannot determine the size: ") + std::strerror(errno);
    } else {
      std::rewind(f);
      out.resize(static_cast<size_t>(size));
      const size_t got = size > 0 ? std::fread(out.data(), 1, out.size(), f) : 0;
      if (got != out.size()) {
        err = std::string("read error after ") + std::to_string(got) + " of " +
              std::to_string(size) + " bytes" + (std::ferror(f) ? ": " + std::string(std::strerror(errno)) : "");
      }
    }
  }
  std::fclose(f);
  return err;
}

Tensor read_image(const std::string& path, int64_t height, int64_t width, bool grayscale) {
  EMBER_CHECK(height > 0 && width > 0, "read_image: the target size must be positive, got ",
              height, "x", width);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw IOError("read_image: '" + path + "' is not a file" +
                  (std::filesystem::exists(path, ec) ? "" : " (it does not exist)"));
  }
  DecodeScratch scratch;
  const std::string read_error = read_file_bytes(path, scratch.file);
  if (!read_error.empty()) throw IOError(path + ": " + read_error);
  const int c = grayscale ? 1 : 3;
  Tensor out = empty({c, height, width}, TensorOptions(kUInt8).device(Device::cpu()));
  const std::string why = decode_image(scratch.file.data(), scratch.file.size(), height, width, c,
                                       out.data_ptr<uint8_t>(), scratch);
  if (!why.empty()) throw IOError(path + ": " + why);
  return out;
}

std::vector<uint8_t> encode_jpeg(const Tensor& image, int quality) {
  EMBER_CHECK(image.defined() && image.dtype() == kUInt8 && image.dim() == 3 &&
                  (image.size(0) == 1 || image.size(0) == 3),
              "encode_jpeg: expected a uint8 image [C, H, W] with C = 1 or 3, got ",
              image.defined() ? shape_str(image.shape()) : "an undefined tensor");
  EMBER_CHECK(quality >= 1 && quality <= 100, "encode_jpeg: quality must be 1..100, got ",
              quality);
  const int64_t C = image.size(0), H = image.size(1), W = image.size(2);
  EMBER_CHECK(H > 0 && W > 0 && H <= 65500 && W <= 65500,
              "encode_jpeg: a JPEG is 1 to 65500 pixels on each side, got ", H, "x", W);
  // Planar [C, H, W] -> interleaved rows [H, W, C], what libjpeg reads.
  const std::vector<uint8_t> planar = image.contiguous().to_vector<uint8_t>();
  std::vector<uint8_t> rows(planar.size());
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < H * W; ++i) rows[i * C + c] = planar[c * H * W + i];
  }
  const JpegEncoded e = jpeg_encode_raw(rows.data(), static_cast<int>(W), static_cast<int>(H),
                                        static_cast<int>(C), quality);
  if (!e.ok) throw IOError(std::string("encode_jpeg: libjpeg failed: ") + e.message);
  std::vector<uint8_t> out(e.data, e.data + e.size);
  std::free(e.data);
  return out;
}

void write_jpeg(const std::string& path, const Tensor& image, int quality) {
  const std::vector<uint8_t> bytes = encode_jpeg(image, quality);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw IOError("write_jpeg: cannot create '" + path + "': " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !written) {
    throw IOError("write_jpeg: cannot write '" + path + "': " + std::strerror(err));
  }
}

}  // namespace ember::data
