// ember/kernels/emulator/scheduler.cpp — running a grid: blocks over CPU threads, CUDA
// threads as fibers, barriers, and the lockstep exchanges of a warp.
//
// A launch hands out its blocks, one at a time, to a pool of CPU threads (the launching thread
// works too). A CPU thread runs a whole block: every CUDA thread of the block gets a fiber (a
// stack and a saved register set, switched with Boost.Context's fcontext: a few nanoseconds, no
// system call) and the block's threads take turns:
//
//   ready queue: 0 1 2 ... 255          thread 0 runs until it reaches __syncthreads, then
//                                        thread 1 runs until it does, ... and when the last one
//   at the barrier: 0 1 2 ... 255   ->   arrives the barrier opens: all 256 are ready again.
//
// A warp collective (__shfl_down_sync, __ballot_sync, __syncwarp) works the same way for the
// lanes its mask names: each lane leaves its value and waits; the lane that completes the set
// computes every lane's result, as the hardware does in one instruction. Lanes in divergent
// branches may wait at collectives with disjoint masks at once. A barrier is its dynamic
// instance (the k-th __syncthreads each thread reaches); __activemask() waits for the lanes that
// may still join it at the same call. When no thread can run but some have not finished, the
// block is deadlocked on a GPU too (a barrier that some threads never reach, a mask naming a lane
// that left): synccheck says which threads wait where.
//
// What this cannot show: the order in which a GPU really interleaves warps. By default threads
// run in a fixed order between synchronisation points; racecheck and globalrace (checks.cpp,
// schedule.cpp) find code whose result would depend on that order, and a randomized schedule
// (EMBER_EMULATOR_SCHEDULE=random:SEED, schedule.cpp) draws the next ready thread at random and
// lets a thread step aside at any shared- or global-memory access.
#include <sys/mman.h>
#include <unistd.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "kernels/emulator/internal.h"

namespace ember::emu {

__thread Coordinates tls_coordinates __attribute__((tls_model("initial-exec"))) = {};

namespace detail {

__thread Thread* tls_thread __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

std::atomic<int64_t> g_launches{0}, g_blocks{0}, g_threads{0};
std::atomic<int> g_max_dynamic_shared{48 * 1024};

constexpr size_t kStackBytes = size_t{256} << 10;  // per CUDA thread (virtual; a few KiB are used)

Stack new_stack() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "ember emulator: cannot map a %zu-byte stack for a CUDA thread\n", kStackBytes);
    std::abort();
  }
  mprotect(p, page, PROT_NONE);  // a guard page: a kernel that overflows its stack crashes here
  return Stack{static_cast<char*>(p) + page, kStackBytes};
}

void free_stack(const Stack& s) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  munmap(s.lo - page, s.size + page);
}

void push_ready(BlockRun& b, uint32_t i) {
  b.threads[i].state = ThreadState::Ready;
  b.ready.push_back(i);
}

std::atomic<int64_t> g_switches{0};
std::atomic<int64_t> g_kernel_ns{0};

void fiber_main(ctx::transfer_t from);

// Under a randomized schedule the next thread is drawn from the ready ones: the drawn one is
// swapped to the head of the queue. (The fixed schedule takes them first come, first served.)
void draw_head(BlockRun& b) {
  const size_t left = b.ready.size() - b.ready_head;
  if (!b.random || left < 2) return;
  std::swap(b.ready[b.ready_head], b.ready[b.ready_head + next_draw(b) % left]);
}

// The next ready thread of the block, made current (coordinates, tls_thread, a context if it
// has not run yet), or nullptr when none is ready.
Thread* take_next(BlockRun& b) {
  if (b.ready_head >= b.ready.size()) return nullptr;
  draw_head(b);
  const uint32_t i = b.ready[b.ready_head++];
  if (b.ready_head == b.ready.size()) {  // keep the queue short: restart it when drained
    b.ready.clear();
    b.ready_head = 0;
  }
  Thread& n = b.threads[i];
  n.state = ThreadState::Running;
  if (!n.started) {
    // A new fiber on a free stack (a stack is freed when the fiber on it finishes for good).
    Worker& w = *n.worker;
    if (w.free_stacks.empty()) {
      w.stacks.push_back(new_stack());
      w.free_stacks.push_back(w.stacks.back());
    }
    n.stack = w.free_stacks.back();
    w.free_stacks.pop_back();
    n.stack_lo = reinterpret_cast<uintptr_t>(n.stack.lo);
    n.stack_size = n.stack.size;
    n.context = ctx::make_fcontext(n.stack.lo + n.stack.size, n.stack.size, fiber_main);
    n.started = true;
  }
  tls_coordinates.thread_idx = n.idx;
  tls_thread = &n;
  return &n;
}

// Makes the next queued thread, which has not started, current on an existing stack (the one
// the calling fiber runs on).
Thread* take_next_started_here(BlockRun& b, const Stack& stack) {
  const uint32_t i = b.ready[b.ready_head++];
  if (b.ready_head == b.ready.size()) {
    b.ready.clear();
    b.ready_head = 0;
  }
  Thread& n = b.threads[i];
  n.state = ThreadState::Running;
  n.started = true;
  n.stack = stack;
  n.stack_lo = reinterpret_cast<uintptr_t>(stack.lo);
  n.stack_size = stack.size;
  tls_coordinates.thread_idx = n.idx;
  tls_thread = &n;
  return &n;
}

// Whoever jumped here left its context in `from`: keep it where its next resumption looks. The
// jumper passes its Thread (nullptr: the worker's scheduler loop).
void save_jumper(const ctx::transfer_t& from, Worker& w) {
  auto* jumper = static_cast<Thread*>(from.data);
  if (jumper == nullptr) {
    w.scheduler = from.fctx;
  } else if (jumper->state == ThreadState::Done) {
    w.free_stacks.push_back(jumper->stack);  // nothing runs on it any more
  } else {
    jumper->context = from.fctx;
  }
}

// Leaves the current CUDA thread t (blocked at a barrier or collective, or finished): switches
// straight to the next ready thread of the block, or back to the scheduler loop when there is
// none. Returns when some thread switches back to t (at once if the draw picked t itself: a
// thread that steps aside is ready too).
void switch_away(Thread* t) {
  Worker& w = *t->worker;
  Thread* next = take_next(*t->block);
  if (next == t) return;
  ++w.switches;  // a plain counter per worker: an atomic here would be a contended cache line
  if (next == nullptr) tls_thread = nullptr;
  const ctx::transfer_t from = ctx::jump_fcontext(next ? next->context : w.scheduler, t);
  save_jumper(from, w);
}

void yield(Thread* t) { switch_away(t); }

// A running thread steps aside: it joins the ready threads, and a drawn one runs (maybe itself).
void step_aside(Thread* t) {
  const bool was_checking = t->checking;
  t->checking = false;
  push_ready(*t->block, t->linear);
  switch_away(t);
  t->checking = was_checking;
}

std::string thread_list(const BlockRun& b, ThreadState state, size_t limit = 8) {
  std::string s;
  size_t n = 0;
  for (const Thread& t : b.threads) {
    if (t.state != state) continue;
    if (n < limit) s += (n ? ", " : "") + dim_str(t.idx);
    ++n;
  }
  if (n > limit) s += ", ... (" + std::to_string(n) + " in all)";
  return s;
}

}  // namespace

