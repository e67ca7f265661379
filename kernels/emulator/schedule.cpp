// ember/kernels/emulator/schedule.cpp — randomized schedules (EMBER_EMULATOR_SCHEDULE) and
// globalrace, the checker of races on device memory within one launch.
//
// Randomized schedules. Under the fixed schedule a block's threads always run in the same order
// (thread 0 until it reaches a barrier, then thread 1, ...), so a kernel whose result depends on
// the order either always fails or never does. Under random:SEED every block draws from its own
// generator, seeded by the seed, the launch's number and the block's index:
//
//   which ready thread runs next      (at the start, after a barrier or a warp collective)
//   whether a thread steps aside      at a shared- or global-memory access, with a probability
//                                     the block draws once: 1/2, 1/8 or 1/64
//   the order blocks are handed out   k -> (a k + c) mod blocks, a coprime to the block count
//
// The same seed gives the same orders again; only blocks that run at the same time on different
// CPU threads interleave by timing (EMBER_EMULATOR_THREADS=1 makes that reproducible too).
// Barriers and warp collectives keep their meaning under any order: scheduler.cpp only chooses
// among threads that are ready to run.
//
// globalrace. One record per 4-byte word of device memory (48 bytes, in an address range reserved
// beside the device arenas and touched only where kernels touch memory) keeps the last write
// and the last read of the word in the current launch: which block and thread, the block's
// barrier count and the lane's count of warp collectives at the time, whether the write was
// atomic, which bytes of the word, and the code address. Two accesses are ordered when they come
// from the same thread, or from one block with a __syncthreads between them, or from lanes of one
// warp with a __syncwarp (or another collective) between them whose mask names both. Blocks of
// one launch are never ordered (a __threadfence orders a thread's own accesses, not one block
// after another). A new access that meets an unordered record of another thread — one of the
// two writing, not both atomic — is a race. Records of an earlier launch count as empty: the
// launch boundary orders everything.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>

#include "kernels/emulator/internal.h"

namespace ember::emu {

namespace {

struct ScheduleState {
  std::mutex mu;
  bool loaded = false;  // EMBER_EMULATOR_SCHEDULE read (or set_schedule called)
  Schedule schedule;
  uint64_t launches = 0;  // since the schedule was set
};
ScheduleState& schedule_state() {
  static auto* s = new ScheduleState();  // never destroyed: kernels may run during exit
  return *s;
}

// Reads EMBER_EMULATOR_SCHEDULE on first use. The state's mutex is held.
void load_schedule(ScheduleState& st) {
  if (st.loaded) return;
  st.loaded = true;
  const char* e = std::getenv("EMBER_EMULATOR_SCHEDULE");
  if (e == nullptr || *e == '\0') return;
  try {
    st.schedule = parse_schedule(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "ember emulator: %s; using the fixed schedule\n", ex.what());
  }
}

// SplitMix64: a small, well-mixed generator; one state per block.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Schedule parse_schedule(const std::string& words) {
  std::string w = words;
  w.erase(0, w.find_first_not_of(" \t"));
  w.erase(w.find_last_not_of(" \t") + 1);
  if (w.empty() || w == "fixed") return Schedule{};
  const std::string prefix = "random:";
  if (w.compare(0, prefix.size(), prefix) == 0 && w.size() > prefix.size()) {
    const std::string digits = w.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() <= 19) {
      return Schedule{true, std::stoull(digits)};
    }
  }
  throw std::invalid_argument("EMBER_EMULATOR_SCHEDULE: '" + words +
                              "' is neither 'fixed' nor 'random:SEED' (SEED a whole number, as "
                              "in random:1)");
}

std::string schedule_setting(Schedule s) {
  return std::string("EMBER_EMULATOR_SCHEDULE=") +
         (s.random ? "random:" + std::to_string(s.seed) : std::string("fixed"));
}

