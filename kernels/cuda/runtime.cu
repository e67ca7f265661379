// ember/kernels/cuda/runtime.cu — asking the CUDA runtime what is there, and talking to it.
//
// cudaGetDeviceCount is the one call that tells "no driver", "no device" and "N devices" apart
// without crashing; everything else in ember's CUDA backend starts from here. The answer is
// computed once: the set of visible devices (CUDA_VISIBLE_DEVICES) is fixed when the runtime
// first initialises, exactly as in PyTorch.
//
// Also here: the error check every launcher uses (launch.cuh), the current device and its RAII
// guard, device properties for examples/device_query, whether this build carries code for a
// GPU, and byte copies between host, pinned host and device memory. At the bottom: the
// DeviceRuntime table (kernels/device_runtime.h) through which core/cuda.cpp reaches all of it,
// the allocator (allocator.cu), the matmul switches (gemm.cu) and CUDA graphs (graph.cu).
#include <cuda_runtime.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "ember_cuda_build_info.h"  // generated: EMBER_CUDA_ARCHITECTURES
#include "kernels/base/error.h"
#include "kernels/cuda/graph_pool.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/device_runtime.h"
#ifdef EMBER_CUDA_EMULATED
#include "kernels/emulator/emulator.h"
#endif

namespace ember::kernels::cuda {

void check_error(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
#ifdef EMBER_CUDA_EMULATED
  // The emulator's checkers explain a failure in a report (which kernel, block, thread, address):
  // it goes into the exception's message.
  const std::string report = ::ember::emu::take_report();
#else
  const std::string report;
#endif
  // Clear the error so that the next call starts clean (a sticky error — after a kernel
  // faulted — cannot be cleared; every later call then reports it too, which is right: the
  // CUDA context is unusable and the process has to restart).
  cudaGetLastError();
  const std::string msg = std::string(what) + " failed at " + file + ":" + std::to_string(line) +
                          ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")" +
                          (report.empty() ? "" : "\n" + report);
  if (err == cudaErrorMemoryAllocation) {
    throw OutOfMemoryError(msg + ": free tensors you no longer need or use smaller batches");
  }
  if (err == cudaErrorNoKernelImageForDevice) {
    throw DeviceError(msg + ": ember was built for CUDA architectures " + built_architectures() +
                      "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=<this GPU's sm>");
  }
  throw DeviceError(msg);
}

namespace {

struct Probe {
  int count = 0;
  std::string reason;
  Probe() {
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      count = 0;
      reason = std::string("the CUDA runtime found no usable GPU: ") + cudaGetErrorString(err);
      cudaGetLastError();  // clear the error so later calls start clean
    } else if (count == 0) {
      reason = "the CUDA runtime reports 0 devices (check CUDA_VISIBLE_DEVICES)";
    }
  }
};
const Probe& probe() {
  static Probe p;
  return p;
}

// A kernel that does nothing: asking the runtime for its attributes tells whether this build
// has code (a binary for the GPU's architecture, or PTX it can compile) for the device.
__global__ void ember_probe_kernel() {}

}  // namespace

bool is_available() { return probe().count > 0; }
int device_count() { return probe().count; }
const char* unavailable_reason() { return probe().count > 0 ? "" : probe().reason.c_str(); }

void require_gpu(const char* what) {
  if (!is_available()) {
    throw DeviceError(std::string(what) + ": no CUDA device is usable: " + probe().reason +
                      ". Use device \"cpu\", or choose with cuda::is_available() ? \"cuda\" : \"cpu\"");
  }
}

void check_device(int index, const char* what) {
  require_gpu(what);
  if (index < 0 || index >= device_count()) {
    throw DeviceError(std::string(what) + ": cuda:" + std::to_string(index) +
                      " does not exist: this process sees " + std::to_string(device_count()) +
                      " CUDA device(s), cuda:0 to cuda:" + std::to_string(device_count() - 1) +
                      " (CUDA_VISIBLE_DEVICES decides which GPUs these are)");
  }
}

int current_device() {
  require_gpu("cuda::current_device");
  int d = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device(int index) {
  check_device(index, "cuda::set_device");
  EMBER_CUDA_CHECK(cudaSetDevice(index));
}

int exchange_device(int index) {
  check_device(index, "cuda::DeviceGuard");
  int current = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&current));
  if (current != index) EMBER_CUDA_CHECK(cudaSetDevice(index));
  return current;
}