Worker::~Worker() {
  for (const Stack& s : stacks) free_stack(s);
}

void record_fault(Grid& g, cudaError_t error, const std::string& text) {
  std::lock_guard<std::mutex> lock(g.fault_mu);
  if (g.faulted.load()) return;  // the first report wins
  g.error = error;
  g.report = text + schedule_note(g);  // under a randomized schedule: how to get it again
  g.faulted.store(true);
}

std::string relative_path(const char* file) {
  // This file is kernels/emulator/scheduler.cpp: what precedes that is the source root.
  static const std::string root = [] {
    std::string me = __FILE__;
    const std::string tail = "kernels/emulator/scheduler.cpp";
    return me.size() >= tail.size() ? me.substr(0, me.size() - tail.size()) : std::string();
  }();
  std::string f = file ? file : "?";
  if (!root.empty() && f.compare(0, root.size(), root) == 0) f = f.substr(root.size());
  return f;
}

std::string where(const Thread* t) {
  const BlockRun& b = *t->block;
  const Grid& g = *b.grid;
  std::ostringstream os;
  os << "  in kernel " << g.config.kernel << " (launched at " << relative_path(g.config.file) << ":"
     << g.config.line << ") on cuda:" << g.device << "\n  block " << dim_str(b.idx) << " of grid "
     << dim_str(g.config.grid) << ", thread " << dim_str(t->idx) << " of block "
     << dim_str(g.config.block) << " (warp " << t->warp << ", lane " << t->lane << ")";
  return os.str();
}

[[noreturn]] void fault(Thread* t, cudaError_t error, const std::string& what) {
  record_fault(*t->block->grid, error, "ember emulator: " + what + "\n" + where(t));
  t->block->faulted = true;
  t->checking = false;
  tls_thread = nullptr;
  ctx::jump_fcontext(t->worker->scheduler, t);  // the scheduler abandons this block
  __builtin_unreachable();
}

void switch_point(Thread* t, uintptr_t a) {
  BlockRun& b = *t->block;
  if (static_cast<uint32_t>(next_draw(b)) >= t->switch_threshold) return;
  if (b.ready_head >= b.ready.size()) return;  // no other thread is ready
  // threadIdx and friends are registers on a GPU, not memory.
  if (a - reinterpret_cast<uintptr_t>(&tls_coordinates) < sizeof(Coordinates)) return;
  step_aside(t);
}

