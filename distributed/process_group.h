// ember/distributed/process_group.h — several processes training one model: torch.distributed's
// counterpart.
//
// A process group is the set of N processes ("ranks" 0..N-1) of one training job. Each rank
// holds its own copy of the model; the collectives below are how they agree:
//
//   all_reduce      every rank ends with the element-wise sum / average / max / min of all ranks'
//                   tensors (DistributedDataParallel averages gradients with it)
//   broadcast       every rank ends with rank `root`'s tensor (the initial weights)
//   all_gather      every rank ends with all ranks' tensors, concatenated along dim 0
//   reduce_scatter  the all_reduce of the ranks' [N*k, ...] inputs, split along dim 0: rank r
//                   keeps rows [r*k, (r+1)*k)
//   barrier         returns once every rank has entered it
//
// ember moves no bytes itself. Two existing engines do it, one per kind of tensor:
//   MPI  (OpenMPI, libopenmpi-dev)  CPU tensors, and the launcher: `mpirun -np 4 prog` starts
//                                   the ranks on one machine or, with a hostfile, on many
//   NCCL (with the CUDA toolkit)    CUDA tensors, GPU to GPU (NVLink, PCIe, InfiniBand),
//                                   in real CUDA builds only
// A CUDA tensor in a build or launch without NCCL (the emulation build, `--backend mpi`) goes
// through MPI, staged through host memory; its result is the same, only slower.
//
// No silent hangs. Before each collective the ranks compare what they were asked to do (which
// collective, reduce op, root, dtype, shape): when they disagree, every rank's call throws a
// DistError naming the collective, each rank and what it passed; the group stays usable. A rank
// that never arrives (stuck, or dead) is reported by the others after the group's timeout
// (ProcessGroupOptions::timeout_s, EMBER_DIST_TIMEOUT): the message names the collective and
// the missing ranks, and the process exits with status 3 — after a timeout MPI cannot cancel
// what is in flight, so a clean exception is impossible (PyTorch's NCCL watchdog does the same).
// When mpirun sees a rank die it stops the others at once with SIGTERM; ember then prints which
// collective the rank was in before it exits (status 143), next to mpirun's own note naming the
// rank that died.
//
//   auto group = distributed::init_process_group();          // under mpirun -np N, or torchrun's env
//   Tensor t = ones({4}) * (group->rank() + 1);
//   group->all_reduce(t);                             // every rank: 1 + 2 + ... + N
//   auto work = group->all_reduce_async(t, distributed::ReduceOp::Avg);
//   ...                                                // overlap: compute while it runs
//   work->wait();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "core/tensor.h"

namespace ember::distributed {

// A collective that failed in a way every rank saw: the ranks disagreed about it (shapes,
// dtypes, op), or an engine reported an error.
class DistError : public Error {
 public:
  using Error::Error;
};

enum class ReduceOp { Sum, Avg, Max, Min };
const char* reduce_op_name(ReduceOp op);  // "sum", "avg", "max", "min"

struct ProcessGroupOptions {
  // "auto": NCCL for CUDA tensors where this build has NCCL and every rank of a machine has a
  // GPU of its own (LOCAL_SIZE <= GPUs), MPI for everything else; "mpi": MPI for all tensors; "nccl": NCCL for CUDA tensors (an error in a
  // build without it), MPI (when launched by mpirun) for CPU tensors.
  std::string backend = "auto";
  // Seconds a rank waits in one collective for the others before it gives up (and exits).
  // A value <= 0 takes EMBER_DIST_TIMEOUT from the environment, else 600 (PyTorch's default).
  double timeout_s = 0;
  // Compare every collective across ranks before running it (one small message to rank 0 and
  // one back). Without it a mismatch may corrupt data or hang until the timeout. On by default;
  // EMBER_DIST_CHECK=0 turns it off.
  bool check_collectives = true;
};

// The handle of a collective started with an *_async call. The tensors passed to it belong to
// the collective until wait() returns: do not read or write them before.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the collective has finished on this rank and its result is in the tensors
  // (for CUDA tensors on NCCL: until the result is ordered before every later kernel).
  // Throws DistError when the collective failed (the ranks disagreed); calling it again
  // returns at once (or throws the same error again).
  virtual void wait() = 0;
  // Has the collective finished (without waiting)?
  virtual bool is_completed() = 0;
  // "all_reduce #12 (avg, float32 [1024], DDP bucket 1)".
  virtual std::string description() const = 0;
};
using WorkHandle = std::shared_ptr<Work>;

class Backend;  // distributed/backend.h: one engine (MPI, NCCL)
namespace detail {
struct CollectiveCall;  // distributed/backend.h
}

