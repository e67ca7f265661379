// Op card: sum, mean, sum_to — add up elements over dimensions.
//
// Math      sum(a, dims)[kept] = sum over the reduced dims of a;  mean = sum / r, where r is the
//           number of elements folded into each output.
// Backward  every input element contributed with coefficient 1 (mean: 1/r), so
//           dL/da = expand(reshape(dL/dout, keepdim shape), a.shape)  (divided by r for mean).
// Shapes    reduced dims removed (or kept as 1 with keepdim); dims empty = all dims -> 0-d.
// Dtypes    sum of a float tensor keeps its dtype (accumulated in double); integers and bools
//           are summed in int64 and give int64 (a uint8 sum does not wrap at 256), as in
//           PyTorch. mean of integers and bools is float32 (computed in float64); PyTorch
//           refuses that (ember's choice, docs/from_pytorch.md, Differences).
// Saved     the keepdim shape and r.
// Kernels   CPU: kernels/cpu/reduce.cpp reduce_sum.
//           CUDA: kernels/cuda/reduce.cu, the same functions (warp-shuffle reductions).
//
// sum_to(g, shape) is the reverse of broadcasting: it sums g over the leading dims that
// `shape` lacks and over the dims where `shape` has size 1. Every backward of a broadcasting
// op ends with it.
#include "core/cuda.h"
#include "core/ops/common.h"
#include "core/ops/reduce_util.h"
#include "kernels/reduce.h"

namespace ember {

namespace {
struct SumBackward final : ops::Node {
  Shape keepdim_shape;
  double scale = 1.0;
  const char* label = "SumBackward";
  std::string name() const override { return label; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor ga = expand(reshape(g, keepdim_shape), input_shapes[0]);
    if (scale != 1.0) ga = mul(ga, ops::scalar_like(scale, g));
    return {ga};
  }
};

Tensor reduce_sum(const Tensor& a, const Shape& dims, bool keepdim, bool is_mean, const char* op) {
  ops::check_defined(op, a);
  if (!is_floating(a.dtype()) && (is_mean || a.dtype() != kInt64)) {
    // Integers and bools: summed as int64; their mean as float64, returned as float32.
    const DType wide = is_mean ? kFloat64 : kInt64;
    Tensor r = reduce_sum(cast_for_compute(a, wide), dims, keepdim, is_mean, op);
    return is_mean ? r.to(default_dtype()) : r;
  }
  const ops::ReducePlan p = ops::plan_reduction(a, dims, keepdim, op);
  const double scale = is_mean ? 1.0 / static_cast<double>(p.r) : 1.0;
  Tensor out = ops::new_output(p.out_shape, a);
  KernelsOn(a)->reduce.sum(a.dtype(), p.outer, p.r, p.inner, p.input.raw_data(), out.raw_data(),
                           scale);
  if (autograd::grad_needed({&a})) {
    auto node = std::make_shared<SumBackward>();
    node->keepdim_shape = p.keepdim_shape;
    node->scale = scale;
    node->label = is_mean ? "MeanBackward" : "SumBackward";
    autograd::connect(node, out, {&a});
  }
  return out;
}
}  // namespace

Tensor sum(const Tensor& a, const Shape& dims, bool keepdim) {
  return reduce_sum(a, dims, keepdim, false, "sum");
}

Tensor mean(const Tensor& a, const Shape& dims, bool keepdim) {
  return reduce_sum(a, dims, keepdim, true, "mean");
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  const int64_t lead = a.dim() - static_cast<int64_t>(shape.size());
  EMBER_CHECK(lead >= 0, "sum_to: cannot reduce shape ", shape_str(a.shape()), " to ",
              shape_str(shape), " (it has fewer dims)");
  Shape dims;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
      continue;
    }
    const int64_t want = shape[d - lead];
    if (want == 1 && a.shape()[d] != 1) dims.push_back(d);
    else EMBER_CHECK(want == a.shape()[d], "sum_to: cannot reduce shape ", shape_str(a.shape()),
                     " to ", shape_str(shape));
  }
  if (dims.empty()) return reshape(a, shape);
  return reshape(sum(a, dims, true), shape);
}

}  // namespace ember
