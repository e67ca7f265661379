// The CUDA emulator itself (emulation build only, -DEMBER_CUDA=EMULATE): that it runs kernels
// as CUDA defines them, and that each checker reports its planted bug with the kernel's name,
// the block, the thread and the address. The kernels are in tests/emulator/kernels.cu.
//
// In any other build this file holds no tests: on a GPU, compute-sanitizer is the checker.
#ifdef EMBER_CUDA_EMULATED

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include "core/ember.h"
#include "kernels/emulator/emulator.h"
#include "tests/emulator/kernels.h"
#include "tests/emulator/test_util.h"

using namespace ember;

namespace {

using ember_test::Checks;
using ember_test::contains;
using ember_test::DeviceBuffer;

// After a planted bug the device must still work: launch errors are not sticky in the emulator.
void device_still_works() {
  DeviceBuffer<float> b(1000);
  REQUIRE(ember_test::launch_fill(b.p, 1000, 2.5f) == cudaSuccess);
  for (float v : b.get()) REQUIRE(v == 2.5f);
}

// What every report must name: the checker, the kernel, block, thread and an address, and (in a
// build with debug information) the source line of the access in tests/emulator/kernels.cu.
void check_report(const std::string& r, const std::string& checker, const std::string& kernel,
                  const std::string& block, const std::string& thread) {
  INFO(r);
  CHECK(contains(r, checker));
  CHECK(contains(r, "in kernel " + kernel));
  CHECK(contains(r, "launched at tests/emulator/kernels.cu:"));
  CHECK(contains(r, "block " + block));
  CHECK(contains(r, "thread " + thread));
  if (checker != "synccheck") {  // a memory checker: the address, and the access's source line
    CHECK(contains(r, " at 0x"));
#ifdef EMBER_TESTS_HAVE_DEBUG_INFO
    CHECK(contains(r, "the access: tests/emulator/kernels.cu:"));
#endif
  }
}

}  // namespace

// ==== the language ================================================================================

TEST_CASE("emulator: warp shuffles exchange values as CUDA defines them", "[emulator]") {
  for (int width : {32, 8, 4}) {
    INFO("width " << width);
    DeviceBuffer<int> out(4 * 64);
    REQUIRE(ember_test::launch_shuffles(out.p, width) == cudaSuccess);
    const std::vector<int> v = out.get();
    for (int t = 0; t < 64; ++t) {
      const int lane = t % 32, warp = t / 32, base = lane - lane % width;
      const auto value = [&](int l) { return l + 100 * warp; };
      CHECK(v[t] == value(base + 5 % width));                                   // __shfl_sync
      CHECK(v[64 + t] == value(lane % width >= 3 ? lane - 3 : lane));           // __shfl_up_sync
      CHECK(v[128 + t] == value(lane % width + 3 < width ? lane + 3 : lane));   // __shfl_down_sync
      const int x = lane ^ 6;                                                   // __shfl_xor_sync
      CHECK(v[192 + t] == value(x >= base + width ? lane : x));
    }
  }
}

TEST_CASE("emulator: ballot, any and all", "[emulator]") {
  DeviceBuffer<unsigned> out(3 * 64);
  REQUIRE(ember_test::launch_votes(out.p) == cudaSuccess);
  const std::vector<unsigned> v = out.get();
  unsigned ballot0 = 0;
  for (int l = 0; l < 32; l += 3) ballot0 |= 1u << l;
  for (int t = 0; t < 64; ++t) {
    INFO("thread " << t);
    CHECK(v[t] == (t < 32 ? ballot0 : 0xffffffffu));
    CHECK(v[64 + t] == 1u);
    CHECK(v[128 + t] == (t < 32 ? 0u : 1u));
  }
}

