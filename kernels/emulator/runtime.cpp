// ember/kernels/emulator/runtime.cpp — the CUDA runtime API on the CPU: emulated devices and
// their memory, copies, streams, events and error reporting (declared in runtime_api.h).
//
// Device memory. Each emulated device owns an arena: a range of reserved address space
// (EMBER_EMULATED_MEMORY bytes, 4 GiB by default; only pages in use take real memory) with one
// shadow byte per byte recording what the byte is (internal.h: unallocated, redzone, freed,
// cached, uninitialised, initialised). cudaMalloc hands out 256-byte aligned blocks with a redzone
// after each and fills them with 0xFF bytes (a NaN in every float), as a GPU hands out whatever
// the last user left; cudaFree keeps a block in quarantine for a while so that a use after free
// lands on "freed" shadow instead of on the next allocation. The arenas of all devices are one
// reservation, so "is this a device address?" is one comparison in the memory hooks.
//
// Host code and device memory. On a GPU, dereferencing a device pointer on the host crashes.
// In the emulator device memory is host memory, so such a bug would go unseen — unless the
// program runs under AddressSanitizer: then every block is poisoned for the host as it is
// allocated, the emulator's own copies go around ASan (raw_copy), and a host access reports
// "use-after-poison" on a device address, which checks.cpp explains.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/emulator/internal.h"

// AddressSanitizer's interface, present only when the program is linked with ASan.
extern "C" {
void __asan_poison_memory_region(void const volatile* addr, size_t size) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile* addr, size_t size) __attribute__((weak));
void __asan_set_error_report_callback(void (*callback)(const char*)) __attribute__((weak));
void* __asan_get_report_address() __attribute__((weak));
}

namespace ember::emu {
namespace detail {

namespace {

constexpr size_t kAlign = 256;         // cudaMalloc's alignment
constexpr int kMaxDevices = 16;
constexpr size_t kDefaultMemory = size_t{4} << 30;
constexpr size_t kPinnedCapacity = size_t{64} << 30;  // address space for cudaHostAlloc

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// "4GiB", "512MiB", "1000000" -> bytes; 0 on a malformed value.
size_t parse_bytes(const char* s) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (end == s || errno != 0 || v <= 0) return 0;
  std::string unit(end);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  double mult = 1;
  if (unit == "" || unit == "B") mult = 1;
  else if (unit == "KiB" || unit == "K") mult = 1024.0;
  else if (unit == "MiB" || unit == "M") mult = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G") mult = 1024.0 * 1024 * 1024;
  else return 0;
  return static_cast<size_t>(v * mult);
}

void* reserve(size_t bytes, const char* what) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "ember emulator: cannot reserve %zu bytes of address space for %s: %s\n",
                 bytes, what, std::strerror(errno));
    std::abort();
  }
  return p;
}

// Gives the pages of [p, p + n) back to the OS; they read as zeros afterwards.
void discard_pages(void* p, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t lo = round_up(reinterpret_cast<uintptr_t>(p), page);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

// Under AddressSanitizer: when ASan reports an access to emulated device memory, the culprit
// is host code dereferencing a device pointer. Say so next to ASan's report.
void explain_host_access(const char*) {
  if (__asan_get_report_address == nullptr) return;
  const auto a = reinterpret_cast<uintptr_t>(__asan_get_report_address());
  int dev = 0;
  if (device_arena_of(a, &dev) == nullptr) return;
  std::fprintf(stderr,
               "ember emulator: host code touched device memory at 0x%llx (%s). On a GPU this "
               "crashes too: a device pointer cannot be dereferenced on the host. Copy the data "
               "with cudaMemcpy (Tensor::cpu(), Tensor::to) instead; ASan's stack above shows "
               "where.\n",
               static_cast<unsigned long long>(a), describe_address(a, 1).c_str());
}

}  // namespace

// CUDA_VISIBLE_DEVICES as the driver reads it: a comma-separated list of device indices; the
// list ends at the first entry that is not a valid, not yet listed index ("-1" hides all).
std::vector<int> visible_devices(const char* env, int physical, std::string* note) {
  std::vector<int> out;
  if (env == nullptr) {
    for (int i = 0; i < physical; ++i) out.push_back(i);
    return out;
  }
  std::string s(env);
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string token = s.substr(start, comma - start);
    token.erase(0, token.find_first_not_of(" \t"));
    token.erase(token.find_last_not_of(" \t") + 1);
    char* end = nullptr;
    const long v = token.empty() ? -1 : std::strtol(token.c_str(), &end, 10);
    const bool valid = !token.empty() && end && *end == '\0' && v >= 0 && v < physical &&
                       std::find(out.begin(), out.end(), static_cast<int>(v)) == out.end();
    if (!valid) {
      if (!token.empty() && token != "-1")
        *note = "CUDA_VISIBLE_DEVICES entry '" + token + "' is not one of the " +
                std::to_string(physical) + " emulated device(s); the list ends there";
      break;
    }
    out.push_back(static_cast<int>(v));
    start = comma + 1;
  }
  return out;
}

namespace {

thread_local cudaError_t tls_last_error = cudaSuccess;
thread_local int tls_current_device = 0;
thread_local std::string tls_last_report;     // for last_report()
thread_local std::string tls_pending_report;  // for take_report(): the next error message

}  // namespace

// ---- arenas ----------------------------------------------------------------------------------------

Arena::Arena(char* base, uint8_t* shadow, size_t capacity, size_t align)
    : base_(base), shadow_(shadow), capacity_(capacity), align_(align) {
  free_[reinterpret_cast<uintptr_t>(base_)] = capacity;
}

void Arena::set_shadow(uintptr_t a, size_t n, uint8_t value) {
  std::memset(shadow_ + (a - reinterpret_cast<uintptr_t>(base_)), value, n);
}

size_t Arena::span_of(size_t n) const {
  const size_t body = round_up(std::max<size_t>(n, 1), align_);
  return body + std::clamp(round_up(body / 8, align_), align_, std::max(size_t{64} << 10, align_));
}

void* Arena::allocate(size_t n) {
  const size_t span = span_of(n);
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < span) continue;
      const uintptr_t begin = it->first;
      const size_t rest = it->second - span;
      free_.erase(it);
      if (rest > 0) free_[begin + span] = rest;
      blocks_[begin] = Block{begin, n, false};
      used_ += span;
      set_shadow(begin, n, kUninit);
      set_shadow(begin + n, span - n, kRedzone);
      return reinterpret_cast<void*>(begin);
    }
    // Full: give the quarantined space back and look again.
    for (auto& [begin, len] : quarantine_) return_to_free_list(begin, len);
    quarantine_.clear();
    quarantined_ = 0;
  }
  return nullptr;
}

void Arena::return_to_free_list(uintptr_t begin, size_t span) {
  blocks_.erase(begin);
  set_shadow(begin, span, kUnallocated);
  discard_pages(reinterpret_cast<void*>(begin), span);
  discard_pages(shadow_ + (begin - reinterpret_cast<uintptr_t>(base_)), span);
  auto it = free_.emplace(begin, span).first;
  if (it != free_.begin()) {  // merge with the neighbours
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
      it = prev;
    }
  }
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
}

