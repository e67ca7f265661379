#include "core/shape.h"

#include "kernels/base/error.h"

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

int64_t wrap_insert_dim(int64_t dim, int64_t ndim, const char* op) {
  if (dim < -(ndim + 1) || dim > ndim) {
    throw ValueError(detail::concat(op, ": dim ", dim, " out of range for a ", ndim,
                                    "-d tensor (a new dim goes at ", -(ndim + 1), " to ", ndim,
                                    ")"));
  }
  return dim < 0 ? dim + ndim + 1 : dim;
}

std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape) {
  const auto nd_new = static_cast<int64_t>(new_shape.size());
  if (shape.empty()) return Shape(new_shape.size(), 1);  // a 0-d tensor: any shape of one element
  const int64_t numel = shape_numel(shape);
  if (numel == 0) {
    // No element to keep in place: the strides are free; keep them for the same shape, else
    // take contiguous ones (as PyTorch and NumPy do).
    if (shape == new_shape) return strides;
    return contiguous_strides(new_shape);
  }
  Shape out(new_shape.size());
  // Walk the old dims from the innermost outwards, one contiguous run (chunk) at a time, and
  // hand out the new dims (also innermost first) until they hold exactly the chunk's elements.
  int64_t new_d = nd_new - 1;
  int64_t chunk_stride = strides.back();  // the stride of the chunk's innermost element
  int64_t chunk_numel = 1, view_numel = 1;
  for (auto d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    chunk_numel *= shape[d];
    const bool chunk_ends =
        d == 0 || (shape[d - 1] != 1 && strides[d - 1] != chunk_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (new_d >= 0 && (view_numel < chunk_numel || new_shape[new_d] == 1)) {
      out[new_d] = view_numel * chunk_stride;
      view_numel *= new_shape[new_d];
      --new_d;
    }
    if (view_numel != chunk_numel) return std::nullopt;  // a new dim would span two chunks
    if (d > 0) {
      chunk_stride = strides[d - 1];
      chunk_numel = 1;
      view_numel = 1;
    }
  }
  if (new_d != -1) return std::nullopt;
  return out;
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
