// ember/kernels/emulator/checks.cpp — memcheck, racecheck and initcheck: every load and store
// a kernel makes, checked on its way.
//
// How the emulator sees the accesses. The kernels' files (kernels/cuda/*.cu) are compiled with
// GCC's ThreadSanitizer instrumentation, -fsanitize=thread, but the program is not linked with
// ThreadSanitizer: the compiler's calls — __tsan_read4(addr) before a 4-byte load,
// __tsan_write16(addr) before a 16-byte store, ... — land in the functions below. They cost a call
// and a test when no kernel is running (host code in the same files) and otherwise sort the
// address into one of:
//
//   the thread's own stack          its local variables: nothing to check
//   device memory                   memcheck: is the byte inside a live allocation (shadow byte),
//                                   on this device or a peer it may reach, naturally aligned?
//                                   initcheck: was it written since it was allocated?
//   shared memory                   racecheck: did another thread of the block touch it since
//                                   the last barrier, one of the two writing?
//   (device memory, again)          globalrace (schedule.cpp): did another thread of the launch
//                                   touch the word, unordered, one of the two writing?
//   pinned host memory, the         allowed (a GPU reaches pinned memory and the module's
//   program's global data           __device__ / __constant__ variables)
//   anything else                   host memory a GPU cannot reach: memcheck reports it
//
// Shared memory is the thread_local storage of the CPU thread that runs the block (device.h
// turns __shared__ into thread_local), so the worker knows its range and keeps one RaceCell per
// byte of it. A cell belongs to one block run (its serial); the block's barrier count (epoch) and
// the lanes' clocks of warp collectives (Warp, internal.h) order the accesses: two accesses race
// unless a barrier lies between them, or they come from lanes of one warp with a __syncwarp (or
// another warp collective) between them whose mask names both (a chain of such collectives
// counts too).
//
// A report stops the block (the access itself is not made) and fails the launch; see
// emulator.h for what the user sees.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "kernels/emulator/internal.h"

namespace ember::emu::detail {

namespace {

std::atomic<bool> g_instrumented{false};

// ---- the program's own memory: module images -------------------------------------------------------

struct Ranges {
  std::mutex mu;
  std::vector<std::pair<uintptr_t, uintptr_t>> loaded;  // PT_LOAD segments of every module
};
Ranges& ranges() {
  static Ranges* r = new Ranges();
  return *r;
}

void read_modules(std::vector<std::pair<uintptr_t, uintptr_t>>* out) {
  out->clear();
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* v = static_cast<std::vector<std::pair<uintptr_t, uintptr_t>>*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          v->emplace_back(lo, lo + ph.p_memsz);
        }
        return 0;
      },
      out);
  std::sort(out->begin(), out->end());
}

bool in_module_image(uintptr_t a) {
  Ranges& r = ranges();
  std::lock_guard<std::mutex> lock(r.mu);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (r.loaded.empty() || attempt == 1) read_modules(&r.loaded);  // again: a dlopen since?
    auto it = std::upper_bound(r.loaded.begin(), r.loaded.end(),
                               std::make_pair(a, ~uintptr_t{0}));
    if (it != r.loaded.begin() && a < std::prev(it)->second) return true;
  }
  return false;
}

// ---- reports -------------------------------------------------------------------------------------

[[noreturn]] void report(Thread* t, cudaError_t error, const std::string& what, const void* pc) {
  std::string text = what;
  if (pc != nullptr) text += "\n  the access: " + describe_code(pc);
  fault(t, error, text);
}

std::string access_words(bool write, size_t n) {
  return std::string(write ? "write" : "read") + " of " + std::to_string(n) + " byte" +
         (n == 1 ? "" : "s");
}

// ---- device memory ---------------------------------------------------------------------------------

