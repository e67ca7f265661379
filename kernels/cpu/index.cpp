#include "kernels/index.h"

#include <algorithm>
#include <cstring>

#include "kernels/base/parallel.h"
#include "kernels/base/scalar_math.h"

namespace ember::kernels::cpu {

namespace {

// Lines per thread chunk: enough lines that one chunk holds about kGrainSize elements.
int64_t line_grain(int64_t len) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1));
}

// One call of `body(out_line, index_line, in_line)` per line. for_each_run hands out whole
// lines (a line is one element of the loop), so each line is owned by exactly one thread.
template <typename T, typename Body>
void for_each_line(const StridedLoop<3>& lines, int64_t len, T* out, const int64_t* index,
                   const T* in, const Body& body) {
  for_each_run(
      lines,
      [&](const int64_t* off, int64_t n, const int64_t* st) {
        for (int64_t r = 0; r < n; ++r)
          body(out + off[0] + r * st[0], index + off[1] + r * st[1], in + off[2] + r * st[2]);
      },
      line_grain(len));
}

template <typename T>
void gather_typed(const StridedLoop<3>& lines, int64_t len, const int64_t* ds, T* out,
                  const int64_t* index, const T* in) {
  for_each_line<T>(lines, len, out, index, in, [&](T* o, const int64_t* ix, const T* x) {
    for (int64_t j = 0; j < len; ++j) o[j * ds[0]] = x[ix[j * ds[1]] * ds[2]];
  });
}

template <typename T>
void scatter_add_typed(const StridedLoop<3>& lines, int64_t len, const int64_t* ds, T* out,
                       const int64_t* index, const T* src) {
  // Repeated index values within a line hit one destination; the line is walked serially by
  // its one thread, so those adds happen one after the other.
  for_each_line<T>(lines, len, out, index, src, [&](T* o, const int64_t* ix, const T* s) {
    for (int64_t j = 0; j < len; ++j) {
      T& d = o[ix[j * ds[1]] * ds[0]];
      d = wrapping_add(d, s[j * ds[2]]);  // integer sums wrap (no signed-overflow UB)
    }
  });
}

template <typename T>
void index_select_typed(int64_t outer, int64_t size, int64_t inner, const T* in,
                        const int64_t* index, int64_t n, T* out) {
  // Output row t = (o, i) is input row (o, index[i]): a copy of `inner` contiguous elements.
  // Rows are independent, so they are split across threads (a DataLoader batch of 256 images
  // of 3072 floats is 256 memcpys of 12 KiB).
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1));
  parallel_for(0, outer * n, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / n, i = t % n;
      const T* row = in + (o * size + index[i]) * inner;
      if (inner == 1) out[t] = *row;
      else std::memcpy(out + t * inner, row, static_cast<size_t>(inner) * sizeof(T));
    }
  });
}

template <typename T>
void index_add_typed(int64_t outer, int64_t size, int64_t inner, T* out, const int64_t* index,
                     int64_t n, const T* src) {
  // Destination rows of out, flattened as o * size + r, are split across threads. A thread
  // scans every index entry and adds only the source rows that land in its own range: reading
  // the index once per thread is cheap, and no two threads write one row.
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1));
  parallel_for(0, outer * size, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b / size; o * size < e; ++o) {
      const int64_t lo = std::max(b, o * size), hi = std::min(e, (o + 1) * size);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = o * size + index[i];
        if (row < lo || row >= hi) continue;
        T* dst = out + row * inner;
        const T* s = src + (o * n + i) * inner;
        for (int64_t k = 0; k < inner; ++k) dst[k] = wrapping_add(dst[k], s[k]);
      }
    }
  });
}

}  // namespace

int64_t first_out_of_range(const int64_t* index, int64_t n, int64_t size, bool has_allowed,
                           int64_t allowed) {
  for (int64_t i = 0; i < n; ++i)
    if ((index[i] < 0 || index[i] >= size) && !(has_allowed && index[i] == allowed)) return i;
  return -1;
}

void gather(DType dtype, const StridedLoop<3>& lines, int64_t len, const int64_t dim_stride[3],
            void* out, const int64_t* index, const void* in) {
  EMBER_DISPATCH_ALL(dtype, "gather", [&] {
    gather_typed<scalar_t>(lines, len, dim_stride, static_cast<scalar_t*>(out), index,
                           static_cast<const scalar_t*>(in));
  });
}

void scatter_add(DType dtype, const StridedLoop<3>& lines, int64_t len,
                 const int64_t dim_stride[3], void* out, const int64_t* index, const void* src) {
  EMBER_DISPATCH_NUMERIC(dtype, "scatter_add", [&] {
    scatter_add_typed<scalar_t>(lines, len, dim_stride, static_cast<scalar_t*>(out), index,
                                static_cast<const scalar_t*>(src));
  });
}

void index_select(DType dtype, int64_t outer, int64_t size, int64_t inner, const void* in,
                  const int64_t* index, int64_t n, void* out) {
  EMBER_DISPATCH_ALL(dtype, "index_select", [&] {
    index_select_typed<scalar_t>(outer, size, inner, static_cast<const scalar_t*>(in), index, n,
                                 static_cast<scalar_t*>(out));
  });
}

void index_add(DType dtype, int64_t outer, int64_t size, int64_t inner, void* out,
               const int64_t* index, int64_t n, const void* src) {
  EMBER_DISPATCH_NUMERIC(dtype, "index_add", [&] {
    index_add_typed<scalar_t>(outer, size, inner, static_cast<scalar_t*>(out), index, n,
                              static_cast<const scalar_t*>(src));
  });
}

const IndexKernels index_kernels = {&first_out_of_range, &gather, &scatter_add, &index_select,
                                    &index_add};

}  // namespace ember::kernels::cpu
