// ember/kernels/cuda/elementwise.cu — unary math, binary arithmetic, comparisons, where,
// casting copies, fills and arange on the GPU.
//
// Every op here is "one output element from the same-position elements of its inputs", so the
// file is built from two pieces:
//
//   a functor per op     (UnaryFn, BinaryFn, CompareFn, WhereFn, CastFn, FillFn): what one
//                        element computes, with exactly the math of kernels/cpu/elementwise.cpp;
//   one kernel family    that applies any functor to every element of a StridedLoop:
//     contiguous_kernel  every operand is one dense run (the common case after coalescing):
//                        element i of each operand sits at index i, and when all pointers are
//                        suitably aligned each thread moves 16 bytes per load/store (a float4,
//                        a double2, 16 uint8...) instead of one element;
//     strided_kernel     anything else (transposed views, slices, broadcast operands with
//                        stride 0): each thread finds the offsets of its element with
//                        loop_offsets() from kernels/base/loop.h.
//
// The op inside a functor is a runtime switch, not a template parameter: the branch is the
// same for every thread of a launch (no divergence, and it costs next to nothing beside the
// memory traffic), and it keeps the number of kernels nvcc must build — for every GPU
// architecture — to one pair per dtype instead of one per (op, dtype).
//
// Integer division: the op card refuses a zero divisor before the launch (core/ops/div.cpp), and
// the quotients come from kernels/base/scalar_math.h, shared with the CPU kernels, which never
// divide by 0 or -1 (INT64_MIN / -1 wraps to INT64_MIN on both devices).
#include "kernels/elementwise.h"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/base/scalar_math.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

// ---- value conversion --------------------------------------------------------------------------

// Every value conversion (copy, unary results of integer tensors, arange, fill) goes through
// convert_value (kernels/base/scalar_math.h), the CPU kernels' definition: a float out of an
// integer type's range gives x86's answer, where the GPU's own conversion would saturate.

// ---- device math in the element type -------------------------------------------------------
// exp_t, log_t, sqrt_t, tanh_t, pow_t: CUDA's precise functions in the element type
// (kernels/cuda/device_math.cuh), the ones std::exp(float) / std::exp(double) pick on the CPU.
using namespace cuda_math;
__device__ inline float abs_t(float x) { return fabsf(x); }
__device__ inline double abs_t(double x) { return fabs(x); }

// a * b rounded on its own. nvcc contracts `c + a * b` into one fused multiply-add (a single
// rounding); the _rn intrinsics are never contracted, so `c + mul_rn(a, b)` rounds twice, as
// the expression is written (and as the CPU computes it).
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// ---- the functors: one element each ------------------------------------------------------------

// out = op(in), the CPU's per-element definition (kernels/cpu/elementwise.cpp unary_scalar):
// abs(-0) = +0, sign(NaN) = 0, relu(NaN) = NaN, relu(-0) = -0, pow(x, 2) = x * x,
// pow(x, 0.5) = sqrt(x), pow(x, -0.5) = 1 / sqrt(x) (and 3, -1, -2 likewise). Integer dtypes: -x
// and abs wrap (INT64_MIN stays INT64_MIN), x * x wraps, integer powers are exact
// (kernels/base/scalar_math.h); the op cards send no integer tensor to the transcendental ops (they
// compute those in float32), which run in double here if one comes.
template <typename T>
struct UnaryFn {
  UnaryOp op;
  double param;  // the exponent for Pow