void device_access(Thread* t, uintptr_t a, size_t n, bool write, bool aligned, const void* pc) {
  Globals& g = *g_globals;
  const unsigned checks = t->checks;
  const int d = static_cast<int>((a - g.device_lo) / g.device_capacity);
  const int mine = t->block->grid->device;
  Device& dev = *g.devices[static_cast<size_t>(d)];
  Arena& arena = *dev.arena;
  uint8_t* sh = arena.shadow() + (a - reinterpret_cast<uintptr_t>(arena.base()));
  // The common case first: an aligned access of initialised bytes of this device's memory,
  // tested 8 shadow bytes at a time.
  if (d == mine && (!aligned || (a & (n - 1)) == 0)) {
    constexpr uint64_t kAllInit = 0x1111111111111111ull;
    bool all_init = true;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t v;
      std::memcpy(&v, sh + i, 8);
      all_init &= v == kAllInit;
    }
    for (; i < n; ++i) all_init &= sh[i] == kInit;
    if (all_init) {
      if (t->global_race) global_access(t, a, n, write, false, pc);
      return;
    }
  }
  if (checks & kMemcheck) {
    if (d != mine && !g.devices[static_cast<size_t>(mine)]->peer_enabled[static_cast<size_t>(d)]) {
      report(t, cudaErrorIllegalAddress,
             "memcheck: invalid " + access_words(write, n) + " at " + hex(a) + ": that is cuda:" +
                 std::to_string(d) + "'s memory, and the kernel runs on cuda:" +
                 std::to_string(mine) + " without peer access to it (cudaDeviceEnablePeerAccess)",
             pc);
    }
    if (aligned && n > 1 && (a & (n - 1)) != 0) {
      report(t, cudaErrorMisalignedAddress,
             "memcheck: misaligned " + access_words(write, n) + " at " + hex(a) + ": a " +
                 std::to_string(n) + "-byte access must be " + std::to_string(n) +
                 "-byte aligned on a GPU (" + describe_address(a, n) + ")",
             pc);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const uint8_t s = sh[i];
    if (!addressable(s)) {
      if (checks & kMemcheck) {
        report(t, cudaErrorIllegalAddress,
               "memcheck: invalid " + access_words(write, n) + " at " + hex(a) + ": " +
                   describe_address(a + i, n - i),
               pc);
      }
      return;
    }
    if (!write && s == kUninit && (checks & kInitcheck)) {
      report(t, cudaErrorLaunchFailure,
             "initcheck: " + access_words(false, n) + " at " + hex(a) +
                 " of device memory that nothing has written since it was allocated (" +
                 describe_address(a + i, n - i) + ")",
             pc);
    }
  }
  if (t->global_race) global_access(t, a, n, write, false, pc);
  if (write) std::memset(sh, kInit, n);
}

// ---- shared memory -----------------------------------------------------------------------------

// Is an access that thread_a of t's block made (at the block's barrier count epoch_a, and its
// lane's clock clock_a: Warp::clock) ordered before t's access now? By a __syncthreads between
// them, or for two lanes of one warp by a chain of warp collectives (warp_ordered, internal.h):
// a __syncwarp(mask) orders the lanes its mask names.
// `epoch` is the block's barrier count now, `w` t's warp.
inline __attribute__((always_inline)) bool ordered(const Thread* t, uint16_t epoch, const Warp& w,
                                                   uint16_t epoch_a, uint16_t clock_a,
                                                   uint32_t thread_a) {
  if (epoch_a != epoch) return true;
  return thread_a / 32 == t->warp && warp_ordered(w, thread_a % 32, clock_a, t->lane);
}

// For a report on two lanes of one warp: what would have ordered them.
std::string unordered_why(const Thread* t, uint32_t other) {
  if (other / 32 != t->warp) return "with no __syncthreads between them";
  return "with no __syncthreads between them, nor a __syncwarp (or another warp collective) "
         "whose mask names both lanes " +
         std::to_string(other % 32) + " and " + std::to_string(t->lane) + " of warp " +
         std::to_string(t->warp);
}

std::string thread_name(const BlockRun& b, uint32_t linear) {
  return dim_str(b.threads[linear].idx);
}

