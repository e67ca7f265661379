// ember/data/stb_impl.cpp — the one translation unit that compiles stb_image (BMP only).
//
// stb_image is a single header that holds its implementation behind STB_IMAGE_IMPLEMENTATION.
// We compile it here with STB_IMAGE_STATIC, so all of its functions stay private to this file
// and a program that links ember and compiles its own copy of stb_image gets no duplicate
// symbols; the rest of ember calls the two wrappers below. JPEG goes to libjpeg and PNG to libpng
// instead (data/image_decode.cpp), so only the BMP decoder is built.
#include <climits>
#include <cstddef>

#include "data/image_decode.h"

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_BMP
#define STBI_NO_STDIO  // files are read by ember; stb only sees bytes in memory
#define STBI_FAILURE_USERMSG

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace ember::data::stb {

unsigned char* decode_rgb(const uint8_t* bytes, size_t n, int* w, int* h, const char** reason) {
  if (n > static_cast<size_t>(INT_MAX)) {
    *reason = "file larger than 2 GiB";
    return nullptr;
  }
  int channels_in_file = 0;
  // stb's failure reason is thread-local (STBI_THREAD_LOCAL), so parallel decoders do not mix
  // their messages up.
  unsigned char* pixels =
      stbi_load_from_memory(bytes, static_cast<int>(n), w, h, &channels_in_file, 3);
  if (pixels == nullptr) *reason = stbi_failure_reason();
  return pixels;
}

void free_pixels(unsigned char* pixels) { stbi_image_free(pixels); }

}  // namespace ember::data::stb