bool Arena::release(void* p) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  auto it = blocks_.find(begin);
  if (it == blocks_.end() || it->second.freed) return false;
  const size_t span = span_of(it->second.size);
  it->second.freed = true;
  set_shadow(begin, it->second.size, kFreed);
  used_ -= span;
  quarantine_.emplace_back(begin, span);
  quarantined_ += span;
  // Keep up to 256 MiB (or an eighth of the arena) of freed blocks before reusing their space.
  const size_t limit = std::min<size_t>(size_t{256} << 20, capacity_ / 8);
  size_t drop = 0;
  while (drop < quarantine_.size() && quarantined_ > limit) {
    quarantined_ -= quarantine_[drop].second;
    return_to_free_list(quarantine_[drop].first, quarantine_[drop].second);
    ++drop;
  }
  quarantine_.erase(quarantine_.begin(), quarantine_.begin() + static_cast<long>(drop));
  return true;
}

bool Arena::find_block(uintptr_t a, Block* out) const {
  auto it = blocks_.upper_bound(a);
  if (it == blocks_.begin()) return false;
  --it;
  *out = it->second;
  return true;
}

bool Arena::live_block(uintptr_t p, Block* out) const {
  auto it = blocks_.find(p);
  if (it == blocks_.end() || it->second.freed) return false;
  *out = it->second;
  return true;
}

// ---- globals -------------------------------------------------------------------------------------

Globals* g_globals = nullptr;

Globals& globals() {
  if (g_globals != nullptr) return *g_globals;  // the memory hooks' fast path
  static Globals* g = [] {
    auto* g = new Globals();
    int physical = 1;
    if (const char* n = std::getenv("EMBER_EMULATED_DEVICES"); n != nullptr && *n != '\0') {
      char* end = nullptr;
      const long v = std::strtol(n, &end, 10);
      if (end == n || *end != '\0' || v < 0 || v > kMaxDevices) {
        std::fprintf(stderr,
                     "ember emulator: EMBER_EMULATED_DEVICES='%s' is not a device count from 0 "
                     "to %d; emulating 1 device\n", n, kMaxDevices);
      } else {
        physical = static_cast<int>(v);
      }
    }
    size_t capacity = kDefaultMemory;
    if (const char* m = std::getenv("EMBER_EMULATED_MEMORY"); m != nullptr && *m != '\0') {
      const size_t v = parse_bytes(m);
      if (v < (size_t{1} << 20) || v > (size_t{1} << 40)) {
        std::fprintf(stderr,
                     "ember emulator: EMBER_EMULATED_MEMORY='%s' is not a size from 1MiB to "
                     "1024GiB (write e.g. 512MiB or 8GiB); using 4GiB\n", m);
      } else {
        capacity = round_up(v, kAlign);
      }
    }
    g->physical_devices = physical;
    g->device_capacity = capacity;
    std::string note;
    g->visible = visible_devices(std::getenv("CUDA_VISIBLE_DEVICES"), physical, &note);
    if (physical == 0) {
      g->no_device_reason = "EMBER_EMULATED_DEVICES=0: the emulator was asked for no devices";
    } else if (g->visible.empty()) {
      g->no_device_reason = "CUDA_VISIBLE_DEVICES='" +
                            std::string(std::getenv("CUDA_VISIBLE_DEVICES")) + "' hides all " +
                            std::to_string(physical) + " emulated device(s)" +
                            (note.empty() ? "" : " (" + note + ")");
    }
    // One reservation holds every visible device's memory, so that a memory hook tells a device
    // address from any other with one comparison; the shadow bytes are reserved beside it.
    const size_t ndev = g->visible.size();
    if (ndev > 0) {
      char* memory = static_cast<char*>(reserve(capacity * ndev, "emulated device memory"));
      auto* shadow = static_cast<uint8_t*>(reserve(capacity * ndev, "device memory's shadow"));
      g->device_lo = reinterpret_cast<uintptr_t>(memory);
      g->device_span = capacity * ndev;
      for (size_t d = 0; d < ndev; ++d) {
        auto* dev = new Device();
        dev->physical = g->visible[d];
        dev->arena = new Arena(memory + d * capacity, shadow + d * capacity, capacity);
        dev->default_stream.device = static_cast<int>(d);
        dev->peer_enabled.assign(ndev, false);
        dev->peer_enabled[d] = true;
        g->devices.push_back(dev);
      }
    }
    g->pinned = new Arena(static_cast<char*>(reserve(kPinnedCapacity, "pinned host memory")),
                          static_cast<uint8_t*>(reserve(kPinnedCapacity, "pinned memory's shadow")),
                          kPinnedCapacity, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
    unsigned checks = kMemcheck | kRacecheck | kSynccheck;
    if (const char* c = std::getenv("EMBER_EMULATOR_CHECKS"); c != nullptr) {
      try {
        checks = parse_checks(c);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ember emulator: %s; using the default checks\n", e.what());
      }
    }
    g->checks.store(checks);
    if (__asan_set_error_report_callback != nullptr) __asan_set_error_report_callback(explain_host_access);
    const char* q = std::getenv("EMBER_EMULATOR_QUIET");
    g->quiet = q != nullptr && *q != '\0' && std::string(q) != "0";
    if (const char* st = std::getenv("EMBER_EMULATOR_STATS"); st != nullptr && *st != '\0' &&
                                                             std::string(st) != "0") {
      std::atexit([] {
        const Stats s = stats();
        std::fprintf(stderr,
                     "ember emulator: %lld launches, %lld blocks, %lld CUDA threads, %lld switches, "
                     "%.3f s in kernels (%d CPU threads)\n",
                     static_cast<long long>(s.launches), static_cast<long long>(s.blocks),
                     static_cast<long long>(s.threads), static_cast<long long>(s.switches),
                     s.kernel_seconds, worker_threads());
      });
    }
    // The grid-stride coverage table (emulator.h): "1" prints it, anything else names a file to
    // append it to (a CI step can keep it).
    if (const char* cov = std::getenv("EMBER_EMULATOR_COVERAGE");
        cov != nullptr && *cov != '\0' && std::string(cov) != "0") {
      static const pid_t owner = getpid();  // a forked child (a death test) exits without it
      std::atexit([] {
        if (getpid() != owner) return;
        const std::string table = coverage_table();
        const std::string where = std::getenv("EMBER_EMULATOR_COVERAGE");
        if (where == "1") {
          std::fputs(table.c_str(), stderr);
        } else if (FILE* f = std::fopen(where.c_str(), "a")) {
          std::fputs(table.c_str(), f);
          std::fclose(f);
        } else {
          std::fprintf(stderr,
                       "ember emulator: cannot append the coverage table to "
                       "EMBER_EMULATOR_COVERAGE='%s': %s\n",
                       where.c_str(), std::strerror(errno));
        }
      });
    }
    // The launch configurations (emulator.h, launch_table): appended to the file named, for
    // scripts/check-launch-resources.
    if (const char* path = std::getenv("EMBER_EMULATOR_LAUNCHES");
        path != nullptr && *path != '\0') {
      static const pid_t owner = getpid();
      std::atexit([] {
        if (getpid() != owner) return;
        const std::string where = std::getenv("EMBER_EMULATOR_LAUNCHES");
        if (FILE* f = std::fopen(where.c_str(), "a")) {
          std::fputs(launch_table().c_str(), f);
          std::fclose(f);
        } else {
          std::fprintf(stderr,
                       "ember emulator: cannot append the launch table to "
                       "EMBER_EMULATOR_LAUNCHES='%s': %s\n",
                       where.c_str(), std::strerror(errno));
        }
      });
    }
    return g;
  }();
  g_globals = g;
  if (checks() & kHostcheck) set_host_protection(true);
  return *g;
}

Arena* device_arena_of(uintptr_t a, int* device) {
  Globals& g = globals();
  if (a - g.device_lo >= g.device_span) return nullptr;
  const int d = static_cast<int>((a - g.device_lo) / g.device_capacity);
  if (device) *device = d;
  return g.devices[static_cast<size_t>(d)]->arena;
}

double now_ms() {
  using clock = std::chrono::steady_clock;
  static const clock::time_point start = clock::now();
  return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

void set_last_error(cudaError_t e) {
  if (e != cudaSuccess) tls_last_error = e;
}

int current_device_index() { return tls_current_device; }

void publish_report(const std::string& text) {
  // During a graph launch, say which node of the graph failed.
  const std::string report =
      tls_replay.node < 0 ? text
                          : text + "\n  replayed as node " + std::to_string(tls_replay.node + 1) +
                                " of " + std::to_string(tls_replay.count) +
                                " of a CUDA graph (cudaGraphLaunch)";
  tls_last_report = report;
  tls_pending_report = report;
  if (!globals().quiet) std::fprintf(stderr, "%s\n", report.c_str());
}

void publish_warning(const std::string& report) {
  tls_last_report = report;
  if (!globals().quiet) std::fprintf(stderr, "%s\n", report.c_str());
}

void adopt_report(const std::string& report) {
  tls_last_report = report;
  tls_pending_report = report;
}

void set_current_device_index(int device) { tls_current_device = device; }

// ---- hostcheck: device memory out of the host's reach ------------------------------------------
// With hostcheck on, the device arenas are PROT_NONE whenever the emulator is not itself touching
// them (a HostWindow: a kernel running, a copy, a fill), so host code that dereferences a device
// pointer faults, as it would on a GPU machine, and the SIGSEGV handler says what happened.

namespace {
std::mutex g_window_mu;
int g_window_depth = 0;
bool g_protect = false;  // hostcheck on
struct sigaction g_previous_segv;

void protect_now(bool inaccessible) {
  Globals& g = globals();
  if (g.device_span == 0) return;
  mprotect(reinterpret_cast<void*>(g.device_lo), g.device_span,
           inaccessible ? PROT_NONE : PROT_READ | PROT_WRITE);
}

void on_segv(int sig, siginfo_t* info, void* context) {
  Globals* g = g_globals;
  const auto a = reinterpret_cast<uintptr_t>(info->si_addr);
  if (g != nullptr && a - g->device_lo < g->device_span) {
    char msg[512];
    const int n = std::snprintf(
        msg, sizeof msg,
        "ember emulator: hostcheck: host code touched device memory at 0x%llx. On a GPU machine "
        "this crashes too: a device pointer cannot be dereferenced on the host; copy the data with "
        "cudaMemcpy (Tensor::cpu(), Tensor::to) instead. The crash's backtrace shows where.\n",
        static_cast<unsigned long long>(a));
    if (n > 0) (void)!write(2, msg, static_cast<size_t>(n));
    // Returning re-runs the access, which now goes to whoever handled SIGSEGV before (a test
    // runner's report), or ends the process.
    sigaction(SIGSEGV, &g_previous_segv, nullptr);
    return;
  }
  // Not ours: whoever handled SIGSEGV before.
  if (g_previous_segv.sa_flags & SA_SIGINFO) {
    if (g_previous_segv.sa_sigaction != nullptr) g_previous_segv.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous_segv.sa_handler == SIG_IGN) return;
  if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != nullptr) {
    g_previous_segv.sa_handler(sig);
    return;
  }
  signal(SIGSEGV, SIG_DFL);
}
}  // namespace

void set_host_protection(bool on) {
  std::lock_guard<std::mutex> lock(g_window_mu);
  if (on == g_protect) return;
  g_protect = on;
  // The handler goes in when hostcheck is turned on (after whatever a test runner installed, so
  // that it can chain to it) and out when it is turned off, if it is still the one in place.
  struct sigaction current {};
  sigaction(SIGSEGV, nullptr, &current);
  const bool ours = (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_segv;
  if (on && !ours) {
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
  } else if (!on && ours) {
    sigaction(SIGSEGV, &g_previous_segv, nullptr);
  }
  if (g_window_depth == 0) protect_now(on);
}

HostWindow::HostWindow() {
  std::lock_guard<std::mutex> lock(g_window_mu);
  if (g_window_depth++ == 0 && g_protect) protect_now(false);
}

HostWindow::~HostWindow() {
  std::lock_guard<std::mutex> lock(g_window_mu);
  if (--g_window_depth == 0 && g_protect) protect_now(true);
}

// ---- copies around AddressSanitizer ----------------------------------------------------------------
// Under ASan, memcpy and memset are intercepted and would report the emulator's own writes into
// device memory (which is poisoned for the host). These loops are not recognised as memcpy
// (this file is compiled with -fno-tree-loop-distribute-patterns) and are not instrumented.

void raw_copy(void* dst, const void* src, size_t n) {
  HostWindow window;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  if (d == s || n == 0) return;
  if (d < s || d >= s + n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      unsigned char tmp[16];
      __builtin_memcpy(tmp, s + i, 16);
      __builtin_memcpy(d + i, tmp, 16);
    }
    for (; i < n; ++i) d[i] = s[i];
  } else {  // overlapping, destination after source: copy backwards
    for (size_t i = n; i-- > 0;) d[i] = s[i];
  }
}

void raw_fill(void* dst, int value, size_t n) {
  HostWindow window;
  auto* d = static_cast<unsigned char*>(dst);
  unsigned char pattern[16];
  for (unsigned char& c : pattern) c = static_cast<unsigned char>(value);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) __builtin_memcpy(d + i, pattern, 16);
  for (; i < n; ++i) d[i] = static_cast<unsigned char>(value);
}