  __device__ T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case UnaryOp::Neg: return -x;
        case UnaryOp::Exp: return exp_t(x);
        case UnaryOp::Log: return log_t(x);
        case UnaryOp::Sqrt: return sqrt_t(x);
        case UnaryOp::Abs: return abs_t(x);
        case UnaryOp::Sign: return static_cast<T>((T(0) < x) - (x < T(0)));  // NaN -> 0
        case UnaryOp::Relu: return x < T(0) ? T(0) : x;
        case UnaryOp::Sigmoid: return T(1) / (T(1) + exp_t(-x));
        case UnaryOp::Tanh: return tanh_t(x);
        case UnaryOp::Pow: {  // PyTorch's short cuts, as on the CPU (elementwise.cpp pow_scalar)
          if (param == 2.0) return x * x;
          if (param == 3.0) return x * x * x;
          if (param == 0.5) return sqrt_t(x);
          if (param == -0.5) return T(1) / sqrt_t(x);
          if (param == -1.0) return T(1) / x;
          if (param == -2.0) return T(1) / (x * x);
          return pow_t(x, static_cast<T>(param));
        }
        case UnaryOp::Square: return x * x;
      }
      return x;
    } else {
      const double xd = static_cast<double>(x);
      switch (op) {
        case UnaryOp::Neg: return wrapping_neg(x);
        case UnaryOp::Exp: return convert_value<T>(exp_t(xd));
        case UnaryOp::Log: return convert_value<T>(log_t(xd));
        case UnaryOp::Sqrt: return convert_value<T>(sqrt_t(xd));
        case UnaryOp::Abs:
          if constexpr (std::is_signed_v<T>) return x < T(0) ? wrapping_neg(x) : x;
          else return x;
        case UnaryOp::Sign:
          if constexpr (std::is_signed_v<T>) return static_cast<T>((T(0) < x) - (x < T(0)));
          else return static_cast<T>(x > T(0) ? 1 : 0);
        case UnaryOp::Relu: return x > T(0) ? x : T(0);
        case UnaryOp::Sigmoid: return convert_value<T>(1.0 / (1.0 + exp_t(-xd)));
        case UnaryOp::Tanh: return convert_value<T>(tanh_t(xd));
        case UnaryOp::Pow: return int_pow(x, static_cast<int64_t>(param));
        case UnaryOp::Square: return wrapping_mul(x, x);
      }
      return x;
    }
  }
};

// out = a (op) b; for the *Backward ops a is the incoming gradient and b the saved output y.
template <typename T>
struct BinaryFn {
  BinaryOp op;
  T alpha;  // Add / Sub: a + alpha * b, a - alpha * b (alpha converted to T, as on the CPU)

  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case BinaryOp::Add: return alpha == T(1) ? a + b : a + mul_rn(alpha, b);
        case BinaryOp::Sub: return alpha == T(1) ? a - b : a - mul_rn(alpha, b);
        case BinaryOp::Mul: return a * b;
        case BinaryOp::Div: return a / b;
        case BinaryOp::DivTrunc: return float_div_trunc(a, b);
        case BinaryOp::DivFloor: return float_div_floor(a, b);
        case BinaryOp::ReluBackward: return b <= T(0) ? T(0) : a;  // y = NaN passes g
        case BinaryOp::SigmoidBackward: return a * b * (T(1) - b);
        case BinaryOp::TanhBackward: return a * (T(1) - mul_rn(b, b));
        case BinaryOp::Maximum: return nan_max(a, b);  // kernels/base/scalar_math.h: NaN wins
        case BinaryOp::Minimum: return nan_min(a, b);
        case BinaryOp::Pow: return pow_t(a, b);
        case BinaryOp::Fmod: return fmod_any(a, b);  // scalar_math.h, shared with the CPU
        case BinaryOp::Remainder: return remainder_any(a, b);
      }
      return a;
    } else {
      // Integer arithmetic wraps around (kernels/base/scalar_math.h), as the CPU's does.
      switch (op) {
        case BinaryOp::Add: return wrapping_add(a, wrapping_mul(alpha, b));
        case BinaryOp::Sub: return wrapping_sub(a, wrapping_mul(alpha, b));
        case BinaryOp::Mul: return wrapping_mul(a, b);
        case BinaryOp::Div:
        case BinaryOp::DivTrunc: return int_div_trunc(a, b);  // see the file comment
        case BinaryOp::DivFloor: return int_div_floor(a, b);
        case BinaryOp::ReluBackward: return b > T(0) ? a : T(0);
        case BinaryOp::SigmoidBackward: return static_cast<T>(a * b * (T(1) - b));
        case BinaryOp::TanhBackward: return static_cast<T>(a * (T(1) - b * b));
        case BinaryOp::Maximum: return nan_max(a, b);
        case BinaryOp::Minimum: return nan_min(a, b);
        case BinaryOp::Pow: return int_pow_any(a, b);
        case BinaryOp::Fmod: return fmod_any(a, b);
        case BinaryOp::Remainder: return remainder_any(a, b);
      }
      return a;
    }
  }
};

// out (bool) = a (cmp) b. NaN compares false with everything except under Ne, as in C++.
template <typename T>
struct CompareFn {
  CompareOp op;

  __device__ bool operator()(T a, T b) const {
    switch (op) {
      case CompareOp::Eq: return a == b;
      case CompareOp::Ne: return a != b;
      case CompareOp::Lt: return a < b;
      case CompareOp::Le: return a <= b;
      case CompareOp::Gt: return a > b;
      case CompareOp::Ge: return a >= b;
    }
    return false;
  }
};