namespace {

// ---- the thread's life ------------------------------------------------------------------------------

void resolve_warp(Thread* t, Warp& w, int slot);
const char* collective_name(int kind, int op);

// The lanes some pending collective of w names (masks of pending collectives may overlap).
void update_pending_lanes(Warp& w) {
  unsigned lanes = 0;
  for (uint32_t used = w.slots_used; used != 0; used &= used - 1)
    lanes |= w.slot[__builtin_ctz(used)].mask;
  w.pending_lanes = lanes;
}

// ---- __activemask ----------------------------------------------------------------------------
//
// On a GPU __activemask() returns the lanes that execute the call together with the caller: the
// lanes of its side of a branch, not every live lane. Convergence is never promised, so any
// subset that holds the caller is a legal answer. The emulator answers with the lanes that are
// provably at the same point, and no more:
//
//   the same call              the same code address (the other side of an `if` is another one)
//   from the same warp sync    the lane's last warp synchronization (a collective it completed,
//                              the block's start, a __syncthreads) is the same one
//                              (Warp::sync_serial): lanes that synchronized apart are not assumed
//                              to have met again, though a GPU has often reconverged them
//   the same round             as many __activemask calls since (a loop's iterations differ)
//
// A lane waits in __activemask() until no other lane of its warp can still join it (every one
// waits elsewhere — another call, a barrier, a collective — or has returned), so the answer is
// the same under every schedule.

// Can a lane of warp k that is not waiting in __activemask() still run?
bool warp_lane_can_run(const BlockRun& b, uint32_t k) {
  const Warp& w = b.warps[k];
  for (unsigned lanes = w.existing & ~w.exited & ~w.activemask_waiting; lanes != 0;
       lanes &= lanes - 1) {
    const ThreadState s = b.threads[k * 32 + static_cast<uint32_t>(__builtin_ctz(lanes))].state;
    if (s == ThreadState::Ready || s == ThreadState::Running) return true;
  }
  return false;
}

// Answers every lane of warp k that waits in __activemask(), by the groups above; all but
// `self` become ready (self carries on).
void answer_activemask(BlockRun& b, uint32_t k, Thread* self) {
  Warp& w = b.warps[k];
  const unsigned waiting = w.activemask_waiting;
  w.activemask_waiting = 0;
  for (unsigned left = waiting; left != 0;) {
    const int first = __builtin_ctz(left);
    unsigned group = 0;
    for (unsigned m = left; m != 0; m &= m - 1) {
      const int l = __builtin_ctz(m);
      if (w.activemask_pc[l] == w.activemask_pc[first] &&
          w.sync_serial[l] == w.sync_serial[first] &&
          w.activemask_calls[l] == w.activemask_calls[first]) {
        group |= 1u << l;
      }
    }
    left &= ~group;
    for (unsigned m = group; m != 0; m &= m - 1) w.activemask_result[__builtin_ctz(m)] = group;
  }
  for (unsigned m = waiting; m != 0; m &= m - 1) {
    Thread& o = b.threads[k * 32 + static_cast<uint32_t>(__builtin_ctz(m))];
    if (&o == self) o.state = ThreadState::Running;
    else push_ready(b, o.linear);
  }
}

// t has just stopped running (it waits at a barrier or collective, or returned): the lanes of its
// warp waiting in __activemask() get their answer if no lane can join them any more.
void settle_activemask(Thread* t) {
  BlockRun& b = *t->block;
  if (b.warps[t->warp].activemask_waiting != 0 && !warp_lane_can_run(b, t->warp))
    answer_activemask(b, t->warp, nullptr);
}

// ---- barriers -------------------------------------------------------------------------------

// Opens the block's barrier: every waiting thread gets the barrier's result (for
// __syncthreads_count, _and, _or: computed now, over the threads that took part, since threads
// may return before a waiting one runs again) and becomes ready, except `self`, which just
// carries on.
void open_barrier(BlockRun& b, Thread* self) {
  int count = 0, present = 0;
  for (const Thread& o : b.threads) {
    if (o.state != ThreadState::AtBarrier) continue;
    ++present;
    if (o.barrier_predicate != 0) ++count;
  }
  int result = 0;
  switch (b.barrier_reduce) {
    case BarrierReduce::None: result = 0; break;
    case BarrierReduce::Count: result = count; break;
    case BarrierReduce::And: result = count == present ? 1 : 0; break;
    case BarrierReduce::Or: result = count > 0 ? 1 : 0; break;
  }
  b.at_barrier = 0;
  ++b.epoch;
  for (uint32_t k = 0; k < (b.nthreads + 31) / 32; ++k) {  // every thread synchronized here
    Warp& w = b.warps[k];
    const uint32_t serial = ++w.syncs;
    for (int l = 0; l < 32; ++l) w.sync_serial[l] = serial;
  }
  for (uint32_t i = 0; i < b.nthreads; ++i) {
    Thread& o = b.threads[i];
    if (o.state != ThreadState::AtBarrier) continue;
    o.barrier_predicate = result;
    if (&o != self) push_ready(b, i);
  }
}

// A barrier is identified by its dynamic instance: the k-th __syncthreads each thread of the
// block reaches is the k-th barrier (the block's barrier count is k - 1 while they wait). The
// call site only tells whether the threads at one instance are where they should be: all at the
// same __syncthreads. The same code address is; another source line is not; the same line at
// another address is a copy the compiler made of one call (the same barrier) unless the calls
// that led there differ: a helper function with a barrier, inlined at two call sites.
bool same_barrier_site(const BlockRun& b, const void* pc, const char* file, int line) {
  if (line != b.barrier_line) return false;
  if (file != b.barrier_file && std::strcmp(file, b.barrier_file) != 0) return false;
  if (pc == b.barrier_pc) return true;
  const std::vector<std::string>& mine = source_chain(pc);
  const std::vector<std::string>& first = source_chain(b.barrier_pc);
  return mine.empty() || first.empty() || mine == first;  // without line information: the line
}

// "tests/emulator/kernels_warp.cu:20, called from tests/emulator/kernels_warp.cu:45" (the calls
// that led to a __syncthreads), or its file:line when the program has no line information.
std::string barrier_site(const void* pc, const char* file, int line) {
  const std::vector<std::string>& chain = source_chain(pc);
  if (chain.empty()) return relative_path(file) + ":" + std::to_string(line);
  std::string text = chain[0];
  for (size_t i = 1; i < chain.size() && i < 3; ++i)
    text += (i == 1 ? ", called from " : ", from ") + chain[i];
  return text;
}

// "1st", "2nd", "3rd", "4th", ..., "11th", "12th", "13th", "21st", ...
std::string ordinal(uint64_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

// Bookkeeping when a CUDA thread returns from the kernel.
void thread_exit(Thread* t) {
  BlockRun& b = *t->block;
  const bool sync = (t->checks & kSynccheck) != 0;
  t->state = ThreadState::Done;
  ++b.done;
  Warp& w = b.warps[t->warp];
  const unsigned bit = 1u << t->lane;
  w.exited |= bit;
  if (w.pending_lanes & bit) {  // lanes wait for it at a collective (it has not arrived: it ran)
    for (uint32_t used = w.slots_used; used != 0; used &= used - 1) {
      const int s = __builtin_ctz(used);
      PendingCollective& c = w.slot[s];
      if (!(c.mask & bit)) continue;
      if (sync) {
        std::string why;
        const Warp::Completed& last = w.completed[w.sync_serial[t->lane] % 32];
        if (last.serial == w.sync_serial[t->lane] && (last.mask & c.mask) != 0 &&
            last.mask != c.mask) {
          why = "; it took part in " + std::string(collective_name(last.kind, last.op)) + " at " +
                relative_path(last.file) + ":" + std::to_string(last.line) + " with the mask " +
                hex(last.mask) +
                " instead, which overlaps that mask but differs: lanes that meet at one "
                "operation must all name the same mask (give the two groups disjoint masks, or "
                "one mask for all)";
        }
        fault(t, cudaErrorLaunchFailure,
              "synccheck: thread " + dim_str(t->idx) + " (lane " + std::to_string(t->lane) +
                  ") returned while lanes of its warp wait for it at the warp operation at " +
                  relative_path(c.file) + ":" + std::to_string(c.line) + " (mask " + hex(c.mask) +
                  "): every lane a mask names must take part" + why);
      }
      c.mask &= ~bit;  // without synccheck: the exited lane simply drops out
      if (c.arrived == c.mask) resolve_warp(t, w, s);
    }
    update_pending_lanes(w);
  }
  if (b.at_barrier > 0) {
    if (sync) {
      fault(t, cudaErrorLaunchFailure,
            "synccheck: thread " + dim_str(t->idx) + " returned while threads " +
                thread_list(b, ThreadState::AtBarrier) + " wait at the __syncthreads at " +
                barrier_site(b.barrier_pc, b.barrier_file, b.barrier_line) + " (the block's " +
                ordinal(b.epoch + 1) +
                " barrier): a barrier must be reached by every thread of the block");
    }
    if (b.at_barrier + b.done == b.nthreads) open_barrier(b, nullptr);  // exited = arrived
  }
  settle_activemask(t);
}

// A fiber runs one CUDA thread after another: when its thread returns and the next thread in
// the queue has not started yet (no barrier has been reached so far), the next one simply runs
// here too, on the same stack, without a switch. A kernel without barriers or warp collectives
// thus runs a whole block on one fiber.
void fiber_main(ctx::transfer_t from) {
  Thread* t = tls_thread;  // the jumper made this thread current before jumping
  save_jumper(from, *t->worker);
  Grid& g = *t->block->grid;
  for (;;) {
    std::string error;
    try {
      g.body(g.closure);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "an exception that is not a std::exception";
    }
    t->checking = false;
    if (!error.empty()) fault(t, cudaErrorLaunchFailure, "the kernel threw a C++ exception: " + error);
    if (t->has_pending_write) settle_pending_write(t);
    thread_exit(t);
    BlockRun& b = *t->block;
    if (b.ready_head < b.ready.size()) draw_head(b);
    if (b.ready_head < b.ready.size() && !b.threads[b.ready[b.ready_head]].started) {
      const Stack stack = t->stack;
      Thread* n = take_next_started_here(b, stack);
      t = n;
      continue;
    }
    switch_away(t);  // never switched back to: the thread is done
    __builtin_unreachable();
  }
}

// ---- blocks ---------------------------------------------------------------------------------------

void run_block(Worker& w, Grid& g, uint64_t linear) {
  BlockRun& b = w.block;
  const dim3 bd = g.config.block, gd = g.config.grid;
  const uint32_t n = bd.x * bd.y * bd.z;
  b.grid = &g;
  b.idx = uint3{static_cast<unsigned>(linear % gd.x), static_cast<unsigned>((linear / gd.x) % gd.y),
                static_cast<unsigned>(linear / (static_cast<uint64_t>(gd.x) * gd.y))};
  b.linear = linear;
  uint32_t switch_threshold = 0;
  seed_block(b, &switch_threshold);
  b.nthreads = n;
  b.serial = w.next_serial++;
  b.epoch = 0;
  b.done = 0;
  b.at_barrier = 0;
  b.faulted = false;
  b.stride_loop = false;
  b.max_passes = 0;
  b.ready.clear();
  b.ready_head = 0;
  b.threads.resize(n);
  w.free_stacks = w.stacks;  // no fiber of an earlier block is ever resumed
  const uint32_t nwarps = (n + 31) / 32;
  if (b.warps.size() < nwarps) b.warps.resize(nwarps);  // kept from block to block: reset()
  for (uint32_t k = 0; k < nwarps; ++k) {
    const uint32_t lanes = std::min<uint32_t>(32, n - k * 32);
    b.warps[k].reset(lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1));
  }
  Globals& gl = globals();
  Arena& own = *gl.devices[static_cast<size_t>(g.device)]->arena;
  for (uint32_t i = 0; i < n; ++i) {
    Thread& t = b.threads[i];
    t.stack_lo = 0;
    t.stack_size = 0;
    t.own_lo = reinterpret_cast<uintptr_t>(own.base());
    t.own_size = own.capacity();
    t.own_shadow = own.shadow();
    t.tls_lo = w.tls_lo;
    t.tls_size = w.tls_size;
    t.race = w.race.data();
    t.write_pcs = w.write_pcs.data();
    t.checking = false;
    t.checks = g.checks;
    t.counting = g.counting;
    t.switch_threshold = switch_threshold;
    t.global_race = (g.checks & kGlobalRace) != 0;
    t.has_pending_write = false;
    std::fill(std::begin(t.accesses), std::end(t.accesses), 0);
    std::fill(std::begin(t.bytes), std::end(t.bytes), 0);
    t.linear = i;
    t.warp = i / 32;
    t.lane = i % 32;
    t.block = &b;
    t.worker = &w;
    t.idx = uint3{i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y)};
    t.state = ThreadState::Ready;
    t.started = false;
    b.ready.push_back(i);
  }
  if (g.config.shared_bytes > 0) {
    if (w.dynamic_shared.size() < g.config.shared_bytes + 16) {
      w.dynamic_shared.resize(g.config.shared_bytes + 16);
      // Cells of block serial 0 (none) read as "untouched in this block".
      w.dynamic_race.assign(g.config.shared_bytes / 4 + 2, RaceCell{});
      w.dynamic_write_pcs.assign(g.config.shared_bytes / 4 + 2, nullptr);
    }
    b.dynamic_shared = reinterpret_cast<char*>(
        (reinterpret_cast<uintptr_t>(w.dynamic_shared.data()) + 15) / 16 * 16);
  } else {
    b.dynamic_shared = nullptr;
  }
  tls_coordinates.block_idx = b.idx;
  tls_coordinates.block_dim = uint3{bd.x, bd.y, bd.z};
  tls_coordinates.grid_dim = uint3{gd.x, gd.y, gd.z};

