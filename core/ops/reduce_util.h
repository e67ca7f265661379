// ember/core/ops/reduce_util.h — bringing "reduce over these dims" to the [outer, r, inner]
// form the reduction kernels take (kernels/reduce.h). Shared by sum, mean, max, min, argmax.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ember::ops {

struct ReducePlan {
  Tensor input;        // contiguous, possibly permuted so the reduced dims form one run
  int64_t outer = 1, r = 1, inner = 1;
  Shape out_shape;      // result shape (with or without the kept size-1 dims)
  Shape keepdim_shape;  // result shape with reduced dims kept as 1 (for backward broadcasting)
  std::vector<bool> reduced;  // per input dim
};

// `dims` empty means every dimension.
ReducePlan plan_reduction(const Tensor& a, const Shape& dims, bool keepdim, const char* op);

}  // namespace ember::ops
