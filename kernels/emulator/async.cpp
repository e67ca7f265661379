// ember/kernels/emulator/async.cpp — the asynchronous mode (EMBER_EMULATOR_ASYNC=1): streams whose
// work runs later, on a worker thread, as a GPU runs it.
//
// In the default (eager) mode a launch finishes inside the call, so a host program that forgets
// a synchronization, or orders two streams wrongly, still gets the right answer. In this mode
// every kernel launch, cudaMemcpyAsync, cudaMemsetAsync, event record, cudaStreamWaitEvent and
// graph launch becomes an operation in its stream's queue, and the call returns at once. One
// worker thread runs the queued work, and only when something needs it:
//   - a synchronizing call (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize,
//     a synchronous cudaMemcpy or cudaMemset, cudaFree, cudaFreeHost, cudaStreamDestroy) waits
//     until the worker has run what it waits for;
//   - a query (cudaStreamQuery, cudaEventQuery) of unfinished work answers cudaErrorNotReady and
//     lets the worker start on it, so that a polling loop ends;
//   - more than kBacklog operations pending: the worker starts on the stream that queued the last.
// Running work only on demand is the most adversarial order CUDA's rules allow: an operation
// runs after everything it is ordered after, and after nothing else. A consumer on one stream
// whose producer is on another, with no event between them, reads what the producer has not
// written yet — every time, not once in a thousand runs.
//
// Ordering. Each stream numbers its operations; a point (stream, n) means "its first n operations
// have run". An operation carries the points it waits for: on the legacy stream, the tail of
// every blocking stream of its device; on a blocking stream, the tail of the legacy stream (a
// cudaStreamNonBlocking stream waits for neither); for cudaStreamWaitEvent, the event's point.
// The worker runs the head of a stream whose demand is above its progress once every point it
// waits for is reached, raising those streams' demand first.
//
// Errors. An operation that fails (a checker's report in a kernel, a trap, a copy outside its
// allocation) leaves its error on the device, sticky as on a GPU: every later call that involves
// the device returns it, cudaGetLastError does not clear it, and the device's queued work is
// dropped. The report adds which queued operation failed, on which stream, queued where.
//
// Host accesses. A copy queued between the device and pinned host memory guards the host range
// with mprotect until the worker runs it: a host read or write of a copy's destination, or a
// write of its source, ends in SIGSEGV, which the handler below turns into a report naming the
// operation, its stream and the host code that made the access. It then opens the pages and the
// program goes on, seeing the stale bytes as it would on a GPU.
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <sstream>

#include "kernels/emulator/internal.h"