Schedule schedule() {
  ScheduleState& st = schedule_state();
  std::lock_guard<std::mutex> lock(st.mu);
  load_schedule(st);
  return st.schedule;
}

void set_schedule(Schedule s) {
  ScheduleState& st = schedule_state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.loaded = true;
  st.schedule = s;
  st.launches = 0;
}

namespace detail {

// ---- globalrace's records --------------------------------------------------------------------------

namespace {

constexpr uint32_t kSeveralBlocks = 0xffffffffu;  // readers (or atomic writers) in several blocks
constexpr uint16_t kSeveralThreads = 0xffff;      // several threads of one block

// The last write and the last read of one 4-byte word in the launch `launch`.
struct GlobalCell {
  uint8_t lock;                      // a spin lock: blocks on other CPU threads use it too
  uint8_t write_bytes, read_bytes;   // which bytes of the word (bit i: byte i)
  uint8_t write_atomic;              // the write was an atomic (every one, when several)
  uint32_t launch;                   // the launch that made these records (0: none)
  uint32_t write_block, read_block;  // the block's index in the grid, or kSeveralBlocks
  uint16_t writer, reader;           // thread index in its block + 1 (0: none), kSeveralThreads
  uint16_t write_epoch, read_epoch;  // the block's __syncthreads count, modulo 2^16
  uint16_t write_warp_epoch, read_warp_epoch;  // the lane's clock (Warp::clock), modulo 2^16
  const void* write_pc;
  const void* read_pc;
};
static_assert(sizeof(GlobalCell) == 48, "one record of 48 bytes per word");

// The records of all devices' memory, reserved on first use. Chunks of 1 MiB of device memory
// whose records were touched are given back (madvise) between launches once there are more than
// kChunkBudget of them: an earlier launch's records are not needed.
constexpr int kChunkShift = 20 - 2;  // words per chunk: 2^18
constexpr size_t kChunkBudget = 64;  // 64 chunks: 768 MiB of records
struct Records {
  GlobalCell* cells = nullptr;
  size_t words = 0;
  std::atomic<uint8_t>* touched = nullptr;  // per chunk
  size_t chunks = 0;
  std::atomic<size_t> touched_count{0};
  bool failed = false;
};
Records& records() {
  static auto* r = new Records();
  return *r;
}

uint32_t g_race_launch = 0;  // the pool's launch lock guards it

// Called under the launch lock (no kernel runs): reserves the records, or gives back the touched
// chunks when there are too many.
bool prepare_records() {
  Records& r = records();
  if (r.failed) return false;
  if (r.cells == nullptr) {
    const Globals& gl = globals();
    r.words = gl.device_span / 4;
    if (r.words == 0) return false;
    void* p = mmap(nullptr, r.words * sizeof(GlobalCell), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr,
                   "ember emulator: globalrace: cannot reserve %zu bytes of address space for its "
                   "records (%s); globalrace is off\n",
                   r.words * sizeof(GlobalCell), std::strerror(errno));
      r.failed = true;
      return false;
    }
    r.cells = static_cast<GlobalCell*>(p);
    r.chunks = (r.words >> kChunkShift) + 1;
    r.touched = new std::atomic<uint8_t>[r.chunks];
    for (size_t i = 0; i < r.chunks; ++i) r.touched[i].store(0);
  } else if (r.touched_count.load() > kChunkBudget) {
    const size_t chunk_bytes = (size_t{1} << kChunkShift) * sizeof(GlobalCell);
    for (size_t i = 0; i < r.chunks; ++i) {
      if (r.touched[i].load() == 0) continue;
      const size_t words = std::min(size_t{1} << kChunkShift, r.words - (i << kChunkShift));
      madvise(r.cells + (i << kChunkShift), std::min(chunk_bytes, words * sizeof(GlobalCell)),
              MADV_DONTNEED);
      r.touched[i].store(0);
    }
    r.touched_count.store(0);
  }
  return true;
}

// "thread (1,0,0) of block (3,0,0)", "several threads of block (3,0,0)", "threads of several
// blocks", for a record of block `block` and thread `thread1` (index + 1).
std::string who(const Grid& g, uint32_t block, uint16_t thread1) {
  if (block == kSeveralBlocks) return "threads of several blocks";
  const dim3 gd = g.config.grid, bd = g.config.block;
  const uint3 bi{block % gd.x, (block / gd.x) % gd.y,
                 static_cast<unsigned>(block / (static_cast<uint64_t>(gd.x) * gd.y))};
  if (thread1 == kSeveralThreads) return "several threads of block " + dim_str(bi);
  const uint32_t i = thread1 - 1u;
  const uint3 ti{i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y)};
  return "thread " + dim_str(ti) + " of block " + dim_str(bi);
}

