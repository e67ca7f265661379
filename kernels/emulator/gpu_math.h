// ember/kernels/emulator/gpu_math.h — the GPU's transcendental functions, as far as an emulator
// can know them.
//
// On a GPU, expf, logf, tanhf, powf and the rest are CUDA's own implementations, not the C
// library's. They are not correctly rounded: the CUDA Programming Guide gives each a maximum
// error in ulps (units in the last place), for example 2 for expf and 4 for powf, and the bits a
// given GPU returns are simply different from glibc's for many inputs. An emulator that calls
// glibc makes "the CUDA kernel matches the CPU kernel" almost automatic for every such op, so a
// parity tolerance that a real GPU would break passes here.
//
// The emulator therefore has two modes for the functions kernels reach through
// kernels/cuda/device_math.cuh (EMBER_EMULATOR_MATH):
//
//   exact      (the default) the C library's result, as before;
//   ulp[:SEED] every result is moved by a whole number of ulps in [-bound, +bound], where bound
//              is CUDA's documented maximum error for the function (the table in
//              kernels/emulator/gpu_math.cpp). The step is a hash of the seed, the function and
//              the argument's bits: like a GPU's library, the same argument always gives the
//              same answer, but which answers move, and which way, changes with the seed.
//
// Results CUDA specifies exactly are never moved: NaN, infinities, zeros, and the special
// values the Math API lists (exp(0) = 1, pow(x, 0) = 1, pow(1, y) = 1). Moved results stay in
// the function's range (|tanh| <= 1, |cos| <= 1, exp > 0) and never overflow to infinity.
// sqrt is correctly rounded on a GPU (nvcc's default -prec-sqrt=true), so it is never moved.
//
// What this cannot do: reproduce the GPU's actual bits. A result within the bound of the
// correctly rounded value is what the documentation promises; glibc's own result may already be
// up to about one ulp from it, so a moved result can be a little further from the truth than a
// GPU's would be — a stricter test, never a looser one.
#pragma once

#include <cstdint>

namespace ember::emu {

enum class MathMode { exact, ulp };

// The mode in force (read from EMBER_EMULATOR_MATH on first use), and a way for tests to set it.
MathMode math_mode();
uint64_t math_seed();
void set_math_mode(MathMode mode, uint64_t seed = 0);

// CUDA's documented maximum error of a function, in ulps (0 for the correctly rounded ones).
// `name` is the float name ("expf") or the double one ("exp"); -1 for a name not in the table.
int math_ulp_bound(const char* name);

float gpu_expf(float x);
float gpu_logf(float x);
float gpu_log1pf(float x);
float gpu_expm1f(float x);
float gpu_tanhf(float x);
float gpu_powf(float x, float y);
float gpu_sqrtf(float x);
float gpu_sinf(float x);
float gpu_cosf(float x);
double gpu_exp(double x);
double gpu_log(double x);
double gpu_log1p(double x);
double gpu_expm1(double x);
double gpu_tanh(double x);
double gpu_pow(double x, double y);
double gpu_sqrt(double x);
double gpu_sin(double x);
double gpu_cos(double x);

}  // namespace ember::emu
