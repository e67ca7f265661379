// ember/kernels/emulator/runtime_api.h — the part of the CUDA runtime API that ember uses,
// implemented on the CPU by kernels/emulator/runtime.cpp (the emulation build,
// -DEMBER_CUDA=EMULATE).
//
// Names, signatures and error codes are CUDA's, so kernels/cuda/*.cu compile unchanged against
// either this header or the real <cuda_runtime.h>. Only what ember calls is here; a call to
// anything else is a compile error in the emulation build, never a silent no-op.
//
// What the emulated device is (docs/emulator.md has the whole story):
//   - EMBER_EMULATED_DEVICES (default 1) devices, filtered and reordered by CUDA_VISIBLE_DEVICES
//     exactly as the driver does it;
//   - each reports compute capability 9.0 and the limits of an H100 (1024 threads per block,
//     48 KiB of shared memory per block without opt-in, 65535 blocks in y and z), and
//     EMBER_EMULATED_MEMORY bytes of memory (default 4 GiB) that cudaMalloc really runs out of;
//   - in-order streams: a kernel runs to completion when it is launched (its blocks spread over
//     the CPU's threads), so streams never run concurrently; a cudaMemcpyAsync to or from pinned
//     host memory is deferred until the next operation on the stream or the next
//     synchronisation, so host code that reads a non_blocking copy's destination too early sees
//     stale bytes, as on a GPU. With EMBER_EMULATOR_ASYNC=1 every launch, copy and memset is
//     queued on its stream instead and runs later on a worker thread (kernels/emulator/async.cpp);
//   - stream capture and CUDA graphs (kernels/emulator/graph.cpp): while a stream captures,
//     its kernels, copies and memsets are recorded (a kernel's arguments copied by value) instead
//     of run; cudaGraphLaunch runs the recorded work in order under the checkers. The calls a
//     capture forbids fail with the error codes a GPU returns.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/emulator/vector_types.h"

// ---- error codes (the values of CUDA's driver_types.h) ------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorCudartUnloading = 4,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorNoKernelImageForDevice = 209,
  cudaErrorPeerAccessUnsupported = 217,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorPeerAccessAlreadyEnabled = 704,
  cudaErrorPeerAccessNotEnabled = 705,
  cudaErrorAssert = 710,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,   // the operation is not permitted while capturing
  cudaErrorStreamCaptureInvalidated = 901,   // an earlier error invalidated the capture
  cudaErrorStreamCaptureUnmatched = 903,     // the capture was not begun on this stream
  cudaErrorStreamCaptureIsolation = 905,     // a dependency would cross the capture's boundary
  cudaErrorStreamCaptureImplicit = 906,      // the legacy stream would depend on a capture
  cudaErrorCapturedEvent = 907,              // the event was last recorded in a capture
  cudaErrorStreamCaptureWrongThread = 908,   // ended by another thread than the one that began it
  cudaErrorUnknown = 999,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,  // the direction is read off the pointers (unified addressing)
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

constexpr unsigned int cudaHostAllocDefault = 0;
constexpr unsigned int cudaHostAllocPortable = 1;
constexpr unsigned int cudaHostAllocMapped = 2;
constexpr unsigned int cudaEventDefault = 0;
constexpr unsigned int cudaEventBlockingSync = 1;
constexpr unsigned int cudaEventDisableTiming = 2;

constexpr unsigned int cudaStreamDefault = 0;
constexpr unsigned int cudaStreamNonBlocking = 1;  // not implicitly ordered with the legacy stream

// Which threads a capture forbids the "potentially unsafe" calls (cudaMalloc, cudaFree, a
// synchronous copy, a device synchronisation, ...) to: every thread whose own mode is Global
// (Global), only the capturing thread (ThreadLocal), none (Relaxed). A thread's own mode is
// Global unless cudaThreadExchangeStreamCaptureMode changed it.
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
using cudaStream_t = CUstream_st*;  // nullptr (0) is the legacy default stream of the device
using cudaEvent_t = CUevent_st*;
using cudaGraph_t = CUgraph_st*;          // a captured sequence of work
using cudaGraphExec_t = CUgraphExec_st*;  // a graph instantiated for launching
using cudaGraphNode_t = CUgraphNode_st*;

// cudaDeviceProp with the fields a program asks about; the rest of CUDA's struct is left out.
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  size_t totalConstMem;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  size_t sharedMemPerMultiprocessor;
  size_t sharedMemPerBlockOptin;
  int unifiedAddressing;
  int canMapHostMemory;
  int concurrentKernels;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
};

struct cudaFuncAttributes {
  size_t sharedSizeBytes;
  size_t constSizeBytes;
  size_t localSizeBytes;
  int maxThreadsPerBlock;
  int numRegs;
  int ptxVersion;
  int binaryVersion;
  int maxDynamicSharedSizeBytes;
};

// ---- devices -------------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
cudaError_t cudaDeviceDisablePeerAccess(int peerDevice);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);

// ---- errors --------------------------------------------------------------------------------------
cudaError_t cudaGetLastError();   // returns and clears this host thread's last error
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);

// ---- memory --------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** devPtr, size_t size);
// The CUDA runtime's typed convenience overload: cudaMalloc(&float_ptr, bytes).
template <class T>
inline cudaError_t cudaMalloc(T** devPtr, size_t size) {
  return cudaMalloc(reinterpret_cast<void**>(devPtr), size);
}
cudaError_t cudaFree(void* devPtr);
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags);
cudaError_t cudaMallocHost(void** ptr, size_t size);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count);
cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream = nullptr);

// ---- streams and events --------------------------------------------------------------------------
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);

// ---- stream capture and graphs (kernels/emulator/graph.cpp) --------------------------------
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

// ---- kernels and module symbols ------------------------------------------------------------------
// Every function the emulator runs exists in this build (there is no GPU binary that could be
// missing), so asking for a kernel's attributes succeeds and reports the device's limits.
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func);
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value);
template <typename T>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, T* entry) {
  return cudaFuncGetAttributes(attr, reinterpret_cast<const void*>(entry));
}
template <typename T>
cudaError_t cudaFuncSetAttribute(T* entry, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attr, value);
}

// A __device__ variable is an ordinary variable of the program in the emulation build (one copy
// shared by every emulated device); its address is its device address.
template <typename T>
cudaError_t cudaGetSymbolAddress(void** devPtr, const T& symbol) {
  *devPtr = const_cast<void*>(static_cast<const void*>(&symbol));
  return cudaSuccess;
}
cudaError_t cudaMemcpyToSymbolBytes(void* symbol, const void* src, size_t count, size_t offset);
cudaError_t cudaMemcpyFromSymbolBytes(void* dst, const void* symbol, size_t count, size_t offset);
template <typename T>
cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t count, size_t offset = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
  if (offset + count > sizeof(T)) return cudaErrorInvalidValue;
  return cudaMemcpyToSymbolBytes(const_cast<void*>(static_cast<const void*>(&symbol)), src, count,
                                 offset);
}
template <typename T>
cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                 cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  if (offset + count > sizeof(T)) return cudaErrorInvalidValue;
  return cudaMemcpyFromSymbolBytes(dst, static_cast<const void*>(&symbol), count, offset);
}
