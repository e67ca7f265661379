// ember/kernels/emulator/emulator.h — controlling the CUDA emulator from a program or test
// (emulation build only: -DEMBER_CUDA=EMULATE, which defines EMBER_CUDA_EMULATED).
//
// The checkers, in the spirit of NVIDIA's compute-sanitizer (docs/emulator.md):
//   memcheck   every load and store of a kernel: out of bounds of its allocation, use after
//              cudaFree, a block of ember's caching allocator that no live tensor uses (or the
//              unused tail of one that does), another device's memory without peer access, host
//              memory that is not pinned, a misaligned vector access; past the end of a
//              __shared__ array (the redzone after it), an array index out of bounds (local and
//              __shared__ arrays), a write through a pointer past a local array that reaches
//              its guard word (when the function returns);
//   racecheck  two threads of a block touching the same shared-memory byte, at least one
//              writing, with no __syncthreads between them (or __syncwarp, for two lanes of one
//              warp);
//   synccheck  a __syncthreads that not every thread of the block reaches, threads waiting at
//              two different barriers, a warp collective whose mask names a lane that has exited
//              or does not exist, a shuffle that reads a lane outside the mask;
//   initcheck  a read of device memory that nothing has written since it was allocated (or
//              handed to a new tensor), and of shared memory not written in this block;
//   globalrace two threads of one launch touching the same 4-byte word of device memory, at
//              least one writing, not both atomically: threads of one block with no barrier
//              between them (no __syncwarp or full-warp collective, for lanes of one warp), or
//              threads of two different blocks (never ordered within a launch). It keeps 48
//              bytes of records per word the kernels touch, so it is not on by default;
//   hostcheck  host code that dereferences a device pointer (on a GPU machine that crashes; in
//              the emulator device memory is host memory, so it would silently work): the
//              device memory is kept inaccessible (mprotect) except while the emulator itself
//              runs a kernel or a copy, and the crash names the address. It costs a page-table
//              update per launch, so it is off unless asked for. Under AddressSanitizer it is
//              always on, and free: device memory is poisoned for ASan.
// A report names the checker, the kernel and its launch site, the block and thread, the address
// and what lies there, and the source line of the access. The launch then fails like a faulting
// kernel on a GPU (cudaErrorIllegalAddress, cudaErrorMisalignedAddress or
// cudaErrorLaunchFailure), which ember raises as a DeviceError carrying the report.
//
// EMBER_EMULATOR_CHECKS=memcheck,racecheck,synccheck,initcheck,hostcheck,globalrace (or all, or
// none) chooses them when the program starts; the default is memcheck, racecheck and synccheck.
// memcheck, racecheck, initcheck and globalrace watch memory accesses, which needs the kernels
// compiled with the emulator's instrumentation (the CMake option EMBER_EMULATOR_INSTRUMENT, on by
// default); synccheck always works.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::emu {

enum Check : unsigned {
  kMemcheck = 1u << 0,
  kRacecheck = 1u << 1,
  kSynccheck = 1u << 2,
  kInitcheck = 1u << 3,
  kHostcheck = 1u << 4,
  kGlobalRace = 1u << 5,
  kAllChecks = kMemcheck | kRacecheck | kSynccheck | kInitcheck | kHostcheck | kGlobalRace,
};

// The checkers in force (a mask of Check), and changing them for the launches that follow.
// Turning hostcheck on puts its SIGSEGV handler in front of the one in place (and chains to it); a
// handler installed later (a test runner's, per test case) hides hostcheck's explanation until
// hostcheck is turned off and on again.
unsigned checks();
void set_checks(unsigned mask);
// Parses "memcheck,racecheck" / "all" / "none" as EMBER_EMULATOR_CHECKS does; throws
// std::invalid_argument naming an unknown word.
unsigned parse_checks(const std::string& words);
// Were the kernels compiled with the access instrumentation that memcheck, racecheck and
// initcheck need?
bool instrumented();

// The last report of a checker on this host thread ("" if none), also printed to stderr when it
// happens (unless EMBER_EMULATOR_QUIET=1) and appended to the DeviceError message.
std::string last_report();
// The report of the error being raised now, once: kernels/cuda/runtime.cu's check_error appends
// it to the DeviceError's message. Empty when the failing call made no report.
std::string take_report();

