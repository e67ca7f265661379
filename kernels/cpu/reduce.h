// ember/kernels/cpu/reduce.h — reductions over the middle axis of a [outer, r, inner] block.
//
// Any reduction over a contiguous run of dimensions of a row-major tensor has this form:
// outer = product of the dims before the run, r = product of the reduced dims, inner = product
// of the dims after it. Reducing the last dim is inner == 1 (each output is one contiguous row);
// reducing dim 0 of a matrix is outer == 1 (column sums, read row by row so loads stay
// contiguous). The op cards (core/ops/sum.cpp, max_min.cpp) bring every other case to this form.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ember::kernels::cpu {

// out[o, k] = scale * sum_j in[o, j, k]   (accumulated in double)
void reduce_sum(DType dtype, int64_t outer, int64_t r, int64_t inner, const void* in, void* out,
                double scale);

}  // namespace ember::kernels::cpu
