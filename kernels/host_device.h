// ember/kernels/host_device.h — marking helpers that both the CPU and CUDA kernels call.
//
// nvcc compiles a function for the GPU only when it is marked __device__; the host compiler
// does not know the keyword. EMBER_HOST_DEVICE expands to "__host__ __device__" under nvcc and
// to nothing otherwise, so one definition (Philox, the strided-offset walk) serves both sides
// and the CPU test suite can check the exact code the GPU runs.
#pragma once

#ifdef __CUDACC__
#define EMBER_HOST_DEVICE __host__ __device__
#else
#define EMBER_HOST_DEVICE
#endif