class ProcessGroup {
 public:
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's index among the ranks of its machine (OMPI_COMM_WORLD_LOCAL_RANK or LOCAL_RANK).
  int local_rank() const { return local_rank_; }
  // The device this rank should train on: cuda:<local_rank mod device count> when a GPU is
  // usable, else the CPU.
  Device device() const;
  // Which engine moves tensors of this device: "mpi", "mpi (staged through host memory)",
  // "nccl" or "self" (a group of one process: nothing to move).
  std::string backend_name(Device device) const;
  double timeout_s() const { return options_.timeout_s; }
  const ProcessGroupOptions& options() const { return options_; }

  // ---- collectives: each blocks until done; the *_async form returns at once -------------
  // `label`, when given, is added to the collective's description in messages ("DDP bucket 2").
  // Tensors must be contiguous (DistError otherwise) and of the same dtype and shape on every
  // rank. Max/min of bool are logical or/and; avg needs a floating dtype.
  void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum, const std::string& label = {});
  WorkHandle all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::Sum,
                              const std::string& label = {});
  // Every rank's `tensor` gets the values of rank `root`'s.
  void broadcast(const Tensor& tensor, int root = 0, const std::string& label = {});
  WorkHandle broadcast_async(const Tensor& tensor, int root = 0, const std::string& label = {});
  // output [size() * n0, ...] <- every rank's input [n0, ...], rank r's at rows [r*n0, (r+1)*n0)
  // (PyTorch's all_gather_into_tensor).
  void all_gather(const Tensor& output, const Tensor& input, const std::string& label = {});
  WorkHandle all_gather_async(const Tensor& output, const Tensor& input,
                              const std::string& label = {});
  // The same, returning a new tensor, or the list of each rank's tensor (PyTorch's all_gather).
  Tensor all_gather(const Tensor& input);
  std::vector<Tensor> all_gather_list(const Tensor& input);
  // output [n0, ...] <- rows [rank*n0, (rank+1)*n0) of the reduction over ranks of input
  // [size() * n0, ...] (PyTorch's reduce_scatter_tensor).
  void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum,
                      const std::string& label = {});
  WorkHandle reduce_scatter_async(const Tensor& output, const Tensor& input,
                                  ReduceOp op = ReduceOp::Sum, const std::string& label = {});
  void barrier();
  WorkHandle barrier_async();

  // Collectives started so far (their #numbers in messages).
  uint64_t collectives_started() const { return seq_; }

 private:
  friend std::shared_ptr<ProcessGroup> init_process_group(const std::string&, ProcessGroupOptions);
  friend void destroy_process_group();
  ProcessGroup() = default;
  void shutdown();  // finishes what was started, then MPI_Finalize
  WorkHandle start(detail::CollectiveCall call);
  Backend* backend_for(Device device) const;

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  ProcessGroupOptions options_;
  std::unique_ptr<Backend> mpi_;   // CPU tensors (and CUDA tensors without NCCL), when launched by mpirun
  std::unique_ptr<Backend> nccl_;  // CUDA tensors, in real CUDA builds with NCCL
  std::unique_ptr<Backend> self_;  // a group of one process
  uint64_t seq_ = 0;
};

// Starts this process's membership of the job and returns its group, which also becomes the
// default group (default_group(), get_rank(), get_world_size()). Rank and world size come from
// mpirun (OpenMPI's OMPI_COMM_WORLD_* variables) or, for a launcher like torchrun, from RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (NCCL only: its id travels over a TCP
// rendezvous at MASTER_ADDR:MASTER_PORT). Started by neither, the process is a group of one.
// `backend` overrides options.backend. With NCCL, the rank's current CUDA device becomes
// device(). Throws ValueError for an unknown backend or an environment that does not add up,
// DistError when the engines cannot start.
std::shared_ptr<ProcessGroup> init_process_group(const std::string& backend = "auto",
                                                 ProcessGroupOptions options = {});
bool is_initialized();
// The group init_process_group made (ValueError before it).
std::shared_ptr<ProcessGroup> default_group();
// Waits for this rank's collectives to finish and shuts the engines down (MPI_Finalize). Also
// run at exit. After it, init_process_group may not be called again (MPI cannot restart).
void destroy_process_group();
int get_rank();        // 0 without a group
int get_world_size();  // 1 without a group

// Was ember built with the NCCL backend (a real CUDA build that found NCCL)?
bool nccl_is_built();
// Was ember's MPI library (ember::distributed) built against an MPI? Always true: ember::distributed needs it.
bool mpi_is_built();

}  // namespace ember::distributed