TEST_CASE("emulator: __syncthreads is a barrier for every block size", "[emulator]") {
  for (int threads : {1, 7, 32, 33, 256, 1000, 1024}) {
    INFO(threads << " threads");
    DeviceBuffer<int> out(1);
    REQUIRE(ember_test::launch_block_reduce(out.p, threads) == cudaSuccess);
    CHECK(out.get()[0] == threads * (threads - 1) / 2);
  }
  DeviceBuffer<int> out(3);
  REQUIRE(ember_test::launch_syncthreads_count(out.p) == cudaSuccess);
  CHECK(out.get() == std::vector<int>{86, 1, 1});  // 0, 3, ..., 255: 86 multiples of 3
}

TEST_CASE("emulator: atomics from many blocks on several CPU threads", "[emulator]") {
  DeviceBuffer<float> fsum(1);
  DeviceBuffer<int> isum(1);
  DeviceBuffer<unsigned long long> max(1);
  const int blocks = 64;
  REQUIRE(ember_test::launch_atomics(fsum.p, isum.p, max.p, blocks) == cudaSuccess);
  CHECK(fsum.get()[0] == static_cast<float>(blocks * 256));  // exact below 2^24
  CHECK(isum.get()[0] == blocks * 256);
  CHECK(max.get()[0] == static_cast<unsigned long long>(blocks * 256 - 1));
}

TEST_CASE("emulator: access counting sees each load and store of a kernel once", "[emulator]") {
  REQUIRE(emu::instrumented());  // counting needs the access instrumentation (the default)
  const int blocks = 3, threads = blocks * 64;
  DeviceBuffer<float> a(threads), b(threads), out(threads), v4(4 * threads), out4(4 * threads);
  DeviceBuffer<int> counter(1);
  // Counting off: nothing is counted.
  emu::set_access_counting(false);
  REQUIRE(ember_test::launch_traffic(a.p, b.p, v4.p, out.p, out4.p, counter.p, blocks) ==
          cudaSuccess);
  CHECK(emu::access_counts().launches == 0);
  CHECK(emu::access_counts().global_reads.accesses == 0);

  emu::set_access_counting(true);
  REQUIRE(ember_test::launch_traffic(a.p, b.p, v4.p, out.p, out4.p, counter.p, blocks) ==
          cudaSuccess);
  const emu::AccessCounts c = emu::access_counts();
  emu::set_access_counting(false);
  CHECK(counter.get()[0] == 2 * threads);
  CHECK(c.launches == 1);
  CHECK(c.threads == threads);
  // Per thread, as tests/emulator/kernels.cu's traffic_kernel spells out.
  CHECK(c.global_reads.accesses == 4 * threads);
  CHECK(c.global_reads.bytes == 28 * threads);
  CHECK(c.global_reads.max_per_thread == 4);
  CHECK(c.global_writes.accesses == 3 * threads);
  CHECK(c.global_writes.bytes == 24 * threads);
  CHECK(c.global_writes.max_per_thread == 3);
  CHECK(c.shared_writes.accesses == 2 * threads);
  CHECK(c.shared_writes.bytes == 8 * threads);
  CHECK(c.shared_reads.accesses == 3 * threads);
  CHECK(c.shared_reads.bytes == 12 * threads);
  CHECK(c.shared_reads.max_per_thread == 3);

  // Counting works with every checker off too, and reset starts from zero.
  {
    Checks none(0);
    emu::set_access_counting(true);
    REQUIRE(ember_test::launch_traffic(a.p, b.p, v4.p, out.p, out4.p, counter.p, 1) == cudaSuccess);
    CHECK(emu::access_counts().global_writes.accesses == 3 * 64);
    emu::reset_access_counts();
    CHECK(emu::access_counts().launches == 0);
    CHECK(emu::access_counts().threads == 0);
    emu::set_access_counting(false);
  }
}

TEST_CASE("emulator: atomics on dynamic shared memory and __device__ variables", "[emulator]") {
  // A GPU's atomics reach both; memcheck once took them for host memory.
  Checks all(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck);
  DeviceBuffer<int> out(2);
  REQUIRE(ember_test::launch_atomic_places(out.p, 96) == cudaSuccess);
  const std::vector<int> v = out.get();
  CHECK(v[0] == 96);
  CHECK(v[1] == 96);
}

