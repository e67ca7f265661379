// Randomized schedules (EMBER_EMULATOR_SCHEDULE=random:SEED) and globalrace, the checker of races
// on device memory (emulation build only; docs/emulator.md, "Randomized schedules"). The kernels
// are in tests/emulator/kernels_schedule.cu.
//
// The listener below restarts the schedule's launch count at the start of every test case, so a
// test case run alone gets the orders it got in the whole suite: a report's seed reproduces it.
#ifdef EMBER_CUDA_EMULATED

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener below
#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "kernels/emulator/emulator.h"
#include "tests/emulator/kernels.h"
#include "tests/emulator/kernels_schedule.h"
#include "tests/emulator/test_util.h"

namespace emu = ember::emu;

namespace {

using ember_test::Checks;
using ember_test::contains;
using ember_test::DeviceBuffer;

int count_of(const std::string& s, const std::string& part) {
  int n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

struct ScheduleScope {
  emu::Schedule saved;
  explicit ScheduleScope(emu::Schedule s) : saved(emu::schedule()) { emu::set_schedule(s); }
  ~ScheduleScope() { emu::set_schedule(saved); }
};
emu::Schedule random_schedule(uint64_t seed) { return emu::Schedule{true, seed}; }

constexpr unsigned kWithGlobalRace =
    emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck | emu::kGlobalRace;
constexpr unsigned kWithoutGlobalRace = kWithGlobalRace & ~emu::kGlobalRace;

// Every test case starts the schedule's launch count from 0. The planted-bug test cases
// ([planted]) check the exact report of the fixed order — which thread, which of the two
// accesses came first — so they start under the fixed schedule whatever EMBER_EMULATOR_SCHEDULE
// says (the planted bugs of this file choose their schedules themselves).
struct ScheduleListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  emu::Schedule saved;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    saved = emu::schedule();
    const auto& tags = info.lcaseTags;
    const bool planted = std::find(tags.begin(), tags.end(), "planted") != tags.end();
    emu::set_schedule(planted ? emu::Schedule{} : saved);
  }
  void testCaseEnded(const Catch::TestCaseStats&) override { emu::set_schedule(saved); }
};
CATCH_REGISTER_LISTENER(ScheduleListener)

// The arrival order of a 64-thread block (globalrace off: thread 0's read of slot 0 races).
std::vector<int> arrival_order() {
  Checks on(kWithoutGlobalRace);
  std::vector<int> ids(64);
  std::iota(ids.begin(), ids.end(), 0);
  DeviceBuffer<int> values(64), list(64), top(1), out(1);
  values.set(ids);
  REQUIRE(ember_test::launch_first_comer(values.p, list.p, top.p, out.p, 64) == cudaSuccess);
  return list.get();
}

}  // namespace

TEST_CASE("emulator schedule: EMBER_EMULATOR_SCHEDULE's words", "[emulator]") {
  CHECK_FALSE(emu::parse_schedule("fixed").random);
  CHECK_FALSE(emu::parse_schedule("").random);
  const emu::Schedule s = emu::parse_schedule(" random:42 ");
  CHECK(s.random);
  CHECK(s.seed == 42u);
  CHECK(emu::schedule_setting(s) == "EMBER_EMULATOR_SCHEDULE=random:42");
  CHECK(emu::schedule_setting(emu::Schedule{}) == "EMBER_EMULATOR_SCHEDULE=fixed");
  CHECK_THROWS_WITH(emu::parse_schedule("random"), Catch::Contains("'fixed' nor 'random:SEED'"));
  CHECK_THROWS_WITH(emu::parse_schedule("random:x1"), Catch::Contains("'random:x1'"));
  CHECK_THROWS_WITH(emu::parse_schedule("shuffled"), Catch::Contains("'shuffled'"));
  CHECK(emu::parse_checks("globalrace") == emu::kGlobalRace);
}

TEST_CASE("emulator schedule: a seed gives the same order again and the fixed order never moves",
          "[emulator]") {
  std::vector<int> identity(64);
  std::iota(identity.begin(), identity.end(), 0);
  std::vector<int> fixed, first, again, other;
  {
    ScheduleScope s(emu::Schedule{});
    fixed = arrival_order();
  }
  {
    ScheduleScope s(random_schedule(1));
    first = arrival_order();
  }
  {
    ScheduleScope s(random_schedule(1));  // restarts the launch count: the same draws
    again = arrival_order();
  }
  {
    ScheduleScope s(random_schedule(2));
    other = arrival_order();
  }
  CHECK(fixed == identity);  // thread 0, 1, 2, ... in turn
  CHECK(first != identity);
  CHECK(std::is_permutation(first.begin(), first.end(), identity.begin()));
  CHECK(again == first);
  CHECK(other != first);
}

