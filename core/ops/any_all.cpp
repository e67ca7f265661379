// Op card: any, all — is any / is every element true, over the whole tensor or along one dim.
//
// Math      Each element is read as a truth value, x != 0: NaN is true, -0.0 false.
//           any(a) = OR of them, all(a) = AND of them; any(a, d) / all(a, d) along dim d.
//           Over nothing, any is false and all is true (the identities of OR and AND), so an
//           empty tensor or a dim of size 0 is fine, as in PyTorch.
// Backward  none: the output is a step function of a, and bool.
// Shapes    the whole-tensor forms give 0-d; the dim forms remove dim d (kept as size 1 with
//           keepdim). A 0-d input accepts dim 0 and -1.
// Dtypes    any input dtype. The output is bool, except that a uint8 input gives uint8 (0 or
//           1), as PyTorch 1.13 keeps for compatibility.
// Saved     nothing.
// Kernels   no kernel of its own: kernels/cpu/elementwise.cpp compare(Ne) makes the truth
//           values, then kernels/cpu/reduce.cpp reduce_max_min on them (the max of bools is
//           their OR, the min their AND); an empty reduction is a fill.
//           CUDA: the same functions in kernels/cuda/elementwise.cu and kernels/cuda/reduce.cu.
#include "core/ops/common.h"
#include "core/ops/reduce_util.h"
#include "kernels/reduce.h"

namespace ember {

namespace {
using kernels::MaxMin;

// `dims` is {d} or {} (every element).
Tensor any_all(const Tensor& a, const Shape& dims, bool keepdim, bool is_any, const char* op) {
  ops::check_defined(op, a);
  // a != 0 in a's own dtype (a 0-d zero of that dtype, so nothing is promoted).
  const Tensor truth = ne(a.detach(), zeros({}, a.options()));
  const ops::ReducePlan p = ops::plan_reduction(truth, dims, keepdim, op);
  Tensor out = ops::new_output(p.out_shape, truth, kBool);
  if (p.r == 0) {
    out.fill_(is_any ? 0.0 : 1.0);
  } else if (out.numel() > 0) {
    Tensor scratch = ops::new_output(p.out_shape, truth, kInt64);
    KernelsOn(truth)->reduce.max_min(is_any ? MaxMin::Max : MaxMin::Min, kBool, p.outer, p.r,
                                     p.inner, p.input.raw_data(), out.raw_data(),
                                     scratch.data_ptr<int64_t>());
  }
  return a.dtype() == kUInt8 ? out.to(kUInt8) : out;
}
}  // namespace

Tensor any(const Tensor& a) { return any_all(a, {}, false, true, "any"); }

Tensor any(const Tensor& a, int64_t dim, bool keepdim) {
  return any_all(a, {dim}, keepdim, true, "any");
}

Tensor all(const Tensor& a) { return any_all(a, {}, false, false, "all"); }

Tensor all(const Tensor& a, int64_t dim, bool keepdim) {
  return any_all(a, {dim}, keepdim, false, "all");
}

}  // namespace ember