  // Threads switch straight from one to the next (switch_away); control comes back here when
  // none is ready, or when the block faulted.
  while (Thread* t = take_next(b)) {
    const ctx::transfer_t from = ctx::jump_fcontext(t->context, nullptr);
    save_jumper(from, w);
    tls_thread = nullptr;
    if (b.faulted) return;  // abandoned: its fibers are never resumed, their stacks are reused
  }
  if (b.done < n) {
    // Nothing can run, and not everyone has finished: on a GPU this block would hang.
    std::ostringstream os;
    os << "ember emulator: synccheck: block " << dim_str(b.idx) << " of kernel " << g.config.kernel
       << " (launched at " << relative_path(g.config.file) << ":" << g.config.line
       << ") can never finish (a GPU would hang):";
    if (b.at_barrier > 0)
      os << "\n  threads " << thread_list(b, ThreadState::AtBarrier) << " wait at the __syncthreads at "
         << barrier_site(b.barrier_pc, b.barrier_file, b.barrier_line) << " (the block's "
         << ordinal(b.epoch + 1) << " barrier)";
    for (uint32_t k = 0; k < nwarps; ++k) {
      const Warp& wp = b.warps[k];
      for (uint32_t used = wp.slots_used; used != 0; used &= used - 1) {
        const PendingCollective& c = wp.slot[__builtin_ctz(used)];
        os << "\n  warp " << k << ": lanes " << hex(c.arrived) << " wait at the warp operation at "
           << relative_path(c.file) << ":" << c.line << " for lanes " << hex(c.mask & ~c.arrived)
           << " of its mask " << hex(c.mask);
      }
    }
    record_fault(g, cudaErrorLaunchFailure, os.str());
    return;
  }
  if (g.counting) add_block_counts(b);
  if (!b.stride_loop) g.no_loop_blocks.fetch_add(1, std::memory_order_relaxed);
  else g.pass_blocks[std::min<int64_t>(b.max_passes, 3)].fetch_add(1, std::memory_order_relaxed);
}

void run_blocks(Worker& w, Grid& g) {
  if (w.tls_size == 0) init_worker_tls(w);
  int64_t blocks = 0;
  while (!g.faulted.load(std::memory_order_relaxed)) {
    const uint64_t k = g.next_block.fetch_add(1, std::memory_order_relaxed);
    if (k >= g.nblocks) break;
    run_block(w, g, block_of_ticket(g, k));
    ++blocks;
  }
  g_blocks.fetch_add(blocks, std::memory_order_relaxed);
  g_switches.fetch_add(w.switches, std::memory_order_relaxed);
  w.switches = 0;
}

// ---- the pool of CPU threads -------------------------------------------------------------------------

class Pool {
 public:
  Pool() {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* e = std::getenv("EMBER_EMULATOR_THREADS"); e != nullptr && *e != '\0') {
      const int v = std::atoi(e);
      if (v >= 1 && v <= 1024) n = v;
      else std::fprintf(stderr, "ember emulator: EMBER_EMULATOR_THREADS='%s' is not 1..1024; using %d\n", e, n);
    }
    n = std::max(1, n);
    for (int i = 1; i < n; ++i) {
      auto* w = new Worker();
      w->id = i;
      helpers_.push_back(w);
      std::thread([this, w] { loop(*w); }).detach();  // lives as long as the process
    }
  }

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  void run(Grid& g, Worker& self) {
    std::lock_guard<std::mutex> launch(launch_mu_);
    begin_launch(g);  // the schedule and globalrace's tag, one launch at a time
    const uint64_t helpers = std::min<uint64_t>(helpers_.size(), g.nblocks - 1);
    if (helpers > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      grid_ = &g;
      tickets_ = static_cast<int>(helpers);
      finished_ = 0;
      cv_work_.notify_all();
    }
    run_blocks(self, g);
    if (helpers > 0) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_done_.wait(lock, [&] { return finished_ == static_cast<int>(helpers); });
      grid_ = nullptr;
    }
  }

 private:
  void loop(Worker& w) {
    for (;;) {
      Grid* g = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_work_.wait(lock, [&] { return tickets_ > 0; });
        --tickets_;
        g = grid_;
      }
      run_blocks(w, *g);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++finished_;
      }
      cv_done_.notify_all();
    }
  }

  std::vector<Worker*> helpers_;
  std::mutex launch_mu_;  // one grid at a time
  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  Grid* grid_ = nullptr;
  int tickets_ = 0;
  int finished_ = 0;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: its threads outlive main
  return *p;
}

thread_local std::unique_ptr<Worker> tls_host_worker;

}  // namespace