TEST_CASE("emulator: the partial last warp of a block", "[emulator]") {
  DeviceBuffer<int> out(40);
  REQUIRE(ember_test::launch_partial_warp(out.p, 40) == cudaSuccess);
  const std::vector<int> v = out.get();
  for (int t = 0; t < 40; ++t) {
    INFO("thread " << t);
    const int lane = t % 32;
    CHECK(v[t] == (lane % 8 + 1 < 8 ? t + 1 : t));  // the last lane of each 8 keeps its own
  }
}

TEST_CASE("emulator: dynamic shared memory", "[emulator]") {
  DeviceBuffer<int> out(100);
  REQUIRE(ember_test::launch_dynamic_shared(out.p, 100) == cudaSuccess);
  const std::vector<int> v = out.get();
  for (int t = 0; t < 100; ++t) CHECK(v[t] == 99 - t);
}

TEST_CASE("emulator: the launch errors a GPU gives", "[emulator]") {
  using ember_test::launch_with_config;
  CHECK(launch_with_config(1, 1, 1, 1024, 1, 1, 0) == cudaSuccess);
  CHECK(launch_with_config(1, 1, 1, 1025, 1, 1, 0) == cudaErrorInvalidConfiguration);
  CHECK(contains(emu::last_report(), "block (1025,1,1): at most 1024"));
  CHECK(launch_with_config(1, 1, 1, 32, 32, 2, 0) == cudaErrorInvalidConfiguration);
  CHECK(launch_with_config(1, 1, 1, 1, 1, 65, 0) == cudaErrorInvalidConfiguration);
  CHECK(launch_with_config(1, 65536, 1, 32, 1, 1, 0) == cudaErrorInvalidConfiguration);
  CHECK(launch_with_config(1, 1, 65536, 32, 1, 1, 0) == cudaErrorInvalidConfiguration);
  CHECK(launch_with_config(0, 1, 1, 32, 1, 1, 0) == cudaErrorInvalidConfiguration);
  CHECK(contains(emu::last_report(), "is empty"));
  CHECK(launch_with_config(1, 1, 1, 32, 1, 1, 48 * 1024 + 1) == cudaErrorInvalidValue);
  CHECK(contains(emu::last_report(), "dynamic shared memory"));
  CHECK(cudaGetLastError() == cudaSuccess);  // a launch error is not sticky
  device_still_works();
}

TEST_CASE("emulator: the rounding intrinsics are single IEEE operations", "[emulator]") {
  const float fa = 1.0f + std::ldexp(1.0f, -23), fb = 1.0f - std::ldexp(1.0f, -24), fc = -1.0f;
  const double da = 1.0 + std::ldexp(1.0, -52), db = 1.0 - std::ldexp(1.0, -53), dc = -1.0;
  DeviceBuffer<float> f(6);
  DeviceBuffer<double> d(6);
  DeviceBuffer<unsigned> u(3);
  f.set({0, fa, fb, 0, fc, 0});
  d.set({0, da, db, 0, dc, 0});
  u.set({0, 0xdeadbeefu, 0x12345678u});
  REQUIRE(ember_test::launch_rounding(f.p, d.p, u.p) == cudaSuccess);
  const std::vector<float> fv = f.get();
  const std::vector<double> dv = d.get();
  volatile float fprod = fa * fb;  // rounded on its own
  CHECK(fv[0] == fprod);
  CHECK(fv[3] == std::fma(fa, fb, fc));  // one rounding: not fprod + fc
  CHECK(fv[3] != fprod + fc);
  CHECK(fv[5] == std::sqrt(fa));
  volatile double dprod = da * db;
  CHECK(dv[0] == dprod);
  CHECK(dv[3] == std::fma(da, db, dc));
  CHECK(dv[3] != dprod + dc);
  CHECK(dv[5] == da / db);
  CHECK(u.get()[0] == static_cast<unsigned>((uint64_t{0xdeadbeefu} * 0x12345678u) >> 32));
}

