// ember/distributed/process_group.cpp — how a process finds its group, and what every collective
// checks before an engine (distributed/mpi_backend.cpp, distributed/nccl_backend.cpp) moves a byte.
#include "distributed/process_group.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "core/cuda.h"
#include "distributed/backend.h"
#include "distributed/rendezvous.h"

namespace ember::distributed {

// ---- names and signatures -------------------------------------------------------------------

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "?";
}

bool Signature::same_call(const Signature& o) const {
  for (int i = 1; i < kLength; ++i)
    if (v[i] != o.v[i]) return false;
  return true;
}

namespace {
// A call's tensor, as a signature shows it: "float32 [64, 10] (cpu)".
std::string tensor_text(int64_t dtype, int64_t device, int64_t ndim, const int64_t* shape, int64_t numel) {
  std::ostringstream os;
  os << dtype_name(static_cast<DType>(dtype)) << " [";
  for (int64_t d = 0; d < std::min<int64_t>(ndim, Signature::kMaxDims); ++d) os << (d ? ", " : "") << shape[d];
  if (ndim > Signature::kMaxDims) os << ", ... (" << numel << " elements)";
  os << "] (" << (device == 1 ? "cuda" : "cpu") << ")";
  return os.str();
}
}  // namespace

std::string Signature::str() const {
  const auto kind = static_cast<CollectiveKind>(v[1]);
  std::ostringstream os;
  os << collective_name(kind);
  if (kind == CollectiveKind::Barrier) return os.str();
  if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter)
    os << "(" << reduce_op_name(static_cast<ReduceOp>(v[2])) << ")";
  if (kind == CollectiveKind::Broadcast) os << " from rank " << v[3];
  os << " of " << tensor_text(v[4], v[5], v[6], v + 8, v[7]);
  return os.str();
}

namespace detail {

Signature CollectiveCall::signature() const {
  Signature s;
  s.v[0] = static_cast<int64_t>(seq);
  s.v[1] = static_cast<int64_t>(kind);
  s.v[2] = kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter
               ? static_cast<int64_t>(op) : 0;
  s.v[3] = kind == CollectiveKind::Broadcast ? root : 0;
  if (input.defined()) {
    s.v[4] = static_cast<int64_t>(input.dtype());
    s.v[5] = input.is_cuda() ? 1 : 0;
    s.v[6] = input.dim();
    s.v[7] = input.numel();
    for (int64_t d = 0; d < std::min<int64_t>(input.dim(), Signature::kMaxDims); ++d)
      s.v[8 + d] = input.size(d);
  }
  return s;
}

std::string CollectiveCall::description() const {
  std::ostringstream os;
  os << collective_name(kind) << " #" << seq;
  std::string inner;
  if (kind != CollectiveKind::Barrier && input.defined()) {
    const Signature s = signature();
    if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter)
      inner = std::string(reduce_op_name(op)) + ", ";
    if (kind == CollectiveKind::Broadcast) inner = "from rank " + std::to_string(root) + ", ";
    inner += tensor_text(s.v[4], s.v[5], s.v[6], s.v + 8, s.v[7]);
  }
  if (!label.empty()) inner += (inner.empty() ? "" : ", ") + label;
  if (!inner.empty()) os << " (" << inner << ")";
  return os.str();
}

// ---- ending a rank that cannot go on ----------------------------------------------------------

namespace {
char g_identity[64] = "ember.dist: ";
// Two buffers: set_activity writes the one the handler is not reading, then flips g_active.
char g_activity[2][512] = {{"before any collective"}, {"before any collective"}};
std::atomic<int> g_active{0};
std::mutex g_activity_mu;

void write_all(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// mpirun stops the other ranks with SIGTERM when one dies: say where this one was.
void on_sigterm(int) {
  write_all(g_identity);
  write_all("stopped by SIGTERM ");
  write_all(g_activity[g_active.load()]);
  write_all(". Under mpirun this means that another rank ended first (mpirun's message names "
            "it) or that the job was cancelled\n");
  _exit(143);
}
}  // namespace

// Only where nobody else handles SIGTERM.
void install_sigterm_handler() {
  struct sigaction old {};
  if (sigaction(SIGTERM, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) std::signal(SIGTERM, on_sigterm);
}

void set_identity(int rank, int size) {
  std::snprintf(g_identity, sizeof g_identity, "ember.dist: rank %d of %d: ", rank, size);
}

void set_activity(const std::string& activity) {
  std::lock_guard<std::mutex> lock(g_activity_mu);
  const int next = 1 - g_active.load();
  std::strncpy(g_activity[next], activity.c_str(), sizeof g_activity[next] - 1);
  g_activity[next][sizeof g_activity[next] - 1] = 0;
  g_active.store(next);
}

void fatal(const std::string& message) {
  std::fflush(stdout);
  write_all(g_identity);
  write_all(message.c_str());
  write_all("\n");
  std::_Exit(3);
}

}  // namespace detail

// ---- finished works and the group of one ------------------------------------------------------

namespace {

class DoneWork final : public Work {
 public:
  explicit DoneWork(std::string d) : desc_(std::move(d)) {}
  void wait() override {}
  bool is_completed() override { return true; }
  std::string description() const override { return desc_; }