void restore_device(int previous) noexcept {
  int current = 0;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous) cudaSetDevice(previous);
}

void synchronize(int index) {
  require_gpu("cuda::synchronize");
  refuse_in_capture(
      "cuda::synchronize()", "the captured work is recorded, not run, so there is nothing to wait "
      "for, and CUDA would invalidate the capture. Synchronize after capture_end(), or after "
      "replay() to wait for a replay");
  EMBER_CHECK_T(DeviceError, captures_underway() == 0,
                "cuda::synchronize() while another thread captures a CUDA graph: waiting for the "
                "whole device would invalidate that capture. Synchronize once its capture_end() "
                "has returned");
  DeviceGuard guard(index < 0 ? current_device() : index);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
}

void get_properties(int index, DeviceProperties* out) {
  check_device(index, "cuda::get_device_properties");
  cudaDeviceProp p{};
  EMBER_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  *out = DeviceProperties{};
  std::snprintf(out->name, sizeof(out->name), "%s", p.name);
  out->major = p.major;
  out->minor = p.minor;
  out->total_memory = p.totalGlobalMem;
  out->multiprocessor_count = p.multiProcessorCount;
  // Clock rates left cudaDeviceProp in CUDA 13; the attribute API has them on every version.
  cudaDeviceGetAttribute(&out->clock_rate_khz, cudaDevAttrClockRate, index);
  cudaDeviceGetAttribute(&out->memory_clock_rate_khz, cudaDevAttrMemoryClockRate, index);
  cudaDeviceGetAttribute(&out->memory_bus_width, cudaDevAttrGlobalMemoryBusWidth, index);
  cudaGetLastError();  // an attribute a driver does not know leaves 0, not an error
  out->l2_cache_size = static_cast<size_t>(p.l2CacheSize);
  out->shared_memory_per_block = p.sharedMemPerBlock;
  out->max_threads_per_block = p.maxThreadsPerBlock;
  out->warp_size = p.warpSize;
  if (cudaDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), index) != cudaSuccess)
    out->pci_bus_id[0] = '\0';
  cudaGetLastError();
}

int driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}

int runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}

const char* built_architectures() {
  // CMake hands the list over with commas (a ';' would split the compile definition).
  static const std::string archs = [] {
    std::string s = EMBER_CUDA_ARCHITECTURES;
    for (char& c : s)
      if (c == ',') c = ';';
    return s;
  }();
  return archs.c_str();
}

bool device_supported(int index, const char** why) {
  check_device(index, "cuda::device_supported");
  // Asked once per device: the answer cannot change while the process runs. The reasons are
  // written once each and never move (the vector is sized once), so *why stays valid.
  static std::mutex mu;
  static std::vector<int> answers;  // -1 unknown, 0 no, 1 yes
  static std::vector<std::string> reasons;
  std::lock_guard<std::mutex> lock(mu);
  if (answers.empty()) {
    answers.assign(device_count(), -1);
    reasons.assign(device_count(), "");
  }
  if (answers[index] < 0) {
    DeviceGuard guard(index);
    cudaFuncAttributes attr{};
    const cudaError_t err = cudaFuncGetAttributes(&attr, ember_probe_kernel);
    cudaGetLastError();
    answers[index] = err == cudaSuccess ? 1 : 0;
    if (err != cudaSuccess) {
      int major = 0, minor = 0;
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index);
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index);
      cudaGetLastError();
      const std::string sm = std::to_string(major * 10 + minor);
      reasons[index] = "cuda:" + std::to_string(index) + " is sm_" + sm + " but ember was built for " +
                       built_architectures() + " (" + cudaGetErrorString(err) +
                       "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + sm +
                       " (or add " + sm + " to the list), or use device \"cpu\"";
    }
  }
  if (why) *why = reasons[index].c_str();
  return answers[index] == 1;
}

namespace {

// A device index with -1 ("cuda" without an index) resolved to the current device.
int resolved(int device) {
  if (device >= 0) return device;
  int current = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&current));
  return current;
}

