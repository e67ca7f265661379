// ember/distributed/nccl_backend.cpp — the NCCL engine: CUDA tensors, GPU to GPU.
//
// Compiled with NCCL in real CUDA builds only (EMBER_WITH_NCCL); the emulation build and CPU
// builds get the stub at the end, which says why there is no NCCL.
//
// Streams. ember queues every kernel on one stream per device (kernels/cuda/launch.cuh), so the
// collectives run on a stream of their own, created non-blocking so that they overlap with the
// kernels of backward instead of serializing with them:
//   ember's stream:  ... grad kernels ─► [ready] ......................... ► wait(done) ► optimizer
//   NCCL's stream:                          └─ waits ready ─► ncclAllReduce ─► [done] ─┘
// start() records `ready` on ember's stream and makes NCCL's stream wait for it (the tensor's
// producer has finished); wait() makes ember's stream wait for `done` — the host does not block,
// as in PyTorch. The tensors are held until `done` has passed, so the caching allocator cannot
// hand their memory out while NCCL still reads it.
//
// The watchdog. A thread polls every unfinished collective's `done` event and NCCL's
// asynchronous error. One that is not done within the group's timeout — a rank died, or never
// called it — ends the process with a message naming it, after ncclCommAbort (which frees the
// GPU from the stuck kernel). Before each collective the ranks compare their calls: over MPI
// when mpirun started them (which also names ranks that never arrive), else with an
// ncclAllGather of the signatures.
#include <memory>
#include <string>

#include "distributed/backend.h"

#if defined(EMBER_WITH_NCCL)

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/cuda.h"

namespace ember::distributed {
namespace {

using Clock = std::chrono::steady_clock;

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw DistError(std::string("dist (nccl): ") + what + ": " + cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess) throw DistError("dist (nccl): " + what + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int64: return ncclInt64;
    case DType::Int32: return ncclInt32;
    case DType::UInt8:
    case DType::Bool: return ncclUint8;  // bool is one byte, 0 or 1
  }
  return ncclUint8;
}

// Bool: sum and max are "any" (max of 0/1), min is "all".
ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  if (dtype == DType::Bool) return op == ReduceOp::Min ? ncclMin : ncclMax;
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
  }
  return ncclSum;
}

class NcclWork final : public Work {
 public:
  NcclWork(std::string desc, cudaEvent_t done, int device)
      : desc_(std::move(desc)), done_(done), device_(device) {}
  ~NcclWork() override { cudaEventDestroy(done_); }
  void wait() override {
    if (!error_.empty()) throw DistError(error_);
    // ember's stream (the legacy default stream) waits for the collective; the host does not.
    cuda::DeviceGuard guard(device_);
    check_cuda(cudaStreamWaitEvent(0, done_, 0), "cudaStreamWaitEvent");
  }
  bool is_completed() override { return !error_.empty() || cudaEventQuery(done_) == cudaSuccess; }
  std::string description() const override { return desc_; }
  void fail(std::string e) { error_ = std::move(e); }

 private:
  std::string desc_;
  cudaEvent_t done_;
  int device_;
  std::string error_;
};

