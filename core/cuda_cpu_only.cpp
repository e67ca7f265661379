// Built only when ember has no CUDA backend (EMBER_CUDA=OFF, or AUTO without nvcc). The CUDA
// build replaces this file with kernels/cuda/*.cu.
//
// Every question about GPUs gets the answer "none", and everything that would need one raises
// a DeviceError that says how to get a CUDA build. The kernels::cuda entry points exist so that
// op cards can name them unconditionally; they are unreachable in practice (no CUDA tensor can
// be created without the CUDA allocator) but still fail loudly rather than silently.
#include <string>

#include "core/cuda.h"
#include "core/cuda_graph.h"
#include "kernels/base/error.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/index.h"
#include "kernels/cuda/optim.h"
#include "kernels/cuda/pool.h"
#include "kernels/cuda/random.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/softmax.h"

namespace ember {

namespace {
const char* const kNotBuilt =
    "ember was built without CUDA (reconfigure with -DEMBER_CUDA=ON on a machine with the CUDA "
    "toolkit, or with -DEMBER_CUDA=EMULATE to run the CUDA kernels on the CPU)";

[[noreturn]] void not_built(const char* what) {
  throw DeviceError(std::string(what) + ": " + kNotBuilt + ". Use device \"cpu\"");
}
}  // namespace

namespace cuda {

bool is_built() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
const char* unavailable_reason() { return kNotBuilt; }

int current_device() { not_built("cuda::current_device"); }
void set_device(int) { not_built("cuda::set_device"); }
void synchronize(int) { not_built("cuda::synchronize"); }
DeviceGuard::DeviceGuard(int index) {
  if (index >= 0) not_built("cuda::DeviceGuard");
}
DeviceGuard::DeviceGuard(Device device) : DeviceGuard(device.is_cuda() ? 0 : -1) {}
DeviceGuard::~DeviceGuard() = default;
Device resolve(Device device) {
  if (device.is_cuda()) not_built(("cannot place a tensor on " + device.str()).c_str());
  return device;
}
DeviceProperties get_device_properties(int) { not_built("cuda::get_device_properties"); }
int driver_version() { return 0; }
int runtime_version() { return 0; }
const char* built_architectures() { return ""; }
bool device_supported(int, std::string* why) {
  if (why) *why = kNotBuilt;
  return false;
}
int64_t memory_allocated(int) { not_built("cuda::memory_allocated"); }
int64_t memory_reserved(int) { not_built("cuda::memory_reserved"); }
int64_t max_memory_allocated(int) { not_built("cuda::max_memory_allocated"); }
void reset_peak_memory_stats(int) { not_built("cuda::reset_peak_memory_stats"); }
void empty_cache() {}
AllocatorStats allocator_stats(int) { not_built("cuda::allocator_stats"); }
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }
namespace {
GemmBackend g_gemm_backend = GemmBackend::Cublas;  // recorded; there is no CUDA matmul to steer
}  // namespace
void set_gemm_backend(GemmBackend backend) { g_gemm_backend = backend; }
GemmBackend gemm_backend() { return g_gemm_backend; }
const char* gemm_backend_name(GemmBackend backend) {
  return backend == GemmBackend::Cublas ? "cublas" : "ember";
}
bool is_emulated() { return false; }
void copy_bytes(void*, Device, const void*, Device, size_t, bool) { not_built("copy to or from a GPU"); }
namespace detail {
Allocator* device_allocator() { return nullptr; }
Allocator* pinned_allocator() { return nullptr; }
}  // namespace detail

// CUDA graphs: the class exists, and says it needs a CUDA build.
struct CUDAGraph::Impl {};
CUDAGraph::CUDAGraph() : impl_(std::make_unique<Impl>()) {}
CUDAGraph::~CUDAGraph() = default;
void CUDAGraph::capture_begin() { not_built("CUDAGraph::capture_begin (CUDA graphs)"); }
void CUDAGraph::capture_end() { not_built("CUDAGraph::capture_end (CUDA graphs)"); }
void CUDAGraph::abandon_capture() {}
void CUDAGraph::replay() { not_built("CUDAGraph::replay (CUDA graphs)"); }
void CUDAGraph::reset() {}
bool CUDAGraph::captured() const { return false; }
bool CUDAGraph::capturing() const { return false; }
int CUDAGraph::device() const { return -1; }
int64_t CUDAGraph::num_nodes() const { return 0; }
int64_t CUDAGraph::pool_reserved() const { return 0; }
bool CUDAGraph::pool_owns(const void*) const { return false; }
void capture(CUDAGraph& graph, const std::function<void()>&) { graph.capture_begin(); }
bool is_capturing() { return false; }

}  // namespace cuda