 private:
  std::string desc_;
};

class SelfBackend final : public Backend {
 public:
  std::string name() const override { return "self"; }
  WorkHandle start(detail::CollectiveCall call) override {
    // One rank: its tensor is already the sum, average, max, min and broadcast of all ranks.
    if (call.kind == CollectiveKind::AllGather || call.kind == CollectiveKind::ReduceScatter)
      call.output.copy_(call.input.reshape(call.output.shape()));
    return completed_work(call.description());
  }
  void shutdown() override {}
};

// A CUDA tensor moved by MPI: the engine works on a host copy; wait() copies the result back.
class StagedWork final : public Work {
 public:
  StagedWork(WorkHandle inner, Tensor host_out, Tensor device_out)
      : inner_(std::move(inner)), host_out_(std::move(host_out)), device_out_(std::move(device_out)) {}
  void wait() override {
    inner_->wait();
    if (device_out_.defined()) {
      device_out_.copy_(host_out_);
      device_out_ = Tensor();
      host_out_ = Tensor();
    }
  }
  bool is_completed() override { return inner_->is_completed() && !device_out_.defined(); }
  std::string description() const override { return inner_->description(); }

 private:
  WorkHandle inner_;
  Tensor host_out_, device_out_;
};

}  // namespace

WorkHandle completed_work(std::string description) {
  return std::make_shared<DoneWork>(std::move(description));
}

std::unique_ptr<Backend> make_self_backend() { return std::make_unique<SelfBackend>(); }

bool mpi_is_built() { return true; }

// ---- the group ---------------------------------------------------------------------------------

ProcessGroup::~ProcessGroup() { shutdown(); }

void ProcessGroup::shutdown() {
  if (nccl_) nccl_->shutdown();
  if (mpi_) mpi_->shutdown();
}

Device ProcessGroup::device() const {
  if (!cuda::is_available()) return Device::cpu();
  return Device::cuda(local_rank_ % cuda::device_count());
}

Backend* ProcessGroup::backend_for(Device device) const {
  if (device.is_cuda() && nccl_) return nccl_.get();
  if (mpi_) return mpi_.get();
  if (self_) return self_.get();
  throw DistError(ember::detail::concat(
      "dist: rank ", rank_, " of ", size_, " has no engine for ", device.is_cuda() ? "CUDA" : "CPU",
      " tensors: the ranks were started without mpirun (from RANK/WORLD_SIZE), so only NCCL "
      "connects them, and NCCL moves CUDA tensors only. Move the tensor to the GPU, or start the "
      "ranks with mpirun -np N"));
}

std::string ProcessGroup::backend_name(Device device) const {
  const Backend* b = backend_for(device);
  if (b == mpi_.get() && device.is_cuda()) return "mpi (staged through host memory)";
  return b->name();
}

WorkHandle ProcessGroup::start(detail::CollectiveCall call) {
  call.seq = ++seq_;
  const Device device = call.input.defined() ? call.input.device() : Device::cpu();
  Backend* b = backend_for(device);
  if (b == mpi_.get() && device.is_cuda()) {
    // MPI reads and writes host memory: copy in now, copy the result back in wait().
    const Tensor device_out = call.output;
    const bool in_place = call.output.is_same(call.input);
    call.input = call.input.cpu();
    call.output = in_place ? call.input : empty(call.output.shape(), call.output.dtype());
    const Tensor host_out = call.output;
    return std::make_shared<StagedWork>(b->start(std::move(call)), host_out, device_out);
  }
  return b->start(std::move(call));
}

namespace {

void check_tensor(const char* what, const char* name, const Tensor& t) {
  EMBER_CHECK_T(DistError, t.defined(), "dist: ", what, ": the ", name, " tensor is undefined");
  EMBER_CHECK_T(DistError, t.is_contiguous(), "dist: ", what, ": the ", name, " tensor (shape ",
                shape_str(t.shape()), ", strides ", shape_str(t.strides()),
                ") is not contiguous: pass t.contiguous() and copy the result back");
}

void check_avg(const char* what, const Tensor& t, ReduceOp op) {
  EMBER_CHECK_T(DistError, op != ReduceOp::Avg || is_floating(t.dtype()), "dist: ", what,
                ": avg needs a floating dtype, the tensor is ", t.dtype(),
                ": use sum and divide, or convert with .to(kFloat64)");
}

void check_pair(const char* what, const Tensor& output, const Tensor& input) {
  EMBER_CHECK_T(DistError, output.dtype() == input.dtype() && output.device() == input.device(),
                "dist: ", what, ": output is ", output.dtype(), " on ", output.device(),
                " but input is ", input.dtype(), " on ", input.device(), ": they must match");
}

}  // namespace

WorkHandle ProcessGroup::all_reduce_async(const Tensor& tensor, ReduceOp op, const std::string& label) {
  check_tensor("all_reduce", "", tensor);
  check_avg("all_reduce", tensor, op);
  detail::CollectiveCall c;
  c.kind = CollectiveKind::AllReduce;
  c.op = op;
  c.input = c.output = tensor;
  c.label = label;
  return start(std::move(c));
}

void ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op, const std::string& label) {
  all_reduce_async(tensor, op, label)->wait();
}

