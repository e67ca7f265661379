// ember/data/image_decode.cpp — sniffing, the libjpeg and libpng decoders with their error
// handling, the checks stb_image needs for BMP, the area resize and the grayscale conversion. See
// data/image_decode.h for the pipeline.
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
#include <png.h>

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

// ---- PNG through libpng -----------------------------------------------------------------------
//
// libpng reads a PNG as the specification says and says what is wrong with a broken one: a file
// cut short, a bad CRC, a corrupt deflate stream, a palette image without a palette. It is also
// the decoder behind OpenCV's cv2.imread, the seed's reader, with the same defaults. A fatal error
// calls png_on_error, which longjmp()s back to png_decode_raw; the same rules as for libjpeg above
// apply (nothing with a destructor in the frames it crosses), so png_decode_raw is C-style and the
// caller, png_reason, turns its result into words.
//
// libpng's warnings are for damage it reads around: an ancillary chunk with a bad CRC (dropped), a
// wrong Adler-32 after the last row (whose chunks passed their CRCs), data after the image. They
// are tolerated, as libpng and OpenCV tolerate them; the first is kept, to be named if an error
// follows. Metadata chunks (text, ICC profiles, gamma, ...) are skipped unread: ember uses none.
//
// What ember adds to libpng:
//   - the pixel limit, from IHDR's bytes before libpng reads them (png_size_check), so a forged
//     size is named even when the rest of the header is cut off or fails its CRC;
//   - the deflate bound: a file of n bytes holds at most 1032 n bytes of pixel rows (deflate's
//     largest expansion is a 258-byte match in 2 bits), checked once libpng has read the header
//     and before the image is allocated, so a 100-byte file claiming 16000x16000 pixels costs
//     nothing;
//   - the palette check: a pixel whose index is past the file's palette is an error in the
//     specification, which libpng only warns about; ember refuses the file and names the pixel.
//     The indices come from libpng unexpanded and ember looks them up;
//   - where a cut file ends: the read callback sees each chunk's header, so the reason names the
//     chunk the file ends in and the length it claims.
// The samples are what stb_image gave for PNG before and cv2.imread gives: 16-bit samples keep
// their high byte, alpha is dropped (not composited), 1-, 2- and 4-bit gray is scaled to 0..255,
// no gamma correction.

// The PNG's bytes as libpng reads them, and what the callbacks learned on the way.
struct PngSource {
  const uint8_t* bytes;
  size_t n;
  size_t at;               // the next byte libpng reads
  size_t chunk_at;         // where the chunk libpng is in begins (its length field)
  uint32_t chunk_length;   // the data bytes that chunk claims
  char chunk_type[5];      // its type ("" before the first chunk)
  bool ran_out;            // the error was libpng asking for bytes past the end of the file
  png_uint_32 ran_out_io;  // libpng's I/O state then: in a chunk's header, data or CRC
  char error[256];         // libpng's error message
  char warning[256];       // libpng's first warning, "" if none
};

void png_read_memory(png_structp png, png_bytep out, size_t len) {
  auto* s = static_cast<PngSource*>(png_get_io_ptr(png));
  const png_uint_32 io = png_get_io_state(png);
  if (len > s->n - s->at) {
    s->ran_out = true;
    s->ran_out_io = io;
    png_error(png, "the file ends here");  // png_reason says where
  }
  if ((io & PNG_IO_MASK_LOC) == PNG_IO_CHUNK_HDR && len == 8) {  // length and type, in one read
    s->chunk_at = s->at;
    s->chunk_length = be32(s->bytes + s->at);
    std::memcpy(s->chunk_type, s->bytes + s->at + 4, 4);
    s->chunk_type[4] = '\0';
    for (int i = 0; i < 4; ++i) {  // a printable name in the message, whatever the bytes are
      if (!std::isalnum(static_cast<unsigned char>(s->chunk_type[i]))) s->chunk_type[i] = '?';
    }
  }
  std::memcpy(out, s->bytes + s->at, len);
  s->at += len;
}

[[noreturn]] void png_on_error(png_structp png, png_const_charp message) {
  auto* s = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(s->error, sizeof(s->error), "%s", message);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp png, png_const_charp message) {
  auto* s = static_cast<PngSource*>(png_get_error_ptr(png));
  if (s->warning[0] == '\0') std::snprintf(s->warning, sizeof(s->warning), "%s", message);
}

