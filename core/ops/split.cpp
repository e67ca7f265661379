// Op card: split, chunk — cut a tensor into pieces along one dim, as views.
//
// Math      split(a, n, d): pieces of n along d, from the start; the last one is smaller when
//           n does not divide the size (size 5 by 2: 2, 2, 1). A dim of size 0 gives one empty
//           piece; n == 0 is allowed only then (PyTorch's rule).
//           split(a, {n0, n1, ...}, d): pieces of exactly those sizes, which must be
//           non-negative and add up to the size of d.
//           chunk(a, c, d): split(a, ceil(size / c), d) — so it can give fewer than c pieces
//           (size 6 in 4 chunks: 2, 2, 2), as torch.chunk does; a dim of size 0 gives c empty
//           pieces.
//           Every piece is narrow(a, d, start, length): a view sharing a's storage.
// Backward  each piece is a narrow, whose backward (core/ops/slice.cpp, SliceBackward) puts its
//           gradient into its window of a zero tensor shaped like a; the engine adds up the
//           pieces' gradients, so dL/da is the pieces' gradients laid side by side (zeros for
//           pieces that got none). A composite of narrow.
// Shapes    pieces of a's shape with dim d cut; a must have at least one dim.
// Dtypes    any; every piece has a's dtype (no promotion: nothing is computed).
// Saved     nothing (each narrow saves its window).
// Kernels   none forward (views); backward: narrow's, kernels/cpu/elementwise.cpp (fill, copy).
//           CUDA: the same ops in kernels/cuda/elementwise.cu.
#include <numeric>
#include <sstream>

#include "core/ops/common.h"

namespace ember {

namespace {
std::string sizes_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// The pieces of the given sizes, back to back along dim d (already wrapped).
std::vector<Tensor> pieces(const Tensor& a, const std::vector<int64_t>& sizes, int64_t d) {
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t n : sizes) {
    out.push_back(narrow(a, d, start, n));
    start += n;
  }
  return out;
}
}  // namespace

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  ops::check_defined("split", a);
  EMBER_CHECK(a.dim() > 0, "split: cannot split a 0-d tensor: it has no dim to cut (reshape it "
                           "to [1] first)");
  const int64_t d = wrap_dim(dim, a.dim(), "split");
  const int64_t size = a.shape()[d];
  EMBER_CHECK(split_size >= 0, "split: split_size must be non-negative, got ", split_size);
  EMBER_CHECK(split_size > 0 || size == 0,
              "split: split_size 0 is allowed only for a dim of "
              "size 0, but dim ",
              d, " of shape ", shape_str(a.shape()), " has size ", size,
              " (give a positive piece size)");
  // ceil(size / split_size) pieces, at least one (an empty dim gives one empty piece).
  const int64_t n =
      split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes(static_cast<size_t>(n), split_size);
  sizes.back() = size - split_size * (n - 1);
  return pieces(a, sizes, d);
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& split_sizes, int64_t dim) {
  ops::check_defined("split", a);
  EMBER_CHECK(a.dim() > 0, "split: cannot split a 0-d tensor: it has no dim to cut (reshape it "
                           "to [1] first)");
  const int64_t d = wrap_dim(dim, a.dim(), "split");
  const int64_t size = a.shape()[d];
  for (int64_t s : split_sizes)
    EMBER_CHECK(s >= 0, "split: the piece sizes must be non-negative, got ",
                sizes_str(split_sizes));
  const int64_t total = std::accumulate(split_sizes.begin(), split_sizes.end(), int64_t{0});
  EMBER_CHECK(total == size, "split: the piece sizes ", sizes_str(split_sizes), " add up to ",
              total, ", but dim ", d, " of shape ", shape_str(a.shape()), " has size ", size,
              ": they must add up to exactly the size");
  return pieces(a, split_sizes, d);
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  ops::check_defined("chunk", a);
  EMBER_CHECK(a.dim() > 0, "chunk: cannot chunk a 0-d tensor: it has no dim to cut (reshape it "
                           "to [1] first)");
  EMBER_CHECK(chunks > 0, "chunk: the number of chunks must be positive, got ", chunks);
  const int64_t d = wrap_dim(dim, a.dim(), "chunk");
  const int64_t size = a.shape()[d];
  // An empty dim: `chunks` empty pieces (split would give one).
  if (size == 0) return pieces(a, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(a, (size + chunks - 1) / chunks, d);
}

}  // namespace ember