// Every kernel of the emulator's own language tests gives the fixed order's answer under random
// orders: barriers, warp shuffles and votes, __syncthreads_count/_and/_or, atomics.
TEST_CASE("emulator schedule: barriers and warp collectives keep their meaning in any order",
          "[emulator]") {
  DeviceBuffer<int> shuffles(256), reduce(1), counts(3), partial(40), dyn(64);
  DeviceBuffer<unsigned> votes(192);
  DeviceBuffer<float> fsum(1);
  DeviceBuffer<int> isum(1);
  DeviceBuffer<unsigned long long> amax(1);
  struct Results {
    std::vector<int> shuffles, reduce, counts, partial, dyn, isum;
    std::vector<unsigned> votes;
    std::vector<float> fsum;
    std::vector<unsigned long long> amax;
    bool operator==(const Results& o) const {
      return shuffles == o.shuffles && reduce == o.reduce && counts == o.counts &&
             partial == o.partial && dyn == o.dyn && isum == o.isum && votes == o.votes &&
             fsum == o.fsum && amax == o.amax;
    }
  };
  const auto run = [&] {
    Results r;
    fsum.clear();
    isum.clear();
    amax.clear();
    REQUIRE(ember_test::launch_shuffles(shuffles.p, 16) == cudaSuccess);
    r.shuffles = shuffles.get();
    REQUIRE(ember_test::launch_votes(votes.p) == cudaSuccess);
    r.votes = votes.get();
    for (int threads : {1, 33, 256, 1000}) {
      REQUIRE(ember_test::launch_block_reduce(reduce.p, threads) == cudaSuccess);
      r.reduce.push_back(reduce.get()[0]);
    }
    REQUIRE(ember_test::launch_syncthreads_count(counts.p) == cudaSuccess);
    r.counts = counts.get();
    REQUIRE(ember_test::launch_partial_warp(partial.p, 40) == cudaSuccess);
    r.partial = partial.get();
    REQUIRE(ember_test::launch_dynamic_shared(dyn.p, 64) == cudaSuccess);
    r.dyn = dyn.get();
    REQUIRE(ember_test::launch_atomics(fsum.p, isum.p, amax.p, 40) == cudaSuccess);
    r.fsum = fsum.get();
    r.isum = isum.get();
    r.amax = amax.get();
    return r;
  };
  Checks on(kWithGlobalRace);
  Results fixed;
  {
    ScheduleScope s(emu::Schedule{});
    fixed = run();
  }
  CHECK(fixed.reduce == std::vector<int>{0, 528, 32640, 499500});
  CHECK(fixed.counts == std::vector<int>{86, 1, 1});
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    ScheduleScope s(random_schedule(seed));
    CHECK(run() == fixed);
  }
}

// Planted bug (a): order-dependent, invisible under the fixed schedule, found by some seeds.
TEST_CASE("emulator globalrace: 'thread 0 comes first' fails only under some schedules",
          "[emulator][planted]") {
  Checks on(kWithGlobalRace);
  DeviceBuffer<int> values(2), list(2), top(1), out(1);
  values.set({7, 9});
  const auto launch = [&] {
    list.clear();
    top.clear();
    out.clear();
    return ember_test::launch_first_comer(values.p, list.p, top.p, out.p, 2);
  };
  {
    ScheduleScope s(emu::Schedule{});
    REQUIRE(launch() == cudaSuccess);  // thread 0 always takes slot 0: right answer, no report
    CHECK(out.get()[0] == 70);
  }
  std::vector<uint64_t> failing, passing;
  std::string report;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    ScheduleScope s(random_schedule(seed));
    const int e = launch();
    if (e == cudaSuccess) {
      CHECK(out.get()[0] == 70);
      passing.push_back(seed);
    } else {
      CHECK(e == cudaErrorLaunchFailure);
      if (failing.empty()) report = emu::last_report();
      failing.push_back(seed);
    }
  }
  INFO(report);
  REQUIRE_FALSE(failing.empty());  // some seeds find it ...
  REQUIRE_FALSE(passing.empty());  // ... and others do not
  const std::string seed = std::to_string(failing[0]);
  CHECK(contains(report, "globalrace: "));
  CHECK(contains(report, "hazard on device memory at 0x"));
  CHECK(contains(report,
                 "in kernel first_comer_kernel (launched at tests/emulator/kernels_schedule.cu:"));
  CHECK(contains(report, "threads of one block are ordered only by a __syncthreads"));
  CHECK(contains(report, "schedule: EMBER_EMULATOR_SCHEDULE=random:" + seed + " (launch 0 "));
#ifdef EMBER_TESTS_HAVE_DEBUG_INFO
  CHECK(count_of(report, "tests/emulator/kernels_schedule.cu:") >= 3);  // both accesses, the launch
#endif
  {
    // The seed reproduces it: the same report again ...
    ScheduleScope s(random_schedule(failing[0]));
    CHECK(launch() == cudaErrorLaunchFailure);
    CHECK(emu::last_report() == report);
  }
  {
    // ... and without the checker the same order gives a wrong answer: thread 0 did not take
    // slot 0, so list[0] is thread 1's 9, or 0 if thread 1 had not written it yet.
    Checks off(kWithoutGlobalRace);
    ScheduleScope s(random_schedule(failing[0]));
    REQUIRE(launch() == cudaSuccess);
    CHECK(out.get()[0] != 70);
  }
}

