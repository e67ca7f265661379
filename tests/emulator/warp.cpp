// Warps and barriers as Volta and later GPUs define them (emulation build only; docs/emulator.md,
// "Warps and barriers"): a barrier is its dynamic instance, __activemask() answers per branch,
// disjoint-mask collectives may wait at the same time, and __syncwarp(mask) orders the lanes it
// names. The kernels are in tests/emulator/kernels_warp.cu. Each legal pattern runs clean under
// memcheck, racecheck, synccheck, initcheck (and globalrace), under the fixed schedule and
// randomized ones; each planted bug ([planted]) is reported.
#ifdef EMBER_CUDA_EMULATED

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "kernels/emulator/emulator.h"
#include "tests/emulator/kernels_warp.h"
#include "tests/emulator/test_util.h"

namespace emu = ember::emu;

namespace {

using ember_test::Checks;
using ember_test::contains;
using ember_test::DeviceBuffer;

constexpr unsigned kLegal =
    emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck | emu::kGlobalRace;
constexpr unsigned kPlanted = emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck;

struct ScheduleScope {
  emu::Schedule saved;
  explicit ScheduleScope(emu::Schedule s) : saved(emu::schedule()) { emu::set_schedule(s); }
  ~ScheduleScope() { emu::set_schedule(saved); }
};

// The fixed schedule, then seeds 1 to 4.
std::vector<emu::Schedule> schedules() {
  std::vector<emu::Schedule> s{emu::Schedule{}};
  for (uint64_t seed = 1; seed <= 4; ++seed) s.push_back(emu::Schedule{true, seed});
  return s;
}

int count_of(const std::string& s, const std::string& part) {
  int n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

// The lanes [lo, hi) of a warp as a mask.
unsigned lanes(int lo, int hi) {
  unsigned m = 0;
  for (int l = lo; l < hi; ++l) m |= 1u << l;
  return m;
}

}  // namespace

// ---- barriers --------------------------------------------------------------------------------

TEST_CASE("emulator warps: a barrier in a loop and in a helper called from two places",
          "[emulator]") {
  Checks on(kLegal);
  DeviceBuffer<int> out(1);
  for (const emu::Schedule& s : schedules()) {
    INFO("schedule " << emu::schedule_setting(s));
    ScheduleScope scope(s);
    for (int threads : {1, 64, 200}) {
      for (int rounds : {0, 1, 3}) {
        INFO(threads << " threads, " << rounds << " rounds");
        REQUIRE(ember_test::launch_barrier_rounds(out.p, threads, rounds) == cudaSuccess);
        const int per_round = threads * (threads - 1) / 2;
        CHECK(out.get()[0] == rounds * per_round + threads * rounds * (rounds - 1) / 2 + threads);
      }
    }
  }
}

TEST_CASE("emulator synccheck: a helper's barrier reached through two calls",
          "[emulator][planted]") {
  Checks on(kPlanted);
  DeviceBuffer<int> out(64);
  CHECK(ember_test::plant_barrier_two_call_sites(out.p) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  CHECK(contains(r, "synccheck: threads of block (0,0,0) reach their 1st __syncthreads at "
                    "different places: thread (32,0,0) at tests/emulator/kernels_warp.cu:"));
  CHECK(contains(r, "threads (0,0,0), (1,0,0)"));
  // The same line of the helper, through two calls: both calls are named.
  CHECK(count_of(r, ", called from tests/emulator/kernels_warp.cu:") == 2);
  CHECK(contains(r, "put the barrier where the whole block reaches it"));
  CHECK(contains(r, "in kernel barrier_two_call_sites_kernel"));
  // Without synccheck the barrier opens (as bar.sync would on a GPU): nothing else is wrong.
  Checks off(kPlanted & ~emu::kSynccheck);
  CHECK(ember_test::plant_barrier_two_call_sites(out.p) == cudaSuccess);
}

TEST_CASE("emulator synccheck: one warp takes a pass more of a loop with barriers",
          "[emulator][planted]") {
  Checks on(kPlanted);
  DeviceBuffer<int> out(64);
  CHECK(ember_test::plant_barrier_extra_pass(out.p, 1) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  // Which warp arrives first depends on the order the barriers let them go on; both are named.
  CHECK(contains(r, "synccheck: threads of block (0,0,0) reach their 3rd __syncthreads at "
                    "different places: thread ("));
  CHECK(count_of(r, "tests/emulator/kernels_warp.cu:") >= 4);  // two places, each with its call
  CHECK(contains(r, "in kernel barrier_extra_pass_kernel"));
}

// ---- __activemask ----------------------------------------------------------------------------

TEST_CASE("emulator warps: __activemask() answers the lanes of the caller's branch", "[emulator]") {
  Checks on(kLegal);
  DeviceBuffer<unsigned> masks(128);
  // The same answers under every schedule: a lane waits for those that may still join it.
  for (const emu::Schedule& s : schedules()) {
    ScheduleScope scope(s);
    for (int threads : {64, 40}) {
      for (int split : {16, 5, 32}) {
        INFO(emu::schedule_setting(s) << ", " << threads << " threads, split at lane " << split);
        masks.clear();
        REQUIRE(ember_test::launch_activemask_branches(masks.p, threads, split) == cudaSuccess);
        const std::vector<unsigned> m = masks.get();
        for (int t = 0; t < threads; ++t) {
          INFO("thread " << t);
          const int lane = t % 32, n = std::min(32, threads - t / 32 * 32);
          const unsigned expected = lane < split ? lanes(0, std::min(split, n)) : lanes(split, n);
          CHECK(m[t] == expected);
          CHECK(m[64 + t] == lanes(0, n));  // after the __syncwarp: the warp together
        }
      }
    }
  }
}

TEST_CASE("emulator warps: __activemask() in a loop sees the lanes still looping", "[emulator]") {
  Checks on(kLegal);
  DeviceBuffer<unsigned> masks(128);
  const unsigned per_pass[4] = {0xffffffffu, 0xeeeeeeeeu, 0xccccccccu, 0x88888888u};
  for (const emu::Schedule& s : schedules()) {
    ScheduleScope scope(s);
    masks.clear();
    REQUIRE(ember_test::launch_activemask_loop(masks.p) == cudaSuccess);
    const std::vector<unsigned> m = masks.get();
    for (int pass = 0; pass < 4; ++pass) {
      for (int lane = 0; lane < 32; ++lane) {
        INFO(emu::schedule_setting(s) << ", pass " << pass << ", lane " << lane);
        CHECK(m[pass * 32 + lane] == (lane % 4 >= pass ? per_pass[pass] : 0u));
      }
    }
  }
}

TEST_CASE("emulator warps: a warp-aggregated append over __activemask()", "[emulator]") {
  Checks on(kLegal);
  const int n = 200;
  std::vector<int> keep(n);
  for (int t = 0; t < n; ++t) keep[t] = (t % 3 == 0 || t % 7 == 2) ? 1 : 0;
  const int kept = static_cast<int>(std::count(keep.begin(), keep.end(), 1));
  std::vector<int> expected;
  for (int t = 0; t < n; ++t)
    if (keep[t]) expected.push_back(t);
  DeviceBuffer<int> keep_d(keep), slots(n), count(1);
  for (const emu::Schedule& s : schedules()) {
    INFO("schedule " << emu::schedule_setting(s));
    ScheduleScope scope(s);
    count.clear();
    REQUIRE(ember_test::launch_aggregated_append(keep_d.p, slots.p, count.p, n) == cudaSuccess);
    REQUIRE(count.get()[0] == kept);
    std::vector<int> got = slots.get();
    got.resize(static_cast<size_t>(kept));
    std::sort(got.begin(), got.end());
    CHECK(got == expected);
  }
}

TEST_CASE("emulator synccheck: a warp sum over __activemask() that reads the other branch",
          "[emulator][planted]") {
  Checks on(kPlanted);
  std::vector<int> in(32, 0);
  for (int l = 0; l < 16; ++l) in[l] = l + 1;
  DeviceBuffer<int> in_d(in), out(32);
  CHECK(ember_test::plant_activemask_sum(in_d.p, out.p) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  CHECK(contains(r, "synccheck: __shfl_xor_sync at tests/emulator/kernels_warp.cu:"));
  CHECK(contains(r, "lane 0 reads lane 16, which is not in the mask 0xffff"));
  CHECK(contains(r, "__activemask()"));
  CHECK(contains(r, "in kernel activemask_sum_kernel"));
}

// ---- several pending collectives -------------------------------------------------------------

TEST_CASE("emulator warps: disjoint-mask collectives in divergent branches", "[emulator]") {
  Checks on(kLegal);
  std::vector<int> in(32);
  for (int l = 0; l < 32; ++l) in[l] = 7 * l + (l == 20 ? 200 : 0);
  std::vector<int> expected(64);
  int low_sum = 0;
  unsigned odd = 0;
  for (int l = 0; l < 16; ++l) {
    low_sum += in[l];
    if (in[l] & 1) odd |= 1u << l;
  }
  for (int l = 0; l < 16; ++l) {
    expected[l] = in[3];
    expected[32 + l] = low_sum + static_cast<int>(odd);
  }
  for (int l = 16; l < 32; ++l) {
    expected[l] = l < 31 ? in[l + 1] : in[l];
    expected[32 + l] = 1;  // lane 20 holds a value above 100
  }
  DeviceBuffer<int> in_d(in), out(64);
  for (const emu::Schedule& s : schedules()) {
    INFO("schedule " << emu::schedule_setting(s));
    ScheduleScope scope(s);
    out.clear();
    REQUIRE(ember_test::launch_disjoint_collectives(in_d.p, out.p) == cudaSuccess);
    CHECK(out.get() == expected);
  }
}

TEST_CASE("emulator synccheck: two collectives whose masks overlap but differ",
          "[emulator][planted]") {
  Checks on(kPlanted);
  DeviceBuffer<int> out(32);
  SECTION("lane 16 takes part in its own half's shuffle, then returns") {
    CHECK(ember_test::plant_overlapping_masks(out.p, 0) == cudaErrorLaunchFailure);
    const std::string r = emu::last_report();
    INFO(r);
    CHECK(contains(r, "synccheck: thread (16,0,0) (lane 16) returned while lanes of its warp "
                      "wait for it at the warp operation at tests/emulator/kernels_warp.cu:"));
    CHECK(contains(r, "(mask 0x1ffff): every lane a mask names must take part; it took part in "
                      "__shfl_xor_sync at tests/emulator/kernels_warp.cu:"));
    CHECK(contains(r, "with the mask 0xffff0000 instead, which overlaps that mask but differs"));
    CHECK(contains(r, "give the two groups disjoint masks"));
  }
  SECTION("each shuffle waits for a lane of the other") {
    CHECK(ember_test::plant_overlapping_masks(out.p, 1) == cudaErrorLaunchFailure);
    const std::string r = emu::last_report();
    INFO(r);
    CHECK(contains(r, "synccheck: lanes of warp 0 wait for each other at two warp operations "
                      "whose masks overlap but differ: lane 16 at __shfl_xor_sync at "
                      "tests/emulator/kernels_warp.cu:"));
    CHECK(contains(r, "(mask 0xffff8000) needs lanes 0x8000, which wait at __shfl_xor_sync at "));
    CHECK(contains(r, "(mask 0x1ffff), which needs lane 16: neither can complete"));
    CHECK(contains(r, "give the two groups disjoint masks"));
  }
}

// ---- __syncwarp(mask) orders its lanes -------------------------------------------------------

TEST_CASE("emulator racecheck: __syncwarp(0x0000ffff) orders an exchange within a half-warp",
          "[emulator]") {
  Checks on(kLegal);
  DeviceBuffer<int> words(32), out(32);
  for (const emu::Schedule& s : schedules()) {
    INFO("schedule " << emu::schedule_setting(s));
    ScheduleScope scope(s);
    REQUIRE(ember_test::launch_half_warp_exchange(words.p, out.p, 0) == cudaSuccess);
    const std::vector<int> got = out.get();
    for (int lane = 0; lane < 32; ++lane) {
      const int next = (lane & 16) | ((lane + 1) & 15);
      CHECK(got[lane] == 3300 + 4 * next);
    }
    REQUIRE(ember_test::launch_syncwarp_chain(out.p) == cudaSuccess);
    CHECK(out.get()[0] == 42);
  }
}

TEST_CASE("emulator racecheck: an exchange within a half-warp without its __syncwarp",
          "[emulator][planted]") {
  Checks on(kPlanted);
  DeviceBuffer<int> words(32), out(32);
  SECTION("no __syncwarp") {
    CHECK(ember_test::launch_half_warp_exchange(words.p, out.p, 1) == cudaErrorLaunchFailure);
    const std::string r = emu::last_report();
    INFO(r);
    CHECK(contains(r, "racecheck: write-after-read hazard on shared memory at 0x"));
    CHECK(contains(r, "thread (1,0,0) overwrites a word that thread (0,0,0) read"));
    CHECK(contains(r, "no __syncwarp or other warp collective whose mask names both lanes"));
    CHECK(contains(r, "the access: tests/emulator/kernels_warp.cu:"));
  }
  SECTION("a __syncwarp whose mask leaves lane 15 out") {
    CHECK(ember_test::launch_half_warp_exchange(words.p, out.p, 2) == cudaErrorLaunchFailure);
    const std::string r = emu::last_report();
    INFO(r);
    CHECK(contains(r, "racecheck: write-after-read hazard on shared memory at 0x"));
    CHECK(contains(r, "thread (15,0,0) overwrites a word that thread (14,0,0) read"));
    CHECK(contains(r, "no __syncwarp or other warp collective whose mask names both lanes"));
  }
}

#endif  // EMBER_CUDA_EMULATED
