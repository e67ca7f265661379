// ember/kernels/cuda/random.cu — filling device buffers from the Philox stream.
//
// Philox is counter-based (kernels/base/philox.h): element i is a pure function of (seed,
// offset + i), computed by the same EMBER_HOST_DEVICE code on both devices. Each kernel below
// is the loop body of kernels/cpu/random.cpp, one element per thread, with the same counter,
// the same words of the Philox output and the same arithmetic:
//  * uniform: the 24 (float) or 53 (double) random bits scaled to [0, 1) are exact; then
//    low + span * u. The optimized CPU build (-march=native, GCC contracts by default in C++)
//    computes that as one fused multiply-add, so it is written here as fma(span, u, low):
//    bit-identical to the CPU on a machine with FMA (x86-64 with FMA3, ARMv8). A host
//    build without FMA rounds the product separately and may then differ by an ulp when
//    low != 0 or high - low != 1 (never for the default [0, 1)).
//  * normal: Box-Muller in double, mean + std * z as one fma (the CPU build contracts it the
//    same way), then rounded to the element type. log, cos and sqrt are CUDA's double
//    versions: sqrt is correctly rounded like the host's, but CUDA's log (1 ulp) and cos
//    (2 ulp) are not the host libm's, so a double result may differ from the CPU's in its last
//    bits (a float result, rounded from the double, almost never). Compare normal with a
//    tolerance.
//  * randint: integer arithmetic only (64 random bits modulo the range): bit-identical.
#include "kernels/random.h"

#include "kernels/base/philox.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

// Uniform in [0, 1) from one Philox output: the same words as the CPU's uniform01.
__device__ inline float uniform01(const Philox4& r, float) { return uniform_float(r.v[0]); }
__device__ inline double uniform01(const Philox4& r, double) {
  return uniform_double(r.v[0], r.v[1]);
}

// a * b + c with one rounding in the element type: fmaf for float (a double fma rounded to
// float afterwards would round twice and could differ in a rare tie).
__device__ inline float fma_t(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double fma_t(double a, double b, double c) { return fma(a, b, c); }

// One thread computes out[i] for i = its global id, then strides by the grid (64-bit i, so
// n > 2^31 works). Consecutive threads write consecutive elements: coalesced stores. Nothing
// is loaded: Philox is ten rounds of integer multiplies in registers, so these kernels are
// bound by those multiplies and the stores. No shared memory.
template <typename T>
__global__ void uniform_kernel(T* __restrict__ out, int64_t n, uint64_t seed, uint64_t offset,
                               T low, T span) {
  for (const int64_t i : grid_stride(n)) {
    const Philox4 r = philox4x32(seed, offset + static_cast<uint64_t>(i), 0);
    out[i] = fma_t(span, uniform01(r, T()), low);
  }
}

// Same layout as uniform_kernel. Box-Muller: u1 in (0, 1] (so log(u1) is finite) from words
// 0-1, u2 in [0, 1) from words 2-3; z = sqrt(-2 ln u1) cos(2 pi u2) is standard normal.
template <typename T>
__global__ void normal_kernel(T* __restrict__ out, int64_t n, uint64_t seed, uint64_t offset,
                              double mean, double stddev) {
  for (const int64_t i : grid_stride(n)) {
    const Philox4 r = philox4x32(seed, offset + static_cast<uint64_t>(i), 0);
    const double u1 = 1.0 - uniform_double(r.v[0], r.v[1]);
    const double u2 = uniform_double(r.v[2], r.v[3]);
    const double radius = cuda_math::sqrt_t(-2.0 * cuda_math::log_t(u1));
    const double z = radius * cuda_math::cos_t(6.283185307179586 * u2);
    out[i] = static_cast<T>(fma(stddev, z, mean));
  }
}

// Same layout as uniform_kernel: low + (64 random bits) mod (high - low). The modulo has a
// bias of at most range / 2^64, negligible for any range a tensor can index.
__global__ void randint_kernel(int64_t* __restrict__ out, int64_t n, uint64_t seed,
                               uint64_t offset, int64_t low, uint64_t range) {
  for (const int64_t i : grid_stride(n)) {
    const Philox4 r = philox4x32(seed, offset + static_cast<uint64_t>(i), 0);
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    out[i] = low + static_cast<int64_t>(bits % range);
  }
}

// A graph replays its kernels with the arguments of the capture, seed and Philox offset
// included: every replay would draw the same numbers (the same dropout mask at every step).
void refuse_in_graph(const char* op) {
  refuse_in_capture(op, "a graph would freeze the generator's seed and offset, so every replay "
                        "would draw the same numbers; ember has no graph-safe generator. Draw "
                        "them outside the capture, or leave the random op out of the captured "
                        "step");
}

}  // namespace

void uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double low,
             double high) {
  refuse_in_graph("random numbers (rand, dropout, ...)");
  EMBER_DISPATCH_FLOAT(dtype, "rand", [&] {
    if (n <= 0) return;  // nothing to launch (after the dtype check, as on the CPU)
    // Rounded to the element type once, on the host, exactly as the CPU kernel does.
    const auto lo = static_cast<scalar_t>(low), span = static_cast<scalar_t>(high - low);
    EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), uniform_kernel<scalar_t>)(
        static_cast<scalar_t*>(out), n, seed, offset, lo, span);
    EMBER_LAUNCH_CHECK("uniform_kernel");
  });
}

void normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean,
            double std) {
  refuse_in_graph("random numbers (randn, ...)");
  EMBER_DISPATCH_FLOAT(dtype, "randn", [&] {
    if (n <= 0) return;  // nothing to launch (after the dtype check, as on the CPU)
    EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), normal_kernel<scalar_t>)(static_cast<scalar_t*>(out),
                                                                   n, seed, offset, mean, std);
    EMBER_LAUNCH_CHECK("normal_kernel");
  });
}

void randint(int64_t* out, int64_t n, uint64_t seed, uint64_t offset, int64_t low, int64_t high) {
  refuse_in_graph("random numbers (randint, ...)");
  if (n <= 0) return;
  // The caller checks low < high (as the CPU kernel, this would divide by 0 otherwise). The
  // range is taken in unsigned arithmetic so that [INT64_MIN, INT64_MAX) does not overflow.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  EMBER_LAUNCH(grid_for(n), kBlock, 0, stream(), randint_kernel)(out, n, seed, offset, low, range);
  EMBER_LAUNCH_CHECK("randint_kernel");
}

const RandomKernels random_kernels = {&uniform, &normal, &randint};

}  // namespace ember::kernels::cuda
