// ember/kernels/cuda/device_math.cuh — the transcendental functions of ember's kernels, in the
// element type, in one place.
//
// Every kernel that needs exp, log, tanh, pow, sqrt, sin or cos calls these: exp_t(float) is
// CUDA's precise expf, exp_t(double) its exp, and so on — never the __expf-style intrinsics,
// whose error grows with the argument. They are the functions std::exp(float) and
// std::exp(double) pick in the CPU kernels, but a GPU computes them with its own library: the
// results agree with the CPU's to within CUDA's documented error (2 ulp for expf, 4 for powf,
// ...), not bit for bit. That is why CUDA-vs-CPU parity tests compare with a tolerance.
//
// In the emulation build the same names go through the emulator's GPU math
// (kernels/emulator/gpu_math.h): the C library's result, or with EMBER_EMULATOR_MATH=ulp that
// result moved by up to CUDA's documented error, so that the tolerances are tested against
// answers as far from the CPU's as a GPU's may be.
#pragma once

#include <cuda_runtime.h>

namespace ember::kernels::cuda_math {

#ifdef EMBER_CUDA_EMULATED
__device__ inline float exp_t(float x) { return ::ember::emu::gpu_expf(x); }
__device__ inline double exp_t(double x) { return ::ember::emu::gpu_exp(x); }
__device__ inline float log_t(float x) { return ::ember::emu::gpu_logf(x); }
__device__ inline double log_t(double x) { return ::ember::emu::gpu_log(x); }
__device__ inline float tanh_t(float x) { return ::ember::emu::gpu_tanhf(x); }
__device__ inline double tanh_t(double x) { return ::ember::emu::gpu_tanh(x); }
__device__ inline float pow_t(float x, float p) { return ::ember::emu::gpu_powf(x, p); }
__device__ inline double pow_t(double x, double p) { return ::ember::emu::gpu_pow(x, p); }
__device__ inline float sqrt_t(float x) { return ::ember::emu::gpu_sqrtf(x); }
__device__ inline double sqrt_t(double x) { return ::ember::emu::gpu_sqrt(x); }
__device__ inline float sin_t(float x) { return ::ember::emu::gpu_sinf(x); }
__device__ inline double sin_t(double x) { return ::ember::emu::gpu_sin(x); }
__device__ inline float cos_t(float x) { return ::ember::emu::gpu_cosf(x); }
__device__ inline double cos_t(double x) { return ::ember::emu::gpu_cos(x); }
#else
__device__ inline float exp_t(float x) { return expf(x); }
__device__ inline double exp_t(double x) { return exp(x); }
__device__ inline float log_t(float x) { return logf(x); }
__device__ inline double log_t(double x) { return log(x); }
__device__ inline float tanh_t(float x) { return tanhf(x); }
__device__ inline double tanh_t(double x) { return tanh(x); }
__device__ inline float pow_t(float x, float p) { return powf(x, p); }
__device__ inline double pow_t(double x, double p) { return pow(x, p); }
__device__ inline float sqrt_t(float x) { return sqrtf(x); }
__device__ inline double sqrt_t(double x) { return sqrt(x); }
__device__ inline float sin_t(float x) { return sinf(x); }
__device__ inline double sin_t(double x) { return sin(x); }
__device__ inline float cos_t(float x) { return cosf(x); }
__device__ inline double cos_t(double x) { return cos(x); }
#endif

}  // namespace ember::kernels::cuda_math
