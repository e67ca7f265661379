// ember/kernels/cuda/index.h — CUDA kernels that move elements by an int64 index: gather,
// scatter_add, index_select, index_add. Layouts and semantics are those of
// kernels/cpu/index.h. Implemented in kernels/cuda/index.cu.
#pragma once

#include <cstdint>

#include "kernels/base/dtype.h"
#include "kernels/base/loop.h"

namespace ember::kernels::cuda {

// Position (row-major, in [0, n)) of the first index value outside [0, size) — values equal to
// `allowed` are accepted when has_allowed (cross_entropy's ignore_index) — or -1 if all fit.
// `index` is device memory; this WAITS for the GPU (the answer is needed on the host to raise
// a clear error before a kernel reads out of bounds) — except during a CUDA graph capture, where
// it returns -1 and queues a kernel that stops the replay (__trap) at a value out of range.
int64_t first_out_of_range(const int64_t* index, int64_t n, int64_t size, bool has_allowed = false,
                           int64_t allowed = 0);

void gather(DType dtype, const StridedLoop<3>& lines, int64_t len, const int64_t dim_stride[3],
            void* out, const int64_t* index, const void* in);
void scatter_add(DType dtype, const StridedLoop<3>& lines, int64_t len,
                 const int64_t dim_stride[3], void* out, const int64_t* index, const void* src);
void index_select(DType dtype, int64_t outer, int64_t size, int64_t inner, const void* in,
                  const int64_t* index, int64_t n, void* out);
void index_add(DType dtype, int64_t outer, int64_t size, int64_t inner, void* out,
               const int64_t* index, int64_t n, const void* src);

}  // namespace ember::kernels::cuda