// Racecheck (and initcheck of shared memory) keep one cell per 4-byte word, the width of a
// shared-memory bank: two threads writing different bytes of one word between barriers count as
// a hazard. `cells` (and `pcs`) start at the first word the access touches.
void shared_access(Thread* t, RaceCell* cells, const void** pcs, uintptr_t a, size_t n, bool write,
                   const void* pc) {
  BlockRun& b = *t->block;
  const unsigned checks = t->checks;
  const uint32_t me = t->linear;
  const uint16_t me1 = static_cast<uint16_t>(me + 1);
  const auto serial = static_cast<uint32_t>(b.serial);
  const auto epoch = static_cast<uint16_t>(b.epoch);
  const Warp& w = b.warps[t->warp];
  const auto wepoch = static_cast<uint16_t>(w.clock[t->lane]);
  const size_t words = ((a + n - 1) >> 2) - (a >> 2) + 1;
  for (size_t i = 0; i < words; ++i) {
    RaceCell& c = cells[i];
    const uintptr_t at = ((a >> 2) + i) << 2;
    if (c.serial != serial) c = RaceCell{serial, 0, 0, 0, 0, 0, 0};
    if (write) {
      if (checks & kRacecheck) {
        if (c.writer != 0 && c.writer != me1 &&
            !ordered(t, epoch, w, c.write_epoch, c.write_warp_epoch, c.writer - 1u)) {
          report(t, cudaErrorLaunchFailure,
                 "racecheck: write-after-write hazard on shared memory at " + hex(at) +
                     ": thread " + thread_name(b, me) + " writes the word that thread " +
                     thread_name(b, c.writer - 1u) + " wrote at " + describe_code(pcs[i]) + ", " +
                     unordered_why(t, c.writer - 1u),
                 pc);
        }
        if (c.reader != 0 && c.reader != me1 && c.read_epoch == epoch &&
            (c.reader == kSeveral ||
             !ordered(t, epoch, w, c.read_epoch, c.read_warp_epoch, c.reader - 1u))) {
          report(t, cudaErrorLaunchFailure,
                 "racecheck: write-after-read hazard on shared memory at " + hex(at) + ": thread " +
                     thread_name(b, me) + " overwrites a word that " +
                     (c.reader == kSeveral ? std::string("several threads")
                                           : "thread " + thread_name(b, c.reader - 1u)) +
                     " read since the last __syncthreads" +
                     (c.reader != kSeveral && (c.reader - 1u) / 32 == t->warp
                          ? " (and no __syncwarp or other warp collective whose mask names both "
                            "lanes lies between)"
                          : std::string()) +
                     ": it may not have read it yet on a GPU",
                 pc);
        }
      }
      c.writer = me1;
      c.write_epoch = epoch;
      c.write_warp_epoch = wepoch;
      c.reader = 0;
      pcs[i] = pc;
    } else {
      if (c.writer == 0 && (checks & kInitcheck)) {
        report(t, cudaErrorLaunchFailure,
               "initcheck: " + access_words(false, n) + " of shared memory at " + hex(a) +
                   " that no thread of this block has written",
               pc);
      }
      if ((checks & kRacecheck) && c.writer != 0 && c.writer != me1 &&
          !ordered(t, epoch, w, c.write_epoch, c.write_warp_epoch, c.writer - 1u)) {
        report(t, cudaErrorLaunchFailure,
               "racecheck: read-after-write hazard on shared memory at " + hex(at) +
                   ": thread " + thread_name(b, me) + " reads the word that thread " +
                   thread_name(b, c.writer - 1u) + " wrote at " + describe_code(pcs[i]) + ", " +
                   unordered_why(t, c.writer - 1u) + " (on a GPU it may read the old value)",
               pc);
      }
      if (c.reader == 0 || c.read_epoch != epoch) {
        c.reader = me1;
        c.read_epoch = epoch;
        c.read_warp_epoch = wepoch;
      } else if (c.reader != me1 && c.reader != kSeveral) {
        c.reader = kSeveral;
      }
    }
  }
}

// Static shared memory (__shared__ variables: the worker's thread-local block). memcheck: does the
// access touch a redzone, the bytes device.h keeps after each __shared__ variable (an overrun of
// one array would otherwise land in the next one unseen)? Then racecheck and initcheck.
std::atomic<const SharedLayout*> g_shared_layout{nullptr};

void static_shared_access(Thread* t, uintptr_t a, size_t n, bool write, const void* pc) {
  const size_t m = std::min<size_t>(n, t->tls_lo + t->tls_size - a);
  const size_t offset = a - t->tls_lo;
  if (t->checks & kMemcheck) {
    const SharedLayout* layout = g_shared_layout.load(std::memory_order_relaxed);
    if (layout != nullptr && in_shared_redzone(*layout, offset, m)) {
      size_t first = offset;  // the first byte of the access in a redzone
      while (first + 1 < offset + m && layout->redzone[first] == 0) ++first;
      report(t, cudaErrorIllegalAddress,
             "memcheck: invalid " + access_words(write, n) + " at " + hex(a) + ": " +
                 describe_shared_redzone(*layout, first),
             pc);
    }
  }
  if (t->checks & (kRacecheck | kInitcheck)) {
    const size_t word = offset >> 2;
    shared_access(t, t->race + word, t->write_pcs + word, a, m, write, pc);
  }
}

// ---- the dispatcher --------------------------------------------------------------------------------

