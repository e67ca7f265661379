#include "core/shape.h"

#include "core/error.h"

namespace ember {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t acc = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = acc;
    acc *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      throw ValueError(detail::concat(op, ": shapes ", shape_str(a), " and ", shape_str(b),
                                      " cannot be broadcast (dim -", i + 1, ": ", da, " vs ", db,
                                      ")"));
    }
    out[n - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t lo = ndim == 0 ? -1 : -ndim;
  const int64_t hi = ndim == 0 ? 0 : ndim - 1;
  if (dim < lo || dim > hi) {
    throw ValueError(detail::concat(op, ": dim ", dim, " out of range for a ", ndim,
                                    "-d tensor (expected ", lo, " to ", hi, ")"));
  }
  if (dim < 0) dim += ndim == 0 ? 1 : ndim;
  return dim;
}

Shape infer_size(const Shape& requested, int64_t numel, const char* op) {
  Shape out = requested;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      EMBER_CHECK(infer_at < 0, op, ": only one dimension can be -1, got ", shape_str(requested));
      infer_at = static_cast<int>(i);
    } else {
      EMBER_CHECK(out[i] >= 0, op, ": invalid size ", out[i], " in ", shape_str(requested));
      known *= out[i];
    }
  }
  if (infer_at >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(requested),
                " is invalid for a tensor of ", numel, " elements");
    out[infer_at] = numel / known;
  } else {
    EMBER_CHECK(known == numel, op, ": shape ", shape_str(requested),
                " is invalid for a tensor of ", numel, " elements");
  }
  return out;
}

}  // namespace ember