// Counters since the program started: kernels launched, blocks and CUDA threads run, switches
// between CUDA threads (at barriers and warp collectives), and wall time spent in launches.
// `submissions` counts what the host queued on streams itself: kernel launches, copies and
// memsets that touch device memory, and graph launches, one each however many nodes the graph
// holds (work recorded by a capture, and a graph's nodes as they replay, do not count; the
// nodes' kernels do count in `launches`). EMBER_EMULATOR_STATS=1 prints them when the program
// exits.
struct Stats {
  int64_t launches = 0;
  int64_t submissions = 0;
  int64_t graph_launches = 0;
  int64_t blocks = 0;
  int64_t threads = 0;
  int64_t switches = 0;
  double kernel_seconds = 0;
};
Stats stats();

// CPU threads the emulator spreads blocks over (EMBER_EMULATOR_THREADS, default: all cores).
int worker_threads();

// ---- the grid cap: making every grid-stride loop loop ------------------------------------------
// EMBER_EMULATOR_GRID_CAP=N: every grid dimension that a kernel strides over (sized with
// kernels/cuda/launch.cuh's grid_for or strided_blocks) gets at most N blocks, so with the tests'
// small tensors the blocks take a second pass, a third, ... over their grid_stride loops: the
// pass arithmetic and the barriers that guard shared memory reused from one pass to the next
// run, under the checkers. Exact grids are not capped. A capped launch whose kernel reaches no
// grid_stride loop fails with a report (the work of the blocks it lost would be skipped).
// 0: off (the default).
int64_t grid_cap();
void set_grid_cap(int64_t blocks);

// The grid-stride coverage, per launch site: how many blocks took 0, 1, 2, or 3 or more passes
// over their grid_stride loops (a block's count is its busiest thread's longest loop).
// EMBER_EMULATOR_COVERAGE=1 prints coverage_table() to stderr when the program exits;
// EMBER_EMULATOR_COVERAGE=<file> appends it to that file.
struct StrideCoverage {
  std::string kernel;  // as the launch names it: "reduce_rows_kernel"
  std::string site;    // "kernels/cuda/reduce.cu:420"
  int64_t launches = 0;
  int64_t capped_launches = 0;  // whose grid EMBER_EMULATOR_GRID_CAP lowered
  int64_t blocks = 0;
  int64_t no_loop = 0;     // blocks that reached no grid_stride loop (an exact grid's kernel)
  int64_t passes[4] = {};  // blocks by passes: 0, 1, 2, 3 or more
  int64_t max_threads = 0;         // the largest block launched from this site
  int64_t max_dynamic_shared = 0;  // the most dynamic shared memory, in bytes
};
std::vector<StrideCoverage> stride_coverage();  // sorted by site
std::string coverage_table();
// The launch configurations (EMBER_EMULATOR_LAUNCHES=FILE appends it at exit): one tab-separated
// line per launch site, "kernel, site, launches, largest block, most dynamic shared memory,
// 1 if that needed cudaFuncSetAttribute's opt-in". scripts/check-launch-resources checks them
// against the registers and static shared memory nvcc gives each kernel (docs/emulator.md,
// "Launch resources"): what a GPU refuses and the emulator cannot know.
std::string launch_table();

// ---- randomized schedules ----------------------------------------------------------------------
// EMBER_EMULATOR_SCHEDULE=random:SEED (docs/emulator.md, "Randomized schedules"): the threads of a
// block run in a seeded random order between synchronisation points, a thread may be switched
// out for another ready thread of its block at any shared- or global-memory access, and the
// blocks of a grid are handed out in a seeded order. Each block's order follows from the seed,
// the launch's number since the schedule was set, and the block's index, so a run reproduces (the
// order of blocks on different CPU threads only with EMBER_EMULATOR_THREADS=1). Every report made
// under the mode ends with the setting that reproduces it. "fixed" (the default): thread 0, 1,
// 2, ... in turn, each until it reaches a barrier, as before.
struct Schedule {
  bool random = false;
  uint64_t seed = 0;
};
Schedule schedule();
// Sets the schedule for the launches that follow and restarts their count from 0 (the test suite
// does this at the start of every test case, so a test case run alone gets the same orders).
void set_schedule(Schedule s);
// Parses "fixed" / "random:SEED" as EMBER_EMULATOR_SCHEDULE does; throws std::invalid_argument.
Schedule parse_schedule(const std::string& words);
// "EMBER_EMULATOR_SCHEDULE=random:5" for the reports.
std::string schedule_setting(Schedule s);