void host_poison(const void* p, size_t n) {
  if (__asan_poison_memory_region != nullptr && n > 0) __asan_poison_memory_region(p, n);
}
void host_unpoison(const void* p, size_t n) {
  if (__asan_unpoison_memory_region != nullptr && n > 0) __asan_unpoison_memory_region(p, n);
}

}  // namespace detail

using namespace detail;

// ---- the public control API (emulator.h) ----------------------------------------------------------

unsigned checks() { return globals().checks.load(std::memory_order_relaxed); }
void set_checks(unsigned mask) {
  globals().checks.store(mask & kAllChecks);
  set_host_protection((mask & kHostcheck) != 0);
}

unsigned parse_checks(const std::string& words) {
  unsigned mask = 0;
  size_t start = 0;
  while (start <= words.size()) {
    size_t comma = words.find(',', start);
    if (comma == std::string::npos) comma = words.size();
    std::string w = words.substr(start, comma - start);
    w.erase(0, w.find_first_not_of(" \t"));
    w.erase(w.find_last_not_of(" \t") + 1);
    if (w == "memcheck") mask |= kMemcheck;
    else if (w == "racecheck") mask |= kRacecheck;
    else if (w == "synccheck") mask |= kSynccheck;
    else if (w == "initcheck") mask |= kInitcheck;
    else if (w == "hostcheck") mask |= kHostcheck;
    else if (w == "globalrace") mask |= kGlobalRace;
    else if (w == "all") mask |= kAllChecks;
    else if (w == "none" || w.empty()) mask |= 0;
    else
      throw std::invalid_argument("EMBER_EMULATOR_CHECKS: unknown checker '" + w +
                                  "' (known: memcheck, racecheck, synccheck, initcheck, "
                                  "hostcheck, globalrace, all, none; separate them with commas)");
    start = comma + 1;
  }
  return mask;
}

