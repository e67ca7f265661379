// ember/kernels/cuda/graph.cu — CUDA graphs (core/cuda_graph.h's CUDAGraph, reached through the
// DeviceRuntime table, kernels/device_runtime.h) and the per-thread current stream every
// launcher queues its work on (kernels/cuda/launch.cuh).
//
// A capture, step by step:
//
//   capture_begin   the graph's side stream (cudaStreamNonBlocking: the legacy stream never
//                   waits for it, so eager work on other threads cannot invalidate the capture)
//                   waits for the work already queued on the legacy stream; this thread's
//                   current stream becomes the side stream and its allocations go to the
//                   graph's private pool; cudaStreamBeginCapture(side, ThreadLocal)
//   ... the step ... every launch, cudaMemcpyAsync and cudaMemsetAsync on stream() is recorded
//   capture_end     cudaStreamEndCapture -> cudaGraph_t -> cudaGraphInstantiate -> an executable
//                   graph; the current stream and the allocator go back to normal; the legacy
//                   stream waits for the side stream (there is nothing on it, but the order is
//                   then explicit both ways)
//   replay          cudaGraphLaunch on the legacy stream: in order with all eager work
//
// Capture mode. ThreadLocal: CUDA forbids the "potentially unsafe" calls (cudaMalloc, cudaFree,
// synchronous copies, device synchronisation) to the capturing thread only; other threads — a
// DataLoader pinning the next batch — carry on. Global mode would make such calls on any thread
// invalidate the capture. ember refuses the calls it knows a capture cannot hold before they
// reach CUDA (refuse_in_capture, below, called from the places that make them), so a mistake in
// the captured code is a DeviceError saying what to do, and the capture is still intact. The one
// unsafe call ember makes on purpose is the caching allocator's cudaMalloc for the graph's pool,
// under a Relaxed mode switch (kernels/cuda/allocator.cu says why it is safe).
#include <cuda_runtime.h>

#include <string>
#include <thread>

#include "kernels/base/error.h"
#include "kernels/cuda/graph_pool.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/runtime.h"
#include "kernels/device_runtime.h"

namespace ember::kernels {

// One CUDAGraph's state (core/cuda_graph.h holds a pointer to it).
struct DeviceGraph {
  int device = -1;
  cudaStream_t side = nullptr;      // the stream captures run on, created on the first capture
  cudaGraphExec_t exec = nullptr;   // the instantiated graph (nullptr: nothing captured)
  cuda::GraphPool* pool = nullptr;
  bool capturing = false;
  std::thread::id thread;           // the capturing thread
  int64_t nodes = 0;
};

namespace cuda {

namespace {

// This thread's capture, if it is capturing: the graph, its side stream and device.
struct CaptureState {
  const DeviceGraph* graph = nullptr;  // the graph capturing
  cudaStream_t stream = nullptr;
  int device = -1;
};
thread_local CaptureState tls_capture;

}  // namespace

cudaStream_t stream() {
  const CaptureState& c = tls_capture;
  if (c.graph == nullptr) return 0;  // the legacy default stream
  int device = -1;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  EMBER_CHECK_T(DeviceError, device == c.device, "work for cuda:", device,
                " during a CUDA graph capture on cuda:", c.device, ": a graph holds the work of "
                "one device. Keep every tensor of the captured step on cuda:", c.device,
                ", or capture one graph per device");
  return c.stream;
}

bool capturing() { return tls_capture.graph != nullptr; }

void refuse_in_capture(const char* what, const char* advice) {
  if (!capturing()) return;
  throw DeviceError(std::string(what) + " during CUDA graph capture: " + advice);
}

namespace {

// Makes `waiter` wait for the work queued so far on `producer` (an event between them).
void order_after(cudaStream_t waiter, cudaStream_t producer) {
  cudaEvent_t done = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  cudaError_t err = cudaEventRecord(done, producer);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(waiter, done, 0);
  cudaEventDestroy(done);  // released once it has completed; the wait stays in place
  EMBER_CUDA_CHECK(err);
}

}  // namespace

DeviceGraph* graph_create() { return new DeviceGraph(); }

void graph_destroy(DeviceGraph* g) noexcept {
  if (g == nullptr) return;
  try {
    if (g->capturing) graph_abandon_capture(g);
    graph_reset(g);
    if (g->side != nullptr) {
      DeviceGuard guard(g->device);
      cudaStreamDestroy(g->side);
    }
  } catch (...) {
    // The runtime may already be shutting down (a graph in a static object); the driver
    // reclaims everything at exit.
  }
  cudaGetLastError();
  delete g;
}

void graph_capture_begin(DeviceGraph* g) {
  if (!is_available()) {
    throw DeviceError(std::string("CUDAGraph::capture_begin: no CUDA device is usable (") +
                      unavailable_reason() + "); CUDA graphs need a GPU (or the emulation "
                      "build): train eagerly on the CPU instead");
  }
  EMBER_CHECK_T(DeviceError, tls_capture.graph == nullptr,
                "CUDAGraph::capture_begin: this thread is already capturing a CUDA graph, and "
                "captures do not nest. End the first one (capture_end) before beginning another; "
                "to run one graph inside another's step, replay it after both captures");
  EMBER_CHECK_T(DeviceError, g->exec == nullptr,
                "CUDAGraph::capture_begin: this graph already holds a capture (", g->nodes,
                " nodes). Call reset() to drop it before capturing again, or use another "
                "CUDAGraph");
  const int device = current_device();
  const char* why = "";
  if (!device_supported(device, &why)) throw DeviceError(why);
  DeviceGuard guard(device);
  if (g->side == nullptr || g->device != device) {
    if (g->side != nullptr) {
      DeviceGuard old(g->device);
      cudaStreamDestroy(g->side);
      g->side = nullptr;
    }
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&g->side, cudaStreamNonBlocking));
  }
  g->device = device;
  // The capture records, it runs nothing; still, whatever the recorded work's first replay
  // reads was written by eager work queued before this point, on the legacy stream. Making the
  // side stream wait for it states that order, as PyTorch's capture does with a synchronize.
  order_after(g->side, 0);