WorkHandle ProcessGroup::broadcast_async(const Tensor& tensor, int root, const std::string& label) {
  check_tensor("broadcast", "", tensor);
  EMBER_CHECK_T(DistError, root >= 0 && root < size_, "dist: broadcast: root ", root,
                " is not a rank of this group of ", size_, " (0..", size_ - 1, ")");
  detail::CollectiveCall c;
  c.kind = CollectiveKind::Broadcast;
  c.root = root;
  c.input = c.output = tensor;
  c.label = label;
  return start(std::move(c));
}

void ProcessGroup::broadcast(const Tensor& tensor, int root, const std::string& label) {
  broadcast_async(tensor, root, label)->wait();
}

WorkHandle ProcessGroup::all_gather_async(const Tensor& output, const Tensor& input,
                                          const std::string& label) {
  check_tensor("all_gather", "input", input);
  check_tensor("all_gather", "output", output);
  check_pair("all_gather", output, input);
  Shape want = input.shape();
  if (want.empty()) want = {size_};
  else want[0] *= size_;
  EMBER_CHECK_T(DistError, output.shape() == want, "dist: all_gather: the output must have shape ",
                shape_str(want), " (the input ", shape_str(input.shape()), " of each of the ",
                size_, " ranks, along dim 0), not ", shape_str(output.shape()));
  detail::CollectiveCall c;
  c.kind = CollectiveKind::AllGather;
  c.input = input;
  c.output = output;
  c.label = label;
  return start(std::move(c));
}

void ProcessGroup::all_gather(const Tensor& output, const Tensor& input, const std::string& label) {
  all_gather_async(output, input, label)->wait();
}

Tensor ProcessGroup::all_gather(const Tensor& input) {
  Shape s = input.shape();
  if (s.empty()) s = {size_};
  else s[0] *= size_;
  Tensor out = empty(s, input.options());
  all_gather(out, input);
  return out;
}

std::vector<Tensor> ProcessGroup::all_gather_list(const Tensor& input) {
  const Tensor all = all_gather(input.dim() == 0 ? input.reshape({1}) : input);
  std::vector<Tensor> parts;
  const int64_t n = input.dim() == 0 ? 1 : input.size(0);
  for (int r = 0; r < size_; ++r) parts.push_back(all.narrow(0, r * n, n).reshape(input.shape()));
  return parts;
}