namespace ember::emu::detail {

struct AsyncOp {
  uint64_t seq = 0;
  int device = 0;
  std::string what;
  const void* pc = nullptr;
  std::vector<StreamPoint> waits;
  std::function<cudaError_t()> run;
  std::vector<uint64_t> guards;  // the host ranges it guards (ids in Guards)
};

struct AsyncStream {
  int device = 0;
  bool blocking = true;
  bool legacy = false;
  const void* handle = nullptr;  // the cudaStream_t, for the reports
  uint64_t submitted = 0;        // operations queued
  uint64_t done = 0;             // operations run (or dropped after a fault)
  uint64_t demand = 0;           // how far the worker has been asked to run it
  std::deque<AsyncOp> ops;
};

namespace {

constexpr size_t kBacklog = 4096;
constexpr int kMaxDevices = 16;

// The queues. Allocated once and never destroyed: the worker outlives main.
struct Queues {
  std::mutex mu;
  std::condition_variable work, done;
  std::vector<std::shared_ptr<AsyncStream>> streams;  // every stream with a queue
  size_t pending = 0;
  bool worker_started = false;
  std::atomic<int> sticky[kMaxDevices] = {};
  std::string sticky_report[kMaxDevices];  // under mu
};
Queues& queues() {
  static Queues* q = new Queues();
  return *q;
}

std::atomic<int> g_mode{-1};  // -1: EMBER_EMULATOR_ASYNC not read yet
std::atomic<int64_t> g_queued{0}, g_not_ready{0}, g_host_reports{0};
thread_local bool tls_worker = false;

std::string stream_name(const AsyncStream& a) {
  if (a.legacy) return "the legacy stream of cuda:" + std::to_string(a.device);
  std::ostringstream os;
  os << "stream " << a.handle << " (" << (a.blocking ? "blocking" : "cudaStreamNonBlocking")
     << ") of cuda:" << a.device;
  return os.str();
}

std::string queued_at(const void* pc) { return pc ? ", queued at " + describe_code(pc) : ""; }

// The queue of s, made on first use. Queues::mu is held.
AsyncStream& queue_of(Stream& s) {
  if (!s.async) {
    auto a = std::make_shared<AsyncStream>();
    a->device = s.device;
    a->blocking = s.blocking;
    Device& d = *globals().devices[static_cast<size_t>(s.device)];
    a->legacy = &s == &d.default_stream;
    a->handle = &s;
    s.async = a;
    queues().streams.push_back(a);
  }
  return *s.async;
}

// ---- guarding pinned host memory ------------------------------------------------------------------

struct Guard {
  uint64_t id;
  uintptr_t lo, hi;
  bool host_may_read;
  bool breached;  // the host touched its pages: they are open from then on
  std::string what;
  std::string stream;
  const void* pc;
};
std::mutex g_guard_mu;
std::vector<Guard>* g_guards = new std::vector<Guard>();  // never destroyed (signal handler)
uint64_t g_next_guard = 1;
struct sigaction g_previous {};
thread_local bool tls_in_handler = false;

uintptr_t page_size() {
  static const uintptr_t p = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// Sets the protection of the pages of [lo, hi) from the guards that cover them. g_guard_mu held.
void reprotect(uintptr_t lo, uintptr_t hi) {
  const uintptr_t ps = page_size();
  for (uintptr_t page = lo / ps * ps; page < hi; page += ps) {
    int prot = PROT_READ | PROT_WRITE;
    for (const Guard& g : *g_guards) {
      if (g.breached || g.hi <= page || g.lo >= page + ps) continue;
      prot = g.host_may_read ? (prot & PROT_READ) : PROT_NONE;
      if (prot == PROT_NONE) break;
    }
    mprotect(reinterpret_cast<void*>(page), ps, prot);
  }
}

void on_guard_fault(int sig, siginfo_t* info, void* context);

// Puts the handler in front of whatever handles SIGSEGV now (a test runner installs its own per
// test case), chaining to it.
void ensure_handler() {
  struct sigaction current {};
  sigaction(SIGSEGV, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_guard_fault) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_guard_fault;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_previous);
}

void chain(int sig, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr && g_previous.sa_sigaction != on_guard_fault) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
             g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
    return;
  }
  signal(SIGSEGV, SIG_DFL);  // returning re-runs the access, which now ends the process
}

void on_guard_fault(int sig, siginfo_t* info, void* context) {
  if (tls_in_handler) {  // a fault inside the handler: give up on it
    signal(SIGSEGV, SIG_DFL);
    return;
  }
  tls_in_handler = true;
  const auto a = reinterpret_cast<uintptr_t>(info->si_addr);
  const void* pc = nullptr;
  bool write = true;
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  // describe_code steps back one byte from a return address; this is the faulting instruction.
  pc = reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP] + 1);
  write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
  bool ours = false;
  std::string report;
  {
    std::lock_guard<std::mutex> lock(g_guard_mu);
    const uintptr_t ps = page_size();
    const uintptr_t page = a / ps * ps;
    for (Guard& g : *g_guards) {
      if (g.breached || g.hi <= page || g.lo >= page + ps) continue;
      ours = true;
      // The emulator itself (the worker, a kernel's block) touching a page that another queued
      // copy guards: open it without a report.
      const bool host = !tls_worker && tls_thread == nullptr;
      if (host && report.empty() && a >= g.lo && a < g.hi && (write || !g.host_may_read)) {
        std::ostringstream os;
        os << "ember emulator: asynchronous mode: host " << (write ? "write to" : "read of")
           << " pinned memory at 0x" << std::hex << a << std::dec << " that a queued operation "
           << "still uses: " << g.what << ", on " << g.stream << ", has not run yet"
           << queued_at(g.pc) << ".\n  the host access: " << describe_code(pc)
           << "\n  On a GPU the copy runs whenever the device gets to it: the host "
           << (write ? "would change what it copies" : "would read bytes not copied yet")
           << ". Wait for it first (cudaStreamSynchronize, cudaEventSynchronize; in ember "
              "cuda::synchronize())";
        report = os.str();
      }
      g.breached = true;
    }
    if (ours) mprotect(reinterpret_cast<void*>(page), ps, PROT_READ | PROT_WRITE);
  }
  if (!report.empty()) {
    g_host_reports.fetch_add(1);
    publish_warning(report);
  }
  tls_in_handler = false;
  if (!ours) chain(sig, info, context);
}

// Guards the host ranges of a queued operation; returns their ids. Queues::mu is held.
std::vector<uint64_t> arm(const std::vector<HostRange>& ranges, const std::string& what,
                          const std::string& stream, const void* pc) {
  std::vector<uint64_t> ids;
  if (ranges.empty()) return ids;
  std::lock_guard<std::mutex> lock(g_guard_mu);
  ensure_handler();
  for (const HostRange& r : ranges) {
    const auto lo = reinterpret_cast<uintptr_t>(r.p);
    g_guards->push_back(
        Guard{g_next_guard, lo, lo + r.bytes, r.host_may_read, false, what, stream, pc});
    ids.push_back(g_next_guard++);
    reprotect(lo, lo + r.bytes);
  }
  return ids;
}