__attribute__((noinline)) void check(Thread* t, uintptr_t a, size_t n, bool write, bool aligned,
                                     const void* pc) {
  Globals& g = *g_globals;  // set before any kernel runs
  if (a - g.device_lo < g.device_span) {
    device_access(t, a, n, write, aligned, pc);
    return;
  }
  if (a - reinterpret_cast<uintptr_t>(&tls_coordinates) < sizeof(Coordinates)) return;
  Worker& w = *t->worker;
  if (a - w.tls_lo < w.tls_size) {
    if (t->checks & (kRacecheck | kInitcheck | kMemcheck)) static_shared_access(t, a, n, write, pc);
    return;
  }
  BlockRun& b = *t->block;
  if (a - b.grid->params_lo < b.grid->params_size) {
    if (write && (t->checks & kMemcheck)) {
      report(t, cudaErrorIllegalAddress,
             "memcheck: the kernel writes its parameter space at " + hex(a) +
                 " (a kernel's parameters are read-only; copy one into a local to change it)",
             pc);
    }
    return;
  }
  if (b.dynamic_shared != nullptr) {
    // Dynamic shared memory (EMBER_DYNAMIC_SHARED): race- and init-checked like static shared
    // memory, with its own cells; an access just outside the launch's bytes is reported as such.
    const auto ds = reinterpret_cast<uintptr_t>(b.dynamic_shared);
    const size_t bytes = b.grid->config.shared_bytes;
    if (a - ds < bytes) {
      if (t->checks & (kRacecheck | kInitcheck)) {
        const size_t m = std::min<size_t>(n, ds + bytes - a);
        const size_t word = (a - ds) >> 2;
        shared_access(t, w.dynamic_race.data() + word, w.dynamic_write_pcs.data() + word, a, m,
                      write, pc);
      }
      if (a + n > ds + bytes && (t->checks & kMemcheck)) {
        report(t, cudaErrorIllegalAddress,
               "memcheck: invalid " + access_words(write, n) + " at " + hex(a) +
                   ": it runs past the end of the block's " + std::to_string(bytes) +
                   " bytes of dynamic shared memory (the launch's third <<<...>>> argument)",
               pc);
      }
      return;
    }
    if ((t->checks & kMemcheck) && (a + n > ds - 256 && a < ds + bytes + 256)) {
      report(t, cudaErrorIllegalAddress,
             "memcheck: invalid " + access_words(write, n) + " at " + hex(a) + ": " +
                 (a < ds ? std::to_string(ds - a) + " bytes before the start"
                         : std::to_string(a - (ds + bytes)) + " bytes past the end") +
                 " of the block's " + std::to_string(bytes) +
                 " bytes of dynamic shared memory (the launch's third <<<...>>> argument)",
             pc);
    }
  }
  if (!(t->checks & kMemcheck)) return;
  if (g.pinned->contains(a)) {
    std::lock_guard<std::mutex> lock(g.pinned->mu);
    for (size_t i = 0; i < n; ++i) {
      if (!addressable(g.pinned->shadow_of(a + i))) {
        report(t, cudaErrorIllegalAddress,
               "memcheck: invalid " + access_words(write, n) + " at " + hex(a) + ": " +
                   describe_address(a + i, n - i),
               pc);
      }
    }
    return;
  }
  if (in_module_image(a)) return;  // __device__ / __constant__ variables, tables, literals
  report(t, cudaErrorIllegalAddress,
         "memcheck: invalid " + access_words(write, n) + " at " + hex(a) + ": " +
             describe_address(a, n),
         pc);
}

// Counting (set_access_counting): which kind of memory an access touches, decided the way
// check() sorts addresses. The thread's stack (its local variables) and the parameter space are
// not counted: on a GPU those live in registers and the constant bank.
__attribute__((noinline)) void count_access(Thread* t, uintptr_t a, size_t n, bool write) {
  if (a - t->stack_lo < t->stack_size) return;
  Globals& g = *g_globals;
  bool shared = false;
  if (a - g.device_lo < g.device_span) {
    shared = false;
  } else if (a - t->tls_lo < t->tls_size) {
    if (a - reinterpret_cast<uintptr_t>(&tls_coordinates) < sizeof(Coordinates)) return;
    shared = true;
  } else {
    const BlockRun& b = *t->block;
    if (a - b.grid->params_lo < b.grid->params_size) return;
    if (b.dynamic_shared != nullptr &&
        a - reinterpret_cast<uintptr_t>(b.dynamic_shared) < b.grid->config.shared_bytes) {
      shared = true;
    } else if (!g.pinned->contains(a) && !in_module_image(a)) {
      return;  // memcheck's business, not traffic
    }
  }
  const int kind =
      shared ? (write ? kSharedWrite : kSharedRead) : (write ? kGlobalWrite : kGlobalRead);
  ++t->accesses[kind];
  t->bytes[kind] += static_cast<int64_t>(n);
}

