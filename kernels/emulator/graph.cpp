// ember/kernels/emulator/graph.cpp — stream capture and CUDA graphs on the CPU.
//
// What a GPU does, and what is emulated here:
//
//   cudaStreamBeginCapture(s, mode)   s stops running work: every kernel launch, cudaMemcpyAsync
//                                     and cudaMemsetAsync queued on s becomes a node of a graph
//                                     (a kernel node keeps its own copy of the arguments, by
//                                     value: the Launcher in device.h makes it)
//   cudaStreamEndCapture(s, &g)       the nodes, in the order they were queued, are the graph
//   cudaGraphInstantiate(&e, g)       an executable copy of it
//   cudaGraphLaunch(e, s2)            runs the nodes in order on s2, under the checkers, as if the
//                                     host had queued them again with the same arguments
//
// A captured stream records one chain of nodes; ember captures one stream, so the graph is that
// chain. Forks into other streams through events (a multi-stream capture) are not emulated.
//
// The rules a capture imposes, with the errors a GPU returns (the capturing thread's mistakes,
// and other threads' interference, both invalidate the capture: cudaStreamEndCapture then
// returns cudaErrorStreamCaptureInvalidated and no graph):
//   - the legacy stream cannot be captured (cudaErrorStreamCaptureUnsupported);
//   - "potentially unsafe" calls — cudaMalloc, cudaFree, cudaHostAlloc, cudaFreeHost, the
//     synchronous cudaMemcpy and cudaMemset — are forbidden to a thread whose capture mode says
//     so (see cudaStreamCaptureMode in runtime_api.h) while a capture is underway
//     (cudaErrorStreamCaptureUnsupported);
//   - waiting for a capturing stream (cudaStreamSynchronize, cudaStreamQuery), or for a device
//     one of whose streams captures (cudaDeviceSynchronize), is forbidden
//     (cudaErrorStreamCaptureUnsupported); so is querying or waiting for an event last recorded
//     inside a capture (cudaErrorCapturedEvent);
//   - a copy between a capturing stream and pageable host memory cannot be captured
//     (cudaErrorStreamCaptureUnsupported);
//   - work on the legacy stream while a blocking stream (one created without
//     cudaStreamNonBlocking) of its device captures would depend on the capture
//     (cudaErrorStreamCaptureImplicit);
//   - ending a capture from another thread than the one that began it, unless it began in
//     Relaxed mode: cudaErrorStreamCaptureWrongThread (the capture goes on).
// Each refusal also leaves a report (printed, and appended to ember's DeviceError) saying what
// happened.
#include <algorithm>
#include <memory>
#include <string>

#include "kernels/emulator/internal.h"

using namespace ember::emu;
using namespace ember::emu::detail;

struct CUgraph_st {
  int device = 0;
  std::vector<GraphNode> nodes;
};

struct CUgraphExec_st {
  int device = 0;
  std::shared_ptr<const std::vector<GraphNode>> nodes;
};