// The configuration errors a GPU gives at launch; "" when the launch is fine.
cudaError_t check_config(const LaunchConfig& c, std::string* why) {
  const dim3 g = c.grid, b = c.block;
  const uint64_t threads = static_cast<uint64_t>(b.x) * b.y * b.z;
  if (g.x == 0 || g.y == 0 || g.z == 0) *why = "the grid " + dim_str(g) + " is empty";
  else if (g.x > 2147483647u) *why = "grid x = " + std::to_string(g.x) + " exceeds 2^31 - 1";
  else if (g.y > 65535 || g.z > 65535) *why = "grid " + dim_str(g) + ": y and z may be at most 65535";
  else if (b.x == 0 || b.y == 0 || b.z == 0) *why = "the block " + dim_str(b) + " is empty";
  else if (b.x > 1024 || b.y > 1024 || b.z > 64)
    *why = "block " + dim_str(b) + ": at most 1024 in x and y and 64 in z";
  else if (threads > 1024)
    *why = "block " + dim_str(b) + " has " + std::to_string(threads) + " threads; at most 1024";
  if (!why->empty()) return cudaErrorInvalidConfiguration;
  const int limit = g_max_dynamic_shared.load();
  if (c.shared_bytes > static_cast<size_t>(limit)) {
    *why = std::to_string(c.shared_bytes) + " bytes of dynamic shared memory; the limit is " +
           std::to_string(limit) + " (48 KiB unless cudaFuncSetAttribute raised it, 227 KiB at most)";
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

void raise_dynamic_shared_limit(int bytes) {
  int cur = g_max_dynamic_shared.load();
  while (bytes > cur && !g_max_dynamic_shared.compare_exchange_weak(cur, bytes)) {
  }
}

namespace {
Thread* current_thread(const char* what) {
  Thread* t = tls_thread;
  if (t == nullptr) {
    std::fprintf(stderr, "ember emulator: %s called outside a kernel\n", what);
    std::abort();
  }
  return t;
}
}  // namespace

// ---- warp collectives ---------------------------------------------------------------------------

namespace {

enum CollectiveKind { kNone = 0, kSyncWarp = 1, kShuffle = 2, kVote = 3 };

const char* collective_name(int kind, int op) {
  if (kind == kSyncWarp) return "__syncwarp";
  if (kind == kShuffle) {
    switch (static_cast<ShuffleKind>(op)) {
      case ShuffleKind::Index: return "__shfl_sync";
      case ShuffleKind::Up: return "__shfl_up_sync";
      case ShuffleKind::Down: return "__shfl_down_sync";
      case ShuffleKind::Xor: return "__shfl_xor_sync";
    }
  }
  switch (static_cast<VoteKind>(op)) {
    case VoteKind::Any: return "__any_sync";
    case VoteKind::All: return "__all_sync";
    case VoteKind::Ballot: return "__ballot_sync";
  }
  return "?";
}

// The lane whose value lane l receives, as CUDA defines each shuffle (width splits the warp into
// independent segments; a source outside the lane's segment returns the lane's own value).
int shuffle_source(ShuffleKind kind, int l, int arg, int width) {
  const int base = l & ~(width - 1);
  switch (kind) {
    case ShuffleKind::Index: return base + (((arg % width) + width) % width);
    case ShuffleKind::Up: return (l - base) < arg ? l : l - arg;
    case ShuffleKind::Down: return (l - base) + arg >= width ? l : l + arg;
    case ShuffleKind::Xor: {
      const int s = l ^ arg;
      return (s >= base + width || s < 0 || s > 31) ? l : s;
    }
  }
  return l;
}

// Completes the collective in w.slot[s]: computes every lane's result, moves the order it makes
// forward (racecheck, globalrace: each lane's clock, and what each lane knows of the others'),
// and makes its lanes ready, except t, which carries on.
void resolve_warp(Thread* t, Warp& w, int s) {
  BlockRun& b = *t->block;
  const bool sync = (t->checks & kSynccheck) != 0;
  PendingCollective& c = w.slot[s];
  const unsigned lanes = c.mask;
  if (c.kind == kShuffle) {
    for (int l = 0; l < 32; ++l) {
      if (!(lanes & (1u << l))) continue;
      const int src = shuffle_source(static_cast<ShuffleKind>(c.op), l, w.arg[l], c.width);
      if (!(lanes & (1u << src))) {
        if (sync) {
          fault(t, cudaErrorLaunchFailure,
                "synccheck: " + std::string(collective_name(c.kind, c.op)) + " at " +
                    relative_path(c.file) + ":" + std::to_string(c.line) + ": lane " +
                    std::to_string(l) + " reads lane " + std::to_string(src) +
                    ", which is not in the mask " + hex(lanes) +
                    ": the value it gets on a GPU is undefined. Read only lanes the mask names "
                    "(a mask from __activemask() names only the lanes converged with the caller, "
                    "such as those on its side of a branch)");
        }
        w.result[l] = w.value[l];
      } else {
        w.result[l] = w.value[src];
      }
    }
  } else if (c.kind == kVote) {
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l)
      if ((lanes & (1u << l)) && w.arg[l] != 0) ballot |= 1u << l;
    uint64_t r = 0;
    switch (static_cast<VoteKind>(c.op)) {
      case VoteKind::Ballot: r = ballot; break;
      case VoteKind::Any: r = ballot != 0; break;
      case VoteKind::All: r = ballot == lanes; break;
    }
    for (int l = 0; l < 32; ++l)
      if (lanes & (1u << l)) w.result[l] = r;  // lanes outside it may wait for another vote
  }
  // The order: the lanes' clocks move on. A collective of every live lane tells everyone where
  // every lane's clock stands (full_seen, as a __syncwarp() does); one of fewer lanes, such as
  // __syncwarp(0x0000ffff), joins only its lanes' knowledge (the vector clock `seen`). For
  // __activemask, the lanes synchronized here, together.
  const uint32_t serial = ++w.syncs;
  w.completed[serial % 32] = Warp::Completed{serial, c.kind, c.op, lanes, c.file, c.line};
  for (unsigned m = lanes; m != 0; m &= m - 1) {
    const int l = __builtin_ctz(m);
    ++w.clock[l];
    w.sync_serial[l] = serial;
  }
  if (lanes == (w.existing & ~w.exited)) {
    for (int l = 0; l < 32; ++l) w.full_seen[l] = w.clock[l];
  } else {
    if (!w.partial) {
      w.partial = true;
      w.seen.assign(32 * 32, 0);
    }
    uint32_t joined[32] = {};
    for (unsigned m = lanes; m != 0; m &= m - 1) {
      const uint32_t* row = &w.seen[static_cast<size_t>(__builtin_ctz(m)) * 32];
      for (int a = 0; a < 32; ++a) joined[a] = std::max(joined[a], row[a]);
    }
    for (unsigned m = lanes; m != 0; m &= m - 1) {
      const int l = __builtin_ctz(m);
      joined[l] = std::max(joined[l], w.clock[l]);
    }
    for (unsigned m = lanes; m != 0; m &= m - 1)
      std::memcpy(&w.seen[static_cast<size_t>(__builtin_ctz(m)) * 32], joined, sizeof joined);
  }
  const unsigned arrived = c.arrived;
  w.slots_used &= ~(1u << s);
  update_pending_lanes(w);
  for (unsigned m = arrived; m != 0; m &= m - 1) {
    const uint32_t i = t->warp * 32 + static_cast<uint32_t>(__builtin_ctz(m));
    if (i != t->linear) push_ready(b, i);
  }
}

// A warp collective (__syncwarp, a shuffle, a vote) by the current lane. Lanes in divergent
// branches may use collectives with disjoint masks at the same time: each mask is a collective of
// its own (a slot of the warp), which completes when the lanes it names have arrived.
uint64_t collective(int kind, int op, unsigned mask, uint64_t value, int arg, int width,
                    const char* file, int line) {
  Thread* t = current_thread(collective_name(kind, op));
  if (t->has_pending_write) settle_pending_write(t);
  BlockRun& b = *t->block;
  Warp& w = b.warps[t->warp];
  const bool sync = (t->checks & kSynccheck) != 0;
  const bool was_checking = t->checking;
  t->checking = false;
  const unsigned bit = 1u << t->lane;
  // The words for a report; only built when there is one to make.
  const auto site = [&] {
    return std::string(collective_name(kind, op)) + " at " + relative_path(file) + ":" +
           std::to_string(line);
  };
  if (!(mask & bit)) {
    if (sync)
      fault(t, cudaErrorLaunchFailure, "synccheck: " + site() + ": the calling lane " +
                                           std::to_string(t->lane) + " is not in the mask " + hex(mask));
    mask |= bit;
  }
  if (mask & ~w.existing) {
    if (sync)
      fault(t, cudaErrorLaunchFailure,
            "synccheck: " + site() + ": the mask " + hex(mask) + " names lanes " +
                hex(mask & ~w.existing) + " that do not exist (this warp has only lanes " +
                hex(w.existing) + ": the block has " + std::to_string(b.nthreads) + " threads)");
    mask &= w.existing;
  }
  if (mask & w.exited) {
    if (sync)
      fault(t, cudaErrorLaunchFailure,
            "synccheck: " + site() + ": the mask " + hex(mask) + " names lanes " +
                hex(mask & w.exited) + " that have already returned from the kernel");
    mask &= ~w.exited;
  }
  if (kind == kShuffle && (width < 1 || width > 32 || (width & (width - 1)) != 0)) {
    fault(t, cudaErrorLaunchFailure, site() + ": width " + std::to_string(width) +
                                         " is not a power of two from 1 to 32");
  }
  // The pending collective this lane joins: the one with its mask; else a new one. Collectives
  // whose masks overlap may be pending at once (lane 16 waits at __syncwarp(0x10001) while lane 0
  // is still at __syncwarp(0x3) with lane 1: lane 0 comes later), but not two that wait for each
  // other: that is a hang on a GPU, reported at once.
  const auto site_of = [&](const PendingCollective& c) {
    return std::string(collective_name(c.kind, c.op)) + " at " + relative_path(c.file) + ":" +
           std::to_string(c.line) + " (mask " + hex(c.mask) + ")";
  };
  int s = -1;
  for (uint32_t used = (mask & w.pending_lanes) ? w.slots_used : 0; used != 0; used &= used - 1) {
    const int k = __builtin_ctz(used);
    const PendingCollective& c = w.slot[k];
    if (c.mask != mask) continue;
    if (c.kind != kind || c.op != op || (kind == kShuffle && c.width != width)) {
      fault(t, cudaErrorLaunchFailure,
            "synccheck: lanes of warp " + std::to_string(t->warp) +
                " meet at different warp "
                "operations: lane " +
                std::to_string(t->lane) + " at " + site() + " (mask " + hex(mask) + "), lanes " +
                hex(c.arrived) + " at " + site_of(c));
    }
    s = k;
    break;
  }
  if (s < 0) {
    s = __builtin_ctz(~w.slots_used);  // a free slot (at most 32 collectives wait at once)
    w.slots_used |= 1u << s;
    w.pending_lanes |= mask;
    w.slot[s] = PendingCollective{mask, 0, kind, op, width, file, line};
  }
  for (uint32_t used = w.slots_used & ~(1u << s); used != 0; used &= used - 1) {
    const PendingCollective& o = w.slot[__builtin_ctz(used)];
    if ((o.mask & bit) && (o.arrived & mask)) {  // o waits for this lane, which waits for o's
      fault(t, cudaErrorLaunchFailure,
            "synccheck: lanes of warp " + std::to_string(t->warp) +
                " wait for each other at "
                "two warp operations whose masks overlap but differ: lane " +
                std::to_string(t->lane) + " at " + site() + " (mask " + hex(mask) +
                ") needs lanes " + hex(o.arrived & mask) + ", which wait at " + site_of(o) +
                ", which needs lane " + std::to_string(t->lane) +
                ": neither can complete (a GPU would hang). Lanes that meet at one operation "
                "must all name the same mask: give the two groups disjoint masks, or one mask "
                "for all");
    }
  }
  PendingCollective& c = w.slot[s];
  w.value[t->lane] = value;
  w.arg[t->lane] = arg;
  c.arrived |= bit;
  t->state = ThreadState::AtWarp;
  if (c.arrived == c.mask) {
    resolve_warp(t, w, s);
    t->state = ThreadState::Running;
  } else {
    settle_activemask(t);
    yield(t);
  }
  const uint64_t result = w.result[t->lane];
  if (b.random) step_aside(t);  // the lane that completed the set need not run on first
  t->checking = was_checking;
  return result;
}

// __activemask() by the current lane (see "__activemask" above).
unsigned activemask_call(const void* pc) {
  Thread* t = current_thread("__activemask");
  if (t->has_pending_write) settle_pending_write(t);
  BlockRun& b = *t->block;
  Warp& w = b.warps[t->warp];
  const bool was_checking = t->checking;
  t->checking = false;
  const uint32_t l = t->lane;
  if (w.activemask_serial[l] != w.sync_serial[l]) {  // the first call since it synchronized
    w.activemask_serial[l] = w.sync_serial[l];
    w.activemask_calls[l] = 0;
  }
  ++w.activemask_calls[l];
  w.activemask_pc[l] = pc;
  w.activemask_waiting |= 1u << l;
  t->state = ThreadState::AtActiveMask;
  if (!warp_lane_can_run(b, t->warp)) {
    answer_activemask(b, t->warp, t);  // no other lane can come: answer now
  } else {
    yield(t);
  }
  const unsigned result = w.activemask_result[l];
  if (b.random) step_aside(t);
  t->checking = was_checking;
  return result;
}

}  // namespace

}  // namespace detail