std::string last_report() { return tls_last_report; }

std::vector<int> parse_visible_devices(const std::string& value, int physical) {
  std::string note;
  return visible_devices(value.c_str(), physical, &note);
}

std::string take_report() {
  std::string r;
  r.swap(tls_pending_report);
  return r;
}

namespace {
// In the asynchronous mode the allocator's marks are stream-ordered, as its reuse of blocks is:
// queued on the legacy stream of the block's device (the stream ember's work runs on), they take
// effect after the kernels queued before them. Returns true when `mark` was queued.
bool queue_mark(uintptr_t b, const char* what, std::function<void()> mark) {
  if (!async_mode() || on_async_worker()) return false;
  int dev = 0;
  if (device_arena_of(b, &dev) == nullptr) return false;
  enqueue(globals().devices[static_cast<size_t>(dev)]->default_stream, what, nullptr,
          [mark = std::move(mark)] {
            mark();
            return cudaSuccess;
          });
  return true;
}
}  // namespace

void mark_block_live(const void* block, size_t bytes, size_t capacity) {
  const auto b = reinterpret_cast<uintptr_t>(block);
  if (queue_mark(b, "ember's allocator handing a block to a new tensor",
                 [block, bytes, capacity] { mark_block_live(block, bytes, capacity); }))
    return;
  Arena* arena = device_arena_of(b, nullptr);
  if (arena == nullptr) return;
  std::lock_guard<std::mutex> lock(arena->mu);
  Block blk;
  if (!arena->live_block(b, &blk) || bytes > capacity || capacity > blk.size) return;
  arena->set_shadow(b, bytes, kUninit);
  arena->set_shadow(b + bytes, blk.size - bytes, kCached);
  // Whatever the previous tensor left is garbage to the new one: make it visible garbage.
  raw_fill(const_cast<void*>(block), 0xFF, bytes);
  std::lock_guard<std::mutex> tl(globals().tensor_mu);
  globals().tensors[b] = TensorRange{b, bytes, capacity};
}

void mark_block_cached(const void* block, size_t capacity) {
  const auto b = reinterpret_cast<uintptr_t>(block);
  if (queue_mark(b, "ember's allocator taking a block back into its cache",
                 [block, capacity] { mark_block_cached(block, capacity); }))
    return;
  Arena* arena = device_arena_of(b, nullptr);
  if (arena == nullptr) return;
  std::lock_guard<std::mutex> lock(arena->mu);
  Block blk;
  if (!arena->live_block(b, &blk)) return;
  arena->set_shadow(b, blk.size, kCached);
  std::lock_guard<std::mutex> tl(globals().tensor_mu);
  globals().tensors.erase(b);
}

}  // namespace ember::emu

// =====================================================================================================
// The CUDA runtime API
// =====================================================================================================

using namespace ember::emu;
using namespace ember::emu::detail;

namespace {

cudaError_t fail(cudaError_t e) {
  set_last_error(e);
  return e;
}

// Fails with a report (printed, and kept for the exception message) when memcheck is on.
cudaError_t fail_with(cudaError_t e, const std::string& report) {
  publish_report("ember emulator: " + report);
  return fail(e);
}

int device_count_or_zero() { return static_cast<int>(globals().devices.size()); }

// The asynchronous mode: once queued work on `device` failed, every call that involves the device
// returns that error (sticky, as on a GPU), with the failure's report for ember's DeviceError.
cudaError_t sticky_check(int device) {
  const cudaError_t e = sticky_error(device);
  if (e == cudaSuccess) return e;
  adopt_report(sticky_report(device));
  return fail(e);
}

Device* current() {
  Globals& g = globals();
  const int d = tls_current_device;
  if (d < 0 || d >= static_cast<int>(g.devices.size())) return nullptr;
  return g.devices[static_cast<size_t>(d)];
}

Stream& stream_of(cudaStream_t s) { return stream_object(s); }

// What a pointer handed to a copy is.
enum class Where { Device, Pinned, Host };
Where where_is(const void* p, int* device) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (device_arena_of(a, device) != nullptr) return Where::Device;
  if (globals().pinned->contains(a)) return Where::Pinned;
  return Where::Host;
}

// Is [p, p + n) inside one live allocation? For copies and memsets; `what` names the operand.
bool check_range(const void* p, size_t n, const char* call, const char* what, std::string* report) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int dev = 0;
  Arena* arena = device_arena_of(a, &dev);
  if (arena == nullptr && globals().pinned->contains(a)) arena = globals().pinned;
  if (arena == nullptr || n == 0) return true;
  if (!(checks() & kMemcheck)) return true;
  std::lock_guard<std::mutex> lock(arena->mu);
  for (size_t i = 0; i < n; ++i) {
    if (!addressable(arena->shadow_of(a + i))) {
      *report = std::string(call) + ": the " + what + " range [" + std::to_string(a) + ", +" +
                std::to_string(n) + ") is not inside one allocation: byte " + std::to_string(i) +
                " is " + describe_address(a + i, 1);
      return false;
    }
  }
  return true;
}

// Marks device bytes written by a copy or memset as initialised; a device-to-device copy
// carries the source's initialised-ness along (for initcheck).
void mark_written(void* dst, const void* src, size_t n) {
  const auto d = reinterpret_cast<uintptr_t>(dst);
  Arena* da = device_arena_of(d, nullptr);
  if (da == nullptr) return;
  const auto s = reinterpret_cast<uintptr_t>(src);
  Arena* sa = src ? device_arena_of(s, nullptr) : nullptr;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t old = da->shadow_of(d + i);
    if (!addressable(old)) continue;
    uint8_t v = kInit;
    if (sa != nullptr && sa->shadow_of(s + i) == kUninit) v = kUninit;
    da->shadow()[d + i - reinterpret_cast<uintptr_t>(da->base())] = v;
  }
}

void do_copy(void* dst, const void* src, size_t n) {
  mark_written(dst, src, n);
  raw_copy(dst, src, n);
}

// The copy kinds that name a side must match the pointers (unified addressing does not excuse a
// HostToDevice copy whose destination is host memory).
bool kind_matches(cudaMemcpyKind kind, Where dst, Where src) {
  const bool dd = dst == Where::Device, sd = src == Where::Device;
  switch (kind) {
    case cudaMemcpyHostToHost: return !dd && !sd;
    case cudaMemcpyHostToDevice: return dd && !sd;
    case cudaMemcpyDeviceToHost: return !dd && sd;
    case cudaMemcpyDeviceToDevice: return dd && sd;
    case cudaMemcpyDefault: return true;
  }
  return false;
}

const char* where_name(Where w) {
  return w == Where::Device ? "device" : (w == Where::Pinned ? "pinned host" : "host");
}