// out = cond ? a : b. Pure data movement, so it runs on unsigned words of the element's size
// (1, 4 or 8 bytes): bit-exact for every dtype (NaN payloads, -0.0) and only three kernels.
template <typename U>
struct WhereFn {
  __device__ U operator()(bool cond, U a, U b) const { return cond ? a : b; }
};

// dst = src converted, as the CPU converts (convert_value, kernels/base/scalar_math.h).
template <typename To, typename From>
struct CastFn {
  __device__ To operator()(From x) const { return convert_value<To>(x); }
};

// out = a fixed bit pattern of the element's size (the value converted on the host).
template <typename U>
struct FillFn {
  U bits;
  __device__ U operator()() const { return bits; }
};

// ---- 16-byte vectors ---------------------------------------------------------------------------

// Bytes one thread moves per operand and step on the vectorized path: 16 is the widest load
// a GPU thread can issue (ld.global.v4.u32), and wide loads mean fewer instructions and fewer,
// fuller memory transactions per byte.
constexpr int kVecBytes = 16;

// V elements of T that are loaded and stored as one aligned word.
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// The unsigned word of a given byte size (the type a vector travels as).
template <int Bytes>
struct WordOf;
template <>
struct WordOf<1> {
  using type = uint8_t;
};
template <>
struct WordOf<2> {
  using type = uint16_t;
};
template <>
struct WordOf<4> {
  using type = uint32_t;
};
template <>
struct WordOf<8> {
  using type = uint64_t;
};
template <>
struct WordOf<16> {
  using type = uint4;
};

// One load of V consecutive elements as a single word (p must be aligned to sizeof(T) * V).
// The memcpy into the register-held Vec is a free reinterpretation of the loaded bits.
template <int V, typename T>
__device__ inline Vec<T, V> load_vec(const T* p) {
  using W = typename WordOf<static_cast<int>(sizeof(T)) * V>::type;
  const W w = *reinterpret_cast<const W*>(p);
  Vec<T, V> r;
  memcpy(&r, &w, sizeof(r));
  return r;
}

template <int V, typename T>
__device__ inline void store_vec(T* p, const Vec<T, V>& r) {
  using W = typename WordOf<static_cast<int>(sizeof(T)) * V>::type;
  W w;
  memcpy(&w, &r, sizeof(w));
  *reinterpret_cast<W*>(p) = w;
}

// f applied lane by lane to V elements of each input.
template <int V, typename Out, typename F, typename... In>
__device__ inline Vec<Out, V> apply_vec(const F& f, const Vec<In, V>&... x) {
  Vec<Out, V> o;
#pragma unroll
  for (int e = 0; e < V; ++e) o.v[e] = f(x.v[e]...);
  return o;
}

// f applied to the elements at offsets off[1], off[2], ... of the inputs (off[0] is the output's).
template <typename F, size_t... I, typename... In>
__device__ inline auto apply_at(const F& f, const int64_t* off, std::index_sequence<I...>,
                                const In*... in) {
  return f(in[off[I + 1]]...);
}

// The largest element size among the operands: it fixes how many elements make one vector.
template <typename... Ts>
constexpr int max_size() {
  int m = 1;
  ((m = static_cast<int>(sizeof(Ts)) > m ? static_cast<int>(sizeof(Ts)) : m), ...);
  return m;
}

template <int V, typename T>
bool vec_aligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * V) == 0;
}

// ---- the kernels ---------------------------------------------------------------------------------

// Contiguous path: out[i] = f(in0[i], in1[i], ...) for i in [0, n), every operand dense.
// One thread computes V consecutive elements per step (V = 16 bytes / the largest element size:
// a float4 for float, a double2 for double, 4 floats -> 4 bools for a comparison), then moves
// on by the total number of threads (grid-stride), so any n is covered by any grid.
// Memory: in one step the threads of a warp touch 32 consecutive 16-byte vectors — a 512-byte
// contiguous span per operand, the widest fully coalesced access there is.
// `vectorized` is false when some pointer is not aligned to its vector size (a view that starts
// mid-vector); then the same kernel runs one element per thread per step (still coalesced:
// consecutive threads, consecutive elements). Either way the last n % V elements are done one
// per thread in the scalar loop. No shared memory.
template <int V, typename F, typename Out, typename... In>
__global__ void __launch_bounds__(kBlock)
    contiguous_kernel(int64_t n, bool vectorized, F f, Out* out, const In*... in) {
  const int64_t tid = global_thread_id();
  const int64_t nthreads = global_thread_count();
  int64_t scalar_start = 0;
  if (vectorized) {
    const int64_t nvec = n / V;
    for (const int64_t v : grid_stride(tid, nvec, nthreads)) {
      const int64_t base = v * V;
      store_vec<V>(out + base, apply_vec<V, Out>(f, load_vec<V>(in + base)...));
    }
    scalar_start = nvec * V;
  }
  for (const int64_t i : grid_stride(scalar_start + tid, n, nthreads)) out[i] = f(in[i]...);
}