// The hot path, inlined into every hook: the thread's own stack, shared memory, and an access to
// initialised bytes of the kernel's own device are decided here; everything else (and every
// report) goes through check().
inline void hook(void* p, size_t n, bool write, bool aligned, const void* pc) {
  Thread* t = tls_thread;
  if (t == nullptr || !t->checking) return;
  if (t->has_pending_write) settle_pending_write(t);  // globalrace: the last store is made now
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (t->counting) count_access(t, a, n, write);
  if (a - t->stack_lo < t->stack_size) return;  // the thread's own stack: nothing to check
  if (t->switch_threshold != 0) switch_point(t, a);  // a randomized schedule: others may go first
  if (t->global_race && a - g_globals->device_lo < g_globals->device_span) {
    check(t, a, n, write, aligned, pc);  // device_access records it for globalrace
    return;
  }
  if (a - t->own_lo < t->own_size && (!aligned || (a & (n - 1)) == 0)) {
    uint8_t* sh = t->own_shadow + (a - t->own_lo);
    constexpr uint64_t kAllInit = 0x1111111111111111ull;
    uint64_t v8 = 0;
    uint32_t v4 = 0;
    switch (n) {
      case 16: {
        uint64_t w0, w1;
        std::memcpy(&w0, sh, 8);
        std::memcpy(&w1, sh + 8, 8);
        if (w0 == kAllInit && w1 == kAllInit) return;
        break;
      }
      case 8:
        std::memcpy(&v8, sh, 8);
        if (v8 == kAllInit) return;
        break;
      case 4:
        std::memcpy(&v4, sh, 4);
        if (v4 == static_cast<uint32_t>(kAllInit)) return;
        break;
      default:
        break;
    }
  }
  if (a - t->tls_lo < t->tls_size &&
      a - reinterpret_cast<uintptr_t>(&tls_coordinates) >= sizeof(Coordinates)) {
    if (t->checks & (kRacecheck | kInitcheck | kMemcheck)) static_shared_access(t, a, n, write, pc);
    return;
  }
  check(t, a, n, write, aligned, pc);
}

}  // namespace

// ---- describing addresses and code ------------------------------------------------------------------

std::string describe_address(uintptr_t a, size_t size) {
  Globals& g = globals();
  int d = 0;
  Arena* arena = device_arena_of(a, &d);
  std::string where = "cuda:" + std::to_string(d) + " memory";
  if (arena == nullptr && g.pinned->contains(a)) {
    arena = g.pinned;
    where = "pinned host memory";
  }
  if (arena == nullptr) {
    return "that is host memory, which a kernel cannot reach (only device memory, pinned host "
           "memory from cudaHostAlloc, and the program's __device__ variables are visible to a "
           "GPU): was a host pointer passed to the kernel?";
  }
  (void)size;
  std::unique_lock<std::mutex> lock(arena->mu, std::try_to_lock);  // the caller may hold it
  Block blk;
  if (!arena->find_block(a, &blk)) return "in " + where + " but before any allocation";
  const uint8_t s = arena->shadow_of(a);
  const uintptr_t end = blk.begin + blk.size;
  const std::string block_words = std::to_string(blk.size) + "-byte block at " + hex(blk.begin);
  if (blk.freed) {
    if (a < end)
      return "byte " + std::to_string(a - blk.begin) + " of a " + block_words + " of " + where +
             " that was freed with cudaFree (use after free)";
    return std::to_string(a - end) + " bytes past the end of a " + block_words + " of " + where +
           " that was freed with cudaFree";
  }
  if (a >= end) {
    return std::to_string(a - end) + " bytes past the end of a " + block_words + " of " + where +
           " (allocated with " + (arena == g.pinned ? "cudaHostAlloc" : "cudaMalloc") + ")";
  }
  // Inside a live block: what does ember's caching allocator say about it?
  TensorRange tr{};
  bool has_tensor = false;
  {
    std::lock_guard<std::mutex> tl(g.tensor_mu);
    auto it = g.tensors.find(blk.begin);
    if (it != g.tensors.end()) {
      tr = it->second;
      has_tensor = true;
    }
  }
  if (s == kCached && has_tensor) {
    return std::to_string(a - (tr.begin + tr.bytes)) + " bytes past the end of a live tensor's " +
           std::to_string(tr.bytes) + " bytes at " + hex(tr.begin) + " (in a " + block_words +
           " of " + where + " that ember's caching allocator gave it)";
  }
  if (s == kCached) {
    return "inside a " + block_words + " of " + where +
           " that ember's caching allocator holds for reuse: no live tensor owns it (a pointer "
           "kept after its tensor was freed?)";
  }
  return "byte " + std::to_string(a - blk.begin) + " of a " + block_words + " of " + where;
}