void disarm(const std::vector<uint64_t>& ids) {
  if (ids.empty()) return;
  std::lock_guard<std::mutex> lock(g_guard_mu);
  for (const uint64_t id : ids) {
    for (size_t i = 0; i < g_guards->size(); ++i) {
      if ((*g_guards)[i].id != id) continue;
      const Guard g = (*g_guards)[i];
      g_guards->erase(g_guards->begin() + static_cast<long>(i));
      reprotect(g.lo, g.hi);
      break;
    }
  }
}

// ---- the worker -----------------------------------------------------------------------------------

void run_op(AsyncOp& op) {
  disarm(op.guards);
  Queues& q = queues();
  if (q.sticky[op.device].load() != cudaSuccess) return;  // the device faulted: dropped
  set_current_device_index(op.device);
  const cudaError_t e = op.run();
  const std::string report = take_report();
  cudaGetLastError();  // the worker's own last error means nothing to anyone
  if (e == cudaSuccess) return;
  std::lock_guard<std::mutex> lock(q.mu);
  if (q.sticky[op.device].load() != cudaSuccess) return;
  q.sticky_report[op.device] =
      (report.empty() ? "ember emulator: " + std::string(cudaGetErrorName(e)) : report) +
      "\n  asynchronous mode: this failed when the worker ran " + op.what + queued_at(op.pc) +
      "; the error is sticky, as on a GPU: every later call on cuda:" + std::to_string(op.device) +
      " returns it";
  q.sticky[op.device].store(e);
}

[[noreturn]] void worker_main() {
  tls_worker = true;
  Queues& q = queues();
  std::unique_lock<std::mutex> lock(q.mu);
  for (;;) {
    std::shared_ptr<AsyncStream> pick;
    bool raised = false;
    for (const auto& sp : q.streams) {
      AsyncStream& a = *sp;
      if (a.ops.empty() || a.demand <= a.done) continue;
      bool ready = true;
      for (const StreamPoint& w : a.ops.front().waits) {
        if (w.stream->done >= w.seq) continue;
        ready = false;
        if (w.stream->demand < w.seq) {
          w.stream->demand = w.seq;
          raised = true;
        }
      }
      if (ready) {
        pick = sp;
        break;
      }
    }
    if (!pick) {
      if (!raised) q.work.wait(lock);
      continue;
    }
    AsyncOp op = std::move(pick->ops.front());
    pick->ops.pop_front();
    --q.pending;
    lock.unlock();
    run_op(op);
    op = AsyncOp();  // let go of the kernel's arguments before taking the lock
    lock.lock();
    ++pick->done;
    q.done.notify_all();
  }
}

void start_worker() {  // Queues::mu is held
  Queues& q = queues();
  if (q.worker_started) return;
  q.worker_started = true;
  std::thread(worker_main).detach();  // lives as long as the process
}

}  // namespace

bool async_mode() {
  int m = g_mode.load(std::memory_order_relaxed);
  if (m >= 0) return m == 1;
  const char* e = std::getenv("EMBER_EMULATOR_ASYNC");
  m = e != nullptr && *e != '\0' && std::string(e) != "0" ? 1 : 0;
  int expected = -1;
  g_mode.compare_exchange_strong(expected, m);
  return g_mode.load() == 1;
}

bool on_async_worker() { return tls_worker; }

StreamPoint enqueue(Stream& s, std::string what, const void* pc, std::function<cudaError_t()> run,
                    std::vector<StreamPoint> waits, std::vector<HostRange> guards) {
  Queues& q = queues();
  std::lock_guard<std::mutex> lock(q.mu);
  start_worker();
  AsyncStream& a = queue_of(s);
  // The legacy stream's implicit order: it waits for every blocking stream of its device, and
  // every blocking stream waits for it.
  if (a.legacy) {
    for (const auto& t : q.streams) {
      if (t->device == a.device && t->blocking && !t->legacy && t->submitted > t->done)
        waits.push_back(StreamPoint{t, t->submitted});
    }
  } else if (a.blocking) {
    AsyncStream& legacy =
        queue_of(globals().devices[static_cast<size_t>(a.device)]->default_stream);
    if (legacy.submitted > legacy.done)
      waits.push_back(
          StreamPoint{globals().devices[static_cast<size_t>(a.device)]->default_stream.async,
                      legacy.submitted});
  }
  AsyncOp op;
  op.seq = ++a.submitted;
  op.device = a.device;
  op.pc = pc;
  op.waits = std::move(waits);
  op.run = std::move(run);
  op.guards = arm(guards, what, stream_name(a), pc);
  op.what = std::move(what);
  a.ops.push_back(std::move(op));
  g_queued.fetch_add(1, std::memory_order_relaxed);
  if (++q.pending > kBacklog && a.demand < a.submitted) {
    a.demand = a.submitted;  // too much queued: start on it without waiting
    q.work.notify_one();
  }
  return StreamPoint{s.async, a.submitted};
}

