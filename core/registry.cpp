// The registry of ops: keep it in the order of core/ops.h. Composite ops (built from other ops,
// e.g. mse_loss, stack) are listed too: they get gradchecked like any other.
#include "core/registry.h"

namespace ember {

namespace {
const char* const kElementwise = "kernels/cpu/elementwise.cpp";
}

const std::vector<OpInfo>& op_registry() {
  static const std::vector<OpInfo> ops = {
      // elementwise arithmetic
      {"add", "core/ops/add.cpp", true, "AddBackward", kElementwise},
      {"sub", "core/ops/sub.cpp", true, "SubBackward", kElementwise},
      {"mul", "core/ops/mul.cpp", true, "MulBackward", kElementwise},
      {"div", "core/ops/div.cpp", true, "DivBackward", kElementwise},
      {"neg", "core/ops/neg.cpp", true, "NegBackward", kElementwise},
      {"pow", "core/ops/pow.cpp", true, "PowBackward", kElementwise},
      // elementwise math and activations
      {"exp", "core/ops/exp.cpp", true, "ExpBackward", kElementwise},
      {"log", "core/ops/log.cpp", true, "LogBackward", kElementwise},
      {"sqrt", "core/ops/sqrt.cpp", true, "SqrtBackward", kElementwise},
      {"abs", "core/ops/abs.cpp", true, "AbsBackward", kElementwise},
      {"relu", "core/ops/relu.cpp", true, "ReluBackward", kElementwise},
      {"sigmoid", "core/ops/sigmoid.cpp", true, "SigmoidBackward", kElementwise},
      {"tanh", "core/ops/tanh.cpp", true, "TanhBackward", kElementwise},
      // reductions
      {"sum", "core/ops/sum.cpp", true, "SumBackward", "kernels/cpu/reduce.cpp"},
      {"mean", "core/ops/sum.cpp", true, "MeanBackward", "kernels/cpu/reduce.cpp"},
      {"sum_to", "core/ops/sum.cpp", true, "SumBackward", "kernels/cpu/reduce.cpp"},
      {"max", "core/ops/max_min.cpp", true, "MaxBackward", "kernels/cpu/reduce.cpp"},
      {"min", "core/ops/max_min.cpp", true, "MinBackward", "kernels/cpu/reduce.cpp"},
      {"argmax", "core/ops/max_min.cpp", false, "", "kernels/cpu/reduce.cpp"},
      {"argmin", "core/ops/max_min.cpp", false, "", "kernels/cpu/reduce.cpp"},
      // linear algebra
      {"matmul", "core/ops/matmul.cpp", true, "MatmulBackward", "kernels/cpu/gemm.cpp"},
      // softmax family and losses
      {"softmax", "core/ops/softmax.cpp", true, "SoftmaxBackward", "kernels/cpu/softmax.cpp"},
      {"log_softmax", "core/ops/softmax.cpp", true, "LogSoftmaxBackward", "kernels/cpu/softmax.cpp"},
      {"cross_entropy", "core/ops/cross_entropy.cpp", true, "CrossEntropyBackward",
       "kernels/cpu/cross_entropy.cpp"},
      {"mse_loss", "core/ops/mse_loss.cpp", true, "(composite: sub, mul, mean)", kElementwise},
      // comparisons and selection
      {"eq", "core/ops/compare.cpp", false, "", kElementwise},
      {"ne", "core/ops/compare.cpp", false, "", kElementwise},
      {"lt", "core/ops/compare.cpp", false, "", kElementwise},
      {"le", "core/ops/compare.cpp", false, "", kElementwise},
      {"gt", "core/ops/compare.cpp", false, "", kElementwise},
      {"ge", "core/ops/compare.cpp", false, "", kElementwise},
      {"where", "core/ops/where.cpp", true, "WhereBackward", kElementwise},
      {"masked_fill", "core/ops/where.cpp", true, "(composite: where)", kElementwise},
      // indexing and joining
      {"gather", "core/ops/gather.cpp", true, "GatherBackward", "kernels/cpu/index.cpp"},
      {"scatter_add", "core/ops/gather.cpp", true, "ScatterAddBackward", "kernels/cpu/index.cpp"},
      {"index_select", "core/ops/index_select.cpp", true, "IndexSelectBackward", "kernels/cpu/index.cpp"},
      {"index_add", "core/ops/index_select.cpp", true, "IndexAddBackward", "kernels/cpu/index.cpp"},
      {"cat", "core/ops/cat.cpp", true, "CatBackward", kElementwise},
      {"stack", "core/ops/cat.cpp", true, "(composite: unsqueeze, cat)", kElementwise},
      // layout
      {"view", "core/ops/view.cpp", true, "ReshapeBackward", "(none: a view)"},
      {"reshape", "core/ops/view.cpp", true, "ReshapeBackward", kElementwise},
      {"permute", "core/ops/permute.cpp", true, "PermuteBackward", "(none: a view)"},
      {"transpose", "core/ops/permute.cpp", true, "PermuteBackward", "(none: a view)"},
      {"narrow", "core/ops/slice.cpp", true, "SliceBackward", "(none: a view)"},
      {"slice", "core/ops/slice.cpp", true, "SliceBackward", "(none: a view)"},
      {"select", "core/ops/slice.cpp", true, "SelectBackward", "(none: a view)"},
      {"squeeze", "core/ops/squeeze.cpp", true, "SqueezeBackward", "(none: a view)"},
      {"unsqueeze", "core/ops/squeeze.cpp", true, "UnsqueezeBackward", "(none: a view)"},
      {"expand", "core/ops/expand.cpp", true, "ExpandBackward", "(none: a view)"},
      {"contiguous", "core/ops/copy.cpp", true, "ContiguousBackward", kElementwise},
      {"clone", "core/ops/copy.cpp", true, "CloneBackward", kElementwise},
      {"to_dtype", "core/ops/copy.cpp", true, "ToDtypeBackward", kElementwise},
  };
  return ops;
}

const OpInfo* find_op(const std::string& name) {
  for (const OpInfo& op : op_registry())
    if (name == op.name) return &op;
  return nullptr;
}

}  // namespace ember
