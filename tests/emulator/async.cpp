// The emulator's asynchronous mode (EMBER_EMULATOR_ASYNC=1, kernels/emulator/async.cpp): work
// queued per stream and run later on a worker thread, queries that answer cudaErrorNotReady,
// events that order streams, sticky errors, and the host-side bugs that only asynchrony shows.
// Each test turns the mode on for itself, so they run in the default (eager) suite too; the CI
// step that runs every CUDA test in the mode also runs them.
//
// The planted bugs here are host-program bugs: in the eager mode a launch has finished when the
// call returns, so each of them still computes the right answer there and no checker can see it.
#ifdef EMBER_CUDA_EMULATED

#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener below
#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include "core/ember.h"
#include "kernels/emulator/emulator.h"
#include "tests/emulator/kernels.h"
#include "tests/emulator/test_util.h"

using namespace ember;

namespace {

using ember_test::Checks;
using ember_test::contains;

// The asynchronous mode for one scope (turning it off waits for everything queued).
struct AsyncMode {
  bool saved;
  AsyncMode() : saved(emu::async_streams()) { emu::set_async_streams(true); }
  ~AsyncMode() {
    cudaDeviceSynchronize();
    emu::clear_device_errors();
    cudaGetLastError();
    emu::set_async_streams(saved);
  }
};

float* device_floats(size_t n) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, n * sizeof(float)) == cudaSuccess);
  return static_cast<float*>(p);
}
float* pinned_floats(size_t n) {
  void* p = nullptr;
  REQUIRE(cudaHostAlloc(&p, n * sizeof(float), 0) == cudaSuccess);
  return static_cast<float*>(p);
}
std::vector<float> read_back(const float* d, size_t n) {
  std::vector<float> v(n);
  REQUIRE(cudaMemcpy(v.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}
// A host read the compiler cannot move or drop.
float host_read(const float* p) { return *static_cast<const volatile float*>(p); }

cudaStream_t make_stream(unsigned flags) {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, flags) == cudaSuccess);
  return s;
}

constexpr int64_t kN = 1000;

// Between test cases of a run in the asynchronous mode: a kernel of the last test that failed
// after its last synchronization would otherwise fail the next test's first call (its error is
// sticky). Say so, and clear it: a GPU would need a new process.
struct AsyncListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (!emu::async_streams()) return;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    for (int d = 0; d < devices; ++d) {
      cudaSetDevice(d);
      cudaDeviceSynchronize();
      if (emu::device_error(d) != 0) {
        std::cerr << "ember emulator: asynchronous mode: work queued by test case '"
                  << stats.testInfo.name << "' left error " << emu::device_error(d)
                  << " on cuda:" << d << " after its last synchronization; cleared\n";
      }
    }
    cudaSetDevice(0);
    emu::clear_device_errors();
    cudaGetLastError();
  }
};
CATCH_REGISTER_LISTENER(AsyncListener)

}  // namespace