using namespace detail;

// ---- launches ---------------------------------------------------------------------------------------

// ---- the grid cap and the grid-stride coverage ---------------------------------------------------

namespace {

std::atomic<int64_t> g_grid_cap{-1};  // -1: EMBER_EMULATOR_GRID_CAP not read yet
thread_local int64_t tls_capped_from = 0;

// Coverage rows by launch site: the kernel's text and its file and line are string literals of
// the launch (EMBER_LAUNCH), so their addresses identify it.
using SiteKey = std::tuple<const char*, const char*, int>;
std::mutex g_coverage_mu;
std::map<SiteKey, StrideCoverage>& coverage_rows() {
  static auto* rows = new std::map<SiteKey, StrideCoverage>();  // kernels may run during exit
  return *rows;
}

// Adds a finished launch's blocks to its site's row.
void record_coverage(Grid& g) {
  const LaunchConfig& c = g.config;
  std::lock_guard<std::mutex> lock(g_coverage_mu);
  StrideCoverage& row = coverage_rows()[SiteKey{c.kernel, c.file, c.line}];
  if (row.launches == 0) {
    row.kernel = c.kernel;
    row.site = relative_path(c.file) + ":" + std::to_string(c.line);
  }
  ++row.launches;
  row.max_threads = std::max(row.max_threads, static_cast<int64_t>(g.threads_per_block));
  row.max_dynamic_shared = std::max(row.max_dynamic_shared, static_cast<int64_t>(c.shared_bytes));
  if (c.capped_from > 0) ++row.capped_launches;
  const int64_t no_loop = g.no_loop_blocks.load();
  row.no_loop += no_loop;
  row.blocks += no_loop;
  for (int k = 0; k < 4; ++k) {
    row.passes[k] += g.pass_blocks[k].load();
    row.blocks += g.pass_blocks[k].load();
  }
}

}  // namespace

