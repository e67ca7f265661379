// ember/core/shape.h — shapes, strides and the broadcasting rule.
//
// Shapes and strides are counted in elements (not bytes), outermost dimension first,
// exactly as in PyTorch and NumPy.
#pragma once

#include <cstdint>
#include <optional>
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

// For ops that insert a dimension (unsqueeze, stack): a new dim of a tensor with `ndim` dims
// goes at [-(ndim+1), ndim]. Throws "<op>: dim 5 out of range for a 2-d tensor (a new dim goes
// at -3 to 2)", naming the tensor's own rank.
int64_t wrap_insert_dim(int64_t dim, int64_t ndim, const char* op);

// The strides under which a tensor of (shape, strides) can be seen as new_shape without moving
// any element (PyTorch's rule for view), or nullopt when no such strides exist. The old dims are
// cut into runs that are contiguous with each other in memory (stride[d] = stride[d+1] *
// size[d+1], size-1 dims ignored); each run is one flat block, and a view may regroup the
// elements of a run freely but may not make one new dim span two runs. So a transposed matrix
// can be viewed as [3, 1, 2] or have a dim split, but not be flattened.
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape);

// Resolves one -1 in a requested shape (view/reshape) and checks the element count.
Shape infer_size(const Shape& requested, int64_t numel, const char* op);

}  // namespace ember