// The words of a globalrace report: the hazard, this access and the other one, both lines.
std::string race_text(const Thread* t, uintptr_t word, const char* hazard, const std::string& mine,
                      uint32_t other_block, uint16_t other_thread, const std::string& theirs,
                      const void* other_pc, uintptr_t a, size_t n, const void* pc,
                      const std::string& extra) {
  const BlockRun& b = *t->block;
  const bool same_block = other_block == static_cast<uint32_t>(b.linear);
  return "globalrace: " + std::string(hazard) + " hazard on device memory at " + hex(word) +
         ": thread " + dim_str(t->idx) + " of block " + dim_str(b.idx) + " " + mine +
         " the word that " + who(*b.grid, other_block, other_thread) + " " + theirs + " at " +
         describe_code(other_pc) + " in this launch, and nothing orders the two: " +
         (same_block
              ? "threads of one block are ordered only by a __syncthreads between them (lanes "
                "of one warp also by a __syncwarp or other warp collective whose mask names both)"
              : "blocks of one launch run in no fixed order, and neither a barrier nor "
                "__threadfence orders one block after another (give each block its own words, "
                "make both accesses atomic, or split the work into two launches)") +
         extra + " (" + describe_address(a, n) + ")\n  the access: " + describe_code(pc);
}

}  // namespace

void begin_launch(Grid& g) {
  {
    ScheduleState& st = schedule_state();
    std::lock_guard<std::mutex> lock(st.mu);
    load_schedule(st);
    g.random = st.schedule.random;
    g.seed = st.schedule.seed;
    g.schedule_launch = st.launches++;
  }
  if (g.random && g.nblocks > 1) {
    uint64_t z = mix(mix(g.seed) ^ (g.schedule_launch * 0x9e3779b97f4a7c15ull + 1));
    g.perm_c = z % g.nblocks;
    do {
      z = mix(z + 0x9e3779b97f4a7c15ull);
      g.perm_a = 1 + z % (g.nblocks - 1);
    } while (std::gcd(g.perm_a, g.nblocks) != 1);
  }
  if (g.checks & kGlobalRace) {
    if (prepare_records()) {
      if (++g_race_launch == 0) ++g_race_launch;  // 0 marks an empty record
      g.race_launch = g_race_launch;
    } else {
      g.checks &= ~kGlobalRace;
    }
  }
}

void seed_block(BlockRun& b, uint32_t* switch_threshold) {
  const Grid& g = *b.grid;
  b.random = g.random;
  *switch_threshold = 0;
  if (!g.random) return;
  b.rng = mix(mix(g.seed) ^ mix(g.schedule_launch + 0x51ed27) ^ (b.linear * 0xd1b54a32d192ed03ull));
  // How often this block's threads step aside at a memory access: often, now and then, rarely.
  static constexpr uint32_t kThresholds[3] = {1u << 31, 1u << 29, 1u << 26};
  *switch_threshold = kThresholds[next_draw(b) % 3];
}

uint64_t next_draw(BlockRun& b) {
  b.rng += 0x9e3779b97f4a7c15ull;
  return mix(b.rng);
}