// A copy as a graph node (and as the work a queued copy runs): the ranges are checked when it
// runs, then the bytes move.
GraphNode copy_node(void* dst, const void* src, size_t n, const char* call) {
  return GraphNode{std::string(call) + " of " + std::to_string(n) + " bytes",
                   [dst, src, n, call](cudaStream_t) -> cudaError_t {
                     std::string report;
                     if (!check_range(dst, n, call, "destination", &report) ||
                         !check_range(src, n, call, "source", &report)) {
                       return fail_with(cudaErrorInvalidValue, report);
                     }
                     do_copy(dst, src, n);
                     return cudaSuccess;
                   }};
}

cudaError_t copy_queued(void* dst, const void* src, size_t n, Where dw, Where sw,
                        cudaStream_t stream, bool async, const char* call, const void* pc);

cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream,
                 bool async, const char* call, const void* pc) {
  if (n == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return fail(cudaErrorInvalidValue);
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return fail(cudaErrorInvalidMemcpyDirection);
  int ddev = -1, sdev = -1;
  const Where dw = where_is(dst, &ddev), sw = where_is(src, &sdev);
  if (!kind_matches(kind, dw, sw)) {
    return fail_with(cudaErrorInvalidValue,
                     std::string(call) + ": the copy kind does not match the pointers: the "
                     "destination is " + where_name(dw) + " memory and the source " +
                     where_name(sw) + " memory (use cudaMemcpyDefault to let the runtime tell)");
  }
  if (async_mode() && (dw == Where::Device || sw == Where::Device))
    return copy_queued(dst, src, n, dw, sw, stream, async, call, pc);
  std::string report;
  if (!check_range(dst, n, call, "destination", &report) ||
      !check_range(src, n, call, "source", &report)) {
    return fail_with(cudaErrorInvalidValue, report);
  }
  if (dw != Where::Device && sw != Where::Device) {
    raw_copy(dst, src, n);
    return cudaSuccess;
  }
  // A synchronous copy makes the host wait: a capture may forbid it (graph.cpp).
  if (!async) {
    if (const cudaError_t e = check_unsafe_call(call); e != cudaSuccess) return fail(e);
  }
  // Queued on the stream of the current device (a copy that involves another device is a peer
  // copy through it, as the runtime does with unified addressing).
  if (current() == nullptr) return fail(cudaErrorNoDevice);
  Stream& s = stream_of(stream);
  Device& dev = *globals().devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(dev.mu);
  const bool pinned_host = dw == Where::Pinned || sw == Where::Pinned;
  const bool pageable_host = dw == Where::Host || sw == Where::Host;
  // On a capturing stream the copy becomes a node (the same bytes copied at every replay); a copy
  // with pageable host memory cannot (nullptr: capture_or_run refuses it).
  GraphNode node = copy_node(dst, src, n, call);
  const cudaError_t captured = capture_or_run(s, call, pageable_host ? nullptr : &node);
  if (captured == kRecorded) return cudaSuccess;
  if (captured != cudaSuccess) return fail(captured);
  if (tls_replay.node < 0) count_submission();
  if (async && pinned_host) {
    // Deferred until the stream's next operation or synchronisation (see runtime_api.h).
    s.pending.push_back(PendingCopy{dst, src, n});
    return cudaSuccess;
  }
  drain(s);
  do_copy(dst, src, n);
  return cudaSuccess;
}

// A copy in the asynchronous mode. Synchronous ones (cudaMemcpy, and a copy to pageable host
// memory, which CUDA finishes before returning) wait for the stream and copy on this thread; the
// others are queued. A copy from pageable host memory is staged first, as the runtime stages it,
// so the host may reuse its buffer at once; one from or to pinned memory guards the host range
// until it has run. The ranges are checked when the copy runs: a queued copy's bad range is the
// device's sticky error then.
cudaError_t copy_queued(void* dst, const void* src, size_t n, Where dw, Where sw,
                        cudaStream_t stream, bool async, const char* call, const void* pc) {
  if (!async) {
    if (const cudaError_t e = check_unsafe_call(call); e != cudaSuccess) return fail(e);
  }
  if (current() == nullptr) return fail(cudaErrorNoDevice);
  Stream& s = stream_of(stream);
  Device& dev = *globals().devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(dev.mu);
  if (const cudaError_t e = sticky_check(s.device); e != cudaSuccess) return e;
  const bool pageable_host = dw == Where::Host || sw == Where::Host;
  GraphNode node = copy_node(dst, src, n, call);
  const cudaError_t captured = capture_or_run(s, call, pageable_host ? nullptr : &node);
  if (captured == kRecorded) return cudaSuccess;
  if (captured != cudaSuccess) return fail(captured);
  count_submission();
  const std::string what = std::string(call) + " of " + std::to_string(n) + " bytes from " +
                           where_name(sw) + " to " + where_name(dw) + " memory";
  if (!async || dw == Where::Host) {
    wait_for(enqueue(s, what, pc, [] { return cudaSuccess; }));
    if (const cudaError_t e = sticky_check(s.device); e != cudaSuccess) return e;
    std::string report;
    if (!check_range(dst, n, call, "destination", &report) ||
        !check_range(src, n, call, "source", &report)) {
      return fail_with(cudaErrorInvalidValue, report);
    }
    do_copy(dst, src, n);
    return cudaSuccess;
  }
  std::vector<HostRange> guards;
  if (dw == Where::Pinned) guards.push_back(HostRange{dst, n, false});
  if (sw == Where::Pinned) guards.push_back(HostRange{src, n, true});
  if (sw == Where::Host) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + n);
    enqueue(s, what, pc, [dst, staged, n, call]() -> cudaError_t {
      std::string report;
      if (!check_range(dst, n, call, "destination", &report))
        return fail_with(cudaErrorInvalidValue, report);
      do_copy(dst, staged->data(), n);
      return cudaSuccess;
    });
  } else {
    enqueue(
        s, what, pc, [run = node.run] { return run(nullptr); }, {}, std::move(guards));
  }
  return cudaSuccess;
}

const char* error_name(cudaError_t e) {
  switch (e) {
#define EMBER_EMU_ERROR(name) \
  case name:                  \
    return #name;
    EMBER_EMU_ERROR(cudaSuccess)
    EMBER_EMU_ERROR(cudaErrorInvalidValue)
    EMBER_EMU_ERROR(cudaErrorMemoryAllocation)
    EMBER_EMU_ERROR(cudaErrorInitializationError)
    EMBER_EMU_ERROR(cudaErrorCudartUnloading)
    EMBER_EMU_ERROR(cudaErrorInvalidConfiguration)
    EMBER_EMU_ERROR(cudaErrorInvalidSymbol)
    EMBER_EMU_ERROR(cudaErrorInvalidDevicePointer)
    EMBER_EMU_ERROR(cudaErrorInvalidMemcpyDirection)
    EMBER_EMU_ERROR(cudaErrorInvalidDeviceFunction)
    EMBER_EMU_ERROR(cudaErrorNoDevice)
    EMBER_EMU_ERROR(cudaErrorInvalidDevice)
    EMBER_EMU_ERROR(cudaErrorNoKernelImageForDevice)
    EMBER_EMU_ERROR(cudaErrorPeerAccessUnsupported)
    EMBER_EMU_ERROR(cudaErrorInvalidResourceHandle)
    EMBER_EMU_ERROR(cudaErrorNotReady)
    EMBER_EMU_ERROR(cudaErrorIllegalAddress)
    EMBER_EMU_ERROR(cudaErrorLaunchOutOfResources)
    EMBER_EMU_ERROR(cudaErrorPeerAccessAlreadyEnabled)
    EMBER_EMU_ERROR(cudaErrorPeerAccessNotEnabled)
    EMBER_EMU_ERROR(cudaErrorAssert)
    EMBER_EMU_ERROR(cudaErrorMisalignedAddress)
    EMBER_EMU_ERROR(cudaErrorLaunchFailure)
    EMBER_EMU_ERROR(cudaErrorIllegalState)
    EMBER_EMU_ERROR(cudaErrorStreamCaptureUnsupported)
    EMBER_EMU_ERROR(cudaErrorStreamCaptureInvalidated)
    EMBER_EMU_ERROR(cudaErrorStreamCaptureUnmatched)
    EMBER_EMU_ERROR(cudaErrorStreamCaptureIsolation)
    EMBER_EMU_ERROR(cudaErrorStreamCaptureImplicit)
    EMBER_EMU_ERROR(cudaErrorCapturedEvent)
    EMBER_EMU_ERROR(cudaErrorStreamCaptureWrongThread)
    EMBER_EMU_ERROR(cudaErrorUnknown)
#undef EMBER_EMU_ERROR
  }
  return "cudaErrorUnknown";
}

}  // namespace

