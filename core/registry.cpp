// The registry of ops: keep it in the order of core/ops.h. Composite ops (built from other ops,
// e.g. mse_loss, stack) are listed too: they get gradchecked like any other.
#include "core/registry.h"

namespace ember {

// The {cpu_kernel, cuda_kernel} pairs that many rows share.
#define ELEMENTWISE_KERNELS "kernels/cpu/elementwise.cpp", "kernels/cuda/elementwise.cu"
#define REDUCE_KERNELS "kernels/cpu/reduce.cpp", "kernels/cuda/reduce.cu"
#define GEMM_KERNELS                                                                      \
  "kernels/cpu/gemm.cpp (ember's kernels/cpu/gemm_simd.h for most float32 products, " \
  "Eigen's GEMM for the rest)",                                                           \
      "kernels/cuda/gemm.cu (cuBLAS, or ember's kernels/cuda/gemm_tiled.cu)"
#define SOFTMAX_KERNELS "kernels/cpu/softmax.cpp", "kernels/cuda/softmax.cu"
#define INDEX_KERNELS "kernels/cpu/index.cpp", "kernels/cuda/index.cu"
#define POOL_KERNELS "kernels/cpu/pool.cpp", "kernels/cuda/pool.cu"
#define NO_KERNELS_VIEW "(none: a view)", "(none: a view)"
// A view forward; its backward fills a zero gradient and copies into the viewed part.
#define VIEW_BACKWARD_KERNELS                                      \
  "(none forward: a view; backward: kernels/cpu/elementwise.cpp)", \
      "(none forward: a view; backward: kernels/cuda/elementwise.cu)"

const std::vector<OpInfo>& op_registry() {
  static const std::vector<OpInfo> ops = {
      // elementwise arithmetic
      {"add", "core/ops/add.cpp", true, "AddBackward", ELEMENTWISE_KERNELS},
      {"sub", "core/ops/sub.cpp", true, "SubBackward", ELEMENTWISE_KERNELS},
      {"mul", "core/ops/mul.cpp", true, "MulBackward", ELEMENTWISE_KERNELS},
      {"div", "core/ops/div.cpp", true, "DivBackward", ELEMENTWISE_KERNELS},
      {"floor_divide", "core/ops/div.cpp", false, "", ELEMENTWISE_KERNELS},
      {"neg", "core/ops/neg.cpp", true, "NegBackward", ELEMENTWISE_KERNELS},
      {"pow", "core/ops/pow.cpp", true, "PowBackward", ELEMENTWISE_KERNELS},
      {"fmod", "core/ops/fmod.cpp", true, "FmodBackward", ELEMENTWISE_KERNELS},
      {"remainder", "core/ops/fmod.cpp", true, "RemainderBackward", ELEMENTWISE_KERNELS},
      // elementwise math and activations
      {"exp", "core/ops/exp.cpp", true, "ExpBackward", ELEMENTWISE_KERNELS},
      {"log", "core/ops/log.cpp", true, "LogBackward", ELEMENTWISE_KERNELS},
      {"sqrt", "core/ops/sqrt.cpp", true, "SqrtBackward", ELEMENTWISE_KERNELS},
      {"abs", "core/ops/abs.cpp", true, "AbsBackward", ELEMENTWISE_KERNELS},
      {"relu", "core/ops/relu.cpp", true, "ReluBackward", ELEMENTWISE_KERNELS},
      {"sigmoid", "core/ops/sigmoid.cpp", true, "SigmoidBackward", ELEMENTWISE_KERNELS},
      {"tanh", "core/ops/tanh.cpp", true, "TanhBackward", ELEMENTWISE_KERNELS},
      // reductions
      {"sum", "core/ops/sum.cpp", true, "SumBackward", REDUCE_KERNELS},
      {"mean", "core/ops/sum.cpp", true, "MeanBackward", REDUCE_KERNELS},
      {"sum_to", "core/ops/sum.cpp", true, "SumBackward", REDUCE_KERNELS},
      {"prod", "core/ops/prod.cpp", true, "ProdBackward", REDUCE_KERNELS},
      {"max", "core/ops/max_min.cpp", true, "MaxBackward", REDUCE_KERNELS},
      {"min", "core/ops/max_min.cpp", true, "MinBackward", REDUCE_KERNELS},
      {"argmax", "core/ops/max_min.cpp", false, "", REDUCE_KERNELS},
      {"argmin", "core/ops/max_min.cpp", false, "", REDUCE_KERNELS},
      {"amax", "core/ops/amax.cpp", true, "AmaxBackward", REDUCE_KERNELS},
      {"amin", "core/ops/amax.cpp", true, "AminBackward", REDUCE_KERNELS},
      {"any", "core/ops/any_all.cpp", false, "",
       "kernels/cpu/elementwise.cpp compare(Ne) + kernels/cpu/reduce.cpp max_min",
       "kernels/cuda/elementwise.cu compare(Ne) + kernels/cuda/reduce.cu max_min"},
      {"all", "core/ops/any_all.cpp", false, "",
       "kernels/cpu/elementwise.cpp compare(Ne) + kernels/cpu/reduce.cpp max_min",
       "kernels/cuda/elementwise.cu compare(Ne) + kernels/cuda/reduce.cu max_min"},
      {"cumsum", "core/ops/cumsum.cpp", true, "CumsumBackward",
       "kernels/cpu/reduce.cpp reduce_cumsum", "kernels/cuda/reduce.cu reduce_cumsum"},
      {"sort", "core/ops/sort.cpp", true, "SortBackward",
       "kernels/cpu/sort.cpp sort (backward: kernels/cpu/index.cpp scatter_add)",
       "kernels/cuda/sort.cu sort (backward: kernels/cuda/index.cu scatter_add)"},
      {"topk", "core/ops/sort.cpp", true, "TopkBackward",
       "kernels/cpu/sort.cpp sort (backward: kernels/cpu/index.cpp scatter_add)",
       "kernels/cuda/sort.cu sort (backward: kernels/cuda/index.cu scatter_add)"},
      // linear algebra
      {"matmul", "core/ops/matmul.cpp", true, "MatmulBackward", GEMM_KERNELS},
      // softmax family and losses
      {"softmax", "core/ops/softmax.cpp", true, "SoftmaxBackward", SOFTMAX_KERNELS},
      {"log_softmax", "core/ops/softmax.cpp", true, "LogSoftmaxBackward", SOFTMAX_KERNELS},
      {"cross_entropy", "core/ops/cross_entropy.cpp", true, "CrossEntropyBackward",
       "kernels/cpu/cross_entropy.cpp", "kernels/cuda/cross_entropy.cu"},
      {"mse_loss", "core/ops/mse_loss.cpp", true, "MseLossBackward",
       "kernels/cpu/elementwise.cpp and kernels/cpu/reduce.cpp",
       "kernels/cuda/elementwise.cu and kernels/cuda/reduce.cu"},
      // comparisons and selection
      {"eq", "core/ops/compare.cpp", false, "", ELEMENTWISE_KERNELS},
      {"ne", "core/ops/compare.cpp", false, "", ELEMENTWISE_KERNELS},
      {"lt", "core/ops/compare.cpp", false, "", ELEMENTWISE_KERNELS},
      {"le", "core/ops/compare.cpp", false, "", ELEMENTWISE_KERNELS},
      {"gt", "core/ops/compare.cpp", false, "", ELEMENTWISE_KERNELS},
      {"ge", "core/ops/compare.cpp", false, "", ELEMENTWISE_KERNELS},
      {"where", "core/ops/where.cpp", true, "WhereBackward", ELEMENTWISE_KERNELS},
      {"masked_fill", "core/ops/where.cpp", true, "(composite: where)", ELEMENTWISE_KERNELS},
      // clamping and elementwise extremes (binary(Maximum / Minimum))
      {"clamp", "core/ops/clamp.cpp", true, "ClampBackward", ELEMENTWISE_KERNELS},
      {"clamp_min", "core/ops/clamp.cpp", true, "ClampMinBackward", ELEMENTWISE_KERNELS},
      {"clamp_max", "core/ops/clamp.cpp", true, "ClampMaxBackward", ELEMENTWISE_KERNELS},
      {"maximum", "core/ops/maximum.cpp", true, "MaximumBackward", ELEMENTWISE_KERNELS},
      {"minimum", "core/ops/maximum.cpp", true, "MinimumBackward", ELEMENTWISE_KERNELS},
      // tests and logic (compare, abs and where; bool results)
      {"isnan", "core/ops/logical.cpp", false, "", ELEMENTWISE_KERNELS},
      {"isinf", "core/ops/logical.cpp", false, "", ELEMENTWISE_KERNELS},
      {"isfinite", "core/ops/logical.cpp", false, "", ELEMENTWISE_KERNELS},
      {"logical_and", "core/ops/logical.cpp", false, "", ELEMENTWISE_KERNELS},
      {"logical_or", "core/ops/logical.cpp", false, "", ELEMENTWISE_KERNELS},
      {"logical_xor", "core/ops/logical.cpp", false, "", ELEMENTWISE_KERNELS},
      {"logical_not", "core/ops/logical.cpp", false, "", ELEMENTWISE_KERNELS},
      // indexing and joining
      {"gather", "core/ops/gather.cpp", true, "GatherBackward", INDEX_KERNELS},
      {"scatter_add", "core/ops/gather.cpp", true, "ScatterAddBackward", INDEX_KERNELS},
      {"index_select", "core/ops/index_select.cpp", true, "IndexSelectBackward", INDEX_KERNELS},
      {"index_add", "core/ops/index_select.cpp", true, "IndexAddBackward", INDEX_KERNELS},
      {"cat", "core/ops/cat.cpp", true, "CatBackward", ELEMENTWISE_KERNELS},
      {"stack", "core/ops/cat.cpp", true, "(composite: unsqueeze, cat)", ELEMENTWISE_KERNELS},
      // convolution and pooling
      {"conv2d", "core/ops/conv2d.cpp", true, "Conv2dBackward",
       "kernels/cpu/conv.cpp (+ conv_im2col.cpp, conv_implicit.cpp, conv_direct.cpp, "
       "conv_grouped.cpp)",
       "kernels/cuda/conv.cu (+ conv_im2col.cu, conv_implicit.cu, conv_direct.cu, "
       "conv_grouped.cu, conv_bias.cu, conv_cudnn.cu)"},
      {"max_pool2d", "core/ops/pool2d.cpp", true, "MaxPool2dBackward", POOL_KERNELS},
      {"avg_pool2d", "core/ops/pool2d.cpp", true, "AvgPool2dBackward", POOL_KERNELS},
      // layout
      {"view", "core/ops/view.cpp", true, "ReshapeBackward", NO_KERNELS_VIEW},
      {"reshape", "core/ops/view.cpp", true, "ReshapeBackward", ELEMENTWISE_KERNELS},
      {"permute", "core/ops/permute.cpp", true, "PermuteBackward", NO_KERNELS_VIEW},
      {"transpose", "core/ops/permute.cpp", true, "PermuteBackward", NO_KERNELS_VIEW},
      {"narrow", "core/ops/slice.cpp", true, "SliceBackward", VIEW_BACKWARD_KERNELS},
      {"slice", "core/ops/slice.cpp", true, "SliceBackward", VIEW_BACKWARD_KERNELS},
      {"select", "core/ops/slice.cpp", true, "SelectBackward", VIEW_BACKWARD_KERNELS},
      {"squeeze", "core/ops/squeeze.cpp", true, "SqueezeBackward", NO_KERNELS_VIEW},
      {"unsqueeze", "core/ops/squeeze.cpp", true, "UnsqueezeBackward", NO_KERNELS_VIEW},
      {"expand", "core/ops/expand.cpp", true, "ExpandBackward", NO_KERNELS_VIEW},
      {"split", "core/ops/split.cpp", true, "(composite: narrow)", VIEW_BACKWARD_KERNELS},
      {"chunk", "core/ops/split.cpp", true, "(composite: narrow)", VIEW_BACKWARD_KERNELS},
      {"contiguous", "core/ops/copy.cpp", true, "ContiguousBackward", ELEMENTWISE_KERNELS},
      {"clone", "core/ops/copy.cpp", true, "CloneBackward", ELEMENTWISE_KERNELS},
      {"to_dtype", "core/ops/copy.cpp", true, "ToDtypeBackward", ELEMENTWISE_KERNELS},
      {"to_device", "core/ops/copy.cpp", true, "ToDeviceBackward", "(memcpy between devices)",
       "kernels/cuda/runtime.cu copy_bytes"},
      // in-place updates (Tensor methods; refused while the tape records a tensor that
      // requires grad, so they have no backward)
      {"add_", "core/ops/inplace.cpp", false, "", ELEMENTWISE_KERNELS},
      {"sub_", "core/ops/inplace.cpp", false, "", ELEMENTWISE_KERNELS},
      {"mul_", "core/ops/inplace.cpp", false, "", ELEMENTWISE_KERNELS},
      {"div_", "core/ops/inplace.cpp", false, "", ELEMENTWISE_KERNELS},
      {"copy_", "core/ops/inplace.cpp", false, "", "kernels/cpu/elementwise.cpp",
       "kernels/cuda/elementwise.cu (between devices: kernels/cuda/runtime.cu)"},
      {"fill_", "core/ops/inplace.cpp", false, "", ELEMENTWISE_KERNELS},
      {"zero_", "core/ops/inplace.cpp", false, "", ELEMENTWISE_KERNELS},
  };
  return ops;
}

// ---- higher-order gradients (core/registry.h) -------------------------------------------------
// Kept apart from the rows above. A new differentiable op goes into one of these two lists.

// clang-format off
const std::vector<std::string>& twice_differentiable_ops() {
  static const std::vector<std::string> ops = {
      // elementwise (tanh, sigmoid, relu: their backward switches to recorded ops under
      // create_graph; abs: sign(x) is a constant of the graph)
      "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "abs", "relu", "sigmoid",
      "tanh",
      // reductions (amax, amin: the mask of the maxima is a constant)
      "sum", "mean", "sum_to", "amax", "amin",
      // linear algebra and composites
      "matmul", "mse_loss", "where", "masked_fill",
      "clamp", "clamp_min", "clamp_max", "maximum", "minimum",
      // indexing and joining
      "gather", "index_select", "index_add", "cat", "stack",
      // layout (narrow, slice, select: under create_graph their backward scatters with index_add)
      "view", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "expand", "contiguous",
      "clone", "to_dtype", "to_device", "narrow", "slice", "select",
      // added beside issue 27's other ops
      "fmod", "remainder", "cumsum", "split", "chunk",
      // sort and topk (their backward is a recorded scatter_add)
      "sort", "topk",
      // softmax family, prod, convolution and pooling: recorded backward under create_graph
      "softmax", "log_softmax", "prod", "conv2d", "max_pool2d", "avg_pool2d",
      // recorded backward under create_graph: max/min over a dim (a scatter_add at the indices),
      // cross_entropy (softmax minus the target's one-hot, weighted), scatter_add (gather, zeros
      // appended where src is larger than the index)
      "max", "min", "cross_entropy", "scatter_add",
  };
  return ops;
}

const std::vector<std::string>& not_yet_twice_differentiable_ops() {
  // Ops whose backward computes with a kernel and records no tape (each calls
  // autograd::check_twice_differentiable). None today: a new op may start here.
  static const std::vector<std::string> ops = {};
  return ops;
}

// clang-format on

bool twice_differentiable(const std::string& op) {
  for (const std::string& name : twice_differentiable_ops())
    if (name == op) return true;
  return false;
}

const OpInfo* find_op(const std::string& name) {
  for (const OpInfo& op : op_registry())
    if (name == op.name) return &op;
  return nullptr;
}

}  // namespace ember
