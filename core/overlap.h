// ember/core/overlap.h — does a write through one tensor change what another tensor (or the
// same one, elsewhere) reads? The checks every in-place op and copy_ run first (PyTorch's rules).
//
// Views share memory, and an in-place op walks its elements in some order: if two elements of
// the written tensor are one memory location (an expand()ed view), the element is updated more
// than once (zeros({3}).unsqueeze(0).expand({2, 3}).add_(1) adds 1 twice); if the operand read
// partly overlaps the written memory (x.slice(0, 1, 6).add_(x.slice(0, 0, 5))), later elements
// read values that earlier ones already changed and the result depends on the walking order (a
// running sum, an x.add_(x.t()) that is not symmetric). So:
//
//   1. a written tensor whose elements share memory is refused (internal overlap: a dimension
//      of size > 1 with stride 0);
//   2. an operand that overlaps the written tensor's memory in part is refused;
//   3. full overlap — the operand is the written tensor, or a view with the same offset, shape
//      and strides (x.add_(x), x.mul_(x)) — is fine: each element reads only itself;
//   4. when the two share memory in a way these rules cannot decide (a strided or expanded
//      operand whose span crosses the written span: x.slice(0, 0, 6, 2).add_(x.slice(0, 2, 8, 2)))
//      the operand is copied first, so the op computes from the values before the write — the
//      answer of the out-of-place op. PyTorch goes ahead without the copy there.
//
// fill_ and zero_ skip rule 1: writing one value several times is harmless (as in PyTorch).
#pragma once

#include "core/tensor.h"

namespace ember {

// Every element of `t` at its own memory location, and those locations one dense block (a
// permutation of a contiguous layout: a transpose is dense, a slice with a step is not).
bool is_non_overlapping_and_dense(const Tensor& t);

// Rule 1: true when two elements of t are certainly one memory location (a dim of size > 1 and
// stride 0).
bool has_internal_overlap(const Tensor& t);

enum class Overlap {
  None,     // no memory in common
  Full,     // the same elements in the same places (rule 3)
  Partial,  // dense, and some but not all memory shared (rule 2)
  Unknown,  // the spans cross but the layouts are too irregular to say more (rule 4)
};
Overlap overlap(const Tensor& a, const Tensor& b);

// Rule 1 for `op` writing into `out`: throws ValueError "<op>: more than one element of the
// written-to tensor refers to a single memory location ...".
void check_no_internal_overlap(const char* op, const Tensor& out);

// Rules 2-4 for `op` writing into `out` while reading `in`: throws on Partial; returns `in`,
// or a copy of it for Unknown.
Tensor input_safe_to_read(const char* op, const Tensor& out, const Tensor& in);

}  // namespace ember
