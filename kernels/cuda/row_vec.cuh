// ember/kernels/cuda/row_vec.cuh — rows read and written 16 bytes at a time, for the kernels
// that walk contiguous rows (softmax.cu, cross_entropy.cu).
//
// Why: a memory-bound kernel is fed by the bytes it has in flight. With one 4-byte load per
// thread at a time, even a full SM (64 warps) has 8 KiB on the way, a fraction of what an H100's
// latency times its bandwidth asks of each SM (tens of KiB); the H200 ran the element-wise
// softmax at 36% of its copy bandwidth. Four times the bytes per load, and loops unrolled so that
// several loads are issued before the first is used, is what took the broadcast add from 27.7%
// to 90.7% (rows_kernel in elementwise.cu, which has its own vectors for any element size).
//
// A row kernel is compiled for V = 1 (one element at a time) and V = kRowVec<T> (16 bytes); the
// launch picks V = kRowVec<T> when rows_aligned() says every row of every pointer it touches
// starts on 16 bytes, so a thread's vector q of a row is elements q * V .. q * V + V - 1. Its
// loops over q are unrolled by 4 on the 16-byte path only (`#pragma unroll(V > 1 ? 4 : 1)`):
// unrolled, the element-wise float64 softmax spilled registers on sm_90 (ptxas -v).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

namespace ember::kernels::cuda {

// V consecutive elements, read or written as one access (16 bytes when V * sizeof(T) == 16).
template <typename T, int V>
struct alignas(sizeof(T) * V) RowVec {
  T v[V];
};

// Vector q of a row (elements q * V ...); the row must start on sizeof(RowVec<T, V>) bytes.
template <typename T, int V>
__device__ inline RowVec<T, V> load_row_vec(const T* row, int64_t q) {
  return reinterpret_cast<const RowVec<T, V>*>(row)[q];
}
template <typename T, int V>
__device__ inline void store_row_vec(T* row, int64_t q, const RowVec<T, V>& v) {
  reinterpret_cast<RowVec<T, V>*>(row)[q] = v;
}

// Elements of T in 16 bytes: 4 floats, 2 doubles.
template <typename T>
constexpr int kRowVec = 16 / static_cast<int>(sizeof(T));

// Whether rows of D elements starting at each of `rows` all start on 16 bytes: the pointers are
// 16-byte aligned and D is a multiple of kRowVec<T>.
template <typename T>
inline bool rows_aligned(int64_t D, std::initializer_list<const void*> rows) {
  if (D % kRowVec<T> != 0) return false;
  for (const void* p : rows)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

}  // namespace ember::kernels::cuda