// General path: element i of the loop (row-major over L.shape, i in [0, L.numel)) is
// out[off0] = f(in0[off1], in1[off2], ...) with off = loop_offsets(L, i). One thread per element
// per step, grid-stride. L (shape and strides, a few hundred bytes) is passed by value, so it
// sits in the kernel's constant parameter space, read by all threads at broadcast speed.
// Memory: i walks the loop's shape in row-major order, which for a freshly allocated output
// is its memory order, so consecutive threads write consecutive output elements (coalesced);
// inputs are read at their own strides (a transposed input reads with a stride — the price of
// not copying it; a broadcast input has stride 0 and is one cached value). A 1-d loop (e.g. tensor
// op scalar, a strided 1-d view) skips the div/mod walk: off[k] = i * stride[k]. The walk divides
// in Index (uint32_t below 2^31 elements, see rows_kernel). No shared memory.
template <typename Index, typename F, typename Out, typename... In>
__global__ void __launch_bounds__(kBlock)
    strided_kernel(StridedLoop<1 + sizeof...(In)> L, F f, Out* out, const In*... in) {
  constexpr int N = 1 + static_cast<int>(sizeof...(In));
  for (const int64_t i : grid_stride(L.numel)) {
    int64_t off[N];
    if (L.ndim == 1) {
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] = i * L.strides[k][0];
    } else {
      loop_offsets<N, Index>(L, static_cast<Index>(i), off);
    }
    out[off[0]] = apply_at(f, off, std::index_sequence_for<In...>{}, in...);
  }
}

// V consecutive elements at p, as one vector load when `whole` (p aligned, unit stride), else the
// one element at p repeated V times (a broadcast operand: stride 0 along the row).
template <int V, typename T>
__device__ inline Vec<T, V> load_or_splat(const T* p, bool whole) {
  if (whole) return load_vec<V>(p);
  Vec<T, V> r;
  const T x = *p;
#pragma unroll
  for (int e = 0; e < V; ++e) r.v[e] = x;
  return r;
}

template <int V, typename Out, typename F, size_t... I, typename... In>
__device__ inline Vec<Out, V> apply_rows_vec(const F& f, const int64_t* off, unsigned whole,
                                             std::index_sequence<I...>, const In*... in) {
  return apply_vec<V, Out>(f, load_or_splat<V>(in + off[I + 1], ((whole >> (I + 1)) & 1u) != 0)...);
}

// Row-broadcast path: the loop's innermost dimension is dense in the output and, in every input,
// either dense (stride 1) or broadcast (stride 0) — [R, C] + [C], [R, C] * [R, 1], bias adds. One
// thread computes V consecutive elements of a row per step: it finds the offsets of the first
// with loop_offsets (one division per outer dimension, per V elements), then loads each dense
// input as one 16-byte vector and each broadcast input as one value repeated. Requires the row
// length to be a multiple of V and the dense operands aligned to V elements at every row start
// (checked by the launcher), so that a vector never straddles two rows. Memory: as in the
// contiguous path, a warp's stores are 32 consecutive 16-byte vectors (within one row or two).
// Index is uint32_t when the loop has fewer than 2^31 elements: 32-bit division is several times
// cheaper than 64-bit on a GPU, and this path is bound by bytes only if its index math is cheap.
template <int V, typename Index, typename F, typename Out, typename... In>
__global__ void __launch_bounds__(kBlock)
    rows_kernel(StridedLoop<1 + sizeof...(In)> L, unsigned whole, F f, Out* out, const In*... in) {
  constexpr int N = 1 + static_cast<int>(sizeof...(In));
  const int64_t nvec = L.numel / V;
  for (const int64_t v : grid_stride(nvec)) {
    int64_t off[N];
    loop_offsets<N, Index>(L, static_cast<Index>(v * V), off);
    store_vec<V>(out + off[0],
                 apply_rows_vec<V, Out>(f, off, whole, std::index_sequence_for<In...>{}, in...));
  }
}