WorkHandle ProcessGroup::reduce_scatter_async(const Tensor& output, const Tensor& input, ReduceOp op,
                                              const std::string& label) {
  check_tensor("reduce_scatter", "input", input);
  check_tensor("reduce_scatter", "output", output);
  check_pair("reduce_scatter", output, input);
  check_avg("reduce_scatter", input, op);
  EMBER_CHECK_T(DistError, input.dim() >= 1, "dist: reduce_scatter: the input needs a dim 0 to "
                "split among the ranks; it is 0-d");
  Shape want = input.shape();
  EMBER_CHECK_T(DistError, want[0] % size_ == 0, "dist: reduce_scatter: the input's dim 0 (",
                want[0], ") must be a multiple of the number of ranks (", size_, ")");
  want[0] /= size_;
  EMBER_CHECK_T(DistError, output.shape() == want, "dist: reduce_scatter: the output must have "
                "shape ", shape_str(want), " (the input ", shape_str(input.shape()), " split in ",
                size_, " along dim 0), not ", shape_str(output.shape()));
  detail::CollectiveCall c;
  c.kind = CollectiveKind::ReduceScatter;
  c.op = op;
  c.input = input;
  c.output = output;
  c.label = label;
  return start(std::move(c));
}

void ProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op,
                                  const std::string& label) {
  reduce_scatter_async(output, input, op, label)->wait();
}

WorkHandle ProcessGroup::barrier_async() {
  detail::CollectiveCall c;
  c.kind = CollectiveKind::Barrier;
  // A barrier goes to the engine of CPU tensors when there is one (else NCCL: an all_reduce of
  // one element on the GPU, in distributed/nccl_backend.cpp).
  if (!mpi_ && !self_ && nccl_) c.input = c.output = zeros({1}, device());
  return start(std::move(c));
}

void ProcessGroup::barrier() { barrier_async()->wait(); }

// ---- init ----------------------------------------------------------------------------------------

namespace {

std::shared_ptr<ProcessGroup> g_default;
bool g_destroyed = false;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, int fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  EMBER_CHECK(end && *end == 0 && x >= 0 && x < (1L << 30), "init_process_group: ", name, "=", v,
              " is not a rank or a count (a non-negative integer)");
  return static_cast<int>(x);
}

// Started by mpirun (OpenMPI, or an MPICH-style PMI launcher)?
bool launched_by_mpirun() {
  return env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK");
}

void exit_handler() { destroy_process_group(); }

}  // namespace