namespace ember::emu::detail {
void drain(Stream& s) {
  if (async_mode()) {  // wait for the stream's queue (the worker itself never waits)
    if (!on_async_worker()) wait_for(tail_of(s));
    return;
  }
  if (!s.pending.empty()) {
    std::vector<PendingCopy> todo;
    todo.swap(s.pending);
    for (const PendingCopy& c : todo) do_copy(c.dst, c.src, c.bytes);
  }
  s.last_done_ms = now_ms();
}
}  // namespace ember::emu::detail

// ---- devices -------------------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = device_count_or_zero();
  return *count == 0 ? fail(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  if (device_count_or_zero() == 0) return fail(cudaErrorNoDevice);
  *device = tls_current_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= device_count_or_zero()) return fail(cudaErrorInvalidDevice);
  tls_current_device = device;
  return cudaSuccess;
}

namespace {
constexpr int kSMs = 132;  // an H100 SXM
void fill_properties(cudaDeviceProp* p, int device) {
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "ember emulated GPU %d (H100-like limits, runs on the CPU)",
                globals().devices[static_cast<size_t>(device)]->physical);
  p->totalGlobalMem = globals().device_capacity;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 227 * 1024;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 * 1024;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = kSMs;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->unifiedAddressing = 1;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->pciBusID = globals().devices[static_cast<size_t>(device)]->physical;
}
}  // namespace

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count_or_zero()) return fail(cudaErrorInvalidDevice);
  fill_properties(prop, device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count_or_zero()) return fail(cudaErrorInvalidDevice);
  cudaDeviceProp p;
  fill_properties(&p, device);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrClockRate: *value = 1980000; break;        // kHz, an H100 SXM's boost clock
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrMemoryClockRate: *value = 2619000; break;  // kHz (HBM3)
    case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(p.sharedMemPerBlockOptin);
      break;
    default: return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  if (pciBusId == nullptr || len <= 0) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= device_count_or_zero()) return fail(cudaErrorInvalidDevice);
  // The bus number is the physical index, so CUDA_VISIBLE_DEVICES's reordering can be seen.
  std::snprintf(pciBusId, static_cast<size_t>(len), "0000:%02x:00.0",
                globals().devices[static_cast<size_t>(device)]->physical);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  Device* d = current();
  if (d == nullptr) return fail(cudaErrorNoDevice);
  std::lock_guard<std::recursive_mutex> lock(d->mu);
  if (const cudaError_t e = check_device_wait(current_device_index(), "cudaDeviceSynchronize");
      e != cudaSuccess)
    return fail(e);
  if (const cudaError_t e = sticky_check(current_device_index()); e != cudaSuccess) return e;
  drain(d->default_stream);
  if (async_mode()) wait_device_queues(current_device_index());
  return sticky_check(current_device_index());
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  const int n = device_count_or_zero();
  if (can == nullptr) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= n || peer < 0 || peer >= n) return fail(cudaErrorInvalidDevice);
  *can = device != peer ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  Device* d = current();
  if (d == nullptr) return fail(cudaErrorNoDevice);
  if (flags != 0) return fail(cudaErrorInvalidValue);
  if (peer < 0 || peer >= device_count_or_zero()) return fail(cudaErrorInvalidDevice);
  if (peer == tls_current_device) return fail(cudaErrorInvalidDevice);
  if (d->peer_enabled[static_cast<size_t>(peer)]) return fail(cudaErrorPeerAccessAlreadyEnabled);
  d->peer_enabled[static_cast<size_t>(peer)] = true;
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  Device* d = current();
  if (d == nullptr) return fail(cudaErrorNoDevice);
  if (peer < 0 || peer >= device_count_or_zero() || peer == tls_current_device)
    return fail(cudaErrorInvalidDevice);
  if (!d->peer_enabled[static_cast<size_t>(peer)]) return fail(cudaErrorPeerAccessNotEnabled);
  d->peer_enabled[static_cast<size_t>(peer)] = false;
  return cudaSuccess;
}

// The emulator implements the runtime API of CUDA 13.0; there is no driver underneath.
cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = 13000;
  return cudaSuccess;
}

// ---- errors --------------------------------------------------------------------------------------

// A sticky error (the asynchronous mode: queued work failed) is not cleared by reading it.
cudaError_t cudaGetLastError() {
  if (const cudaError_t s = sticky_error(tls_current_device); s != cudaSuccess) {
    adopt_report(sticky_report(tls_current_device));
    tls_last_error = cudaSuccess;
    return s;
  }
  const cudaError_t e = tls_last_error;
  tls_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() {
  if (const cudaError_t s = sticky_error(tls_current_device); s != cudaSuccess) return s;
  return tls_last_error;
}

const char* cudaGetErrorName(cudaError_t error) { return error_name(error); }

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorCudartUnloading: return "driver shutting down";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: {
      // The real message, and the emulator's reason (EMBER_EMULATED_DEVICES, CUDA_VISIBLE_DEVICES).
      static const std::string s = "no CUDA-capable device is detected (" +
                                    globals().no_device_reason + ")";
      return s.c_str();
    }
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoKernelImageForDevice: return "no kernel image is available for execution on the device";
    case cudaErrorPeerAccessUnsupported: return "peer access is not supported between these two devices";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorIllegalState: return "operation not permitted in current state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureIsolation:
      return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent:
      return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorStreamCaptureWrongThread:
      return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorUnknown: return "unknown error";
  }
  return "unknown error";
}