namespace {

// Symbolizes pc with addr2line: the source lines (innermost inlined call first) that are ember's,
// not the standard library's nor the emulator's own launch glue. False when the program has no
// line information for it; `fallback` then says what is known.
bool symbolize(const void* pc, std::vector<std::string>* where, std::string* fallback) {
  Dl_info info{};
  if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr) {
    *fallback = hex(reinterpret_cast<uintptr_t>(pc));
    return false;
  }
  // The return address points after the call: step back into the instruction that made it.
  uintptr_t offset = reinterpret_cast<uintptr_t>(pc) - 1;
  // Shared objects and position-independent executables are symbolised by offset.
  const auto* ehdr = static_cast<const ElfW(Ehdr)*>(info.dli_fbase);
  if (ehdr != nullptr && ehdr->e_type == ET_DYN) offset -= reinterpret_cast<uintptr_t>(info.dli_fbase);
  // addr2line -i prints (function, file:line) pairs from the innermost inlined call outwards.
  const std::string cmd = "addr2line -C -f -i -e '" + std::string(info.dli_fname) + "' " +
                          hex(offset) + " 2>/dev/null";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char line[4096];
    int n = 0;
    while (std::fgets(line, sizeof line, p)) {
      std::string l(line);
      while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
      if (n++ % 2 == 0) continue;  // the function's name
      const size_t disc = l.find(" (discriminator");
      if (disc != std::string::npos) l = l.substr(0, disc);
      if (l.rfind("??", 0) == 0 || l.rfind("/usr/", 0) == 0) continue;
      l = relative_path(l.c_str());
      if (l.rfind("kernels/emulator/", 0) == 0) continue;
      if (where->empty() || where->back() != l) where->push_back(l);
    }
    pclose(p);
  }
  if (!where->empty()) return true;
  *fallback = (info.dli_sname ? std::string(info.dli_sname) : std::string("?")) + " in " +
              info.dli_fname + " +" + hex(offset) +
              " (build with -DCMAKE_BUILD_TYPE=RelWithDebInfo for the source line)";
  return false;
}

}  // namespace

std::string describe_code(const void* pc) {
  if (pc == nullptr) return "(unknown)";
  std::vector<std::string> where;
  std::string fallback;
  if (!symbolize(pc, &where, &fallback)) return fallback;
  std::string text = where[0];
  for (size_t i = 1; i < where.size() && i < 3; ++i) text += (i == 1 ? ", called from " : ", from ") + where[i];
  return text;
}

const std::vector<std::string>& source_chain(const void* pc) {
  static std::mutex mu;
  static auto* cache = new std::map<const void*, std::vector<std::string>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(pc);
  if (it != cache->end()) return it->second;
  std::vector<std::string> where;
  std::string fallback;
  if (pc == nullptr || !symbolize(pc, &where, &fallback)) where.clear();
  return (*cache)[pc] = std::move(where);  // std::map: the reference stays valid
}

void init_worker_tls(Worker& w) {
  // This CPU thread's block of the thread_local storage of the module that holds the kernels
  // (the one holding tls_coordinates): that is where every __shared__ variable lives.
  struct Find {
    uintptr_t probe;
    uintptr_t lo = 0;
    size_t size = 0;
    std::string module;  // the file it was loaded from ("" for the program itself)
  } f{reinterpret_cast<uintptr_t>(&tls_coordinates), 0, 0, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Find*>(data);
        if (info->dlpi_tls_data == nullptr) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_TLS) continue;
          const auto lo = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
          if (f->probe - lo < ph.p_memsz) {
            f->lo = lo;
            f->size = ph.p_memsz;
            f->module = info->dlpi_name != nullptr ? info->dlpi_name : "";
            return 1;
          }
        }
        return 0;
      },
      &f);
  if (f.size == 0) {
    // Not found (an unusual loader): race-check nothing rather than guess.
    w.tls_lo = 1;
    w.tls_size = 1;
    w.race.assign(1, RaceCell{});
    w.write_pcs.assign(1, nullptr);
    return;
  }
  // The cells are indexed by word from tls_lo, which thread_local alignment keeps 4-byte aligned.
  w.tls_lo = f.lo;
  w.tls_size = f.size;
  w.race.assign(f.size / 4 + 2, RaceCell{});
  w.write_pcs.assign(f.size / 4 + 2, nullptr);
  // memcheck's map of the __shared__ variables and their redzones (shared_layout.cpp).
  const SharedLayout& layout =
      shared_layout(f.module.empty() ? std::string("/proc/self/exe") : f.module, f.size);
  g_shared_layout.store(&layout, std::memory_order_relaxed);
}