struct PngResult {
  enum Status { Ok, Failed, TooManyRows, BadIndex } status;
  png_uint_32 width, height;
  uint64_t row_bytes;  // TooManyRows: the bytes of pixel rows (filter bytes included) claimed
  png_uint_32 bad_x, bad_y;
  int bad_index, palette_size;
};

// Decodes the PNG in `s` to interleaved 8-bit RGB [height, width, 3] in `pixels`.
void png_decode_raw(PngSource& s, PngResult& r, std::vector<uint8_t>& pixels) {
  r = PngResult{};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_on_error, png_on_warning);
  if (png == nullptr) throw std::bad_alloc();
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw std::bad_alloc();
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    r.status = PngResult::Failed;
    return;
  }
  png_set_read_fn(png, &s, png_read_memory);
  // ember's pixel limit (png_size_check) is the size limit; libpng's own default, 10^6 pixels a
  // side, would refuse a legal 2000000x1 image with a vaguer reason.
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);  // metadata: skip it
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int depth = png_get_bit_depth(png, info), colour = png_get_color_type(png, info);
  r.width = w;
  r.height = h;
  r.row_bytes = uint64_t{h} * (1 + uint64_t{png_get_rowbytes(png, info)});
  if (r.row_bytes > 1032 * uint64_t{s.n}) {
    png_destroy_read_struct(&png, &info, nullptr);
    r.status = PngResult::TooManyRows;
    return;
  }
  const bool palette = colour == PNG_COLOR_TYPE_PALETTE;
  if (palette) {
    png_set_packing(png);  // 1-, 2- and 4-bit indices one to a byte, unscaled
  } else {
    if (depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png);
    if (colour & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
    if (!(colour & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
  }
  const int passes = png_set_interlace_handling(png);  // Adam7: libpng puts each pass in place
  png_read_update_info(png, info);
  const size_t channels = palette ? 1 : 3;
  if (png_get_bit_depth(png, info) != 8 || png_get_channels(png, info) != channels ||
      png_get_rowbytes(png, info) != size_t{w} * channels) {
    png_error(png, "libpng did not give 8-bit samples of the expected layout");
  }
  try {
    pixels.resize(size_t{w} * h * 3);
  } catch (...) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw;
  }
  // Rows of `channels` bytes a pixel: indices for a palette image, else RGB.
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < h; ++y) {
      png_read_row(png, pixels.data() + size_t{y} * w * channels, nullptr);
    }
  }
  if (palette) {
    png_colorp entries = nullptr;
    int count = 0;
    png_get_PLTE(png, info, &entries, &count);  // libpng refused a palette image without one
    const size_t npix = size_t{w} * h;
    for (size_t i = 0; i < npix; ++i) {
      if (pixels[i] >= count) {
        r.status = PngResult::BadIndex;
        r.bad_x = static_cast<png_uint_32>(i % w);
        r.bad_y = static_cast<png_uint_32>(i / w);
        r.bad_index = pixels[i];
        r.palette_size = count;
        png_destroy_read_struct(&png, &info, nullptr);
        return;
      }
    }
    // Index i to RGB at 3 i, from the last pixel down: no index is overwritten before it is read.
    for (size_t i = npix; i-- > 0;) {
      const png_color c = entries[pixels[i]];
      pixels[3 * i] = c.red;
      pixels[3 * i + 1] = c.green;
      pixels[3 * i + 2] = c.blue;
    }
  }
  // Reads the rest of the deflate stream and the chunks up to IEND, as cv2.imread does, so a file
  // cut short after its last row is refused too.
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  r.status = PngResult::Ok;
}

// IHDR's width and height against the pixel limit, from the bytes alone. "" when within it or
// when there is no IHDR at its place (libpng then says what is wrong).
std::string png_size_check(const uint8_t* b, size_t n) {
  if (n < 24 || std::memcmp(b + 12, "IHDR", 4) != 0) return "";
  const std::string why = too_many_pixels(be32(b + 16), be32(b + 20), n);
  return why.empty() ? "" : "bad PNG: " + why;
}

