// ember/core/cuda_graph.cpp — core/cuda_graph.h's CUDAGraph on top of the CUDA backend's
// DeviceRuntime table (kernels/device_runtime.h). The graph itself — its side stream, the
// capture, the executable graph and its private memory pool — lives in kernels/cuda/graph.cu;
// a CUDAGraph holds an opaque handle to it.
//
// In a CPU-only build there is no table and no handle: the class exists all the same, and every
// member that would need a GPU raises a DeviceError saying that ember was built without CUDA.
#include "core/cuda_graph.h"

#include "kernels/base/error.h"
#include "kernels/device_runtime.h"

namespace ember::cuda {

namespace detail {
// Defined in core/cuda.cpp: the runtime table (nullptr in a CPU-only build), and the error of
// everything that needs it there.
const kernels::DeviceRuntime* runtime();
[[noreturn]] void not_built(const char* what);
}  // namespace detail

struct CUDAGraph::Impl {
  kernels::DeviceGraph* graph = nullptr;  // kernels/cuda/graph.cu's; nullptr without CUDA
};

namespace {
kernels::GraphInfo info_of(const kernels::DeviceGraph* graph) {
  return graph != nullptr ? detail::runtime()->graph_info(graph) : kernels::GraphInfo{};
}
}  // namespace

CUDAGraph::CUDAGraph() : impl_(std::make_unique<Impl>()) {
  if (detail::runtime() != nullptr) impl_->graph = detail::runtime()->graph_create();
}

CUDAGraph::~CUDAGraph() {
  // Ends a capture still underway and resets; errors are ignored there (graph.cu).
  if (impl_->graph != nullptr) detail::runtime()->graph_destroy(impl_->graph);
}

void CUDAGraph::capture_begin() {
  if (impl_->graph == nullptr) detail::not_built("CUDAGraph::capture_begin (CUDA graphs)");
  detail::runtime()->graph_capture_begin(impl_->graph);
}

void CUDAGraph::capture_end() {
  if (impl_->graph == nullptr) detail::not_built("CUDAGraph::capture_end (CUDA graphs)");
  detail::runtime()->graph_capture_end(impl_->graph);
}

void CUDAGraph::abandon_capture() {
  if (impl_->graph != nullptr) detail::runtime()->graph_abandon_capture(impl_->graph);
}

void CUDAGraph::replay() {
  if (impl_->graph == nullptr) detail::not_built("CUDAGraph::replay (CUDA graphs)");
  detail::runtime()->graph_replay(impl_->graph);
}

void CUDAGraph::reset() {
  if (impl_->graph != nullptr) detail::runtime()->graph_reset(impl_->graph);
}

bool CUDAGraph::captured() const { return info_of(impl_->graph).captured; }
bool CUDAGraph::capturing() const { return info_of(impl_->graph).capturing; }
int CUDAGraph::device() const { return info_of(impl_->graph).device; }
int64_t CUDAGraph::num_nodes() const { return info_of(impl_->graph).nodes; }
int64_t CUDAGraph::pool_reserved() const { return info_of(impl_->graph).pool_reserved; }
bool CUDAGraph::pool_owns(const void* ptr) const {
  return impl_->graph != nullptr && detail::runtime()->graph_pool_owns(impl_->graph, ptr);
}

void capture(CUDAGraph& graph, const std::function<void()>& step) {
  graph.capture_begin();  // in a CPU-only build, the "built without CUDA" error
  try {
    step();
  } catch (...) {
    graph.abandon_capture();
    throw;
  }
  graph.capture_end();
}

bool is_capturing() { return detail::runtime() != nullptr && detail::runtime()->is_capturing(); }

}  // namespace ember::cuda