// ---- the asynchronous mode: streams that run later ---------------------------------------------
// EMBER_EMULATOR_ASYNC=1 (docs/emulator.md, kernels/emulator/async.cpp): kernel launches, copies,
// memsets, event records and graph launches are queued on their stream and run later, in stream
// order, on a worker thread, only when a synchronizing call or a query needs them. Queries answer
// cudaErrorNotReady while work is pending, a kernel's fault becomes the device's sticky error, and
// a host access to pinned memory that a queued copy still uses is reported. 0: off (the default).
bool async_streams();
// Turns the mode on or off for what follows (tests); turning it off first waits for the queues.
void set_async_streams(bool on);
// The sticky error queued work left on a device (0: none): every later call on that device
// returns it, as on a GPU, where only a new process recovers. clear_device_errors() is the
// emulator's stand-in for that new process (the test suite calls it between test cases).
int device_error(int device);
void clear_device_errors();
// Counters of the mode since the program started.
struct AsyncStats {
  int64_t queued = 0;               // operations queued
  int64_t not_ready = 0;            // queries answered cudaErrorNotReady
  int64_t host_access_reports = 0;  // host accesses to memory a queued copy still used
};
AsyncStats async_stats();

// ---- counting a kernel's memory traffic -------------------------------------------------------
// While counting is on, every load and store a kernel's own code makes is counted, per CUDA
// thread, as the emulator sees it through the access instrumentation (so only in an
// instrumented build: instrumented() is true):
//   global   device memory, pinned host memory and the program's __device__ / __constant__
//            variables;
//   shared   static __shared__ arrays and dynamic shared memory.
// A thread's local variables and the kernel's parameters are not counted (registers on a GPU).
// One access is one load or store instruction as the compiler emitted it: a float4 load is one
// access of 16 bytes, and a load the optimizer kept in a register is not an access at all. An
// atomic counts as one read and one write. The GPU puzzles (docs/puzzles/) grade a kernel's
// traffic with these; bench_gemm --emulated prints them per output element for each rung of the
// SGEMM ladder.
struct AccessCount {
  int64_t accesses = 0;  // over all threads of all counted launches
  int64_t bytes = 0;
  int64_t max_per_thread = 0;  // the most accesses one thread of one launch made
};
struct AccessCounts {
  int64_t launches = 0;  // kernels counted
  int64_t threads = 0;   // CUDA threads they ran
  AccessCount global_reads, global_writes, shared_reads, shared_writes;
};
// Turning counting on (or off) starts from zero.
void set_access_counting(bool on);
bool access_counting();
AccessCounts access_counts();  // since counting was last turned on or reset
void reset_access_counts();

// Which of `physical` emulated devices a CUDA_VISIBLE_DEVICES value shows, in order, read as
// the CUDA driver reads it: comma-separated indices; the list ends at the first entry that is not
// a valid index not listed before ("-1", "", "x" hide everything after them). Exposed for tests.
std::vector<int> parse_visible_devices(const std::string& value, int physical);

// ---- for ember's caching allocator (kernels/cuda/allocator.cu) ----------------------------------
// The allocator keeps cudaMalloc'd blocks after their tensor dies and hands them out again, so on
// a GPU a stale pointer into a cached block reads whatever the next tensor put there. These tell
// memcheck which bytes belong to a live tensor: the first `bytes` of a block of `capacity` bytes
// are addressable (and, for initcheck, not yet written); the rest of the block is not.
void mark_block_live(const void* block, size_t bytes, size_t capacity);
// The whole block went back to the cache: no kernel may touch it until it is handed out again.
void mark_block_cached(const void* block, size_t capacity);

}  // namespace ember::emu