int64_t grid_cap() {
  int64_t cap = g_grid_cap.load(std::memory_order_relaxed);
  if (cap >= 0) return cap;
  cap = 0;
  if (const char* e = std::getenv("EMBER_EMULATOR_GRID_CAP"); e != nullptr && *e != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(e, &end, 10);
    if (*end == '\0' && v >= 0 && v <= 2147483647) {
      cap = v;
    } else {
      std::fprintf(stderr,
                   "ember emulator: EMBER_EMULATOR_GRID_CAP='%s' is not a number of blocks "
                   "(1 or more, or 0 for no cap); grids are not capped\n",
                   e);
    }
  }
  g_grid_cap.store(cap, std::memory_order_relaxed);
  return cap;
}

void set_grid_cap(int64_t blocks) { g_grid_cap.store(std::max<int64_t>(0, blocks)); }

int64_t cap_strided_blocks(int64_t blocks) {
  const int64_t cap = grid_cap();
  if (cap <= 0 || blocks <= cap) return blocks;
  tls_capped_from = std::max(tls_capped_from, blocks);
  return cap;
}

int64_t take_capped_blocks() { return std::exchange(tls_capped_from, 0); }

void note_stride_passes(int64_t passes) {
  Thread* t = tls_thread;
  if (t == nullptr) return;  // a grid_stride range used on the host: nothing to record
  BlockRun& b = *t->block;
  b.stride_loop = true;
  b.max_passes = std::max(b.max_passes, passes);
}

std::vector<StrideCoverage> stride_coverage() {
  std::lock_guard<std::mutex> lock(g_coverage_mu);
  std::vector<StrideCoverage> out;
  for (const auto& [key, row] : coverage_rows()) out.push_back(row);
  std::sort(out.begin(), out.end(),
            [](const StrideCoverage& a, const StrideCoverage& b) { return a.site < b.site; });
  return out;
}

std::string coverage_table() {
  const std::vector<StrideCoverage> rows = stride_coverage();
  size_t kw = 6, sw = 9;
  for (const StrideCoverage& r : rows) {
    kw = std::max(kw, r.kernel.size());
    sw = std::max(sw, r.site.size());
  }
  std::ostringstream os;
  const int64_t cap = grid_cap();
  os << "ember emulator: grid-stride coverage";
  if (cap > 0) os << " under EMBER_EMULATOR_GRID_CAP=" << cap;
  else os << " (no grid cap: EMBER_EMULATOR_GRID_CAP is not set)";
  os << "\n  blocks by the passes their busiest thread made over a grid_stride loop\n";
  os << "  " << std::left << std::setw(static_cast<int>(kw)) << "kernel"
     << "  " << std::setw(static_cast<int>(sw)) << "launch at" << std::right << std::setw(9)
     << "launches" << std::setw(8) << "capped" << std::setw(10) << "blocks" << std::setw(9)
     << "0 passes" << std::setw(9) << "1 pass" << std::setw(10) << "2 passes" << std::setw(10)
     << "3+ passes"
     << "  note\n";
  for (const StrideCoverage& r : rows) {
    os << "  " << std::left << std::setw(static_cast<int>(kw)) << r.kernel << "  "
       << std::setw(static_cast<int>(sw)) << r.site << std::right << std::setw(9) << r.launches
       << std::setw(8) << r.capped_launches << std::setw(10) << r.blocks << std::setw(9)
       << r.passes[0] << std::setw(9) << r.passes[1] << std::setw(10) << r.passes[2]
       << std::setw(10) << r.passes[3] << "  ";
    if (r.no_loop == r.blocks) os << "exact grid (no grid_stride loop)";
    else if (r.passes[2] + r.passes[3] == 0) os << "NO SECOND PASS";
    else if (r.no_loop > 0) os << r.no_loop << " blocks without a loop";
    os << "\n";
  }
  return os.str();
}

std::string launch_table() {
  std::ostringstream os;
  os << "# ember emulator: launch configurations (kernel, launch site, launches, largest block, "
        "most dynamic shared memory in bytes, 1 if above 48 KiB: cudaFuncSetAttribute's opt-in)\n";
  for (const StrideCoverage& r : stride_coverage()) {
    os << r.kernel << '\t' << r.site << '\t' << r.launches << '\t' << r.max_threads << '\t'
       << r.max_dynamic_shared << '\t' << (r.max_dynamic_shared > 48 * 1024 ? 1 : 0) << '\n';
  }
  return os.str();
}

