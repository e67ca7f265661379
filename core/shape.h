// ember/core/shape.h — shapes, strides and the broadcasting rule.
//
// Shapes and strides are counted in elements (not bytes), outermost dimension first,
// exactly as in PyTorch and NumPy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a 0-dim scalar).
int64_t shape_numel(const Shape& shape);

// Row-major ("C-contiguous") strides for a shape: the last dimension has stride 1.
Shape contiguous_strides(const Shape& shape);

// "[64, 784]"
std::string shape_str(const Shape& shape);

// NumPy broadcasting: align shapes on the right; each pair of sizes must be equal or one of
// them 1. Throws "<op>: shapes [..] and [..] cannot be broadcast (dim -1: 3 vs 4)".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Turns a possibly negative dim into [0, ndim). Throws "<op>: dim 3 out of range for a 2-d tensor".
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// Resolves one -1 in a requested shape (view/reshape) and checks the element count.
Shape infer_size(const Shape& requested, int64_t numel, const char* op);

}  // namespace ember