TEST_CASE("emulator: a non-blocking copy into pinned memory lands at the next synchronization",
          "[emulator]") {
  DeviceBuffer<float> dev(256);
  REQUIRE(ember_test::launch_fill(dev.p, 256, 7.0f) == cudaSuccess);
  float* pinned = nullptr;
  REQUIRE(cudaHostAlloc(reinterpret_cast<void**>(&pinned), 256 * sizeof(float), 0) == cudaSuccess);
  for (int i = 0; i < 256; ++i) pinned[i] = 0.0f;
  REQUIRE(cudaMemcpyAsync(pinned, dev.p, 256 * sizeof(float), cudaMemcpyDeviceToHost, nullptr) ==
          cudaSuccess);
  // Not there yet: reading the destination before synchronizing is the bug this shows.
  CHECK(pinned[0] == 0.0f);
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  CHECK(pinned[0] == 7.0f);
  CHECK(pinned[255] == 7.0f);
  REQUIRE(cudaFreeHost(pinned) == cudaSuccess);
}

TEST_CASE("emulator: __device__ variables and the symbol copies", "[emulator]") {
  int v[4] = {1, 2, 3, 4};
  REQUIRE(ember_test::symbol_roundtrip(v) == cudaSuccess);
  CHECK(v[0] == 10);
  CHECK(v[1] == 21);
  CHECK(v[2] == 32);
  CHECK(v[3] == 43);
}

TEST_CASE("emulator: events complete in stream order and time the work between them",
          "[emulator]") {
  cudaEvent_t start = nullptr, stop = nullptr, untimed = nullptr;
  REQUIRE(cudaEventCreate(&start) == cudaSuccess);
  REQUIRE(cudaEventCreate(&stop) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
  DeviceBuffer<float> b(1 << 20);
  REQUIRE(cudaEventRecord(start, nullptr) == cudaSuccess);
  REQUIRE(ember_test::launch_fill(b.p, 1 << 20, 1.0f) == cudaSuccess);
  REQUIRE(cudaEventRecord(stop, nullptr) == cudaSuccess);
  REQUIRE(cudaEventRecord(untimed, nullptr) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(stop) == cudaSuccess);
  CHECK(cudaEventQuery(stop) == cudaSuccess);
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop) == cudaSuccess);
  CHECK(ms >= 0.0f);
  CHECK(cudaEventElapsedTime(&ms, start, untimed) == cudaErrorInvalidResourceHandle);
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  for (cudaEvent_t e : {start, stop, untimed}) REQUIRE(cudaEventDestroy(e) == cudaSuccess);
}

TEST_CASE("emulator: device memory runs out at its emulated size", "[emulator]") {
  size_t free_b = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total) == cudaSuccess);
  CHECK(total == cuda::get_device_properties(0).total_memory);
  CHECK(free_b <= total);
  void* p = nullptr;
  CHECK(cudaMalloc(&p, total + 1) == cudaErrorMemoryAllocation);
  CHECK(p == nullptr);
  CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("emulator: CUDA_VISIBLE_DEVICES is read as the driver reads it", "[emulator]") {
  using V = std::vector<int>;
  CHECK(emu::parse_visible_devices("1,0", 2) == V{1, 0});
  CHECK(emu::parse_visible_devices(" 1 , 0 ", 2) == V{1, 0});
  CHECK(emu::parse_visible_devices("0,5,1", 2) == V{0});   // 5 does not exist: the list ends
  CHECK(emu::parse_visible_devices("1,1,0", 2) == V{1});   // a repeat ends it too
  CHECK(emu::parse_visible_devices("-1", 2).empty());
  CHECK(emu::parse_visible_devices("", 2).empty());
  CHECK(emu::parse_visible_devices("gpu0", 2).empty());
  CHECK(emu::parse_visible_devices("2", 4) == V{2});
}

