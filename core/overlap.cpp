#include "core/overlap.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"

namespace ember {

namespace {
// [first, last] element offsets in the storage that t can touch (strides are never negative).
std::pair<int64_t, int64_t> span(const Tensor& t) {
  int64_t last = t.offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.shape()[d] - 1) * t.strides()[d];
  return {t.offset(), last};
}

// Same offset and the same stride for every dimension that has more than one element.
bool same_layout(const Tensor& a, const Tensor& b) {
  if (a.offset() != b.offset() || a.shape() != b.shape()) return false;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.shape()[d] > 1 && a.strides()[d] != b.strides()[d]) return false;
  return true;
}
}  // namespace

bool is_non_overlapping_and_dense(const Tensor& t) {
  // Sorted by stride, the dims of size > 1 must tile memory exactly: the smallest stride is 1,
  // and each next stride is the previous one times its size.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] != 1) dims.emplace_back(t.strides()[d], t.shape()[d]);
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (size == 0) return true;  // no elements: nothing can overlap
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

bool has_internal_overlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.shape()[d] > 1 && t.strides()[d] == 0) return true;
  return false;
}

Overlap overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return Overlap::None;
  if (a.storage() != b.storage() || a.dtype() != b.dtype()) {
    // Different storages share nothing; one storage under two dtypes only through make_view,
    // and only as a whole (ember has no reinterpreting views): treat it as undecidable.
    return a.storage() == b.storage() ? Overlap::Unknown : Overlap::None;
  }
  if (same_layout(a, b)) return Overlap::Full;
  const auto [a0, a1] = span(a);
  const auto [b0, b1] = span(b);
  if (a1 < b0 || b1 < a0) return Overlap::None;
  if (is_non_overlapping_and_dense(a) && is_non_overlapping_and_dense(b)) return Overlap::Partial;
  return Overlap::Unknown;
}

void check_no_internal_overlap(const char* op, const Tensor& out) {
  EMBER_CHECK(!has_internal_overlap(out), op, ": more than one element of the written-to tensor "
              "(shape ", shape_str(out.shape()), ", strides ", shape_str(out.strides()),
              ") refers to a single memory location (a stride of 0, as expand() makes), so the "
              "in-place result would depend on the order of the writes: write into a clone() "
              "(or contiguous() copy) of it instead");
}

Tensor input_safe_to_read(const char* op, const Tensor& out, const Tensor& in) {
  switch (overlap(out, in)) {
    case Overlap::None:
    case Overlap::Full: return in;
    case Overlap::Partial:
      throw ValueError(detail::concat(
          op, ": some elements of the input (shape ", shape_str(in.shape()), ", strides ",
          shape_str(in.strides()), ", offset ", in.offset(), ") and of the written-to tensor "
          "(shape ", shape_str(out.shape()), ", strides ", shape_str(out.strides()), ", offset ",
          out.offset(), ") are the same memory, so the result would depend on the order of the "
          "writes: clone() the input first"));
    case Overlap::Unknown: {
      NoGradGuard no_grad;
      return in.detach().clone();
    }
  }
  return in;
}

}  // namespace ember