StreamPoint tail_of(Stream& s) {
  Queues& q = queues();
  std::lock_guard<std::mutex> lock(q.mu);
  AsyncStream& a = queue_of(s);
  return StreamPoint{s.async, a.submitted};
}

bool reached(const StreamPoint& p) {
  if (!p.stream) return true;
  std::lock_guard<std::mutex> lock(queues().mu);
  return p.stream->done >= p.seq;
}

void request(const StreamPoint& p) {
  if (!p.stream) return;
  Queues& q = queues();
  std::lock_guard<std::mutex> lock(q.mu);
  if (p.stream->demand < p.seq) {
    p.stream->demand = p.seq;
    q.work.notify_one();
  }
}

void wait_for(const StreamPoint& p) {
  if (!p.stream || tls_worker) return;
  Queues& q = queues();
  std::unique_lock<std::mutex> lock(q.mu);
  if (p.stream->done >= p.seq) return;
  if (p.stream->demand < p.seq) p.stream->demand = p.seq;
  q.work.notify_one();
  q.done.wait(lock, [&] { return p.stream->done >= p.seq; });
}

void wait_device_queues(int device) {
  std::vector<StreamPoint> tails;
  {
    std::lock_guard<std::mutex> lock(queues().mu);
    for (const auto& t : queues().streams)
      if (device < 0 || t->device == device) tails.push_back(StreamPoint{t, t->submitted});
  }
  for (const StreamPoint& p : tails) wait_for(p);
}

void wait_all_queues() { wait_device_queues(-1); }

void forget_stream(Stream& s) {
  if (!s.async) return;
  wait_for(tail_of(s));
  std::lock_guard<std::mutex> lock(queues().mu);
  auto& v = queues().streams;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == s.async) {
      v.erase(v.begin() + static_cast<long>(i));
      break;
    }
  }
}

void count_not_ready() { g_not_ready.fetch_add(1, std::memory_order_relaxed); }

cudaError_t sticky_error(int device) {
  if (device < 0 || device >= kMaxDevices) return cudaSuccess;
  return static_cast<cudaError_t>(queues().sticky[device].load());
}

std::string sticky_report(int device) {
  std::lock_guard<std::mutex> lock(queues().mu);
  return queues().sticky_report[device];
}

}  // namespace ember::emu::detail

// ---- the launch path (device.h) and the control API (emulator.h) ----------------------------------

namespace ember::emu {

using namespace detail;

void queue_launch(const LaunchConfig& config, std::function<cudaError_t()> run) {
  // A bad configuration is reported by the launch itself, as on a GPU.
  std::string why;
  if (const cudaError_t bad = check_config(config, &why); bad != cudaSuccess) {
    publish_report("ember emulator: launch of " + std::string(config.kernel) + " at " +
                   relative_path(config.file) + ":" + std::to_string(config.line) + ": " + why);
    set_last_error(bad);
    return;
  }
  Stream& s = stream_object(config.stream);
  if (const cudaError_t e = sticky_error(s.device); e != cudaSuccess) {
    adopt_report(sticky_report(s.device));
    set_last_error(e);
    return;
  }
  count_submission();
  enqueue(s,
          "kernel " + std::string(config.kernel) + " (launched at " + relative_path(config.file) +
              ":" + std::to_string(config.line) + ")",
          nullptr, std::move(run));
}

bool async_streams() { return async_mode(); }

void set_async_streams(bool on) {
  if (!on && async_mode()) wait_all_queues();
  g_mode.store(on ? 1 : 0);
}

int device_error(int device) { return static_cast<int>(sticky_error(device)); }

void clear_device_errors() {
  Queues& q = queues();
  {
    std::lock_guard<std::mutex> lock(q.mu);
    for (int d = 0; d < kMaxDevices; ++d) {
      q.sticky[d].store(cudaSuccess);
      q.sticky_report[d].clear();
    }
  }
  cudaGetLastError();  // and this thread's copy of it (each call that returned it set it)
}

AsyncStats async_stats() {
  AsyncStats s;
  s.queued = g_queued.load();
  s.not_ready = g_not_ready.load();
  s.host_access_reports = g_host_reports.load();
  return s;
}

}  // namespace ember::emu
