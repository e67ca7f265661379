// ember/distributed/backend.h — what the process group (distributed/process_group.cpp) hands an engine, and
// what it gets back. Internal to ember::distributed.
//
//   ProcessGroup::all_reduce_async(t)  checks the arguments on this rank, numbers the call,
//        │                             picks the engine by t's device (and stages a CUDA tensor
//        ▼                             through the host when MPI must move it)
//   Backend::start(call)               MPI: queued for the group's communication thread
//                                      (distributed/mpi_backend.cpp); NCCL: enqueued on the NCCL
//                                      stream, watched by a watchdog (distributed/nccl_backend.cpp)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "distributed/process_group.h"

namespace ember::distributed {

enum class CollectiveKind : int { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Barrier };
const char* collective_name(CollectiveKind kind);  // "all_reduce", ...

// What every rank states about a collective before it runs, as 16 int64 so that one message
// carries it: the ranks must agree on everything but seq (which is shown in messages).
struct Signature {
  static constexpr int kLength = 16;
  static constexpr int kMaxDims = 8;  // dims past the 8th are compared through numel
  int64_t v[kLength] = {};
  // v: seq, kind, op, root, dtype, device type, ndim, numel, shape[0..7]
  bool same_call(const Signature& o) const;  // everything but seq equal
  // "all_reduce(sum) of float32 [1024]", "broadcast from rank 0 of float32 [10]", "barrier"
  std::string str() const;
};

namespace detail {

struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::Barrier;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  Tensor input;   // contiguous, on the device the backend takes
  Tensor output;  // the same tensor for all_reduce and broadcast
  uint64_t seq = 0;  // 1, 2, ...: the #number in messages
  std::string label;
  Signature signature() const;
  // "all_reduce #12 (avg, float32 [1024], DDP bucket 1)"
  std::string description() const;
};

// Ends this process after a failure no exception can undo (a timeout: MPI cannot cancel what is
// in flight): prints "ember.dist: rank R of N: <message>" to stderr and exits with status 3.
[[noreturn]] void fatal(const std::string& message);
// What the SIGTERM handler reports this rank was doing ("in all_reduce #12 (...)").
void set_activity(const std::string& activity);
// The rank and size fatal() and the SIGTERM handler print.
void set_identity(int rank, int size);

}  // namespace detail

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Starts a collective whose tensors this backend takes; returns at once.
  virtual WorkHandle start(detail::CollectiveCall call) = 0;
  // Finishes what was started and releases the engine.
  virtual void shutdown() = 0;
};

// A Work that is already complete (the group of one, and zero-size tensors).
WorkHandle completed_work(std::string description);

// ---- the engines ------------------------------------------------------------------------------
struct MpiInfo {
  int rank = 0, size = 1;
};
// Starts MPI (MPI_Init_thread on the communication thread it creates) and returns the backend;
// `info` gets the rank and size MPI reports.
std::unique_ptr<Backend> make_mpi_backend(const ProcessGroupOptions& options, MpiInfo* info);
// Sends `bytes` from rank 0 to every rank over MPI, before any collective (the NCCL id).
void mpi_broadcast_bytes(Backend& mpi, void* bytes, size_t n);
// The group of one process: every collective is complete at once.
std::unique_ptr<Backend> make_self_backend();

// The NCCL communicator of this rank on `device` (real CUDA builds with NCCL; elsewhere throws
// DistError). `exchange_id` takes rank 0's 128-byte ncclUniqueId to every rank. `checker`, when
// given (launched by mpirun), compares each collective across ranks first, as for MPI.
std::unique_ptr<Backend> make_nccl_backend(const ProcessGroupOptions& options, int rank, int size,
                                           int device,
                                           const std::function<void(void*, size_t)>& exchange_id,
                                           Backend* checker);
// Runs only the cross-rank comparison of `call` on the MPI communication thread and waits for
// it: an empty string when the ranks agree, else the DistError message (a rank that never
// arrives ends the process as for any collective).
std::string mpi_check_only(Backend& mpi, const detail::CollectiveCall& call);

}  // namespace ember::distributed
