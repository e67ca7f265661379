// ember/kernels/base/host_device.h — marking helpers that both the CPU and CUDA kernels call.
//
// nvcc compiles a function for the GPU only when it is marked __device__; the host compiler
// does not know the keyword. EMBER_HOST_DEVICE expands to "__host__ __device__" under nvcc and
// to nothing (always_inline in the emulation build) otherwise, so one definition (Philox, the strided-offset walk) serves both sides
// and the CPU test suite can check the exact code the GPU runs.
#pragma once

#ifdef __CUDACC__
#define EMBER_HOST_DEVICE __host__ __device__
#elif defined(EMBER_CUDA_EMULATED)
// The emulation build compiles kernels with access hooks (kernels/emulator/checks.cpp) and
// host code without. An out-of-line copy of a function used on both sides would be one copy for
// the whole program, the hooked one or the plain one, whichever the linker keeps: always
// inlining gives each kernel its own hooked copy, so memcheck sees every access it makes.
#define EMBER_HOST_DEVICE __attribute__((always_inline))
#else
#define EMBER_HOST_DEVICE
#endif