// Makes the current stream of `waiter` wait for the work queued so far on the current stream of
// `producer` (two devices: an event between them).
void order_devices(int waiter, int producer) {
  cudaEvent_t done = nullptr;
  {
    DeviceGuard guard(producer);
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    const cudaError_t err = cudaEventRecord(done, stream());
    if (err != cudaSuccess) cudaEventDestroy(done);
    EMBER_CUDA_CHECK(err);
  }
  DeviceGuard guard(waiter);
  const cudaError_t err = cudaStreamWaitEvent(stream(), done, 0);
  cudaEventDestroy(done);  // released once it has completed; the wait stays in place
  EMBER_CUDA_CHECK(err);
}

}  // namespace

void copy_bytes(void* dst, const void* src, size_t n, CopyKind kind, int device, int dst_device,
                bool non_blocking) {
  if (n == 0) return;
  // A graph holds device work only: a copy from the host would copy the bytes the host buffer
  // held at capture time again at every replay (or, from pageable memory, cannot be captured),
  // and a copy to the host would need the host to wait for work that is only being recorded.
  if (kind == CopyKind::DeviceToHost) {
    refuse_in_capture(
        "copying a CUDA tensor to the CPU (.item(), .cpu(), .to(\"cpu\"), printing it)",
        "the captured work is recorded, not run, so there is no value to read yet. Keep the "
        "tensor (e.g. the loss) and read it after replay(): graph.replay(); loss.item()");
  } else if (kind == CopyKind::HostToDevice) {
    refuse_in_capture(
        "copying CPU data to a CUDA tensor",
        "a graph cannot read host memory that changes between replays. Copy each new batch "
        "into the graph's static input tensor outside the capture (static_x.copy_(batch) before "
        "replay()), and create constants on the GPU before capture_begin()");
  }
  // Unified addressing lets the runtime tell host from device pointers (cudaMemcpyDefault), and
  // a copy between two GPUs goes peer to peer. The copy is queued on the GPU's stream, behind the
  // kernels that produce its source; the caller names the GPU (the source's, when both are).
  //
  // A copy between two GPUs runs on the source's stream, but the destination's stream is where
  // its result is used, and where the caching allocator may have handed the destination's block
  // over while kernels queued earlier still use it. So the copy waits for the destination's work
  // so far, and the destination's stream waits for the copy (the emulator's asynchronous mode
  // showed DataParallel's scatter and gather reading their copies before they had landed).
  const bool across = kind == CopyKind::DeviceToDevice && resolved(dst_device) != resolved(device);
  if (across) order_devices(device, dst_device);
  {
    DeviceGuard guard(device);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream()));
  }
  if (across) order_devices(dst_device, device);
  DeviceGuard guard(device);
  // A device-to-device copy stays asynchronous like any kernel. A copy that involves the host
  // waits, unless the caller asked for non_blocking (which Tensor::to only passes with pinned
  // host memory): the host may read or reuse its buffer as soon as this returns.
  const bool involves_host = kind != CopyKind::DeviceToDevice;
  if (involves_host && !non_blocking) EMBER_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

// ---- the table (kernels/device_runtime.h), in the order of its fields -------------------------
#ifdef EMBER_CUDA_EMULATED
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

const DeviceRuntime device_runtime = {
    kEmulated,
    // devices (this file)
    device_count,
    unavailable_reason,
    require_gpu,
    check_device,
    current_device,
    set_device,
    exchange_device,
    restore_device,
    synchronize,
    get_properties,
    driver_version,
    runtime_version,
    built_architectures,
    device_supported,
    copy_bytes,
    // memory (allocator.cu)
    device_alloc,
    device_free,
    pinned_alloc,
    pinned_free,
    memory_stats,
    reset_peak_memory_stats,
    empty_cache,
    // matmul switches (gemm.cu)
    set_gemm_backend,
    gemm_backend,
    set_allow_tf32,
    allow_tf32,
    // CUDA graphs (graph.cu)
    graph_create,
    graph_destroy,
    graph_capture_begin,
    graph_capture_end,
    graph_abandon_capture,
    graph_replay,
    graph_reset,
    graph_info,
    graph_pool_owns,
    capturing,
};

}  // namespace ember::kernels::cuda