// Can the row-broadcast path take this loop with vectors of V elements? `aligned[k]`: operand k's
// pointer is vec_aligned. `whole` gets bit k set for each dense operand (the output is bit 0,
// always dense).
template <int V, int N>
bool rows_path(const StridedLoop<N>& L, const bool (&aligned)[N], unsigned* whole) {
  if (L.ndim < 2 || L.shape[L.ndim - 1] % V != 0) return false;
  *whole = 0;
  for (int k = 0; k < N; ++k) {
    const int64_t inner = L.strides[k][L.ndim - 1];
    if (inner == 1) {
      *whole |= 1u << k;
      if (!aligned[k]) return false;
      for (int d = 0; d < L.ndim - 1; ++d)  // every row starts aligned too
        if (L.strides[k][d] % V != 0) return false;
    } else if (inner != 0 || k == 0) {
      return false;  // a strided row, or a broadcast output (never made by ember's ops)
    }
  }
  return true;
}

// The one launcher: picks the path, checks alignment, launches on ember's stream.
template <typename F, typename Out, typename... In>
void launch_elementwise(const StridedLoop<1 + sizeof...(In)>& L, const F& f, Out* out,
                        const In*... in) {
  const int64_t n = L.numel;
  if (n <= 0) return;  // nothing to do (and a 0-block grid would be a launch error)
  if (L.is_contiguous()) {
    constexpr int V = kVecBytes / max_size<Out, In...>();
    const bool vectorized = vec_aligned<V>(out) && (vec_aligned<V>(in) && ...);
    const int64_t items = vectorized ? (n + V - 1) / V : n;
    EMBER_LAUNCH(grid_for(items), kBlock, 0, stream(), contiguous_kernel<V>)
    (n, vectorized, f, out, in...);
    EMBER_LAUNCH_CHECK("elementwise contiguous_kernel");
    return;
  }
  constexpr int N = 1 + static_cast<int>(sizeof...(In));
  constexpr int V = kVecBytes / max_size<Out, In...>();
  const bool aligned[N] = {vec_aligned<V>(out), vec_aligned<V>(in)...};
  unsigned whole = 0;
  if (V > 1 && rows_path<V>(L, aligned, &whole)) {
    if (n <= INT32_MAX) {
      EMBER_LAUNCH(grid_for(n / V), kBlock, 0, stream(), rows_kernel<V, uint32_t>)
      (L, whole, f, out, in...);
    } else {
      EMBER_LAUNCH(grid_for(n / V), kBlock, 0, stream(), rows_kernel<V, int64_t>)
      (L, whole, f, out, in...);
    }
    EMBER_LAUNCH_CHECK("elementwise rows_kernel");
  } else if (n <= INT32_MAX) {
    EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), strided_kernel<uint32_t>)(L, f, out, in...);
    EMBER_LAUNCH_CHECK("elementwise strided_kernel");
  } else {
    EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), strided_kernel<int64_t>)(L, f, out, in...);
    EMBER_LAUNCH_CHECK("elementwise strided_kernel");
  }
}

// arange: out[i] = start + i * step for i in [0, n), computed in double as one fused
// multiply-add and converted, exactly as the CPU kernel does. (Written as `start + i * step`,
// nvcc would fuse it and a CPU compiler might or might not: fma() makes the one rounding the
// kernel's choice on every device.) One thread per element per step (grid-stride); consecutive
// threads write consecutive elements, so the stores are coalesced. No loads, no shared memory.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    arange_kernel(T* out, int64_t n, double start, double step) {
  for (const int64_t i : grid_stride(n))
    out[i] = convert_value<T>(fma(static_cast<double>(i), step, start));
}

// The unsigned word type of T's size: pure data movement (where, same-dtype copies, fills)
// runs on it, so uint8 and bool share one kernel, float32 has its own, and float64 and int64
// share another.
template <typename T>
using word_t = typename WordOf<static_cast<int>(sizeof(T))>::type;

}  // namespace

void unary(UnaryOp op, DType dtype, const StridedLoop<2>& L, void* out, const void* in,
           double param) {
  EMBER_DISPATCH_NUMERIC(dtype, "unary", [&] {
    launch_elementwise(L, UnaryFn<scalar_t>{op, param}, static_cast<scalar_t*>(out),
                       static_cast<const scalar_t*>(in));
  });
}