TEST_CASE("emulator async: work runs later, in stream order, and queries say not ready",
          "[emulator]") {
  AsyncMode async;
  float* d = device_floats(kN);
  REQUIRE(cudaMemset(d, 0, kN * sizeof(float)) == cudaSuccess);
  const int64_t launches = emu::stats().launches;
  REQUIRE(ember_test::queue_fill(d, kN, 3.0f, nullptr) == cudaSuccess);
  REQUIRE(ember_test::queue_scale(d, d, kN, 2.0f, nullptr) == cudaSuccess);
  CHECK(emu::stats().launches == launches);  // queued, not run
  CHECK(cudaStreamQuery(nullptr) == cudaErrorNotReady);
  CHECK(cudaGetLastError() == cudaSuccess);  // "not ready" is an answer, not an error
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  CHECK(emu::stats().launches == launches + 2);
  CHECK(cudaStreamQuery(nullptr) == cudaSuccess);
  CHECK(read_back(d, kN) == std::vector<float>(kN, 6.0f));  // fill, then scale: stream order

  // Polling an event ends: a query lets the worker start on the work it waits for.
  cudaEvent_t done = nullptr;
  REQUIRE(cudaEventCreate(&done) == cudaSuccess);
  REQUIRE(ember_test::queue_fill(d, kN, 1.0f, nullptr) == cudaSuccess);
  REQUIRE(cudaEventRecord(done, nullptr) == cudaSuccess);
  CHECK(cudaEventQuery(done) == cudaErrorNotReady);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  cudaError_t e = cudaErrorNotReady;
  while (e == cudaErrorNotReady && std::chrono::steady_clock::now() < give_up)
    e = cudaEventQuery(done);
  CHECK(e == cudaSuccess);
  CHECK(read_back(d, kN) == std::vector<float>(kN, 1.0f));
  REQUIRE(cudaEventDestroy(done) == cudaSuccess);
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator async: the legacy stream waits for blocking streams, not non-blocking ones",
          "[emulator]") {
  AsyncMode async;
  float* x = device_floats(kN);
  float* y = device_floats(kN);
  REQUIRE(cudaMemset(x, 0, kN * sizeof(float)) == cudaSuccess);
  const cudaStream_t blocking = make_stream(cudaStreamDefault);
  const cudaStream_t non_blocking = make_stream(cudaStreamNonBlocking);

  // Produced on a blocking stream, consumed on the legacy stream: implicitly ordered.
  REQUIRE(ember_test::queue_fill(x, kN, 5.0f, blocking) == cudaSuccess);
  REQUIRE(ember_test::queue_scale(x, y, kN, 2.0f, nullptr) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  CHECK(read_back(y, kN) == std::vector<float>(kN, 10.0f));
  CHECK(cudaStreamQuery(blocking) == cudaSuccess);  // it had to run first

  // The same with a non-blocking producer: no order, so the consumer reads the old zeros.
  REQUIRE(cudaMemset(x, 0, kN * sizeof(float)) == cudaSuccess);
  REQUIRE(ember_test::queue_fill(x, kN, 5.0f, non_blocking) == cudaSuccess);
  REQUIRE(ember_test::queue_scale(x, y, kN, 2.0f, nullptr) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  CHECK(read_back(y, kN)[0] == 0.0f);
  CHECK(cudaStreamQuery(non_blocking) == cudaErrorNotReady);
  REQUIRE(cudaStreamSynchronize(non_blocking) == cudaSuccess);
  CHECK(read_back(x, kN)[0] == 5.0f);

  REQUIRE(cudaStreamDestroy(blocking) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(non_blocking) == cudaSuccess);
  REQUIRE(cudaFree(x) == cudaSuccess);
  REQUIRE(cudaFree(y) == cudaSuccess);
}

TEST_CASE("emulator async: a kernel's fault is sticky, as on a GPU", "[emulator]") {
  AsyncMode async;
  float* d = device_floats(100);
  REQUIRE(ember_test::queue_out_of_bounds(d, 100) == cudaSuccess);  // the launch itself is fine
  CHECK(cudaGetLastError() == cudaSuccess);                         // nothing has run yet
  CHECK(emu::device_error(0) == 0);
  CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
  CHECK(contains(emu::last_report(), "memcheck: invalid write"));
  CHECK(contains(emu::last_report(), "out_of_bounds_kernel"));
  CHECK(contains(emu::last_report(), "asynchronous mode: this failed when the worker ran kernel"));
  CHECK(contains(emu::last_report(), "sticky"));
  // Every later call returns it, and reading it does not clear it.
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
  CHECK(cudaPeekAtLastError() == cudaErrorIllegalAddress);
  void* more = nullptr;
  CHECK(cudaMalloc(&more, 16) == cudaErrorIllegalAddress);
  CHECK(ember_test::queue_fill(d, 100, 1.0f, nullptr) == cudaErrorIllegalAddress);
  CHECK(cudaStreamSynchronize(nullptr) == cudaErrorIllegalAddress);
  CHECK(emu::device_error(0) == cudaErrorIllegalAddress);
  // ember raises it as a DeviceError carrying the report.
  bool threw = false;
  try {
    (void)ones({4}).to(Device("cuda:0"));
  } catch (const DeviceError& e) {
    threw = true;
    CHECK(contains(e.what(), "cudaErrorIllegalAddress"));
    CHECK(contains(e.what(), "out_of_bounds_kernel"));
  }
  CHECK(threw);
  emu::clear_device_errors();  // the stand-in for a new process
  CHECK(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator async: CUDA graphs replay as one queued operation", "[emulator]") {
  AsyncMode async;
  float* x = device_floats(kN);
  float* y = device_floats(kN);
  const cudaStream_t side = make_stream(cudaStreamNonBlocking);
  REQUIRE(cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  REQUIRE(ember_test::queue_fill(x, kN, 1.5f, side) == cudaSuccess);
  REQUIRE(ember_test::queue_scale(x, y, kN, 4.0f, side) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(side, &graph) == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  const int64_t launches = emu::stats().launches;
  REQUIRE(cudaGraphLaunch(exec, nullptr) == cudaSuccess);
  CHECK(emu::stats().launches == launches);
  CHECK(cudaStreamQuery(nullptr) == cudaErrorNotReady);
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  CHECK(emu::stats().launches == launches + 2);
  CHECK(read_back(y, kN) == std::vector<float>(kN, 6.0f));
  REQUIRE(cudaGraphExecDestroy(exec) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(side) == cudaSuccess);
  REQUIRE(cudaFree(x) == cudaSuccess);
  REQUIRE(cudaFree(y) == cudaSuccess);
}

// ---- planted bugs -------------------------------------------------------------------------------

TEST_CASE("emulator async: a host read before the synchronization is caught",
          "[emulator][planted]") {
  AsyncMode async;
  float* d = device_floats(256);
  float* pinned = pinned_floats(256);
  for (int i = 0; i < 256; ++i) pinned[i] = 0.0f;
  REQUIRE(ember_test::queue_fill(d, 256, 7.0f, nullptr) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(pinned, d, 256 * sizeof(float), cudaMemcpyDeviceToHost, nullptr) ==
          cudaSuccess);
  const int64_t reports = emu::async_stats().host_access_reports;
  // The bug: no cudaStreamSynchronize before reading the copy's destination. The eager mode
  // defers a pinned copy too, so it returns the same stale 0 — but it cannot say that the host
  // read too early, or where.
  const float early = host_read(&pinned[3]);
  CHECK(early == 0.0f);
  CHECK(emu::async_stats().host_access_reports == reports + 1);
  const std::string r = emu::last_report();
  CHECK(contains(r, "host read of pinned memory"));
  CHECK(contains(r, "cudaMemcpyAsync of 1024 bytes from device to pinned host memory"));
  CHECK(contains(r, "the legacy stream of cuda:0"));
  CHECK(contains(r, "the host access: tests/emulator/async.cpp:"));  // host_read()
  CHECK(contains(r, "queued at tests/emulator/async.cpp:"));
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  CHECK(host_read(&pinned[3]) == 7.0f);

  // Zero-copy: a kernel that writes pinned memory directly. In the eager mode the kernel has run
  // when the launch returns, so reading without a synchronization gets 2.0 and the bug cannot be
  // seen at all; here the host reads what was there before.
  REQUIRE(ember_test::queue_fill(pinned, 256, 2.0f, nullptr) == cudaSuccess);
  CHECK(host_read(&pinned[0]) == 7.0f);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(host_read(&pinned[0]) == 2.0f);

  // The mirror image: the host refills a staging buffer that a queued copy still reads.
  for (int i = 0; i < 256; ++i) pinned[i] = 1.0f;
  REQUIRE(cudaMemcpyAsync(d, pinned, 256 * sizeof(float), cudaMemcpyHostToDevice, nullptr) ==
          cudaSuccess);
  CHECK(host_read(&pinned[5]) == 1.0f);  // reading a copy's source is fine
  CHECK(emu::async_stats().host_access_reports == reports + 1);
  pinned[5] = 9.0f;  // the bug: the next batch overwrites it before the copy ran
  CHECK(emu::async_stats().host_access_reports == reports + 2);
  CHECK(contains(emu::last_report(), "host write to pinned memory"));
  CHECK(contains(emu::last_report(), "from pinned host to device memory"));
  CHECK(read_back(d, 256)[5] == 9.0f);  // the device got the next batch's value
  REQUIRE(cudaFreeHost(pinned) == cudaSuccess);
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulator async: work on the wrong stream is caught", "[emulator][planted]") {
  AsyncMode async;
  const Checks checks(emu::kMemcheck | emu::kRacecheck | emu::kSynccheck | emu::kInitcheck);
  float* x = device_floats(kN);  // never written: initcheck sees a read of it
  float* y = device_floats(kN);
  const cudaStream_t producer = make_stream(cudaStreamNonBlocking);
  const cudaStream_t consumer = make_stream(cudaStreamNonBlocking);
  // The bug: the program queues the producer first and assumes that makes it run first. In
  // the eager mode it does (the fill has finished when the launch returns), so the answer is
  // right there; streams give no such order, and here the consumer runs alone.
  REQUIRE(ember_test::queue_fill(x, kN, 4.0f, producer) == cudaSuccess);
  REQUIRE(ember_test::queue_scale(x, y, kN, 2.0f, consumer) == cudaSuccess);
  CHECK(cudaStreamSynchronize(consumer) == cudaErrorLaunchFailure);
  const std::string r = emu::last_report();
  CHECK(contains(r, "initcheck"));
  CHECK(contains(r, "scale_kernel"));
  CHECK(contains(r, "asynchronous mode: this failed when the worker ran kernel scale_kernel"));
  emu::clear_device_errors();
  cudaGetLastError();
  REQUIRE(cudaStreamDestroy(producer) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(consumer) == cudaSuccess);
  REQUIRE(cudaFree(x) == cudaSuccess);
  REQUIRE(cudaFree(y) == cudaSuccess);
}

TEST_CASE("emulator async: a missing cudaStreamWaitEvent is caught, and the wait orders the "
          "streams",
          "[emulator][planted]") {
  AsyncMode async;
  float* x = device_floats(kN);
  float* y = device_floats(kN);
  REQUIRE(cudaMemset(x, 0, kN * sizeof(float)) == cudaSuccess);
  const cudaStream_t producer = make_stream(cudaStreamNonBlocking);
  const cudaStream_t consumer = make_stream(cudaStreamNonBlocking);
  cudaEvent_t produced = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming) == cudaSuccess);

  // The bug: the event is recorded, but the consumer never waits for it. The eager mode runs
  // the producer inside its launch, so y comes out right; here the consumer reads the zeros.
  REQUIRE(ember_test::queue_fill(x, kN, 4.0f, producer) == cudaSuccess);
  REQUIRE(cudaEventRecord(produced, producer) == cudaSuccess);
  REQUIRE(ember_test::queue_scale(x, y, kN, 2.0f, consumer) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(consumer) == cudaSuccess);
  CHECK(read_back(y, kN)[0] == 0.0f);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);

  // Fixed: the consumer waits for the event, and only the consumer is synchronized.
  REQUIRE(cudaMemset(x, 0, kN * sizeof(float)) == cudaSuccess);
  REQUIRE(ember_test::queue_fill(x, kN, 4.0f, producer) == cudaSuccess);
  REQUIRE(cudaEventRecord(produced, producer) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(consumer, produced, 0) == cudaSuccess);
  REQUIRE(cudaEventDestroy(produced) == cudaSuccess);  // the queued wait keeps its point
  REQUIRE(ember_test::queue_scale(x, y, kN, 2.0f, consumer) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(consumer) == cudaSuccess);
  CHECK(read_back(y, kN) == std::vector<float>(kN, 8.0f));

  REQUIRE(cudaStreamDestroy(producer) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(consumer) == cudaSuccess);
  REQUIRE(cudaFree(x) == cudaSuccess);
  REQUIRE(cudaFree(y) == cudaSuccess);
}

// ---- ember's allocators under asynchrony --------------------------------------------------------

TEST_CASE("emulator async: the pinned allocator skips a block a queued copy still reads",
          "[emulator]") {
  AsyncMode async;
  const Device cuda0("cuda:0");
  const Tensor g = ones({4096}).to(cuda0) * 3.0;
  const void* first = nullptr;
  {
    // A non-blocking copy back to the host lands in pinned memory; dropping the tensor gives
    // its block back stamped with an event that completes when the copy has run.
    const Tensor back = g.to(Device::cpu(), /*non_blocking=*/true);
    REQUIRE(back.is_pinned());
    first = back.data_ptr<float>();
  }
  // The copy is still queued: the allocator's cudaEventQuery answers cudaErrorNotReady, and it
  // takes a new block instead of the one the copy still writes.
  const int64_t not_ready = emu::async_stats().not_ready;
  const Tensor second = ones({4096}).pin_memory();
  CHECK(emu::async_stats().not_ready > not_ready);
  CHECK(static_cast<const void*>(second.data_ptr<float>()) != first);
  CHECK(second.to_vector<float>() == std::vector<float>(4096, 1.0f));
  // Once the device has caught up, the block comes back.
  cuda::synchronize();
  const Tensor third = ones({4096}).pin_memory();
  CHECK(static_cast<const void*>(third.data_ptr<float>()) == first);
}

TEST_CASE("emulator async: the caching allocator reuses a block while its kernel is queued",
          "[emulator]") {
  AsyncMode async;
  const Device cuda0("cuda:0");
  const Tensor a = ones({kN}).to(cuda0);
  cuda::synchronize();
  cuda::empty_cache();  // so that the block freed below is the only one the cache can hand out
  Tensor doubled;
  const void* block = nullptr;
  const int64_t launches = emu::stats().launches;
  {
    const Tensor scratch = a + 1.0;  // 2
    block = scratch.data_ptr<float>();
    doubled = scratch * 2.0;  // 4, queued: it reads scratch's block later
  }
  // scratch is gone, its block is free for the next tensor although the kernel that reads it
  // has not run: on one stream the next kernel that writes it runs after that one (and memcheck
  // sees the block live or cached in that same order).
  const Tensor next = a * 5.0;
  CHECK(static_cast<const void*>(next.data_ptr<float>()) == block);
  CHECK(emu::stats().launches == launches);  // nothing ran yet
  CHECK(doubled.to_vector<float>() == std::vector<float>(kN, 4.0f));
  CHECK(next.to_vector<float>() == std::vector<float>(kN, 5.0f));
}

#endif  // EMBER_CUDA_EMULATED