class NcclBackend final : public Backend {
 public:
  NcclBackend(const ProcessGroupOptions& options, int rank, int size, int device,
              const std::function<void(void*, size_t)>& exchange_id, Backend* checker)
      : options_(options), rank_(rank), size_(size), device_(device), checker_(checker) {
    cuda::DeviceGuard guard(device_);
    ncclUniqueId id;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    exchange_id(&id, sizeof id);
    // ncclCommInitRank blocks until every rank has joined: a rank that never comes would hang
    // it forever, so a timer ends the process after the timeout.
    std::mutex mu;
    std::condition_variable cv;
    bool joined = false;
    std::thread timer([&] {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, std::chrono::duration<double>(options_.timeout_s), [&] { return joined; }))
        detail::fatal("ncclCommInitRank did not finish within " + std::to_string(options_.timeout_s) +
                      " s: not every one of the " + std::to_string(size_) + " ranks joined");
    });
    const ncclResult_t r = ncclCommInitRank(&comm_, size_, id, rank_);
    {
      std::lock_guard<std::mutex> lock(mu);
      joined = true;
    }
    cv.notify_all();
    timer.join();
    check_nccl(r, "ncclCommInitRank");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    watchdog_ = std::thread([this] { watch(); });
  }
  ~NcclBackend() override { shutdown(); }

  std::string name() const override { return "nccl"; }

  WorkHandle start(detail::CollectiveCall call) override {
    cuda::DeviceGuard guard(device_);
    const std::string desc = call.description();
    cudaEvent_t done;
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    auto work = std::make_shared<NcclWork>(desc, done, device_);
    const std::string mismatch = compare(call);
    if (!mismatch.empty()) {
      work->fail(mismatch);
      return work;
    }
    cudaEvent_t ready;
    check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(ready, 0), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, ready, 0), "cudaStreamWaitEvent");
    cudaEventDestroy(ready);  // destroyed once the wait has been queued: allowed
    launch(call);
    check_cuda(cudaEventRecord(done, stream_), "cudaEventRecord");
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back({work, done, Clock::now(), desc, call.input, call.output});
    }
    return work;
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    cuda::DeviceGuard guard(device_);
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }

 private:
  struct Pending {
    std::shared_ptr<NcclWork> work;
    cudaEvent_t done;
    Clock::time_point started;
    std::string desc;
    Tensor input, output;  // alive until `done`
  };

  // "" when every rank asked for the same collective; else the DistError message.
  std::string compare(const detail::CollectiveCall& call) {
    if (!options_.check_collectives || size_ == 1) return {};
    if (checker_) return mpi_check_only(*checker_, call);
    // No MPI: gather every rank's signature with NCCL itself.
    const Signature mine = call.signature();
    Tensor local = empty({Signature::kLength}, TensorOptions(kInt64).device(Device::cuda(device_)));
    Tensor all = empty({size_ * Signature::kLength}, TensorOptions(kInt64).device(Device::cuda(device_)));
    check_cuda(cudaMemcpy(local.raw_data(), mine.v, sizeof mine.v, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_nccl(ncclAllGather(local.raw_data(), all.raw_data(), Signature::kLength, ncclInt64, comm_, stream_),
               "ncclAllGather of the call signatures");
    cudaEvent_t done;
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(done, stream_), "cudaEventRecord");
    const auto until = Clock::now() + std::chrono::duration<double>(options_.timeout_s);
    while (cudaEventQuery(done) == cudaErrorNotReady) {
      if (Clock::now() > until) {
        ncclCommAbort(comm_);
        detail::fatal(call.description() + ": not every rank reached it within " +
                      std::to_string(options_.timeout_s) + " s (without mpirun NCCL cannot tell "
                      "which rank is missing: start the job with mpirun to have it named)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    cudaEventDestroy(done);
    std::vector<Signature> sigs(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r)
      check_cuda(cudaMemcpy(sigs[static_cast<size_t>(r)].v,
                            static_cast<int64_t*>(all.raw_data()) + r * Signature::kLength,
                            sizeof mine.v, cudaMemcpyDeviceToHost), "cudaMemcpy");
    bool agree = true;
    std::map<std::string, std::vector<int>> by_call;
    for (int r = 0; r < size_; ++r) {
      agree = agree && sigs[static_cast<size_t>(r)].same_call(mine);
      by_call[sigs[static_cast<size_t>(r)].str()].push_back(r);
    }
    if (agree) return {};
    std::ostringstream os;
    os << call.description() << ": the ranks disagree about this collective:";
    for (const auto& [what, ranks] : by_call) {
      os << (ranks.size() == 1 ? " rank" : " ranks");
      for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : " ") << ranks[i];
      os << " called " << what << ";";
    }
    os << " every rank must make the same collective calls, in the same order, with tensors of "
          "the same dtype and shape";
    return os.str();
  }

  void launch(const detail::CollectiveCall& call) {
    const std::string what = call.description();
    const DType dtype = call.input.defined() ? call.input.dtype() : DType::Float32;
    const ncclDataType_t type = nccl_type(dtype);
    switch (call.kind) {
      case CollectiveKind::AllReduce:
        check_nccl(ncclAllReduce(call.input.raw_data(), call.output.raw_data(),
                                 static_cast<size_t>(call.input.numel()), type, nccl_op(call.op, dtype),
                                 comm_, stream_), what);
        return;
      case CollectiveKind::Broadcast:
        check_nccl(ncclBroadcast(call.input.raw_data(), call.output.raw_data(),
                                 static_cast<size_t>(call.input.numel()), type, call.root, comm_, stream_),
                   what);
        return;
      case CollectiveKind::AllGather:
        check_nccl(ncclAllGather(call.input.raw_data(), call.output.raw_data(),
                                 static_cast<size_t>(call.input.numel()), type, comm_, stream_), what);
        return;
      case CollectiveKind::ReduceScatter:
        check_nccl(ncclReduceScatter(call.input.raw_data(), call.output.raw_data(),
                                     static_cast<size_t>(call.output.numel()), type,
                                     nccl_op(call.op, dtype), comm_, stream_), what);
        return;
      case CollectiveKind::Barrier: {
        // NCCL has no barrier: an all_reduce of one element is one.
        Tensor one = call.input.defined() ? call.input
                                          : zeros({1}, TensorOptions().device(Device::cuda(device_)));
        check_nccl(ncclAllReduce(one.raw_data(), one.raw_data(), 1, ncclFloat32, ncclSum, comm_, stream_),
                   what);
        return;
      }
    }
  }

  void watch() {
    cuda::DeviceGuard guard(device_);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_ || !pending_.empty()) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (cudaEventQuery(it->done) == cudaSuccess) {
          it = pending_.erase(it);
          continue;
        }
        const double waited = std::chrono::duration<double>(Clock::now() - it->started).count();
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm_, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          ncclCommAbort(comm_);
          detail::fatal(it->desc + ": NCCL reported " + ncclGetErrorString(async) +
                        " (a rank died, or the network failed)");
        }
        if (waited > options_.timeout_s) {
          ncclCommAbort(comm_);
          detail::fatal(it->desc + " did not finish on the GPU within " +
                        std::to_string(options_.timeout_s) + " s: a rank died or never called it");
        }
        ++it;
      }
    }
  }

  ProcessGroupOptions options_;
  int rank_, size_, device_;
  Backend* checker_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::thread watchdog_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::list<Pending> pending_;
  bool stopping_ = false;
};

}  // namespace

bool nccl_is_built() { return true; }

std::unique_ptr<Backend> make_nccl_backend(const ProcessGroupOptions& options, int rank, int size,
                                           int device,
                                           const std::function<void(void*, size_t)>& exchange_id,
                                           Backend* checker) {
  return std::make_unique<NcclBackend>(options, rank, size, device, exchange_id, checker);
}

}  // namespace ember::distributed

#else  // no NCCL in this build

namespace ember::distributed {

bool nccl_is_built() { return false; }

std::unique_ptr<Backend> make_nccl_backend(const ProcessGroupOptions&, int, int, int,
                                           const std::function<void(void*, size_t)>&, Backend*) {
  throw DistError("dist: this build of ember has no NCCL backend (NCCL comes with real CUDA builds "
                  "that find it); use the mpi backend");
}

}  // namespace ember::distributed

#endif