// Why png_decode_raw failed, in words.
std::string png_reason(const PngSource& s, const PngResult& r) {
  const std::string n = std::to_string(s.n);
  switch (r.status) {
    case PngResult::Ok: return "";
    case PngResult::TooManyRows:
      return "truncated PNG: the header claims " + std::to_string(r.width) + "x" +
             std::to_string(r.height) + " pixels (" + std::to_string(r.row_bytes) +
             " bytes of pixel rows), but the file is " + n + " bytes, which deflate expands to " +
             "at most " + std::to_string(1032 * uint64_t{s.n}) +
             ": the file is cut short or its header corrupt";
    case PngResult::BadIndex:
      return "bad PNG: pixel " + std::to_string(r.bad_x) + " of row " + std::to_string(r.bad_y) +
             " has colour " + std::to_string(r.bad_index) + ", but the palette holds " +
             std::to_string(r.palette_size) + " colours";
    case PngResult::Failed: break;
  }
  std::string why;
  if (s.ran_out) {
    const png_uint_32 where = s.ran_out_io & PNG_IO_MASK_LOC;
    if ((where == PNG_IO_CHUNK_DATA || where == PNG_IO_CHUNK_CRC) && s.chunk_type[0] != '\0') {
      why = "truncated PNG: its chunk '" + std::string(s.chunk_type) + "' at byte " +
            std::to_string(s.chunk_at) + " claims " + std::to_string(s.chunk_length) + " bytes" +
            (where == PNG_IO_CHUNK_CRC ? " and a 4-byte CRC" : "") + ", but the file has " +
            std::to_string(s.n - s.chunk_at - 8) +
            " bytes after the chunk's header: the file is cut short or the chunk's length corrupt";
    } else if (s.chunk_type[0] != '\0') {
      why = "truncated PNG: the file ends after " + n + " bytes, where the chunk after '" +
            s.chunk_type + "' should begin" +
            (std::strcmp(s.chunk_type, "IEND") == 0 ? "" : " (a PNG ends with an IEND chunk)") +
            ": the file is cut short";
    } else {
      why = "truncated PNG: the file ends after " + n + " bytes, inside its signature";
    }
  } else if (std::strncmp(s.error, "IDAT: ", 6) == 0) {
    // libpng names the chunk: a zlib error or a bad CRC in the compressed rows.
    why = std::string("bad PNG: its compressed pixel data is corrupt (libpng: ") + s.error + ")";
  } else {
    why = std::string("bad PNG: ") + s.error;
  }
  if (s.warning[0] != '\0' && std::strcmp(s.warning, s.error) != 0) {
    why += std::string(" (after libpng's warning: ") + s.warning + ")";
  }
  return why;
}

// ---- BMP: the guards stb_image still needs ----------------------------------------------------
//
// stb_image still decodes BMP, and each check below stands between it and an input the fuzzers
// found (fuzz/regressions/README.md): a truncated file decoded as zeros and reported as a success,
// a compression code stb misreads as "uncompressed", a header with no pixels whose 16 million
// empty rows stb walks, and palette indices stb looks up in uninitialised memory. Each costs a
// read of the header or one pass over the indices; none can go while stb reads BMP.

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
    case ImageFormat::PNG: {
      const std::string too_big = png_size_check(bytes, n);
      if (!too_big.empty()) return too_big;
      PngSource src{};
      src.bytes = bytes;
      src.n = n;
      PngResult r{};
      png_decode_raw(src, r, scratch.pixels);
      if (r.status != PngResult::Ok) return png_reason(src, r);
      h = r.height;
      w = r.width;
      if (gray) rgb_to_gray_bt601(scratch.pixels.data(), static_cast<size_t>(h * w));
      break;
    }
    case ImageFormat::BMP: {
      std::string why = bmp_truncation(bytes, n);
      if (why.empty()) why = bmp_palette_check(bytes, n);
      if (!why.empty()) return why;
      int iw = 0, ih = 0;
      const char* reason = "unknown error";
      unsigned char* p = stb::decode_rgb(bytes, n, &iw, &ih, &reason);
      if (p == nullptr) return std::string("bad BMP: ") + reason;
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
  if (!why.empty()) {
    throw IOError(path + ": " + why + " (replace the file with an intact copy, or leave it out)");
  }
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