void binary(BinaryOp op, DType dtype, const StridedLoop<3>& L, void* out, const void* a,
            const void* b, double alpha) {
  EMBER_DISPATCH_NUMERIC(dtype, "binary", [&] {
    launch_elementwise(L, BinaryFn<scalar_t>{op, static_cast<scalar_t>(alpha)},
                       static_cast<scalar_t*>(out), static_cast<const scalar_t*>(a),
                       static_cast<const scalar_t*>(b));
  });
}

void compare(CompareOp op, DType dtype, const StridedLoop<3>& L, bool* out, const void* a,
             const void* b) {
  EMBER_DISPATCH_ALL(dtype, "compare", [&] {
    launch_elementwise(L, CompareFn<scalar_t>{op}, out, static_cast<const scalar_t*>(a),
                       static_cast<const scalar_t*>(b));
  });
}

void where(DType dtype, const StridedLoop<4>& L, void* out, const bool* cond, const void* a,
           const void* b) {
  EMBER_DISPATCH_ALL(dtype, "where", [&] {
    using U = word_t<scalar_t>;
    launch_elementwise(L, WhereFn<U>{}, static_cast<U*>(out), cond, static_cast<const U*>(a),
                       static_cast<const U*>(b));
  });
}

void copy(DType dst_dtype, DType src_dtype, const StridedLoop<2>& L, void* dst, const void* src) {
  if (L.numel <= 0) return;
  if (dst_dtype == src_dtype) {
    // Same dtype: the bytes themselves. A dense run is one device-to-device memcpy (the copy
    // engine's bandwidth, the yardstick of the benchmarks); a strided one moves words.
    if (L.is_contiguous()) {
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src,
                                       static_cast<size_t>(L.numel) * dtype_size(dst_dtype),
                                       cudaMemcpyDeviceToDevice, stream()));
      return;
    }
    EMBER_DISPATCH_ALL(dst_dtype, "copy", [&] {
      using U = word_t<scalar_t>;
      launch_elementwise(L, CastFn<U, U>{}, static_cast<U*>(dst), static_cast<const U*>(src));
    });
    return;
  }
  EMBER_DISPATCH_ALL(dst_dtype, "copy", [&] {
    using dst_t = scalar_t;
    EMBER_DISPATCH_ALL(src_dtype, "copy", [&] {
      if constexpr (!std::is_same_v<dst_t, scalar_t>) {
        launch_elementwise(L, CastFn<dst_t, scalar_t>{}, static_cast<dst_t*>(dst),
                           static_cast<const scalar_t*>(src));
      }
    });
  });
}

void fill(DType dtype, const StridedLoop<1>& L, void* out, double value) {
  EMBER_DISPATCH_ALL(dtype, "fill", [&] {
    using U = word_t<scalar_t>;
    const scalar_t v = convert_value<scalar_t>(value);  // on the host, once
    U bits;
    std::memcpy(&bits, &v, sizeof bits);
    // A dense fill whose bytes are all equal (zeros above all: every gradient buffer starts
    // as one) is a cudaMemsetAsync; anything else goes through the kernel.
    unsigned char bytes[sizeof(U)];
    std::memcpy(bytes, &bits, sizeof bits);
    bool same_bytes = true;
    for (size_t i = 1; i < sizeof(U); ++i) same_bytes = same_bytes && bytes[i] == bytes[0];
    if (L.numel > 0 && L.is_contiguous() && same_bytes) {
      EMBER_CUDA_CHECK(
          cudaMemsetAsync(out, bytes[0], static_cast<size_t>(L.numel) * sizeof(U), stream()));
      return;
    }
    launch_elementwise(L, FillFn<U>{bits}, static_cast<U*>(out));
  });
}

void arange(DType dtype, void* out, int64_t n, double start, double step) {
  if (n <= 0) return;
  EMBER_DISPATCH_ALL(dtype, "arange", [&] {
    EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), arange_kernel<scalar_t>)
    (static_cast<scalar_t*>(out), n, start, step);
    EMBER_LAUNCH_CHECK("arange_kernel");
  });
}

const ElementwiseKernels elementwise_kernels = {&unary, &binary, &compare, &where,
                                                &copy,  &fill,   &arange};

}  // namespace ember::kernels::cuda