// Planted bug (b): a race within a block, which globalrace sees under the fixed schedule too.
TEST_CASE("emulator globalrace: an in-place shift races within a block", "[emulator][planted]") {
  ScheduleScope fixed(emu::Schedule{});
  DeviceBuffer<float> x(64);
  std::vector<float> v(64);
  std::iota(v.begin(), v.end(), 0.0f);
  x.set(v);
  {
    // Without the checker the fixed order happens to give the intended shift.
    Checks off(kWithoutGlobalRace);
    REQUIRE(ember_test::plant_shift_in_place(x.p, 64) == cudaSuccess);
    CHECK(x.get()[0] == 1.0f);
    CHECK(x.get()[62] == 63.0f);
  }
  x.set(v);
  Checks on(kWithGlobalRace);
  CHECK(ember_test::plant_shift_in_place(x.p, 64) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  CHECK(contains(r, "globalrace: write-after-read hazard on device memory at 0x"));
  CHECK(contains(r, "thread (1,0,0) of block (0,0,0) writes the word that thread (0,0,0) of "
                    "block (0,0,0) read at "));
  CHECK(contains(
      r, "in kernel shift_in_place_kernel (launched at tests/emulator/kernels_schedule.cu:"));
  CHECK(contains(r, "block (0,0,0) of grid (1,1,1), thread (1,0,0)"));
  CHECK(contains(r, "byte 4 of a 256-byte block"));
  CHECK_FALSE(contains(r, "EMBER_EMULATOR_SCHEDULE"));  // the fixed schedule needs no seed
#ifdef EMBER_TESTS_HAVE_DEBUG_INFO
  CHECK(count_of(r, "tests/emulator/kernels_schedule.cu:") >= 3);
#endif
}

// Planted bug (c): a race between blocks, and (d) its atomic version, which is fine.
TEST_CASE("emulator globalrace: blocks adding to one total without atomics",
          "[emulator][planted]") {
  Checks on(kWithGlobalRace);
  DeviceBuffer<float> in(8 * 64), total(1);
  in.set(std::vector<float>(8 * 64, 1.0f));
  CHECK(ember_test::launch_block_sums(in.p, total.p, 8, false) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  CHECK(contains(r, "globalrace: "));
  CHECK(contains(r, "hazard on device memory at 0x"));
  CHECK(contains(r, "blocks of one launch run in no fixed order"));
  CHECK(
      contains(r, "in kernel block_sums_kernel (launched at tests/emulator/kernels_schedule.cu:"));
  CHECK(contains(r, "thread (0,0,0) of block ("));
  total.clear();
  REQUIRE(ember_test::launch_block_sums(in.p, total.p, 8, true) == cudaSuccess);
  CHECK(total.get()[0] == 512.0f);
}

// Many threads storing one value into one word (fill_ on an expanded view) change nothing by
// their order; storing different values does.
TEST_CASE(
    "emulator globalrace: stores of one value into one word are not a race - of two values are",
    "[emulator][planted]") {
  Checks on(kWithGlobalRace);
  DeviceBuffer<int> out(1);
  REQUIRE(ember_test::launch_same_word(out.p, true) == cudaSuccess);
  CHECK(out.get()[0] == 7);
  CHECK(ember_test::launch_same_word(out.p, false) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  CHECK(contains(r, "globalrace: write-after-write hazard on device memory at 0x"));
  CHECK(contains(r, "thread (1,0,0) of block (0,0,0) writes the word that thread (0,0,0) of block "
                    "(0,0,0) wrote at "));
  CHECK(contains(r, "the two store different values"));
  CHECK(contains(r, "in kernel same_word_kernel (launched at tests/emulator/kernels_schedule.cu:"));
}

// What ember's kernels do and globalrace must accept, under the fixed order and random ones.
TEST_CASE("emulator globalrace: atomics, barriers, __syncwarp and grid-stride loops are not races",
          "[emulator]") {
  Checks on(kWithGlobalRace);
  for (uint64_t seed = 0; seed <= 3; ++seed) {
    INFO("seed " << seed << " (0: the fixed schedule)");
    ScheduleScope s(seed == 0 ? emu::Schedule{} : random_schedule(seed));
    DeviceBuffer<int> hist(8);
    REQUIRE(ember_test::launch_atomic_histogram(hist.p, 16) == cudaSuccess);
    CHECK(hist.get() == std::vector<int>(8, 16 * 256 / 8));
    DeviceBuffer<int> counts(8), out(8);
    REQUIRE(ember_test::launch_count_then_read(counts.p, out.p, 8) == cudaSuccess);
    CHECK(out.get() == std::vector<int>(8, 128));
    DeviceBuffer<int> words(4), handed(4);
    REQUIRE(ember_test::launch_warp_handoff(words.p, handed.p, 4) == cudaSuccess);
    CHECK(handed.get() == std::vector<int>{100, 101, 102, 103});
    DeviceBuffer<float> x(1000);
    x.set(std::vector<float>(1000, 3.0f));
    REQUIRE(ember_test::launch_grid_stride_in_place(x.p, 1000, 3) == cudaSuccess);
    CHECK(x.get() == std::vector<float>(1000, 7.0f));
  }
}

#endif  // EMBER_CUDA_EMULATED