// ---- memory --------------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
  *devPtr = nullptr;
  Device* d = current();
  if (d == nullptr) return fail(cudaErrorNoDevice);
  if (const cudaError_t e = check_unsafe_call("cudaMalloc"); e != cudaSuccess) return fail(e);
  if (const cudaError_t e = sticky_check(current_device_index()); e != cudaSuccess) return e;
  if (size == 0) return cudaSuccess;  // CUDA returns a null pointer for 0 bytes
  if (size > globals().device_capacity) return fail(cudaErrorMemoryAllocation);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(d->arena->mu);
    p = d->arena->allocate(size);
  }
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  raw_fill(p, 0xFF, size);  // fresh device memory holds garbage: make it NaN-looking garbage
  host_poison(p, size);
  *devPtr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  if (devPtr == nullptr) return cudaSuccess;
  if (const cudaError_t e = check_unsafe_call("cudaFree"); e != cudaSuccess) return fail(e);
  int dev = 0;
  Arena* arena = device_arena_of(reinterpret_cast<uintptr_t>(devPtr), &dev);
  if (arena == nullptr) return fail(cudaErrorInvalidValue);
  Device& d = *globals().devices[static_cast<size_t>(dev)];
  std::lock_guard<std::recursive_mutex> dl(d.mu);
  if (const cudaError_t e = sticky_check(dev); e != cudaSuccess) return e;
  drain(d.default_stream);  // cudaFree waits for the device
  if (async_mode()) {
    wait_device_queues(dev);
    if (const cudaError_t e = sticky_check(dev); e != cudaSuccess) return e;
  }
  std::lock_guard<std::mutex> lock(arena->mu);
  if (!arena->release(devPtr)) return fail(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> tl(globals().tensor_mu);
    globals().tensors.erase(reinterpret_cast<uintptr_t>(devPtr));
  }
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  Device* d = current();
  if (d == nullptr) return fail(cudaErrorNoDevice);
  if (free == nullptr || total == nullptr) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(d->arena->mu);
  *total = d->arena->capacity();
  *free = d->arena->capacity() - d->arena->used();
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  if (ptr == nullptr || flags > 15) return fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (device_count_or_zero() == 0) return fail(cudaErrorNoDevice);
  if (const cudaError_t e = check_unsafe_call("cudaHostAlloc"); e != cudaSuccess) return fail(e);
  Arena* a = globals().pinned;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(a->mu);
    p = a->allocate(std::max<size_t>(size, 1));
    // The host writes pinned memory without the emulator seeing it: count it as initialised.
    if (p != nullptr) a->set_shadow(reinterpret_cast<uintptr_t>(p), std::max<size_t>(size, 1), kInit);
  }
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, 0); }

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  if (const cudaError_t e = check_unsafe_call("cudaFreeHost"); e != cudaSuccess) return fail(e);
  Arena* a = globals().pinned;
  if (!a->contains(reinterpret_cast<uintptr_t>(ptr))) return fail(cudaErrorInvalidValue);
  // A deferred copy may still read or write the block: finish every stream's copies first.
  for (Device* d : globals().devices) {
    std::lock_guard<std::recursive_mutex> dl(d->mu);
    drain(d->default_stream);
  }
  if (async_mode()) wait_all_queues();
  std::lock_guard<std::mutex> lock(a->mu);
  return a->release(ptr) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy(dst, src, count, kind, nullptr, false, "cudaMemcpy", __builtin_return_address(0));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return copy(dst, src, count, kind, stream, true, "cudaMemcpyAsync", __builtin_return_address(0));
}

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  const int n = device_count_or_zero();
  if (dstDevice < 0 || dstDevice >= n || srcDevice < 0 || srcDevice >= n)
    return fail(cudaErrorInvalidDevice);
  return copy(dst, src, count, cudaMemcpyDeviceToDevice, nullptr, false, "cudaMemcpyPeer",
              __builtin_return_address(0));
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream) {
  const int n = device_count_or_zero();
  if (dstDevice < 0 || dstDevice >= n || srcDevice < 0 || srcDevice >= n)
    return fail(cudaErrorInvalidDevice);
  return copy(dst, src, count, cudaMemcpyDeviceToDevice, stream, true, "cudaMemcpyPeerAsync",
              __builtin_return_address(0));
}

namespace {
cudaError_t memset_impl(void* p, int value, size_t n, cudaStream_t stream, bool async,
                        const char* call, const void* pc) {
  if (n == 0) return cudaSuccess;
  if (!async) {
    if (const cudaError_t e = check_unsafe_call(call); e != cudaSuccess) return fail(e);
  }
  int dev = 0;
  if (device_arena_of(reinterpret_cast<uintptr_t>(p), &dev) == nullptr) {
    return fail_with(cudaErrorInvalidValue,
                     std::string(call) + ": the pointer is not device memory (" +
                         describe_address(reinterpret_cast<uintptr_t>(p), 1) + ")");
  }
  std::string report;
  // (In the asynchronous mode the range is checked when the memset runs: the allocator's marks
  // ahead of it in the queue may not have run yet.)
  if (!async_mode() && !check_range(p, n, call, "destination", &report))
    return fail_with(cudaErrorInvalidValue, report);
  if (current() == nullptr) return fail(cudaErrorNoDevice);
  Stream& s = stream_of(stream);
  Device& d = *globals().devices[static_cast<size_t>(s.device)];
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  if (const cudaError_t e = sticky_check(s.device); e != cudaSuccess) return e;
  GraphNode node{std::string(call) + " of " + std::to_string(n) + " bytes",
                 [p, value, n, call](cudaStream_t) -> cudaError_t {
                   std::string report;
                   if (!check_range(p, n, call, "destination", &report))
                     return fail_with(cudaErrorInvalidValue, report);
                   mark_written(p, nullptr, n);
                   raw_fill(p, value, n);
                   return cudaSuccess;
                 }};
  const cudaError_t captured = capture_or_run(s, call, &node);
  if (captured == kRecorded) return cudaSuccess;
  if (captured != cudaSuccess) return fail(captured);
  if (tls_replay.node < 0) count_submission();
  if (async_mode()) {
    const std::string what = std::string(call) + " of " + std::to_string(n) + " bytes";
    if (async) {
      enqueue(s, what, pc, [run = node.run] { return run(nullptr); });
      return cudaSuccess;
    }
    wait_for(enqueue(s, what, pc, [] { return cudaSuccess; }));  // cudaMemset waits
    if (const cudaError_t e = sticky_check(s.device); e != cudaSuccess) return e;
    if (!check_range(p, n, call, "destination", &report))
      return fail_with(cudaErrorInvalidValue, report);
  }
  drain(s);
  mark_written(p, nullptr, n);
  raw_fill(p, value, n);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return memset_impl(devPtr, value, count, nullptr, false, "cudaMemset",
                     __builtin_return_address(0));
}
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return memset_impl(devPtr, value, count, stream, true, "cudaMemsetAsync",
                     __builtin_return_address(0));
}

