// fuzz/targets/resize.cpp — data::resize_area against the area filter computed here in double
// precision straight from its definition (data/image_decode.h): output pixel (y, x) is the mean
// of the source over [y sh, (y+1) sh) x [x sw, (x+1) sw), each source pixel weighted by the area
// it shares with that rectangle.
//
// Input: bytes 0-3 = source height, source width, target height, target width (each 1 + low 6
// bits), byte 4 = channels (bit 0: 3, else 1) and mode (bits 1-2: 0 pixels from the input,
// 1 a constant image of byte 5's value, 2 the target size = the source size), then pixels
// (repeated when there are too few).
//
// Properties: every output is within 0.51 of the exact mean (float accumulation, then rounding)
// and within the channel's [min, max]; a constant image stays that constant; resizing to the same
// size copies the image exactly.
#include <algorithm>
#include <cmath>
#include <string>

#include "data/image_decode.h"
#include "fuzz/targets/common.h"

namespace ember::fuzz {

void resize(const uint8_t* data, size_t n) {
  if (n < 6) return;
  const int64_t sh = 1 + (data[0] & 63), sw = 1 + (data[1] & 63);
  const int C = (data[4] & 1) ? 3 : 1;
  const int mode = (data[4] >> 1) & 3;
  const int64_t dh = mode == 2 ? sh : 1 + (data[2] & 63), dw = mode == 2 ? sw : 1 + (data[3] & 63);
  const uint8_t* pix = data + 6;
  const size_t npix = n - 6;
  Bytes src(static_cast<size_t>(sh * sw * C));
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = mode == 1 ? data[5] : npix > 0 ? pix[i % npix] : static_cast<uint8_t>(i * 37);
  }
  Bytes dst(static_cast<size_t>(dh * dw * C), 0xEE);
  std::vector<float> rows(7, 1e30f);  // stale scratch: must not matter
  data::resize_area(src.data(), sh, sw, C, dst.data(), dh, dw, rows);

  const double sy = static_cast<double>(sh) / static_cast<double>(dh);
  const double sx = static_cast<double>(sw) / static_cast<double>(dw);
  for (int c = 0; c < C; ++c) {
    int lo = 255, hi = 0;
    for (int64_t i = 0; i < sh * sw; ++i) {
      lo = std::min<int>(lo, src[static_cast<size_t>(i * C + c)]);
      hi = std::max<int>(hi, src[static_cast<size_t>(i * C + c)]);
    }
    for (int64_t oy = 0; oy < dh; ++oy) {
      const double y0 = oy * sy, y1 = (oy + 1) * sy;
      for (int64_t ox = 0; ox < dw; ++ox) {
        const double x0 = ox * sx, x1 = (ox + 1) * sx;
        double sum = 0.0;
        for (int64_t y = static_cast<int64_t>(std::floor(y0)); y < std::min<double>(sh, std::ceil(y1)); ++y) {
          const double wy = std::min(y1, y + 1.0) - std::max(y0, static_cast<double>(y));
          if (wy <= 0) continue;
          for (int64_t x = static_cast<int64_t>(std::floor(x0)); x < std::min<double>(sw, std::ceil(x1)); ++x) {
            const double wx = std::min(x1, x + 1.0) - std::max(x0, static_cast<double>(x));
            if (wx <= 0) continue;
            sum += wy * wx * src[static_cast<size_t>((y * sw + x) * C + c)];
          }
        }
        const double exact = sum / (sy * sx);
        const int got = dst[static_cast<size_t>((c * dh + oy) * dw + ox)];
        const char* broken =
            std::fabs(got - exact) > 0.51 ? "more than 0.51 from the exact mean"
            : got < lo || got > hi        ? "outside the source's range"
            : mode == 1 && got != data[5] ? "a constant image changed"
            : mode == 2 && got != src[static_cast<size_t>((oy * sw + ox) * C + c)]
                ? "the identity resize changed a pixel"
                : nullptr;
        FUZZ_CHECK(broken == nullptr,
                   std::string(broken ? broken : "") + ": channel " + std::to_string(c) + " (" +
                       std::to_string(oy) + ", " + std::to_string(ox) + ") of " +
                       std::to_string(sh) + "x" + std::to_string(sw) + " -> " +
                       std::to_string(dh) + "x" + std::to_string(dw) + ": got " +
                       std::to_string(got) + ", exact " + std::to_string(exact));
      }
    }
  }
}

}  // namespace ember::fuzz