  g->pool = create_graph_pool(device);
  begin_allocating_to(g->pool);
  tls_capture = {g, g->side, device};
  const cudaError_t err = cudaStreamBeginCapture(g->side, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    tls_capture = {};
    end_allocating_to();
    release_graph_pool(g->pool);
    g->pool = nullptr;
    EMBER_CUDA_CHECK(err);
  }
  g->capturing = true;
  g->thread = std::this_thread::get_id();
}

void graph_capture_end(DeviceGraph* g) {
  EMBER_CHECK_T(DeviceError, g->capturing,
                "CUDAGraph::capture_end: this graph is not capturing; call capture_begin() "
                "first (or use cuda::capture(graph, step))");
  EMBER_CHECK_T(DeviceError, g->thread == std::this_thread::get_id(),
                "CUDAGraph::capture_end: called on another thread than capture_begin(); a "
                "capture is ended by the thread that began it");
  DeviceGuard guard(g->device);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(g->side, &graph);
  // Whatever CUDA says, this thread is no longer capturing.
  tls_capture = {};
  end_allocating_to();
  g->capturing = false;
  if (end != cudaSuccess || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    release_graph_pool(g->pool);
    g->pool = nullptr;
    check_error(end != cudaSuccess ? end : cudaErrorUnknown,
                "cudaStreamEndCapture (the capture was invalidated by a call CUDA does not allow "
                "in a capture, made by something ember does not check; the graph is empty: "
                "remove that call and capture again)",
                __FILE__, __LINE__);
  }
  size_t nodes = 0;
  cudaGraphGetNodes(graph, nullptr, &nodes);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);  // the executable graph is a copy of its own
  if (inst != cudaSuccess) {
    release_graph_pool(g->pool);
    g->pool = nullptr;
    EMBER_CUDA_CHECK(inst);
  }
  g->exec = exec;
  g->nodes = static_cast<int64_t>(nodes);
  order_after(0, g->side);
}

void graph_abandon_capture(DeviceGraph* g) {
  if (!g->capturing) return;
  EMBER_CHECK_T(DeviceError, g->thread == std::this_thread::get_id(),
                "CUDAGraph::abandon_capture: called on another thread than capture_begin()");
  DeviceGuard guard(g->device);
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(g->side, &graph) == cudaSuccess && graph != nullptr)
    cudaGraphDestroy(graph);
  cudaGetLastError();  // an invalidated capture ends with an error: expected here
  tls_capture = {};
  end_allocating_to();
  g->capturing = false;
  release_graph_pool(g->pool);
  g->pool = nullptr;
}

void graph_replay(DeviceGraph* g) {
  EMBER_CHECK_T(DeviceError, g->exec != nullptr,
                "CUDAGraph::replay: this graph holds no capture (it was never captured, its "
                "capture failed, or reset() dropped it). Capture a step first: "
                "cuda::capture(graph, step), or capture_begin() ... capture_end()");
  refuse_in_capture("CUDAGraph::replay()", "a graph launched inside a capture would be recorded, "
                                           "not run. Replay after capture_end()");
  DeviceGuard guard(g->device);
  EMBER_CUDA_CHECK(cudaGraphLaunch(g->exec, stream()));
}

void graph_reset(DeviceGraph* g) {
  EMBER_CHECK_T(DeviceError, !g->capturing,
                "CUDAGraph::reset: the graph is capturing; end the capture (capture_end or "
                "abandon_capture) first");
  if (g->exec != nullptr) {
    DeviceGuard guard(g->device);
    // A replay still running keeps its graph until it finishes (cudaGraphExecDestroy does not
    // wait), and the pool's blocks go only to work queued after it on the same stream.
    cudaGraphExecDestroy(g->exec);
    cudaGetLastError();
    g->exec = nullptr;
  }
  release_graph_pool(g->pool);
  g->pool = nullptr;
  g->nodes = 0;
}

GraphInfo graph_info(const DeviceGraph* g) {
  GraphInfo info;
  info.captured = g->exec != nullptr;
  info.capturing = g->capturing;
  info.device = g->device;
  info.nodes = g->nodes;
  info.pool_reserved = g->pool ? graph_pool_reserved(g->pool) : 0;
  return info;
}

bool graph_pool_owns(const DeviceGraph* g, const void* ptr) {
  return g->pool != nullptr && graph_pool_owns(g->pool, ptr);
}

}  // namespace cuda
}  // namespace ember::kernels
