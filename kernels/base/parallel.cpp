// ember's CPU thread pool: the one place where ember's CPU work is split across threads.
//
// Why not OpenMP (which this file used until issue 12)
// ---------------------------------------------------
// An OpenMP team splits a loop into one fixed chunk per thread and, between regions, its idle
// threads spin for a while waiting for the next one. On an idle machine that is fast. On a busy
// one it falls apart: when the OS deschedules one member, the others spin at the closing barrier
// on the cores the busy process wants, and the whole region waits for the descheduled member's
// chunk, so one core kept busy by another process can stretch an epoch many times over
// (bench/RESULTS.md, "CPU threads on a busy machine" and "Figures that were comments in
// kernels/"). The pool below does three things differently:
//   1. Dynamic chunks. A range is cut into more chunks than threads, and members claim them one
//      at a time from an atomic counter, so a member the OS has put aside holds up at most the
//      one chunk it is in; the others take the rest.
//   2. Passive waiting. An idle worker polls only briefly (spin_time(), 100 us), then sleeps on
//      a condition variable; the caller, once its own chunks are done, does the same until the
//      last member leaves. Nothing burns a core for long waiting.
//   3. One pool for everything: Eigen's GEMM is built without OpenMP (single-threaded), and
//      kernels/cpu/gemm.cpp splits large products into panels run on this pool.
// The chunk boundaries never change what a kernel computes: every kernel splits its work so that
// each output element is written by one task, with a summation order fixed by the sizes (see
// kernels/cpu/conv_im2col.cpp and kernels/cpu/gemm.cpp), so results are identical for any
// thread count.
//
// Rules: a parallel_for inside a running region (a GEMM inside a convolution task) runs on its
// calling thread; so does one started while another thread's region holds the pool (two user
// threads training at once). An exception thrown by a chunk stops further chunks from being
// claimed and is rethrown on the calling thread once every member has left.
#include "kernels/base/parallel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_CPU_RELAX() _mm_pause()
#else
#define EMBER_CPU_RELAX() std::this_thread::yield()
#endif