// Atomics are checked like stores (they read and write); racecheck leaves them alone, since
// concurrent atomics on one address are what atomics are for.
void check_atomic(void* p, size_t n, const void* pc) {
  Thread* t = tls_thread;
  if (t == nullptr) return;
  if (t->has_pending_write) settle_pending_write(t);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (t->counting) {  // a read-modify-write: one read and one write
    count_access(t, a, n, false);
    count_access(t, a, n, true);
  }
  if (t->switch_threshold != 0) switch_point(t, a);  // a randomized schedule: others may go first
  if (!(t->checks & (kMemcheck | kInitcheck | kGlobalRace))) return;
  Globals& g = globals();
  if (a - g.device_lo < g.device_span) {
    const unsigned saved = t->checks;
    const bool global_race = t->global_race;
    t->global_race = false;                   // recorded once below, as an atomic
    device_access(t, a, n, false, true, pc);  // the read half (initcheck)
    t->checks = saved & ~kInitcheck;
    device_access(t, a, n, true, true, pc);   // the write half
    t->checks = saved;
    t->global_race = global_race;
    if (global_race) global_access(t, a, n, true, true, pc);
    return;
  }
  Worker& w = *t->worker;
  if (a - w.tls_lo < w.tls_size) {  // static shared memory: only its redzones are out of bounds
    const SharedLayout* layout = g_shared_layout.load(std::memory_order_relaxed);
    if ((t->checks & kMemcheck) && layout != nullptr &&
        in_shared_redzone(*layout, a - w.tls_lo, n)) {
      report(t, cudaErrorIllegalAddress,
             "memcheck: atomic on " + std::to_string(n) + " bytes at " + hex(a) + ": " +
                 describe_shared_redzone(*layout, a - w.tls_lo),
             pc);
    }
    return;
  }
  if (g.pinned->contains(a)) return;
  // Dynamic shared memory (extern __shared__) and the program's __device__ variables are places
  // a GPU's atomics reach too.
  const BlockRun& b = *t->block;
  if (b.dynamic_shared != nullptr &&
      a - reinterpret_cast<uintptr_t>(b.dynamic_shared) < b.grid->config.shared_bytes) {
    return;
  }
  if (in_module_image(a)) return;
  if (t->checks & kMemcheck) {
    report(t, cudaErrorIllegalAddress,
           "memcheck: atomic on " + std::to_string(n) + " bytes at " + hex(a) + ": " +
               describe_address(a, n),
           pc);
  }
}

}  // namespace ember::emu::detail

namespace ember::emu {
bool instrumented() { return detail::g_instrumented.load(std::memory_order_relaxed); }

// ---- access counting: the totals ------------------------------------------------------------------

namespace {
struct CountTotals {
  std::mutex mu;
  bool on = false;
  AccessCounts counts;
};
CountTotals& count_totals() {
  static CountTotals* c = new CountTotals();  // never destroyed: kernels may run during exit
  return *c;
}
AccessCount& kind_of(AccessCounts& c, int kind) {
  switch (kind) {
    case detail::kGlobalRead: return c.global_reads;
    case detail::kGlobalWrite: return c.global_writes;
    case detail::kSharedRead: return c.shared_reads;
    default: return c.shared_writes;
  }
}
}  // namespace

void set_access_counting(bool on) {
  CountTotals& c = count_totals();
  std::lock_guard<std::mutex> lock(c.mu);
  c.on = on;
  c.counts = AccessCounts{};
}
bool access_counting() {
  CountTotals& c = count_totals();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.on;
}
AccessCounts access_counts() {
  CountTotals& c = count_totals();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.counts;
}
void reset_access_counts() {
  CountTotals& c = count_totals();
  std::lock_guard<std::mutex> lock(c.mu);
  c.counts = AccessCounts{};
}

namespace detail {
void add_block_counts(const BlockRun& b) {
  CountTotals& c = count_totals();
  std::lock_guard<std::mutex> lock(c.mu);
  c.counts.threads += b.nthreads;
  for (uint32_t i = 0; i < b.nthreads; ++i) {
    const Thread& t = b.threads[i];
    for (int k = 0; k < 4; ++k) {
      AccessCount& a = kind_of(c.counts, k);
      a.accesses += t.accesses[k];
      a.bytes += t.bytes[k];
      a.max_per_thread = std::max(a.max_per_thread, t.accesses[k]);
    }
  }
}
void count_launch() {
  CountTotals& c = count_totals();
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.counts.launches;
}
}  // namespace detail
}  // namespace ember::emu