TEST_CASE("emulator: several devices, and peer access between them", "[emulator]") {
  if (cuda::device_count() < 2) {
    std::cout << "SKIPPED: needs 2 emulated devices (EMBER_EMULATED_DEVICES=2)\n";
    return;
  }
  // Each device reports itself; the PCI bus number is the physical index.
  CHECK(cuda::get_device_properties(1).pci_bus_id != cuda::get_device_properties(0).pci_bus_id);
  // Memory of cuda:1, read by a kernel on cuda:0: an illegal address without peer access.
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  float* on1 = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&on1), 64) == cudaSuccess);
  REQUIRE(cudaMemset(on1, 0, 64) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  DeviceBuffer<float> out(1);
  CHECK(ember_test::plant_read(on1, out.p) == cudaErrorIllegalAddress);
  check_report(emu::last_report(), "memcheck", "read_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(emu::last_report(), "cuda:1's memory, and the kernel runs on cuda:0"));
  int can = 0;
  REQUIRE(cudaDeviceCanAccessPeer(&can, 0, 1) == cudaSuccess);
  CHECK(can == 1);
  REQUIRE(cudaDeviceEnablePeerAccess(1, 0) == cudaSuccess);
  CHECK(ember_test::plant_read(on1, out.p) == cudaSuccess);
  REQUIRE(cudaDeviceDisablePeerAccess(1) == cudaSuccess);
  // A peer copy works either way.
  DeviceBuffer<float> copy(16);
  CHECK(cudaMemcpyPeer(copy.p, 0, on1, 1, 64) == cudaSuccess);
  REQUIRE(cudaFree(on1) == cudaSuccess);
}

// ==== planted bugs: every checker catches its bug, and says where ===================================

TEST_CASE("emulator memcheck: a write past the end of a cudaMalloc block", "[emulator][planted]") {
  DeviceBuffer<float> out(100);
  CHECK(ember_test::plant_out_of_bounds(out.p, 100) == cudaErrorIllegalAddress);
  const std::string r = emu::last_report();
  check_report(r, "memcheck", "out_of_bounds_kernel", "(0,0,0)", "(100,0,0)");
  CHECK(contains(r, "invalid write of 4 bytes"));
  CHECK(contains(r, "0 bytes past the end of a 400-byte block"));
  device_still_works();
}

TEST_CASE("emulator memcheck: a read after cudaFree", "[emulator][planted]") {
  float* p = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), 4096) == cudaSuccess);
  REQUIRE(cudaFree(p) == cudaSuccess);
  DeviceBuffer<float> out(1);
  CHECK(ember_test::plant_read(p, out.p) == cudaErrorIllegalAddress);
  const std::string r = emu::last_report();
  check_report(r, "memcheck", "read_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(r, "freed with cudaFree"));
  device_still_works();
}