std::shared_ptr<ProcessGroup> init_process_group(const std::string& backend, ProcessGroupOptions options) {
  options.backend = backend;
  EMBER_CHECK(backend == "auto" || backend == "mpi" || backend == "nccl", "init_process_group: "
              "unknown backend '", backend, "': use \"auto\" (NCCL for CUDA tensors where built, "
              "MPI for the rest), \"mpi\" or \"nccl\"");
  EMBER_CHECK(!g_default, "init_process_group: the process group is already initialized (rank ",
              g_default ? g_default->rank() : 0, "); use distributed::default_group()");
  EMBER_CHECK(!g_destroyed, "init_process_group: called after destroy_process_group(); MPI cannot "
              "be started twice in one process");
  if (options.timeout_s <= 0) {
    options.timeout_s = 600;
    if (const char* t = env("EMBER_DIST_TIMEOUT")) {
      char* end = nullptr;
      const double s = std::strtod(t, &end);
      EMBER_CHECK(end && *end == 0 && s > 0, "init_process_group: EMBER_DIST_TIMEOUT=", t,
                  " is not a positive number of seconds");
      options.timeout_s = s;
    }
  }
  if (const char* c = env("EMBER_DIST_CHECK")) options.check_collectives = std::strcmp(c, "0") != 0;

  std::shared_ptr<ProcessGroup> pg(new ProcessGroup());
  pg->options_ = options;
  const bool mpirun = launched_by_mpirun();
  const bool torchrun = !mpirun && env("WORLD_SIZE") != nullptr;
  if (mpirun) {
    MpiInfo info;
    pg->mpi_ = make_mpi_backend(options, &info);
    pg->rank_ = info.rank;
    pg->size_ = info.size;
    pg->local_rank_ = env_int("OMPI_COMM_WORLD_LOCAL_RANK",
                              env_int("MPI_LOCALRANKID", env_int("LOCAL_RANK", info.rank)));
  } else if (torchrun) {
    pg->size_ = env_int("WORLD_SIZE", 1);
    pg->rank_ = env_int("RANK", 0);
    pg->local_rank_ = env_int("LOCAL_RANK", pg->rank_);
    EMBER_CHECK(pg->size_ >= 1 && pg->rank_ < pg->size_, "init_process_group: RANK=", pg->rank_,
                " is not below WORLD_SIZE=", pg->size_);
    EMBER_CHECK(pg->size_ == 1 || backend != "mpi", "init_process_group: the mpi backend needs "
                "ranks started by mpirun (mpirun -np ", pg->size_, " ...), but these came with "
                "RANK/WORLD_SIZE only");
  }
  if (pg->size_ == 1 && !pg->mpi_) pg->self_ = make_self_backend();

  // NCCL for CUDA tensors: asked for, or "auto" with GPUs in a build that has it.
  const bool gpus = cuda::is_available() && !cuda::is_emulated();
  EMBER_CHECK_T(DistError, backend != "nccl" || nccl_is_built(), "init_process_group: this build "
                "of ember has no NCCL backend (NCCL comes with real CUDA builds: -DEMBER_CUDA=ON "
                "with NCCL installed", cuda::is_emulated() ? "; the emulation build has none" : "",
                "); use backend \"mpi\", which also moves CUDA tensors, through host memory");
  EMBER_CHECK_T(DistError, backend != "nccl" || gpus, "init_process_group: the nccl backend needs "
                "a GPU, and this rank has none (", cuda::unavailable_reason(), ")");
  // NCCL needs a GPU of its own for each rank of a machine: "auto" with more ranks on this
  // machine than GPUs leaves CUDA tensors to MPI (staged through host memory). Asked for by
  // name, NCCL also serves a group of one, so that a one-GPU machine can run its path.
  const int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("LOCAL_WORLD_SIZE", 1));
  const bool gpu_each = gpus && local_size <= cuda::device_count();
  if (gpus && nccl_is_built() && (backend == "nccl" || (backend == "auto" && pg->size_ > 1 && gpu_each))) {
    const int device = pg->device().index;
    cuda::set_device(device);
    std::function<void(void*, size_t)> exchange;
    if (pg->size_ == 1) {
      exchange = [](void*, size_t) {};  // rank 0's id is already everyone's
    } else if (pg->mpi_) {
      exchange = [&](void* id, size_t n) { mpi_broadcast_bytes(*pg->mpi_, id, n); };
    } else {
      const char* addr = env("MASTER_ADDR");
      const char* port = env("MASTER_PORT");
      EMBER_CHECK(addr && port, "init_process_group: ranks started with RANK/WORLD_SIZE need "
                  "MASTER_ADDR and MASTER_PORT (where rank 0 hands out the NCCL id), as torchrun "
                  "sets them");
      const int port_number = env_int("MASTER_PORT", 0);
      exchange = [&](void* id, size_t n) {
        rendezvous_bytes(addr, port_number, pg->rank_, pg->size_, id, n, options.timeout_s);
      };
    }
    pg->nccl_ = make_nccl_backend(options, pg->rank_, pg->size_, device, exchange, pg->mpi_.get());
  }
  EMBER_CHECK_T(DistError, !torchrun || pg->size_ == 1 || pg->nccl_, "init_process_group: ",
                pg->size_, " ranks were started from RANK/WORLD_SIZE (not by mpirun), so only NCCL "
                "can connect them, and ", nccl_is_built() ? "this machine has no GPU for each of its "
                "ranks" : "this build of ember has no NCCL", ". Start CPU ranks with mpirun -np ", pg->size_, " instead");

  detail::set_identity(pg->rank_, pg->size_);
  detail::install_sigterm_handler();
  static bool registered = false;
  if (!registered) {
    std::atexit(exit_handler);
    registered = true;
  }
  g_default = pg;
  return pg;
}

bool is_initialized() { return static_cast<bool>(g_default); }

std::shared_ptr<ProcessGroup> default_group() {
  EMBER_CHECK(g_default, "distributed::default_group(): call distributed::init_process_group() first");
  return g_default;
}

void destroy_process_group() {
  if (!g_default) return;
  g_default->shutdown();
  g_default.reset();
  g_destroyed = true;
}

int get_rank() { return g_default ? g_default->rank() : 0; }
int get_world_size() { return g_default ? g_default->size() : 1; }

}  // namespace ember::distributed