// ---- the compiler's hooks ---------------------------------------------------------------------------
// Names and signatures are those GCC's -fsanitize=thread emits calls to.

using ember::emu::detail::hook;

extern "C" {

// Called by every instrumented file's static constructor: tells us the kernels are instrumented.
void __tsan_init() { ember::emu::detail::g_instrumented.store(true); }
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}

#define EMBER_EMU_HOOKS(N)                                                                       \
  void __tsan_read##N(void* p) { hook(p, N, false, true, __builtin_return_address(0)); }          \
  void __tsan_write##N(void* p) { hook(p, N, true, true, __builtin_return_address(0)); }          \
  void __tsan_unaligned_read##N(void* p) { hook(p, N, false, false, __builtin_return_address(0)); } \
  void __tsan_unaligned_write##N(void* p) { hook(p, N, true, false, __builtin_return_address(0)); } \
  void __tsan_volatile_read##N(void* p) { hook(p, N, false, true, __builtin_return_address(0)); }  \
  void __tsan_volatile_write##N(void* p) { hook(p, N, true, true, __builtin_return_address(0)); }
EMBER_EMU_HOOKS(1)
EMBER_EMU_HOOKS(2)
EMBER_EMU_HOOKS(4)
EMBER_EMU_HOOKS(8)
EMBER_EMU_HOOKS(16)
#undef EMBER_EMU_HOOKS

void __tsan_read_range(void* p, unsigned long n) {
  hook(p, n, false, false, __builtin_return_address(0));
}
void __tsan_write_range(void* p, unsigned long n) {
  hook(p, n, true, false, __builtin_return_address(0));
}
void __tsan_vptr_read(void** p) { hook(p, sizeof(void*), false, true, __builtin_return_address(0)); }
void __tsan_vptr_update(void** p, void*) {
  hook(p, sizeof(void*), true, true, __builtin_return_address(0));
}

// Atomics in instrumented files (std::atomic in host code, mostly) become calls with the
// memory order as an argument; every one is done sequentially consistent, which is never
// weaker than what was asked.
#define EMBER_EMU_ATOMICS(BITS, T)                                                                 \
  T __tsan_atomic##BITS##_load(const volatile T* a, int) {                                        \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                                \
  void __tsan_atomic##BITS##_store(volatile T* a, T v, int) { __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##BITS##_exchange(volatile T* a, T v, int) {                                     \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                                \
  T __tsan_atomic##BITS##_fetch_add(volatile T* a, T v, int) {                                    \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                                \
  T __tsan_atomic##BITS##_fetch_sub(volatile T* a, T v, int) {                                    \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                                \
  T __tsan_atomic##BITS##_fetch_and(volatile T* a, T v, int) {                                    \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                                \
  T __tsan_atomic##BITS##_fetch_or(volatile T* a, T v, int) {                                     \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                             \
  }                                                                                                \
  T __tsan_atomic##BITS##_fetch_xor(volatile T* a, T v, int) {                                    \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                                \
  T __tsan_atomic##BITS##_fetch_nand(volatile T* a, T v, int) {                                   \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                           \
  }                                                                                                \
  int __tsan_atomic##BITS##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {          \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
  }                                                                                                \
  int __tsan_atomic##BITS##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {            \
    return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);         \
  }                                                                                                \
  T __tsan_atomic##BITS##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);              \
    return c;                                                                                      \
  }
EMBER_EMU_ATOMICS(8, uint8_t)
EMBER_EMU_ATOMICS(16, uint16_t)
EMBER_EMU_ATOMICS(32, uint32_t)
EMBER_EMU_ATOMICS(64, uint64_t)
#undef EMBER_EMU_ATOMICS

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"