std::string schedule_note(const Grid& g) {
  if (!g.random) return "";
  return "\n  schedule: " + schedule_setting(Schedule{true, g.seed}) + " (launch " +
         std::to_string(g.schedule_launch) +
         " since the schedule was set): run the same program or test case with it to get the "
         "same orders again (blocks that ran at the same time on other CPU threads reproduce "
         "only with EMBER_EMULATOR_THREADS=1)";
}

void global_access(Thread* t, uintptr_t a, size_t n, bool write, bool atomic, const void* pc) {
  if (n == 0) return;
  Records& r = records();
  const Globals& gl = *g_globals;
  BlockRun& b = *t->block;
  const Grid& g = *b.grid;
  const uint32_t launch = g.race_launch;
  const auto block = static_cast<uint32_t>(b.linear);
  const auto me1 = static_cast<uint16_t>(t->linear + 1);
  const auto epoch = static_cast<uint16_t>(b.epoch);
  const Warp& w = b.warps[t->warp];
  const auto wepoch = static_cast<uint16_t>(w.clock[t->lane]);
  // Is a recorded access (block, thread + 1, barrier count, lane clock) ordered before this one?
  const auto ordered = [&](uint32_t rb, uint16_t rt1, uint16_t re, uint16_t rwe) {
    if (rb != block) return false;  // blocks of one launch: never
    if (rt1 == me1) return true;    // the same thread: program order
    if (re != epoch) return true;   // a __syncthreads lies between them
    // Two lanes of one warp: a chain of warp collectives whose masks name them (__syncwarp).
    return rt1 != kSeveralThreads && (rt1 - 1u) / 32 == t->warp &&
           warp_ordered(w, (rt1 - 1u) % 32, rwe, t->lane);
  };
  const uintptr_t off = a - gl.device_lo;
  const size_t first = off >> 2, last = (off + n - 1) >> 2;
  for (size_t word = first; word <= last && word < r.words; ++word) {
    const size_t lo = std::max<size_t>(off, word << 2) - (word << 2);
    const size_t hi = std::min<size_t>(off + n, (word << 2) + 4) - (word << 2);
    const auto mask = static_cast<uint8_t>(((1u << hi) - 1) & ~((1u << lo) - 1));
    const size_t chunk = word >> kChunkShift;
    if (r.touched[chunk].load(std::memory_order_relaxed) == 0 &&
        r.touched[chunk].exchange(1) == 0) {
      r.touched_count.fetch_add(1);
    }
    GlobalCell& c = r.cells[word];
    while (__atomic_test_and_set(&c.lock, __ATOMIC_ACQUIRE)) {
    }
    if (c.launch != launch) {
      const uint8_t held = c.lock;
      std::memset(&c, 0, sizeof c);
      c.lock = held;
      c.launch = launch;
    }
    // The conflicting record, if any: 'w' the last write, 'r' the last read.
    char conflict = 0;
    const bool had_write = c.writer != 0 && (c.write_bytes & mask) != 0;
    const bool had_read = c.reader != 0 && (c.read_bytes & mask) != 0;
    if (had_write && !(atomic && c.write_atomic) &&
        !ordered(c.write_block, c.writer, c.write_epoch, c.write_warp_epoch)) {
      conflict = 'w';
    } else if ((write || atomic) && had_read &&
               !ordered(c.read_block, c.reader, c.read_epoch, c.read_warp_epoch)) {
      conflict = 'r';
    }
    if (conflict == 0 && (write || atomic)) {
      if (atomic && had_write && c.write_atomic && c.write_bytes == mask &&
          !ordered(c.write_block, c.writer, c.write_epoch, c.write_warp_epoch)) {
        // Another thread's atomic update, not ordered with this one: both are kept, as "several".
        if (c.write_block != block) c.write_block = kSeveralBlocks;
        c.writer = kSeveralThreads;
      } else {
        c.write_block = block;
        c.writer = me1;
        c.write_epoch = epoch;
        c.write_warp_epoch = wepoch;
        c.write_atomic = atomic ? 1 : 0;
        c.write_bytes = mask;
        c.write_pc = pc;
      }
      if ((c.read_bytes & ~mask) == 0) c.reader = 0;  // the reads it overwrote are ordered before
    } else if (conflict == 0) {
      if (c.reader == 0 || c.read_bytes != mask ||
          (c.read_block == block && c.read_epoch != epoch) ||
          (c.read_block == block && c.reader == me1)) {
        c.read_block = block;  // the first read, or the older reads are ordered before this one
        c.reader = me1;
        c.read_epoch = epoch;
        c.read_warp_epoch = wepoch;
        c.read_bytes = mask;
        c.read_pc = pc;
      } else {
        if (c.read_block != block) c.read_block = kSeveralBlocks;
        c.reader = kSeveralThreads;
      }
    }
    // Copy what the report needs before letting go of the record.
    const uint32_t other_block = conflict == 'w' ? c.write_block : c.read_block;
    const uint16_t other_thread = conflict == 'w' ? c.writer : c.reader;
    const void* other_pc = conflict == 'w' ? c.write_pc : c.read_pc;
    const bool other_atomic = conflict == 'w' && c.write_atomic;
    __atomic_clear(&c.lock, __ATOMIC_RELEASE);
    if (conflict == 0) continue;
    if (conflict == 'w' && write && !atomic && !other_atomic && word - first < 4) {
      // Two plain writes: a race in effect only if they store different bytes. This one is
      // judged when it has been made (settle_pending_write); the record is this write's.
      Thread::PendingWrite& p = t->pending_write;
      if (!t->has_pending_write) {  // the first word of this access that met another write
        p = Thread::PendingWrite{};
        p.lo = gl.device_lo + (first << 2);
        p.a = a;
        p.n = n;
        p.other_block = other_block;
        p.other_thread = other_thread;
        p.other_pc = other_pc;
        p.pc = pc;
        t->has_pending_write = true;
      }
      p.masks[word - first] = mask;
      std::memcpy(p.before + 4 * (word - first),
                  reinterpret_cast<const void*>(gl.device_lo + (word << 2)), 4);
      while (__atomic_test_and_set(&c.lock, __ATOMIC_ACQUIRE)) {
      }
      c.write_block = block;
      c.writer = me1;
      c.write_epoch = epoch;
      c.write_warp_epoch = wepoch;
      c.write_atomic = 0;
      c.write_bytes = mask;
      c.write_pc = pc;
      __atomic_clear(&c.lock, __ATOMIC_RELEASE);
      continue;
    }
    const char* hazard = conflict == 'r'     ? "write-after-read"
                         : (write || atomic) ? "write-after-write"
                                             : "read-after-write";
    const std::string mine = atomic ? "updates atomically" : write ? "writes" : "reads";
    const std::string theirs = conflict == 'r' ? "read"
                               : other_atomic  ? "updated atomically"
                                               : "wrote";
    fault(t, cudaErrorLaunchFailure,
          race_text(t, gl.device_lo + (word << 2), hazard, mine, other_block, other_thread, theirs,
                    other_pc, a, n, pc, ""));
  }
}

void settle_pending_write(Thread* t) {
  t->has_pending_write = false;
  const Thread::PendingWrite& p = t->pending_write;
  for (int i = 0; i < 16; ++i) {
    const uintptr_t at = p.lo + static_cast<uintptr_t>(i);
    if (!(p.masks[i / 4] & (1u << (i % 4))) ||
        *reinterpret_cast<const uint8_t*>(at) == p.before[i]) {
      continue;
    }
    fault(t, cudaErrorLaunchFailure,
          race_text(t, at & ~uintptr_t{3}, "write-after-write", "writes", p.other_block,
                    p.other_thread, "wrote", p.other_pc, p.a, p.n, p.pc,
                    "; the two store different values (the report comes once the second store "
                    "was made)"));
  }
}

}  // namespace detail
}  // namespace ember::emu