// Both wait for the legacy stream first (they are ordered with it, and synchronous).
cudaError_t cudaMemcpyToSymbolBytes(void* symbol, const void* src, size_t count, size_t offset) {
  if (async_mode() && current() != nullptr) drain(current()->default_stream);
  raw_copy(static_cast<char*>(symbol) + offset, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyFromSymbolBytes(void* dst, const void* symbol, size_t count, size_t offset) {
  if (async_mode() && current() != nullptr) drain(current()->default_stream);
  raw_copy(dst, static_cast<const char*>(symbol) + offset, count);
  return cudaSuccess;
}

// ---- streams and events --------------------------------------------------------------------------

struct CUevent_st {
  bool recorded = false;
  bool timing = true;
  bool captured = false;  // last recorded inside a capture: it stands for a point in a graph
  Stream* stream = nullptr;
  double ms = 0;
  // The asynchronous mode: the record is an operation of its stream; `point` is reached when it
  // has run, and it writes the time it ran into *stamp (shared: the event may be destroyed first).
  StreamPoint point;
  std::shared_ptr<double> stamp;
  int device = 0;  // of the stream it was recorded on (which may be destroyed first)
};

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (stream == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return fail(cudaErrorInvalidValue);
  if (current() == nullptr) return fail(cudaErrorNoDevice);
  if (const cudaError_t e = sticky_check(tls_current_device); e != cudaSuccess) return e;
  auto* s = new Stream();
  s->device = tls_current_device;
  s->blocking = (flags & cudaStreamNonBlocking) == 0;
  *stream = reinterpret_cast<cudaStream_t>(s);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr) return fail(cudaErrorInvalidResourceHandle);
  Stream* s = reinterpret_cast<Stream*>(stream);
  {
    std::lock_guard<std::recursive_mutex> lock(globals().devices[static_cast<size_t>(s->device)]->mu);
    if (s->capture != nullptr) {
      publish_report("ember emulator: cudaStreamDestroy on a capturing stream: end the capture "
                     "(cudaStreamEndCapture) first");
      return fail(cudaErrorIllegalState);
    }
    drain(*s);
  }
  forget_stream(*s);
  delete s;
  return cudaSuccess;
}

namespace {
cudaError_t stream_wait(cudaStream_t stream, const char* call, bool query) {
  if (current() == nullptr) return fail(cudaErrorNoDevice);
  Stream& s = stream_of(stream);
  std::lock_guard<std::recursive_mutex> lock(globals().devices[static_cast<size_t>(s.device)]->mu);
  if (const cudaError_t e = check_stream_wait(s, call); e != cudaSuccess) return fail(e);
  if (const cudaError_t e = sticky_check(s.device); e != cudaSuccess) return e;
  if (async_mode() && query) {
    // Unfinished work: not ready, and the worker may start on it (so that polling ends).
    const StreamPoint tail = tail_of(s);
    if (reached(tail)) return cudaSuccess;
    request(tail);
    count_not_ready();
    return cudaErrorNotReady;
  }
  drain(s);
  return sticky_check(s.device);
}
}  // namespace

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return stream_wait(stream, "cudaStreamSynchronize", false);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return stream_wait(stream, "cudaStreamQuery", true);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return fail(cudaErrorInvalidValue);
  auto* e = new CUevent_st();
  e->timing = (flags & cudaEventDisableTiming) == 0;
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, 0); }

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (current() == nullptr) return fail(cudaErrorNoDevice);
  Stream& s = stream_of(stream);
  std::lock_guard<std::recursive_mutex> lock(globals().devices[static_cast<size_t>(s.device)]->mu);
  if (s.capture != nullptr) {
    // A point inside the graph being recorded. One captured stream is one chain of nodes, so
    // a wait for it within the same capture needs no node of its own.
    event->recorded = true;
    event->captured = true;
    event->stream = &s;
    return cudaSuccess;
  }
  if (const cudaError_t e = capture_or_run(s, "cudaEventRecord", nullptr); e != cudaSuccess)
    return fail(e);  // the legacy stream while a blocking stream captures
  if (const cudaError_t e = sticky_check(s.device); e != cudaSuccess) return e;
  event->recorded = true;
  event->captured = false;
  event->stream = &s;
  if (async_mode()) {
    auto stamp = std::make_shared<double>(-1.0);
    event->stamp = stamp;
    event->device = s.device;
    event->ms = -1;
    event->point = enqueue(s, "cudaEventRecord", __builtin_return_address(0), [stamp] {
      *stamp = now_ms();
      return cudaSuccess;
    });
    return cudaSuccess;
  }
  // Everything queued before the event has run, except deferred copies: the event completes
  // when they do (cudaEventQuery / cudaEventSynchronize run them).
  event->ms = s.pending.empty() ? now_ms() : -1;
  return cudaSuccess;
}

namespace {
cudaError_t complete(cudaEvent_t event, bool query) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (!event->recorded) return cudaSuccess;  // never recorded: complete, as in CUDA
  if (event->captured) {
    publish_report("ember emulator: waiting for (or querying) an event last recorded inside a "
                   "stream capture: it marks a point of a graph, not of work that runs");
    return fail(cudaErrorCapturedEvent);
  }
  if (async_mode() && event->point.stream) {
    const int device = event->device;
    if (const cudaError_t e = sticky_check(device); e != cudaSuccess) return e;
    if (!reached(event->point)) {
      if (query) {  // not ready; the worker may start on it, so that polling ends
        request(event->point);
        count_not_ready();
        return cudaErrorNotReady;
      }
      wait_for(event->point);
      if (const cudaError_t e = sticky_check(device); e != cudaSuccess) return e;
    }
    event->ms = *event->stamp;
    return cudaSuccess;
  }
  if (event->ms < 0) {
    Stream& s = *event->stream;
    std::lock_guard<std::recursive_mutex> lock(globals().devices[static_cast<size_t>(s.device)]->mu);
    drain(s);
    event->ms = s.last_done_ms;
  }
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaEventQuery(cudaEvent_t event) { return complete(event, true); }
cudaError_t cudaEventSynchronize(cudaEvent_t event) { return complete(event, false); }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (flags != 0) return fail(cudaErrorInvalidValue);
  if (current() == nullptr) return fail(cudaErrorNoDevice);
  Stream& s = stream_of(stream);
  std::lock_guard<std::recursive_mutex> lock(globals().devices[static_cast<size_t>(s.device)]->mu);
  if (event->recorded && event->captured) {
    if (s.capture != nullptr && event->stream == &s) return cudaSuccess;  // same chain: in order
    publish_report("ember emulator: cudaStreamWaitEvent on an event recorded inside a capture, by "
                   "another stream: a capture that spans several streams is not emulated");
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (async_mode()) {  // an operation of s that waits for the event's point
    if (const cudaError_t e = sticky_check(s.device); e != cudaSuccess) return e;
    if (s.capture == nullptr && event->recorded && event->point.stream)
      enqueue(s, "cudaStreamWaitEvent", __builtin_return_address(0), [] { return cudaSuccess; },
              {event->point});
    return cudaSuccess;
  }
  // Work runs when it is queued here, so whatever the event marks has run, except deferred
  // copies: run them. Inside a capture the wait orders nothing that is recorded.
  if (event->recorded && event->stream != nullptr && event->stream != &s) drain(*event->stream);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return fail(cudaErrorInvalidValue);
  if (start->captured || end->captured) return fail(cudaErrorCapturedEvent);
  if (!start->timing || !end->timing) return fail(cudaErrorInvalidResourceHandle);
  if (async_mode()) {
    for (cudaEvent_t e : {start, end}) {
      if (e->point.stream && e->ms < 0 && reached(e->point)) e->ms = *e->stamp;
    }
  }
  if (!start->recorded || !end->recorded || start->ms < 0 || end->ms < 0) return fail(cudaErrorNotReady);
  *ms = static_cast<float>(end->ms - start->ms);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return fail(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}

// ---- kernels -------------------------------------------------------------------------------------

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr || func == nullptr) return fail(cudaErrorInvalidValue);
  if (device_count_or_zero() == 0) return fail(cudaErrorNoDevice);
  std::memset(attr, 0, sizeof(*attr));
  attr->maxThreadsPerBlock = 1024;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = 48 * 1024;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (func == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > 227 * 1024)
    return fail(cudaErrorInvalidValue);
  raise_dynamic_shared_limit(value);
  return cudaSuccess;
}