cudaError_t run_grid(const LaunchConfig& config, void (*body)(void*), void* closure,
                     const void* params, size_t params_size) {
  if (tls_thread != nullptr) {
    std::fprintf(stderr, "ember emulator: a kernel launched a kernel (dynamic parallelism is not "
                         "emulated)\n");
    std::abort();
  }
  Globals& gl = globals();
  if (gl.devices.empty()) {
    set_last_error(cudaErrorNoDevice);
    return cudaErrorNoDevice;
  }
  std::string why;
  const cudaError_t bad = check_config(config, &why);
  if (bad != cudaSuccess) {
    publish_report("ember emulator: launch of " + std::string(config.kernel) + " at " +
                   relative_path(config.file) + ":" + std::to_string(config.line) + ": " + why);
    set_last_error(bad);
    return bad;
  }
  // The asynchronous mode's worker runs what the host queued (and counted) earlier; it takes no
  // device lock, which a host thread waiting for it may hold.
  const bool worker = on_async_worker();
  if (tls_replay.node < 0 && !worker) count_submission();  // nor are a graph's nodes the host's
  const int device = config.stream != nullptr ? reinterpret_cast<Stream*>(config.stream)->device
                                              : current_device_index();
  Device& dev = *gl.devices[static_cast<size_t>(device)];
  std::unique_lock<std::recursive_mutex> lock(dev.mu, std::defer_lock);
  if (!worker) {
    lock.lock();
    drain(config.stream != nullptr ? *reinterpret_cast<Stream*>(config.stream)
                                   : dev.default_stream);
  }

  Grid g;
  g.config = config;
  g.body = body;
  g.closure = closure;
  g.params_lo = reinterpret_cast<uintptr_t>(params);
  g.params_size = params_size;
  g.device = device;
  g.checks = checks();
  if (!instrumented()) g.checks &= ~(kMemcheck | kRacecheck | kInitcheck | kGlobalRace);
  g.counting = instrumented() && access_counting();
  if (g.counting) count_launch();
  g.nblocks = static_cast<uint64_t>(config.grid.x) * config.grid.y * config.grid.z;
  g.threads_per_block = static_cast<uint64_t>(config.block.x) * config.block.y * config.block.z;
  if (!tls_host_worker) tls_host_worker = std::make_unique<Worker>();
  const auto start = std::chrono::steady_clock::now();
  {
    HostWindow window;  // the kernel may touch device memory (hostcheck)
    pool().run(g, *tls_host_worker);
  }
  g_kernel_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - start).count(),
                        std::memory_order_relaxed);
  g_launches.fetch_add(1, std::memory_order_relaxed);
  g_threads.fetch_add(static_cast<int64_t>(g.nblocks * g.threads_per_block), std::memory_order_relaxed);
  record_coverage(g);
  if (!g.faulted.load() && config.capped_from > 0 &&
      g.no_loop_blocks.load() == static_cast<int64_t>(g.nblocks)) {
    // The grid was capped, and no block strided: the blocks the cap took away did no work.
    std::ostringstream os;
    os << "ember emulator: grid cap: kernel " << config.kernel << " (launched at "
       << relative_path(config.file) << ":" << config.line << ") got the grid "
       << dim_str(config.grid) << ", capped by EMBER_EMULATOR_GRID_CAP=" << grid_cap() << " from "
       << config.capped_from << " blocks in one dimension, but none of its blocks "
       << "reached a grid_stride loop, so the work of the missing blocks was skipped. A kernel "
       << "whose grid comes from grid_for or strided_blocks must walk its work with grid_stride "
       << "(kernels/cuda/launch.cuh); a kernel that needs an exact grid must size it without them.";
    record_fault(g, cudaErrorLaunchFailure, os.str());
  }
  if (g.faulted.load()) {
    publish_report(g.report);
    set_last_error(g.error);
    return g.error;
  }
  return cudaSuccess;
}

void enter_kernel_code() {
  Thread* t = tls_thread;
  if (t != nullptr) {
    t->checking = t->counting || t->switch_threshold != 0 ||
                  (t->checks & (kMemcheck | kRacecheck | kInitcheck | kGlobalRace)) != 0;
  }
}

void* dynamic_shared_memory() {
  Thread* t = tls_thread;
  return t != nullptr ? t->block->dynamic_shared : nullptr;
}

namespace detail {
namespace {
std::atomic<int64_t> g_submissions{0}, g_graph_launches{0};
}  // namespace
thread_local ReplayPosition tls_replay;
void count_submission() { g_submissions.fetch_add(1, std::memory_order_relaxed); }
void count_graph_launch() {
  g_graph_launches.fetch_add(1, std::memory_order_relaxed);
  count_submission();
}
}  // namespace detail

Stats stats() {
  Stats s;
  s.submissions = g_submissions.load();
  s.graph_launches = g_graph_launches.load();
  s.launches = g_launches.load();
  s.blocks = g_blocks.load();
  s.threads = g_threads.load();
  s.switches = g_switches.load();
  s.kernel_seconds = static_cast<double>(g_kernel_ns.load()) * 1e-9;
  return s;
}

int worker_threads() { return pool().size(); }

// ---- barriers -------------------------------------------------------------------------------------

int block_barrier(BarrierReduce reduce, int predicate, const char* file, int line) {
  const void* pc = __builtin_return_address(0);  // in the kernel's code (device.h)
  Thread* t = current_thread("__syncthreads");
  if (t->has_pending_write) settle_pending_write(t);
  BlockRun& b = *t->block;
  const bool sync = (t->checks & kSynccheck) != 0;
  const bool was_checking = t->checking;
  t->checking = false;
  if (sync && b.done > 0) {
    fault(t, cudaErrorLaunchFailure,
          "synccheck: __syncthreads at " + barrier_site(pc, file, line) + " (the block's " +
              ordinal(b.epoch + 1) + " barrier) is reached by thread " + dim_str(t->idx) +
              ", but threads " + thread_list(b, ThreadState::Done) +
              " of the block have already returned: a barrier must be reached by every thread "
              "of the block (move the early return after it, or guard the work instead)");
  }
  // The threads waiting now are all at their (epoch + 1)-th barrier: are they at one call?
  if (b.at_barrier == 0) {
    b.barrier_pc = pc;
    b.barrier_file = file;
    b.barrier_line = line;
    b.barrier_reduce = reduce;
  } else if (sync && !same_barrier_site(b, pc, file, line)) {
    fault(t, cudaErrorLaunchFailure,
          "synccheck: threads of block " + dim_str(b.idx) + " reach their " + ordinal(b.epoch + 1) +
              " __syncthreads at different places: thread " + dim_str(t->idx) + " at " +
              barrier_site(pc, file, line) + ", threads " + thread_list(b, ThreadState::AtBarrier) +
              " at " + barrier_site(b.barrier_pc, b.barrier_file, b.barrier_line) +
              ". A __syncthreads in code that not every thread of the block reaches the same way "
              "is undefined behaviour (a GPU may hang, or let threads through that are at "
              "different places): put the barrier where the whole block reaches it, or make the "
              "branch the same for every thread of the block");
  }
  t->barrier_predicate = predicate;
  t->state = ThreadState::AtBarrier;
  ++b.at_barrier;
  int result = 0;
  if (b.at_barrier + b.done == b.nthreads) {
    open_barrier(b, t);  // the last one in opens it for everyone
    t->state = ThreadState::Running;
    if (b.random) step_aside(t);  // ... and need not be the first to go on
  } else {
    settle_activemask(t);
    yield(t);
  }
  // Every thread has the barrier's result now.
  result = reduce == BarrierReduce::None ? 0 : t->barrier_predicate;
  t->checking = was_checking;
  return result;
}

void warp_barrier(unsigned mask, const char* file, int line) {
  collective(kSyncWarp, 0, mask, 0, 0, 32, file, line);
}

uint64_t warp_shuffle(ShuffleKind kind, unsigned mask, uint64_t bits, int lane_or_delta, int width,
                      const char* file, int line) {
  return collective(kShuffle, static_cast<int>(kind), mask, bits, lane_or_delta, width, file, line);
}

unsigned warp_vote(VoteKind kind, unsigned mask, int predicate, const char* file, int line) {
  return static_cast<unsigned>(
      collective(kVote, static_cast<int>(kind), mask, 0, predicate != 0, 32, file, line));
}

unsigned active_mask(const char* /*file*/, int /*line*/) {
  return activemask_call(__builtin_return_address(0));
}

void trap(const char* file, int line) {
  Thread* t = current_thread("__trap");
  fault(t, cudaErrorLaunchFailure,
        "the kernel called __trap() at " + relative_path(file) + ":" + std::to_string(line));
}

}  // namespace ember::emu