TEST_CASE("emulator memcheck: a stale pointer into a block ember's allocator cached",
          "[emulator][planted]") {
  const float* stale = nullptr;
  {
    const Tensor t = zeros({100}, TensorOptions(kFloat32).device("cuda"));
    stale = static_cast<const float*>(t.raw_data());
  }  // the tensor dies; its block goes back to the cache, still cudaMalloc'd
  DeviceBuffer<float> out(1);
  CHECK(ember_test::plant_read(stale, out.p) == cudaErrorIllegalAddress);
  const std::string r = emu::last_report();
  check_report(r, "memcheck", "read_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(r, "caching allocator holds for reuse: no live tensor owns it"));
  device_still_works();
}

TEST_CASE("emulator memcheck: a read past a tensor's end, inside its cached block",
          "[emulator][planted]") {
  const Tensor t = zeros({100}, TensorOptions(kFloat32).device("cuda"));  // a 512-byte block
  DeviceBuffer<float> out(1);
  CHECK(ember_test::plant_read_at(static_cast<const float*>(t.raw_data()), 100, out.p) ==
        cudaErrorIllegalAddress);
  const std::string r = emu::last_report();
  check_report(r, "memcheck", "read_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(r, "0 bytes past the end of a live tensor's 400 bytes"));
  device_still_works();
}

TEST_CASE("emulator memcheck: a host pointer handed to a kernel", "[emulator][planted]") {
  std::vector<float> host(16, 1.0f);
  DeviceBuffer<float> out(1);
  CHECK(ember_test::plant_read(host.data(), out.p) == cudaErrorIllegalAddress);
  const std::string r = emu::last_report();
  check_report(r, "memcheck", "read_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(r, "host memory, which a kernel cannot reach"));
  device_still_works();
}

TEST_CASE("emulator memcheck: a misaligned 16-byte load", "[emulator][planted]") {
  DeviceBuffer<float> in(16), out(4);
  CHECK(ember_test::plant_misaligned(in.p, out.p) == cudaErrorMisalignedAddress);
  const std::string r = emu::last_report();
  check_report(r, "memcheck", "misaligned_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(r, "misaligned read of 16 bytes"));
  device_still_works();
}

TEST_CASE("emulator racecheck: shared memory read before the barrier", "[emulator][planted]") {
  Checks on(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck);
  DeviceBuffer<int> out(256);
  CHECK(ember_test::plant_shared_race(out.p) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  check_report(r, "racecheck", "shared_race_kernel", "(0,0,0)", "(1,0,0)");
  CHECK(contains(r, "read-after-write hazard on shared memory"));
  CHECK(contains(r, "that thread (0,0,0) wrote"));
  device_still_works();
}

TEST_CASE("emulator: dynamic shared memory is race-, init- and bounds-checked",
          "[emulator][planted]") {
  Checks on(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck);
  DeviceBuffer<int> out(64);
  // The correct kernel passes every checker and reverses 0..63.
  REQUIRE(ember_test::launch_dynamic_shared_bug(out.p, 0) == cudaSuccess);
  const std::vector<int> v = out.get();
  for (int t = 0; t < 64; ++t) CHECK(v[t] == 63 - t);

  CHECK(ember_test::launch_dynamic_shared_bug(out.p, 1) == cudaErrorLaunchFailure);
  std::string r = emu::last_report();
  check_report(r, "racecheck", "dynamic_shared_bug_kernel", "(0,0,0)", "(1,0,0)");
  CHECK(contains(r, "read-after-write hazard on shared memory"));

  CHECK(ember_test::launch_dynamic_shared_bug(out.p, 2) == cudaErrorLaunchFailure);
  r = emu::last_report();
  check_report(r, "initcheck", "dynamic_shared_bug_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(r, "of shared memory"));

  CHECK(ember_test::launch_dynamic_shared_bug(out.p, 3) == cudaErrorIllegalAddress);
  r = emu::last_report();
  check_report(r, "memcheck", "dynamic_shared_bug_kernel", "(0,0,0)", "(63,0,0)");
  CHECK(contains(r, "past the end of the block's 256 bytes of dynamic shared memory"));
  device_still_works();
}

TEST_CASE("emulator synccheck: a barrier that half the threads skip", "[emulator][planted]") {
  DeviceBuffer<int> out(32);
  CHECK(ember_test::plant_divergent_barrier(out.p) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  check_report(r, "synccheck", "divergent_barrier_kernel", "(0,0,0)", "(16,0,0)");
  CHECK(contains(r, "returned while threads (0,0,0)"));
  CHECK(contains(r, "wait at the __syncthreads at tests/emulator/kernels.cu:"));
  device_still_works();
}

TEST_CASE("emulator synccheck: a full-mask shuffle after half the warp returned",
          "[emulator][planted]") {
  DeviceBuffer<int> out(32);
  CHECK(ember_test::plant_exited_lane(out.p) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  check_report(r, "synccheck", "exited_lane_kernel", "(0,0,0)", "(16,0,0)");
  CHECK(contains(r, "(lane 16) returned while lanes of its warp wait for it"));
  device_still_works();
}

TEST_CASE("emulator initcheck: a read of memory nothing wrote", "[emulator][planted]") {
  Checks on(emu::kAllChecks);
  float* p = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), 256) == cudaSuccess);  // not written
  DeviceBuffer<float> out(1);
  CHECK(ember_test::plant_read(p, out.p) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  check_report(r, "initcheck", "read_kernel", "(0,0,0)", "(0,0,0)");
  CHECK(contains(r, "that nothing has written since it was allocated"));
  REQUIRE(cudaFree(p) == cudaSuccess);
  device_still_works();
}

// ==== the grid cap: every grid-stride loop loops (EMBER_EMULATOR_GRID_CAP) =======================

// Sets the grid cap for one scope (0: off).
struct GridCap {
  int64_t saved;
  explicit GridCap(int64_t blocks) : saved(emu::grid_cap()) { emu::set_grid_cap(blocks); }
  ~GridCap() { emu::set_grid_cap(saved); }
};

// The coverage row of a kernel (by the name its launch gives), summed over its launch sites.
emu::StrideCoverage coverage_of(const std::string& kernel) {
  emu::StrideCoverage sum;
  for (const emu::StrideCoverage& row : emu::stride_coverage()) {
    if (row.kernel != kernel) continue;
    sum.kernel = row.kernel;
    sum.launches += row.launches;
    sum.capped_launches += row.capped_launches;
    sum.blocks += row.blocks;
    sum.no_loop += row.no_loop;
    for (int k = 0; k < 4; ++k) sum.passes[k] += row.passes[k];
  }
  return sum;
}

// 8 segments of 64 ints: segment s holds s * 64 + j for j < 64; out[s] is its sum.
std::vector<int> segment_input() {
  std::vector<int> v(8 * 64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
  return v;
}
void check_segment_sums(const std::vector<int>& out) {
  for (int s = 0; s < 8; ++s) CHECK(out[static_cast<size_t>(s)] == 64 * 64 * s + 63 * 64 / 2);
}

// What a kernel's coverage rows gained between two snapshots (the table keeps counting over the
// whole program, so a test looks at its own launches only).
emu::StrideCoverage gained(const emu::StrideCoverage& before, const emu::StrideCoverage& after) {
  emu::StrideCoverage d;
  d.launches = after.launches - before.launches;
  d.capped_launches = after.capped_launches - before.capped_launches;
  d.blocks = after.blocks - before.blocks;
  d.no_loop = after.no_loop - before.no_loop;
  for (int k = 0; k < 4; ++k) d.passes[k] = after.passes[k] - before.passes[k];
  return d;
}

TEST_CASE("emulator: the grid cap makes every block of a grid-stride loop take several passes",
          "[emulator]") {
  DeviceBuffer<int> in(8 * 64), out(8);
  in.set(segment_input());
  {
    GridCap cap(0);  // no cap: one block per segment, one pass each
    const emu::StrideCoverage before = coverage_of("pass_reuse_kernel");
    REQUIRE(ember_test::launch_pass_reuse(in.p, out.p, 8, true) == cudaSuccess);
    check_segment_sums(out.get());
    const emu::StrideCoverage c = gained(before, coverage_of("pass_reuse_kernel"));
    CHECK(c.launches == 1);
    CHECK(c.capped_launches == 0);
    CHECK(c.blocks == 8);
    CHECK(c.passes[1] == 8);
  }
  {
    GridCap cap(3);  // 3 blocks for 8 segments: blocks 0 and 1 take 3 passes, block 2 takes 2
    REQUIRE(cudaMemset(out.p, 0, 8 * sizeof(int)) == cudaSuccess);
    const emu::StrideCoverage before = coverage_of("pass_reuse_kernel");
    REQUIRE(ember_test::launch_pass_reuse(in.p, out.p, 8, true) == cudaSuccess);
    check_segment_sums(out.get());
    const emu::StrideCoverage c = gained(before, coverage_of("pass_reuse_kernel"));
    CHECK(c.launches == 1);
    CHECK(c.capped_launches == 1);
    CHECK(c.blocks == 3);
    CHECK(c.no_loop == 0);
    CHECK(c.passes[2] == 1);
    CHECK(c.passes[3] == 2);
    const std::string table = emu::coverage_table();
    INFO(table);
    CHECK(contains(table, "EMBER_EMULATOR_GRID_CAP=3"));
    CHECK(contains(table, "pass_reuse_kernel"));
    CHECK(contains(table, "tests/emulator/kernels.cu:"));
  }
  {
    GridCap cap(100);  // a cap above the grid changes nothing
    const emu::StrideCoverage before = coverage_of("pass_reuse_kernel");
    REQUIRE(ember_test::launch_pass_reuse(in.p, out.p, 8, false) == cudaSuccess);
    check_segment_sums(out.get());
    const emu::StrideCoverage c = gained(before, coverage_of("pass_reuse_kernel"));
    CHECK(c.capped_launches == 0);
    CHECK(c.passes[1] == 8);
  }
}

TEST_CASE("emulator racecheck: a barrier that only a block's second pass needs",
          "[emulator][planted]") {
  Checks on(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck);
  DeviceBuffer<int> in(8 * 64), out(8);
  in.set(segment_input());
  {
    // Without the cap every block takes one pass: the missing barrier never matters, and the
    // suite would pass.
    GridCap cap(0);
    CHECK(ember_test::launch_pass_reuse(in.p, out.p, 8, false) == cudaSuccess);
    check_segment_sums(out.get());
  }
  GridCap cap(2);  // 2 blocks, 4 passes each: the next pass overwrites what thread 0 still reads
  CHECK(ember_test::launch_pass_reuse(in.p, out.p, 8, false) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  CHECK(contains(r, "racecheck"));
  CHECK(contains(r, "hazard on shared memory"));
  CHECK(contains(r, "in kernel pass_reuse_kernel"));
  CHECK(contains(r, "of grid (2,1,1)"));
  device_still_works();
}

TEST_CASE("emulator: a capped grid whose kernel does not stride is refused",
          "[emulator][planted]") {
  DeviceBuffer<int> out(8);
  {
    GridCap cap(0);
    REQUIRE(ember_test::plant_exact_grid_for(out.p, 8) == cudaSuccess);
    CHECK(out.get() == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8});
  }
  GridCap cap(2);
  CHECK(ember_test::plant_exact_grid_for(out.p, 8) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  INFO(r);
  CHECK(contains(r, "grid cap: kernel one_block_per_item_kernel (launched at "
                    "tests/emulator/kernels.cu:"));
  CHECK(contains(r, "capped by EMBER_EMULATOR_GRID_CAP=2 from 8 blocks"));
  CHECK(contains(r, "none of its blocks reached a grid_stride loop"));
  device_still_works();
}

TEST_CASE("emulator: the checkers can be turned off", "[emulator]") {
  Checks off(0);
  DeviceBuffer<int> out(256);
  // The racy kernel runs to the end without a report (its result is whatever the order gives).
  CHECK(ember_test::plant_shared_race(out.p) == cudaSuccess);
  CHECK(emu::parse_checks("memcheck, racecheck") == (emu::kMemcheck | emu::kRacecheck));
  CHECK(emu::parse_checks("all") == emu::kAllChecks);
  CHECK(emu::parse_checks("none") == 0u);
  CHECK_THROWS_WITH(emu::parse_checks("memchek"), Catch::Contains("unknown checker 'memchek'"));
}

// Host code that dereferences a device pointer crashes on a GPU machine; with hostcheck (always,
// under AddressSanitizer) it crashes in the emulator too, and says what happened. Run in a child.
TEST_CASE("emulator hostcheck: host code writing into device memory is caught",
          "[emulator][planted]") {
  float* p = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), 64) == cudaSuccess);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    const int devnull = open("/dev/null", O_WRONLY);  // the test runner's own crash report
    if (devnull >= 0) dup2(devnull, 1);
    // Off and on again: hostcheck's SIGSEGV handler goes in when it is turned on, in front of the
    // test runner's own (which the runner reinstalls for every test case).
    emu::set_checks(emu::checks() & ~emu::kHostcheck);
    emu::set_checks(emu::checks() | emu::kHostcheck);
    const float host[4] = {1, 2, 3, 4};
    std::memcpy(p, host, sizeof host);  // the bug
    _exit(0);
  }
  close(fds[1]);
  std::string err;
  char buf[4096];
  for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  INFO(err);
  CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(contains(err, "host code touched device memory at 0x"));
  REQUIRE(cudaFree(p) == cudaSuccess);
  device_still_works();
}

#endif  // EMBER_CUDA_EMULATED