namespace ember::kernels {

namespace {

int initial_threads() {
  if (const char* env = std::getenv("EMBER_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// How long an idle member polls before it sleeps (EMBER_THREAD_SPIN_US, default 100 us). A
// training step runs its ops a few microseconds apart, so within a step the workers stay awake
// and a region starts at once (a futex wake-up costs tens of microseconds, as much as a small
// op's whole region); between steps, or while the loop waits for data, they sleep. On a busy
// machine 0 makes every wait a sleep at once.
std::chrono::nanoseconds spin_time() {
  static const std::chrono::nanoseconds t = [] {
    long us = 100;
    if (const char* env = std::getenv("EMBER_THREAD_SPIN_US")) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && v >= 0) us = v;
    }
    return std::chrono::nanoseconds(std::chrono::microseconds(us));
  }();
  return t;
}

// Polls done() for up to spin_time(); true as soon as it holds, false when time is up.
template <typename Done>
bool spin_until(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + spin_time();
  for (int i = 0;; ++i) {
    if (done()) return true;
    EMBER_CPU_RELAX();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return done();
  }
}

// True on a thread while it runs chunks of a region (workers, and the caller during its region).
thread_local bool t_in_region = false;
// True on a thread that runs its loops alone (set_this_thread_serial).
thread_local bool t_serial = false;

class Pool {
 public:
  explicit Pool(int workers) {
    threads_.reserve(static_cast<size_t>(workers));
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Runs fn over [begin, end) in `chunks` chunks; false (nothing run) when another thread's
  // region holds the pool.
  bool run(int64_t begin, int64_t end, int64_t chunks, void* ctx,
           void (*fn)(void*, int64_t, int64_t)) {
    bool expected = false;
    if (!busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = Job{begin, end, chunks, ctx, fn};
      next_.store(0, std::memory_order_relaxed);
      failed_.store(false, std::memory_order_relaxed);
      error_ = nullptr;
      open_ = true;
      generation_.store(generation_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_release);
    }
    wake_.notify_all();
    work(job_);  // the caller is a member too
    std::exception_ptr error;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      open_ = false;  // no member joins from here on; every chunk is claimed or being run
      if (members_.load(std::memory_order_relaxed) > 0) {
        lock.unlock();
        spin_until([this] { return members_.load(std::memory_order_acquire) == 0; });
        lock.lock();
        left_.wait(lock, [this] { return members_ == 0; });
      }
      error = error_;
      error_ = nullptr;
    }
    busy_.store(false, std::memory_order_release);
    if (error) std::rethrow_exception(error);
    return true;
  }

 private:
  struct Job {
    int64_t begin = 0, end = 0, chunks = 0;
    void* ctx = nullptr;
    void (*fn)(void*, int64_t, int64_t) = nullptr;
  };

  // Claims chunks until none is left (or one has failed) and runs them.
  void work(const Job& job) {
    t_in_region = true;
    const int64_t n = job.end - job.begin;
    for (;;) {
      const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
      if (c >= job.chunks || failed_.load(std::memory_order_relaxed)) break;
      const int64_t b = job.begin + n * c / job.chunks, e = job.begin + n * (c + 1) / job.chunks;
      try {
        job.fn(job.ctx, b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    t_in_region = false;
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      // A short poll for the next region, then sleep until one is posted.
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] {
          return stop_ || generation_.load(std::memory_order_relaxed) != seen;
        });
        if (stop_) return;
        seen = generation_.load(std::memory_order_relaxed);
        if (!open_) continue;  // woke after that region closed: nothing left to claim
        job = job_;
        members_.fetch_add(1, std::memory_order_relaxed);
      }
      work(job);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (members_.fetch_sub(1, std::memory_order_release) == 1 && !open_) left_.notify_one();
      }
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;  // a region was posted (or the pool stops)
  std::condition_variable left_;  // the last member left a closed region
  std::atomic<uint64_t> generation_{0};  // bumped for each region
  std::atomic<bool> busy_{false};        // a region holds the pool
  std::atomic<int64_t> next_{0};         // the next chunk to claim
  std::atomic<bool> failed_{false};      // a chunk threw: claim no more
  // Workers inside the current region: changed under mutex_, read without it by the caller's poll.
  std::atomic<int> members_{0};
  // Guarded by mutex_:
  Job job_;
  bool open_ = false;  // workers may still join the current region
  bool stop_ = false;
  std::exception_ptr error_;
};

struct State {
  std::mutex mutex;  // guards changing the pool
  int threads = 0;
  std::unique_ptr<Pool> pool;  // threads - 1 workers; null for one thread
};

// Never destroyed: a kernel may run from another static object's destructor, after this one
// would have been gone. The sleeping workers end with the process.
State& state() {
  static State* s = [] {
    auto* st = new State;
    st->threads = initial_threads();
    return st;
  }();
  return *s;
}

}  // namespace

int num_threads() { return state().threads; }

void set_num_threads(int n) {
  if (n < 1) n = 1;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (n == s.threads) return;
  s.pool.reset();  // joins the old workers (no region may be running: see parallel.h)
  s.threads = n;
}

bool in_parallel_region() { return t_in_region; }

void set_this_thread_serial(bool serial) { t_serial = serial; }
bool this_thread_serial() { return t_serial; }

namespace detail {
void parallel_run(int64_t begin, int64_t end, int threads, int64_t chunks, void* ctx,
                  void (*fn)(void*, int64_t, int64_t)) {
  if (threads > 1 && !t_in_region) {
    State& s = state();
    Pool* pool = nullptr;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (!s.pool && s.threads > 1) s.pool = std::make_unique<Pool>(s.threads - 1);
      pool = s.pool.get();
    }
    if (pool != nullptr && pool->run(begin, end, chunks, ctx, fn)) return;
  }
  // One thread, a nested region, or the pool is busy with another thread's region: the same
  // chunks, in order, here.
  // (Kernels give the same results for any split, so the whole range is one call.)
  (void)chunks;
  const bool outer = !t_in_region;
  t_in_region = true;
  struct Restore {
    bool outer;
    ~Restore() {
      if (outer) t_in_region = false;
    }
  } restore{outer};
  fn(ctx, begin, end);
}
}  // namespace detail

}  // namespace ember::kernels