namespace kernels::cuda {

void unary(UnaryOp, DType, const StridedLoop<2>&, void*, const void*, double) { not_built("unary"); }
void binary(BinaryOp, DType, const StridedLoop<3>&, void*, const void*, const void*, double) {
  not_built("binary");
}
void compare(CompareOp, DType, const StridedLoop<3>&, bool*, const void*, const void*) {
  not_built("compare");
}
void where(DType, const StridedLoop<4>&, void*, const bool*, const void*, const void*) { not_built("where"); }
void copy(DType, DType, const StridedLoop<2>&, void*, const void*) { not_built("copy"); }
void fill(DType, const StridedLoop<1>&, void*, double) { not_built("fill"); }
void arange(DType, void*, int64_t, double, double) { not_built("arange"); }
void reduce_sum(DType, int64_t, int64_t, int64_t, const void*, void*, double) { not_built("sum"); }
void reduce_prod(DType, int64_t, int64_t, int64_t, const void*, void*) { not_built("prod"); }
void reduce_prod_backward(DType, int64_t, int64_t, int64_t, const void*, const void*, void*) {
  not_built("prod backward");
}
void reduce_max_min(MaxMin, DType, int64_t, int64_t, int64_t, const void*, void*, int64_t*) {
  not_built("max/min");
}
void reduce_max_min_backward(DType, int64_t, int64_t, int64_t, const void*, const int64_t*, void*) {
  not_built("max/min backward");
}
void softmax_forward(DType, bool, int64_t, int64_t, int64_t, const void*, void*) { not_built("softmax"); }
void softmax_backward(DType, bool, int64_t, int64_t, int64_t, const void*, const void*, void*) {
  not_built("softmax backward");
}
void cross_entropy_forward(DType, int64_t, int64_t, int64_t, const void*, const int64_t*, const void*,
                           int64_t, void*, void*, int, void*, void*) {
  not_built("cross_entropy");
}
void cross_entropy_backward(DType, int64_t, int64_t, int64_t, const void*, const int64_t*, const void*,
                            int64_t, const void*, const void*, int64_t, const void*, void*) {
  not_built("cross_entropy backward");
}
int64_t first_out_of_range(const int64_t*, int64_t, int64_t, bool, int64_t) { not_built("index check"); }
void gather(DType, const StridedLoop<3>&, int64_t, const int64_t[3], void*, const int64_t*, const void*) {
  not_built("gather");
}
void scatter_add(DType, const StridedLoop<3>&, int64_t, const int64_t[3], void*, const int64_t*,
                 const void*) {
  not_built("scatter_add");
}
void index_select(DType, int64_t, int64_t, int64_t, const void*, const int64_t*, int64_t, void*) {
  not_built("index_select");
}
void index_add(DType, int64_t, int64_t, int64_t, void*, const int64_t*, int64_t, const void*) {
  not_built("index_add");
}
void gemm(DType, bool, bool, int64_t, int64_t, int64_t, double, const void*, int64_t, const void*,
          int64_t, double, void*, int64_t) {
  not_built("matmul");
}
void gemm_batched(DType, bool, bool, int64_t, int64_t, int64_t, double, const void*, int64_t, int64_t,
                  const void*, int64_t, int64_t, double, void*, int64_t, int64_t, int64_t) {
  not_built("batched matmul");
}
void uniform(DType, void*, int64_t, uint64_t, uint64_t, double, double) { not_built("rand"); }
void normal(DType, void*, int64_t, uint64_t, uint64_t, double, double) { not_built("randn"); }
void randint(int64_t*, int64_t, uint64_t, uint64_t, int64_t, int64_t) { not_built("randint"); }
void sgd_step(DType, const ParamList&, const std::vector<void*>&, const SGDStep&) { not_built("SGD step"); }
void adam_step(DType, const ParamList&, const std::vector<void*>&, const std::vector<void*>&,
               const std::vector<void*>&, const AdamStep&) {
  not_built("Adam step");
}

void conv2d_forward(DType, const ConvGeometry&, const void*, const void*, const void*, void*, ConvAlgo) {
  not_built("conv2d");
}
void conv2d_backward_input(DType, const ConvGeometry&, const void*, const void*, void*, ConvAlgo) {
  not_built("conv2d backward");
}
void conv2d_backward_weight(DType, const ConvGeometry&, const void*, const void*, void*, void*,
                            ConvAlgo) {
  not_built("conv2d backward");
}
bool cudnn_built() { return false; }
void set_conv_column_budget(int64_t) {}
void max_pool2d_forward(DType, const PoolGeometry&, const void*, void*, int64_t*) { not_built("max_pool2d"); }
void max_pool2d_backward(DType, const PoolGeometry&, const void*, const int64_t*, void*) {
  not_built("max_pool2d backward");
}
void avg_pool2d_forward(DType, const PoolGeometry&, const void*, void*) { not_built("avg_pool2d"); }
void avg_pool2d_backward(DType, const PoolGeometry&, const void*, void*) { not_built("avg_pool2d backward"); }

}  // namespace kernels::cuda
}  // namespace ember