namespace ember::emu::detail {

namespace {

// Every capture underway in the process (for the rules that span threads), and each capture's
// `invalidated` flag, under one mutex.
std::mutex g_captures_mu;
std::vector<Capture*> g_captures;

// This thread's capture interaction mode (cudaThreadExchangeStreamCaptureMode).
thread_local cudaStreamCaptureMode tls_mode = cudaStreamCaptureModeGlobal;

const char* mode_name(cudaStreamCaptureMode m) {
  switch (m) {
    case cudaStreamCaptureModeGlobal: return "cudaStreamCaptureModeGlobal";
    case cudaStreamCaptureModeThreadLocal: return "cudaStreamCaptureModeThreadLocal";
    case cudaStreamCaptureModeRelaxed: return "cudaStreamCaptureModeRelaxed";
  }
  return "?";
}

bool is_legacy(const Stream& s) {
  return &s == &globals().devices[static_cast<size_t>(s.device)]->default_stream;
}

const char* kInvalidatedNote =
    "; the capture is invalidated: cudaStreamEndCapture will return "
    "cudaErrorStreamCaptureInvalidated and no graph";

// Invalidates c and says why. g_captures_mu is held.
void invalidate(Capture* c, const std::string& why) {
  c->invalidated = true;
  publish_report("ember emulator: " + why + kInvalidatedNote);
}

// A blocking stream of `device` that captures, or nullptr. g_captures_mu is held.
Capture* blocking_capture_on(int device) {
  for (Capture* c : g_captures)
    if (c->origin->device == device && c->origin->blocking) return c;
  return nullptr;
}

cudaError_t fail(cudaError_t e) {
  set_last_error(e);
  return e;
}

}  // namespace

Stream& stream_object(cudaStream_t s) {
  if (s != nullptr) return *reinterpret_cast<Stream*>(s);
  return globals().devices[static_cast<size_t>(current_device_index())]->default_stream;
}

cudaError_t check_unsafe_call(const char* call) {
  if (tls_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  std::lock_guard<std::mutex> lock(g_captures_mu);
  const std::thread::id me = std::this_thread::get_id();
  bool forbidden = false;
  for (Capture* c : g_captures) {
    if (c->mode == cudaStreamCaptureModeRelaxed) continue;
    const bool mine = c->thread == me;
    if (!mine && !(tls_mode == cudaStreamCaptureModeGlobal && c->mode == cudaStreamCaptureModeGlobal))
      continue;
    forbidden = true;
    invalidate(c, std::string(call) + " is not permitted while a stream captures (a " +
                      mode_name(c->mode) + " capture begun by " +
                      (mine ? "this thread" : "another thread") +
                      "): the call is not part of the graph, so a replay could not repeat it. "
                      "Make it before cudaStreamBeginCapture or after cudaStreamEndCapture");
  }
  return forbidden ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

cudaError_t capture_or_run(Stream& s, const char* call, GraphNode* record) {
  std::lock_guard<std::mutex> lock(g_captures_mu);
  if (Capture* c = s.capture; c != nullptr) {
    if (c->invalidated) {
      publish_report(std::string("ember emulator: ") + call +
                     " on a stream whose capture was invalidated by an earlier error: end the "
                     "capture (cudaStreamEndCapture) and begin again");
      return cudaErrorStreamCaptureInvalidated;
    }
    if (record == nullptr) {
      invalidate(c, std::string(call) + " on a capturing stream cannot be captured (a copy "
                                        "between the device and pageable host memory runs "
                                        "synchronously with the host; a graph cannot hold it)");
      return cudaErrorStreamCaptureUnsupported;
    }
    c->nodes.push_back(std::move(*record));
    return kRecorded;
  }
  if (is_legacy(s)) {
    if (Capture* c = blocking_capture_on(s.device); c != nullptr) {
      invalidate(c, std::string(call) + " on the legacy stream of cuda:" + std::to_string(s.device) +
                        " while a blocking stream of that device captures: the legacy stream "
                        "waits for every blocking stream, so the call would depend on work that "
                        "is only being recorded. Capture on a stream created with "
                        "cudaStreamNonBlocking");
      return cudaErrorStreamCaptureImplicit;
    }
  }
  return cudaSuccess;
}

cudaError_t check_stream_wait(Stream& s, const char* call) {
  std::lock_guard<std::mutex> lock(g_captures_mu);
  if (s.capture != nullptr) {
    invalidate(s.capture, std::string(call) + " on a capturing stream: its work is being "
                                              "recorded, not run, so there is nothing to wait for");
    return cudaErrorStreamCaptureUnsupported;
  }
  if (is_legacy(s)) {
    if (Capture* c = blocking_capture_on(s.device); c != nullptr) {
      invalidate(c, std::string(call) + " on the legacy stream while a blocking stream of cuda:" +
                        std::to_string(s.device) + " captures");
      return cudaErrorStreamCaptureImplicit;
    }
  }
  return cudaSuccess;
}

cudaError_t check_device_wait(int device, const char* call) {
  std::lock_guard<std::mutex> lock(g_captures_mu);
  bool forbidden = false;
  for (Capture* c : g_captures) {
    if (c->origin->device != device || c->mode == cudaStreamCaptureModeRelaxed) continue;
    forbidden = true;
    invalidate(c, std::string(call) + " while a stream of cuda:" + std::to_string(device) +
                      " captures: the device's work is partly being recorded, not run");
  }
  return forbidden ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

namespace {

// Runs a graph's nodes in order on `stream`; stops at the first that fails and returns its error
// (its report names the node).
cudaError_t replay(const std::vector<GraphNode>& nodes, cudaStream_t stream) {
  const ReplayPosition saved = tls_replay;
  cudaError_t result = cudaSuccess;
  for (size_t i = 0; i < nodes.size() && result == cudaSuccess; ++i) {
    tls_replay = ReplayPosition{static_cast<int64_t>(i), static_cast<int64_t>(nodes.size())};
    result = nodes[i].run(stream);
  }
  tls_replay = saved;
  return result;
}

}  // namespace

}  // namespace ember::emu::detail

// ---- the launch path (declared in device.h) ---------------------------------------------------------

namespace ember::emu {

LaunchDisposition launch_disposition(const LaunchConfig& config) {
  Globals& g = globals();
  if (g.devices.empty()) return LaunchDisposition::Run;  // run_grid reports cudaErrorNoDevice
  if (config.stream == nullptr && current_device_index() >= static_cast<int>(g.devices.size()))
    return LaunchDisposition::Run;
  Stream& s = stream_object(config.stream);
  Device& d = *g.devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  {
    std::lock_guard<std::mutex> cl(g_captures_mu);
    if (s.capture == nullptr && !(is_legacy(s) && blocking_capture_on(s.device) != nullptr))
      return async_mode() ? LaunchDisposition::Queue : LaunchDisposition::Run;
  }
  if (s.capture == nullptr && async_mode()) return LaunchDisposition::Queue;
  if (s.capture != nullptr) {
    std::string why;
    const cudaError_t bad = check_config(config, &why);
    if (bad != cudaSuccess) {
      std::lock_guard<std::mutex> cl(g_captures_mu);
      invalidate(s.capture, "launch of " + std::string(config.kernel) + " at " +
                                relative_path(config.file) + ":" + std::to_string(config.line) +
                                " during capture: " + why);
      set_last_error(bad);
      return LaunchDisposition::Refused;
    }
    return LaunchDisposition::Record;
  }
  const cudaError_t e = capture_or_run(s, config.kernel, nullptr);  // the legacy-stream rule
  set_last_error(e);
  return LaunchDisposition::Refused;
}

void record_launch(const LaunchConfig& config, std::function<cudaError_t(cudaStream_t)> replay) {
  Stream& s = stream_object(config.stream);
  Device& d = *globals().devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  GraphNode node{"kernel " + std::string(config.kernel) + " (launched at " +
                     relative_path(config.file) + ":" + std::to_string(config.line) + ")",
                 std::move(replay)};
  const cudaError_t e = capture_or_run(s, config.kernel, &node);
  if (e == kRecorded) return;
  if (e != cudaSuccess) {
    set_last_error(e);
    return;
  }
  node.run(config.stream);  // the capture ended between the two calls: an ordinary launch
}

}  // namespace ember::emu

// =====================================================================================================
// The CUDA runtime API: capture and graphs
// =====================================================================================================

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (globals().devices.empty()) return fail(cudaErrorNoDevice);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return fail(cudaErrorInvalidValue);
  if (stream == nullptr) {
    publish_report("ember emulator: cudaStreamBeginCapture on the legacy stream: the legacy "
                   "stream cannot be captured. Create a stream (cudaStreamCreateWithFlags(&s, "
                   "cudaStreamNonBlocking)), capture on it, and launch the graph on any stream");
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  Stream& s = stream_object(stream);
  Device& d = *globals().devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  std::lock_guard<std::mutex> cl(g_captures_mu);
  if (s.capture != nullptr) {
    publish_report("ember emulator: cudaStreamBeginCapture on a stream that is already "
                   "capturing: end that capture first");
    return fail(cudaErrorIllegalState);
  }
  if (!async_mode()) drain(s);  // copies deferred before the capture are not part of it
  auto* c = new Capture();
  c->origin = &s;
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  s.capture = c;
  g_captures.push_back(c);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (graph == nullptr) return fail(cudaErrorInvalidValue);
  *graph = nullptr;
  if (globals().devices.empty()) return fail(cudaErrorNoDevice);
  if (stream == nullptr) return fail(cudaErrorIllegalState);  // the legacy stream never captures
  Stream& s = stream_object(stream);
  Device& d = *globals().devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  std::unique_ptr<Capture> c;
  {
    std::lock_guard<std::mutex> cl(g_captures_mu);
    if (s.capture == nullptr) {
      publish_report("ember emulator: cudaStreamEndCapture on a stream that is not capturing");
      return fail(cudaErrorIllegalState);
    }
    if (s.capture->mode != cudaStreamCaptureModeRelaxed &&
        s.capture->thread != std::this_thread::get_id()) {
      publish_report("ember emulator: cudaStreamEndCapture from another thread than the one that "
                     "began the capture (only a cudaStreamCaptureModeRelaxed capture may be "
                     "ended elsewhere); the capture goes on");
      return fail(cudaErrorStreamCaptureWrongThread);
    }
    c.reset(s.capture);
    s.capture = nullptr;
    g_captures.erase(std::find(g_captures.begin(), g_captures.end(), c.get()));
  }
  if (c->invalidated) return fail(cudaErrorStreamCaptureInvalidated);
  auto* g = new CUgraph_st();
  g->device = s.device;
  g->nodes = std::move(c->nodes);
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  if (globals().devices.empty()) return fail(cudaErrorNoDevice);
  Stream& s = stream_object(stream);
  std::lock_guard<std::mutex> cl(g_captures_mu);
  if (is_legacy(s) && blocking_capture_on(s.device) != nullptr) {
    return fail(cudaErrorStreamCaptureImplicit);  // the capture itself is not invalidated
  }
  *status = s.capture == nullptr      ? cudaStreamCaptureStatusNone
            : s.capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                     : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return fail(cudaErrorInvalidValue);
  const cudaStreamCaptureMode m = *mode;
  if (m != cudaStreamCaptureModeGlobal && m != cudaStreamCaptureModeThreadLocal &&
      m != cudaStreamCaptureModeRelaxed)
    return fail(cudaErrorInvalidValue);
  *mode = tls_mode;
  tls_mode = m;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (exec == nullptr || graph == nullptr || flags != 0) return fail(cudaErrorInvalidValue);
  auto* e = new CUgraphExec_st();
  e->device = graph->device;
  e->nodes = std::make_shared<const std::vector<GraphNode>>(graph->nodes);
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return fail(cudaErrorInvalidValue);
  Globals& g = globals();
  if (g.devices.empty()) return fail(cudaErrorNoDevice);
  Stream& s = stream_object(stream);
  if (s.device != exec->device) {
    publish_report("ember emulator: cudaGraphLaunch of a graph of cuda:" +
                   std::to_string(exec->device) + " on a stream of cuda:" +
                   std::to_string(s.device) + ": a graph runs on the device it was captured on");
    return fail(cudaErrorInvalidValue);
  }
  Device& d = *g.devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  // Launched into a capture, the graph becomes one node of the new graph.
  const std::shared_ptr<const std::vector<GraphNode>> nodes = exec->nodes;
  GraphNode child{"a graph of " + std::to_string(nodes->size()) + " nodes",
                  [nodes](cudaStream_t on) { return replay(*nodes, on); }};
  const cudaError_t e = capture_or_run(s, "cudaGraphLaunch", &child);
  if (e == kRecorded) return cudaSuccess;
  if (e != cudaSuccess) return fail(e);
  count_graph_launch();
  if (async_mode()) {  // the whole replay is one operation of the stream
    if (const cudaError_t sticky = sticky_error(s.device); sticky != cudaSuccess) {
      adopt_report(sticky_report(s.device));
      return fail(sticky);
    }
    enqueue(s, "cudaGraphLaunch of " + child.what, __builtin_return_address(0),
            [nodes, stream] { return replay(*nodes, stream); });
    return cudaSuccess;
  }
  drain(s);
  const cudaError_t r = replay(*nodes, stream);
  return r == cudaSuccess ? cudaSuccess : fail(r);
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (graph == nullptr || count == nullptr) return fail(cudaErrorInvalidValue);
  if (nodes != nullptr) {
    // The handles are the nodes' addresses; the emulator offers no node-level API on them.
    const size_t n = std::min(*count, graph->nodes.size());
    for (size_t i = 0; i < n; ++i) nodes[i] = reinterpret_cast<cudaGraphNode_t>(&graph->nodes[i]);
  }
  *count = graph->nodes.size();
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (exec == nullptr) return fail(cudaErrorInvalidValue);
  delete exec;  // a replay in flight holds its own reference to the nodes
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (graph == nullptr) return fail(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}
