// ember/kernels/emulator/internal.h — what the emulator's own files share: emulated device
// memory (arenas with a shadow byte per byte), devices and streams, and the execution state of a
// grid (workers, blocks, CUDA threads as fibers, warps).
//
//   runtime.cpp    devices, memory, copies, streams, events, errors: the CUDA runtime API
//   graph.cpp      stream capture, graphs, and the calls a capture forbids
//   async.cpp      the asynchronous mode: per-stream queues and the worker that runs them
//   scheduler.cpp  worker threads, blocks, fibers, barriers, warp collectives, launches
//   checks.cpp     the memory-access hooks and memcheck / racecheck / initcheck, the reports
//   shared_layout.cpp  where the __shared__ variables and their redzones lie (the symbol table)
//   schedule.cpp   randomized schedules (EMBER_EMULATOR_SCHEDULE) and globalrace's records
//   atomics.cpp    atomicAdd and friends
//
// None of these files is compiled with the access instrumentation: what they do is the
// emulator's own business, not the kernel's.
#pragma once

#include <boost/context/detail/fcontext.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/emulator/device.h"
#include "kernels/emulator/emulator.h"
#include "kernels/emulator/runtime_api.h"

namespace ember::emu::detail {

// Words of the reports: an address as 0x..., a dim3 as (x,y,z).
inline std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
inline std::string dim_str(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

namespace ctx = boost::context::detail;

// ---- memory --------------------------------------------------------------------------------------

// One shadow byte per byte of emulated memory says what the byte is. Values below kUninit are
// not addressable by a kernel.
enum Shadow : uint8_t {
  kUnallocated = 0,  // never handed out, or given back
  kRedzone = 1,      // the gap the emulator leaves after every allocation
  kFreed = 2,        // freed with cudaFree (kept in quarantine for a while)
  kCached = 3,       // cudaMalloc'd, but ember's caching allocator gives it to no live tensor
  kUninit = 0x10,    // addressable, never written
  kInit = 0x11,      // addressable, written
};
inline bool addressable(uint8_t s) { return s >= kUninit; }

struct Block {
  uintptr_t begin = 0;
  size_t size = 0;      // as asked for
  bool freed = false;
};

// A range of reserved address space handed out cudaMalloc-style: 256-byte aligned blocks, a
// redzone of at least 256 bytes after each, freed blocks kept in quarantine (so that a use after
// free is seen) before their space is reused. The address space is reserved at start-up and only
// the pages that are used take memory.
class Arena {
 public:
  // An arena over [base, base + capacity), its shadow at `shadow` (both already reserved). Blocks
  // start and end at multiples of `align` (cudaMalloc's 256 bytes; a page for pinned memory, so
  // that the asynchronous mode can guard one block's pages without touching another's).
  Arena(char* base, uint8_t* shadow, size_t capacity, size_t align = 256);
  char* base() const { return base_; }
  size_t capacity() const { return capacity_; }
  uint8_t* shadow() const { return shadow_; }
  bool contains(uintptr_t a) const { return a - reinterpret_cast<uintptr_t>(base_) < capacity_; }
  uint8_t shadow_of(uintptr_t a) const { return shadow_[a - reinterpret_cast<uintptr_t>(base_)]; }
  void set_shadow(uintptr_t a, size_t n, uint8_t value);

  void* allocate(size_t n);            // nullptr when the arena is full
  bool release(void* p);               // false if p is not the start of a live block
  size_t used() const { return used_; }
  // The block containing a, or the nearest live or freed one before it (for the messages).
  bool find_block(uintptr_t a, Block* out) const;
  // The live block that starts at p, if any.
  bool live_block(uintptr_t p, Block* out) const;

  mutable std::mutex mu;

 private:
  void return_to_free_list(uintptr_t begin, size_t span);
  size_t span_of(size_t n) const;  // a block of n bytes and its redzone
  char* base_ = nullptr;
  uint8_t* shadow_ = nullptr;
  size_t capacity_ = 0;
  size_t align_ = 256;
  size_t used_ = 0;
  std::map<uintptr_t, size_t> free_;                 // begin -> length, coalesced
  std::map<uintptr_t, Block> blocks_;                // live and quarantined blocks
  std::vector<std::pair<uintptr_t, size_t>> quarantine_;  // (begin, span) in order of freeing
  size_t quarantined_ = 0;
};

// Sub-ranges of cudaMalloc'd blocks that ember's caching allocator gave to live tensors.
struct TensorRange {
  uintptr_t begin;
  size_t bytes;
  size_t capacity;
};

// ---- devices and streams -------------------------------------------------------------------------

struct PendingCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

struct Capture;
struct AsyncStream;  // a stream's queue in the asynchronous mode (async.cpp)

struct Stream {
  int device = 0;
  bool blocking = true;              // not cudaStreamNonBlocking: ordered with the legacy stream
  std::vector<PendingCopy> pending;  // deferred copies that involve pinned host memory
  double last_done_ms = 0;           // when the stream last drained
  Capture* capture = nullptr;        // the capture sequence recording this stream's work, if any
  std::shared_ptr<AsyncStream> async;  // its queue in the asynchronous mode (made on first use)
};

// One piece of recorded work: a kernel launch with its own copy of the arguments, a copy, a
// memset, or a whole graph launched into the capture. run() performs it on the stream the graph
// is launched on and returns what the operation returned (a kernel's fault, a bad copy).
struct GraphNode {
  std::string what;  // "kernel relu_kernel (launched at kernels/cuda/elementwise.cu:430)", ...
  std::function<cudaError_t(cudaStream_t)> run;
};

// A capture sequence: begun on `origin` by `thread` in `mode`; invalidated by a forbidden call
// (then cudaStreamEndCapture returns no graph).
struct Capture {
  Stream* origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  bool invalidated = false;
  std::vector<GraphNode> nodes;
};

struct Device {
  int physical = 0;
  Arena* arena = nullptr;
  Stream default_stream;
  std::recursive_mutex mu;  // one operation at a time on the device's streams
  std::vector<bool> peer_enabled;
};

struct Globals {
  int physical_devices = 0;
  std::vector<int> visible;           // visible index -> physical index
  std::vector<Device*> devices;       // by visible index
  std::string no_device_reason;
  uintptr_t device_lo = 0;            // all device arenas, one after the other
  size_t device_span = 0;
  size_t device_capacity = 0;         // per device
  Arena* pinned = nullptr;            // page-locked host memory (cudaHostAlloc)
  std::mutex tensor_mu;
  std::map<uintptr_t, TensorRange> tensors;  // by begin
  std::atomic<unsigned> checks{0};
  bool quiet = false;
};
Globals& globals();  // created on first use; never destroyed (kernels may run during exit)

// The arena and visible device index of a device address, or nullptr.
Arena* device_arena_of(uintptr_t a, int* device);
// CUDA_VISIBLE_DEVICES (env, or nullptr when unset) as the driver reads it, for `physical`
// devices: the visible indices in order; `note` explains an entry that ended the list.
std::vector<int> visible_devices(const char* env, int physical, std::string* note);
// Deferred copies of a stream run now.
void drain(Stream& s);
// The stream a cudaStream_t names (nullptr: the current device's legacy stream).
Stream& stream_object(cudaStream_t s);

// ---- capture rules (graph.cpp) ---------------------------------------------------------------------
// A "potentially unsafe" call (cudaMalloc, cudaFree, cudaHostAlloc, a synchronous copy or memset,
// ...) by this thread: cudaSuccess when no capture forbids it to this thread; otherwise the
// captures that forbid it are invalidated, a report says what happened, and the result is
// cudaErrorStreamCaptureUnsupported.
cudaError_t check_unsafe_call(const char* call);
// Work queued on stream s by `call`: cudaSuccess to go ahead (s is not capturing); for a
// capturing stream, `record` (if given) becomes a node of the capture and the result is
// kRecorded; for the legacy stream while a blocking stream of its device captures, the capture
// is invalidated and the result is cudaErrorStreamCaptureImplicit. The device's mutex is held.
constexpr cudaError_t kRecorded = static_cast<cudaError_t>(-1);
cudaError_t capture_or_run(Stream& s, const char* call, GraphNode* record);
// Waiting for stream s (cudaStreamSynchronize, cudaStreamQuery): forbidden while it captures, and
// for the legacy stream while a blocking stream captures.
cudaError_t check_stream_wait(Stream& s, const char* call);
// cudaDeviceSynchronize: forbidden while any stream of the device captures (not Relaxed).
cudaError_t check_device_wait(int device, const char* call);
// Is this CPU thread running the nodes of a graph launch (so its launches are not the host's
// own submissions)? The node's index and the graph's size, for the reports.
struct ReplayPosition {
  int64_t node = -1, count = 0;
};
extern thread_local ReplayPosition tls_replay;
// Operations the host queued on streams (kernels, copies, memsets, graph launches): Stats.
void count_submission();
void count_graph_launch();  // also one submission
double now_ms();

// Records a report as this host thread's last one and prints it (unless quiet).
void publish_report(const std::string& report);
// The same for a report that belongs to no failing call (a host access the asynchronous mode
// saw): it becomes last_report(), but no DeviceError's message.
void publish_warning(const std::string& report);
// Makes `report` this host thread's last and pending report without printing it again (a
// sticky error's report, printed when the worker met it, handed to each call that returns it).
void adopt_report(const std::string& report);
void set_current_device_index(int device);

// ---- the asynchronous mode (async.cpp) -----------------------------------------------------------
// EMBER_EMULATOR_ASYNC=1: launches, copies, memsets, event records and graph launches are queued
// per stream and run later, in stream order, on one worker thread (see async.cpp).
bool async_mode();
bool on_async_worker();  // this CPU thread is the worker (it never waits for the queues)
// A point in a stream's order: "its first `seq` operations have run".
struct StreamPoint {
  std::shared_ptr<AsyncStream> stream;
  uint64_t seq = 0;
};
// A host range a queued copy still uses: the host may not write it, and may not read it either
// unless host_may_read (the copy only reads it).
struct HostRange {
  const void* p;
  size_t bytes;
  bool host_may_read;
};
// Queues `run` on stream s (after everything queued on s, and, by the legacy stream's rules,
// after the other streams' work it waits for, and after `waits`). `what` names it in reports,
// `pc` is the host call that queued it (nullptr: `what` says where). Returns the point after it.
StreamPoint enqueue(Stream& s, std::string what, const void* pc, std::function<cudaError_t()> run,
                    std::vector<StreamPoint> waits = {}, std::vector<HostRange> guards = {});
StreamPoint tail_of(Stream& s);       // the point after everything queued on s so far
bool reached(const StreamPoint& p);   // has it all run?
void request(const StreamPoint& p);   // let the worker start on it (a query), without waiting
void wait_for(const StreamPoint& p);  // run it and wait (a synchronizing call)
void wait_device_queues(int device);  // every stream of a device (cudaDeviceSynchronize)
void wait_all_queues();
void forget_stream(Stream& s);  // cudaStreamDestroy, once its work has run
void count_not_ready();         // a query answered cudaErrorNotReady
// The error queued work left on a device: sticky, as on a GPU (cudaSuccess: none), and its report.
cudaError_t sticky_error(int device);
std::string sticky_report(int device);
// What lies at an address, in words, for the reports: "4 bytes past the end of a 1024-byte
// block at 0x... on cuda:0", "inside a cached block no live tensor uses", ...
std::string describe_address(uintptr_t a, size_t size);
// Source location of a code address ("kernels/cuda/reduce.cu:123 in reduce_rows_kernel<...>").
std::string describe_code(const void* pc);
// The source lines of a code address from the innermost inlined call outwards, ember's own only
// ("tests/emulator/kernels_warp.cu:20", "tests/emulator/kernels_warp.cu:45", ...), looked up once
// per address and kept; empty when the program has no line information for it.
const std::vector<std::string>& source_chain(const void* pc);
// Copies that the host's AddressSanitizer (if the program has one) does not intercept.
void raw_copy(void* dst, const void* src, size_t n);
void raw_fill(void* dst, int value, size_t n);
// hostcheck: while a HostWindow lives, the emulator may touch device memory; outside all of them
// the device arenas are inaccessible to the host (when hostcheck is on).
struct HostWindow {
  HostWindow();
  ~HostWindow();
  HostWindow(const HostWindow&) = delete;
  HostWindow& operator=(const HostWindow&) = delete;
};
void set_host_protection(bool on);
extern Globals* g_globals;
// Tells the host's AddressSanitizer (if any) that host code must not touch [p, p + n).
void host_poison(const void* p, size_t n);
void host_unpoison(const void* p, size_t n);

// ---- execution -----------------------------------------------------------------------------------

struct Grid;
struct BlockRun;
struct Worker;

// AtActiveMask: at an __activemask() call, waiting for the lanes of its warp that may still join
// it (scheduler.cpp, "__activemask").
enum class ThreadState : uint8_t { Ready, Running, AtBarrier, AtWarp, AtActiveMask, Done };

struct Stack {
  char* lo = nullptr;
  size_t size = 0;
};

// One CUDA thread. The first fields are what the memory hooks read on every access.
struct Thread {
  uintptr_t stack_lo = 0;
  size_t stack_size = 0;
  bool checking = false;       // inside the kernel's own code (after its parameters are copied)
  unsigned checks = 0;         // the grid's checkers
  // Copies of what the hooks' fast paths compare against (no pointer chasing per access):
  uintptr_t own_lo = 0;        // this kernel's device's memory [own_lo, own_lo + own_size)
  size_t own_size = 0;
  uint8_t* own_shadow = nullptr;  // its shadow byte for own_lo
  uint32_t switch_threshold = 0;  // randomized schedule: switch at an access when a draw is below
  bool global_race = false;       // globalrace is on
  // globalrace: this thread's write met another thread's unordered plain write of the same word.
  // It is judged once made (settle_pending_write): storing the bytes already there is no race in
  // effect (fill_ on an expanded view stores one value through many threads).
  bool has_pending_write = false;
  struct PendingWrite {
    uintptr_t lo = 0, a = 0;  // lo: the first word of the access (up to 4 words are judged)
    size_t n = 0;
    uint8_t masks[4] = {};    // per word: the bytes that met the other write
    uint8_t before[16] = {};  // those words as the other write left them
    uint32_t other_block = 0;
    uint16_t other_thread = 0;
    const void* other_pc = nullptr;
    const void* pc = nullptr;
  } pending_write;
  uintptr_t tls_lo = 0;        // the worker's shared memory (thread_local block)
  size_t tls_size = 0;
  struct RaceCell* race = nullptr;
  const void** write_pcs = nullptr;
  uint32_t linear = 0;         // index within the block
  uint32_t warp = 0, lane = 0;
  BlockRun* block = nullptr;
  Worker* worker = nullptr;
  uint3 idx{};
  ctx::fcontext_t context = nullptr;
  ThreadState state = ThreadState::Ready;
  bool started = false;
  int barrier_predicate = 0;
  Stack stack;                 // the fiber stack it runs on (from its start)
  // Traffic counting (set_access_counting): accesses and bytes by kind (AccessKind).
  bool counting = false;
  int64_t accesses[4] = {};
  int64_t bytes[4] = {};
};
// The four kinds of access that counting tells apart, in AccessCounts' order.
enum AccessKind { kGlobalRead = 0, kGlobalWrite = 1, kSharedRead = 2, kSharedWrite = 3 };
// Adds a finished block's per-thread counts to the totals (scheduler.cpp, after each block).
void add_block_counts(const BlockRun& b);
void count_launch();  // one more kernel counted

// A warp collective some lanes wait at: what it is, which lanes it waits for, which have come.
struct PendingCollective {
  unsigned mask = 0;
  unsigned arrived = 0;
  int kind = 0;            // 1 syncwarp, 2 shuffle, 3 vote
  int op = 0;              // ShuffleKind / VoteKind
  int width = 32;
  const char* file = nullptr;
  int line = 0;
};

// One warp of a block. Lanes in divergent branches may wait at several collectives at once
// (lanes 0-15 at one __shfl_sync(0x0000ffff), lanes 16-31 at another with 0xffff0000), each in a
// slot of its own; one mask, one collective. `value`, `arg` and `result` are per lane (a lane
// waits at one collective at a time).
//
// The order the collectives make (racecheck, globalrace): a lane's `clock` counts the collectives
// it completed; an access a lane made at clock c is ordered before what lane b does now when b
// knows of a later clock of that lane, through a chain of collectives that both took part in:
// `full_seen` for collectives of every live lane (they tell everyone), `seen` (a 32 x 32 vector
// clock: row b, column a) for those of fewer lanes, such as __syncwarp(0x0000ffff).
//
// __activemask() (scheduler.cpp): `sync_serial` names each lane's last warp synchronization (a
// collective it completed, the block's start or a __syncthreads), numbered by `syncs`, which
// runs on from block to block; the lane's __activemask calls are counted since then.
struct Warp {
  unsigned existing = 0;  // lanes that exist (the last warp of a block may be partial)
  unsigned exited = 0;
  unsigned pending_lanes = 0;  // the lanes some pending collective's mask names
  uint32_t slots_used = 0;     // bit s: slot[s] holds a pending collective
  bool partial = false;        // `seen` holds this block run's partial collectives
  uint32_t clock[32];          // (read by the checkers on every access: kept near the top)
  uint32_t full_seen[32];
  std::vector<uint32_t> seen;  // 32 x 32, made and cleared on the first partial collective
  PendingCollective slot[32];
  uint64_t value[32];
  int arg[32];
  uint64_t result[32];
  uint32_t syncs = 0;
  uint32_t sync_serial[32] = {};
  uint32_t activemask_serial[32] = {};  // the sync_serial the lane's count below belongs to
  uint32_t activemask_calls[32] = {};
  const void* activemask_pc[32] = {};  // the call a lane waits at
  unsigned activemask_result[32] = {};
  unsigned activemask_waiting = 0;  // lanes waiting in __activemask()
  // The last collectives completed, by sync serial modulo 32 (for synccheck's reports: which
  // collective a lane took part in last).
  struct Completed {
    uint32_t serial = 0;
    int kind = 0, op = 0;
    unsigned mask = 0;
    const char* file = nullptr;
    int line = 0;
  } completed[32];

  // A fresh warp for a new block run (the per-lane arrays of collectives need no clearing).
  void reset(unsigned lanes) {
    existing = lanes;
    exited = 0;
    pending_lanes = 0;
    slots_used = 0;
    partial = false;
    activemask_waiting = 0;
    const uint32_t start = ++syncs;  // the launch: every lane of a warp starts together
    for (int l = 0; l < 32; ++l) {
      clock[l] = full_seen[l] = 0;
      sync_serial[l] = start;
    }
  }
};

// Is an access that lane `a` of warp w made when its clock was `clock_a` (modulo 2^16, as the
// checkers' records keep it) ordered before what lane `b` of the same warp does now, by the
// collectives between them?
inline bool warp_ordered(const Warp& w, uint32_t a, uint16_t clock_a, uint32_t b) {
  uint32_t known = w.full_seen[a];
  if (w.partial && w.seen[b * 32 + a] > known) known = w.seen[b * 32 + a];
  // known - clock_a in 1 .. 2^15: lane a completed a collective after its access, and b knows.
  const auto d = static_cast<uint16_t>(static_cast<uint16_t>(known) - clock_a);
  return static_cast<uint16_t>(d - 1u) < 0x8000u;
}

struct BlockRun {
  Grid* grid = nullptr;
  uint3 idx{};
  uint64_t linear = 0;  // the block's index in the grid (x fastest)
  bool random = false;  // a randomized schedule: the next thread is drawn from the ready ones
  uint64_t rng = 0;     // the block's draws (schedule.cpp)
  uint32_t nthreads = 0;
  uint64_t serial = 0;     // unique per block run on this worker (racecheck's notion of "this block")
  uint32_t epoch = 0;      // __syncthreads completed
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  std::vector<uint32_t> ready;  // queue of thread indices
  size_t ready_head = 0;
  uint32_t done = 0;
  uint32_t at_barrier = 0;
  // The __syncthreads the waiting threads are at: the first one's code address and source line.
  const void* barrier_pc = nullptr;
  const char* barrier_file = nullptr;
  int barrier_line = 0;
  BarrierReduce barrier_reduce = BarrierReduce::None;
  bool faulted = false;
  char* dynamic_shared = nullptr;
  bool stride_loop = false;  // some thread reached a grid_stride loop (launch.cuh)
  int64_t max_passes = 0;    // the most passes one such loop of one thread made
};

// Racecheck's record of the last accesses to one 4-byte word of shared memory in this block,
// 16 bytes: the block it belongs to (a cell of another block means "untouched here"), the last
// writer and reader (thread index + 1; 0 none; kSeveral for "more than one reader") and when
// they came (the block's barrier count and the lane's clock, Warp::clock, modulo 2^16). The
// writer's code address is kept beside, in Worker::write_pcs, for the report.
struct RaceCell {
  uint32_t serial;
  uint16_t writer, reader;
  uint16_t write_epoch, read_epoch;
  uint16_t write_warp_epoch, read_warp_epoch;
};
constexpr uint16_t kSeveral = 0xffff;

struct Worker {
  int id = 0;
  ctx::fcontext_t scheduler = nullptr;
  std::vector<Stack> stacks;      // every stack this worker has made
  std::vector<Stack> free_stacks; // those no fiber of the current block runs on
  uintptr_t tls_lo = 0;    // this CPU thread's copy of the module's thread_local storage,
  size_t tls_size = 0;     // where the blocks' __shared__ variables live
  std::vector<RaceCell> race;
  std::vector<const void*> write_pcs;
  uint64_t next_serial = 1;
  int64_t switches = 0;
  BlockRun block;
  std::vector<char> dynamic_shared;
  // Racecheck's cells for dynamic shared memory (one per 4-byte word, as for static shared
  // memory), and the writers' code addresses.
  std::vector<RaceCell> dynamic_race;
  std::vector<const void*> dynamic_write_pcs;

  Worker() = default;
  ~Worker();  // unmaps the stacks (a host thread that launched kernels has ended)
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
};

struct Grid {
  LaunchConfig config{};
  uintptr_t params_lo = 0;   // the launch's copy of the arguments (the kernel's parameter space):
  size_t params_size = 0;    // every thread reads its parameters from there
  void (*body)(void*) = nullptr;
  void* closure = nullptr;
  int device = 0;
  unsigned checks = 0;
  bool counting = false;  // access counting was on when the grid was launched
  uint64_t nblocks = 0;
  uint64_t threads_per_block = 0;
  std::atomic<uint64_t> next_block{0};
  std::atomic<bool> faulted{false};
  std::mutex fault_mu;
  cudaError_t error = cudaSuccess;
  std::string report;
  // Grid-stride coverage: blocks that reached no grid_stride loop, and the others by the passes
  // of their busiest loop (0, 1, 2, 3 or more).
  std::atomic<int64_t> no_loop_blocks{0};
  std::atomic<int64_t> pass_blocks[4] = {};
  // The schedule (schedule.cpp): random or fixed, its seed, this launch's number since the
  // schedule was set, and the seeded order the blocks are handed out in (ticket k runs block
  // (perm_a * k + perm_c) mod nblocks).
  bool random = false;
  uint64_t seed = 0;
  uint64_t schedule_launch = 0;
  uint64_t perm_a = 1, perm_c = 0;
  uint32_t race_launch = 0;  // globalrace: this launch's tag in the records (never 0)
};

// ---- the schedule and globalrace (schedule.cpp) -------------------------------------------------
// Called for every launch, one at a time (under the pool's launch lock), before its blocks run:
// sets the grid's schedule and its globalrace tag.
void begin_launch(Grid& g);
// The block a ticket of the grid's block counter runs (the identity under the fixed schedule).
inline uint64_t block_of_ticket(const Grid& g, uint64_t k) {
  if (!g.random) return k;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(g.perm_a) * k + g.perm_c) %
                               g.nblocks);
}
// Seeds a block's draws and picks how often its threads switch at memory accesses.
void seed_block(BlockRun& b, uint32_t* switch_threshold);
uint64_t next_draw(BlockRun& b);
// "\n  schedule: EMBER_EMULATOR_SCHEDULE=random:5 ..." for a report of a randomized launch; "".
std::string schedule_note(const Grid& g);
// A switch point (scheduler.cpp): with the block's probability, the current thread steps aside
// for another ready thread of its block (an access at address a; not the thread's coordinates).
void switch_point(Thread* t, uintptr_t a);
// globalrace: an access of n bytes at a (in device memory) by t, checked against the launch's
// earlier accesses to the same words, and recorded. Atomics are read-modify-writes.
void global_access(Thread* t, uintptr_t a, size_t n, bool write, bool atomic, const void* pc);
// Judges t's pending write (called at t's next access, barrier, collective or return, when the
// store has been made): a report if it changed the bytes the other thread had written.
void settle_pending_write(Thread* t);

// The CUDA thread running on this CPU thread (nullptr outside kernels), and this CPU thread's
// worker (while it runs blocks).
extern __thread Thread* tls_thread __attribute__((tls_model("initial-exec")));

// Ends the current CUDA thread's block with a report: the launch fails with `error`. Called on
// the thread's fiber; never returns.
[[noreturn]] void fault(Thread* t, cudaError_t error, const std::string& what);
// "kernel K (launched at f:l) on cuda:D, block (x,y,z) thread (x,y,z)"
std::string where(const Thread* t);
// Sets up a worker's view of shared memory (its thread_local block) and racecheck's cells.
void init_worker_tls(Worker& w);

// ---- the map of static shared memory (shared_layout.cpp) -----------------------------------------
// A thread-local variable of the module that holds the kernels, from its symbol table: a
// __shared__ variable, a redzone device.h put after one, or another thread_local.
struct SharedVariable {
  size_t offset = 0;  // in the module's thread-local block
  size_t size = 0;
  std::string name;      // "tile"
  std::string function;  // the kernel or device function it is a static of ("" if none)
  bool redzone = false;  // an ember_shared_redzone_N
  bool shared = false;   // a __shared__ variable (a static of a function that has redzones)
};
struct SharedLayout {
  std::vector<uint8_t> redzone;  // per byte of the thread-local block: 1 = redzone or padding
  std::vector<SharedVariable> variables;  // by offset
  size_t redzones = 0, shared_variables = 0;
  std::string note;  // why there is no map (a stripped program), else ""
};
// The layout of the thread-local block of the module at `module_path` (tls_size bytes), read
// once, on first use.
const SharedLayout& shared_layout(const std::string& module_path, size_t tls_size);
// Does [offset, offset + n) of the block touch a redzone? (On every access to shared memory.)
inline bool in_shared_redzone(const SharedLayout& layout, size_t offset, size_t n) {
  const size_t size = layout.redzone.size();
  if (offset >= size) return false;
  const size_t end = offset + n < size ? offset + n : size;
  // A redzone is wider than any single access (16 bytes): for those, the two ends decide.
  if (n <= 16) return (layout.redzone[offset] | layout.redzone[end - 1]) != 0;
  for (size_t i = offset; i < end; ++i)
    if (layout.redzone[i] != 0) return true;
  return false;
}
// For the reports: "4 bytes past the end of __shared__ array `a` (128 bytes) of kernel ...", and
// "byte 12 of __shared__ array `a` ..." ("" outside every __shared__ variable).
std::string describe_shared_redzone(const SharedLayout& layout, size_t offset);
std::string describe_shared_variable(const SharedLayout& layout, size_t offset);

void set_last_error(cudaError_t e);
// "" when the launch configuration is valid, else why (and the error the launch returns).
cudaError_t check_config(const LaunchConfig& c, std::string* why);
void record_fault(Grid& g, cudaError_t error, const std::string& text);
// A source path relative to ember's root (for messages).
std::string relative_path(const char* file);
// cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): the emulator
// does not know which kernel a launch runs, so the largest opt-in applies to every launch.
void raise_dynamic_shared_limit(int bytes);
// The current device of this host thread (cudaSetDevice).
int current_device_index();

}  // namespace ember::emu::detail
