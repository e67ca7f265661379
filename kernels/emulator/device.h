// ember/kernels/emulator/device.h — the CUDA C++ language inside kernels, for the host
// compiler: qualifiers, threadIdx and friends, barriers, warp shuffles and votes, atomics, the
// rounding intrinsics, and the launch that runs a kernel on the emulator.
//
// How a kernel runs (kernels/emulator/scheduler.cpp): every block is executed by one CPU
// thread; inside it, every CUDA thread is a fiber with its own stack. A thread runs until it
// reaches a barrier (__syncthreads) or a warp collective (__shfl_*_sync, __ballot_sync, ...),
// then the next one runs; a barrier opens when every thread of the block is waiting at it, a
// collective when every lane its mask names has arrived. So barriers are real barriers, shuffles
// really exchange registers among the 32 lanes of a warp, and a barrier that some threads never
// reach is reported instead of hanging (synccheck).
//
// `__shared__` makes a variable thread_local: all fibers of a block run on one CPU thread, so a
// CPU thread's copy of the variable is the shared memory of the block it is running. (Dynamic
// shared memory, `extern __shared__ T name[]`, has no such mapping: write
// EMBER_DYNAMIC_SHARED(T, name) instead, which is that declaration on a GPU.) Each __shared__
// declaration also declares a redzone, which memcheck watches (kernels/emulator/shared_layout.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/emulator/gpu_math.h"
#include "kernels/emulator/runtime_api.h"

// ---- qualifiers ----------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// `__shared__ float tile[32][33];` is `static __thread float tile[32][33];`, preceded by a
// redzone: 64 bytes that nothing uses, which GCC places right after the array in memory (it lays
// a function's static thread-locals out last declared first). An access there is an overrun of
// the array, which memcheck reports with the array's name (shared_layout.cpp); without it the
// access would land in whatever variable lies next, unseen. `used`: GCC would drop it otherwise.
// `__shared__ float a[8], b[8];` declares one redzone for both, after a: an overrun of b lands
// in a unseen.
namespace ember::emu {
struct alignas(16) SharedRedzone {
  unsigned char bytes[64];
};
}  // namespace ember::emu
#define EMBER_EMU_CAT_(a, b) a##b
#define EMBER_EMU_CAT(a, b) EMBER_EMU_CAT_(a, b)
#define __shared__                                                                 \
  static __thread __attribute__((used)) ::ember::emu::SharedRedzone EMBER_EMU_CAT( \
      ember_shared_redzone_, __COUNTER__);                                         \
  static __thread

// ---- threadIdx, blockIdx, blockDim, gridDim, warpSize ---------------------------------------------
namespace ember::emu {
// The coordinates of the CUDA thread running on this CPU thread; the scheduler rewrites them at
// every switch between fibers. One struct, so that the memory checker can tell in one comparison
// that a kernel is reading its coordinates (and not shared memory).
struct Coordinates {
  uint3 thread_idx;
  uint3 block_idx;
  uint3 block_dim;
  uint3 grid_dim;
};
extern __thread Coordinates tls_coordinates __attribute__((tls_model("initial-exec")));
}  // namespace ember::emu

#define threadIdx (static_cast<const uint3&>(::ember::emu::tls_coordinates.thread_idx))
#define blockIdx (static_cast<const uint3&>(::ember::emu::tls_coordinates.block_idx))
#define blockDim (static_cast<const uint3&>(::ember::emu::tls_coordinates.block_dim))
#define gridDim (static_cast<const uint3&>(::ember::emu::tls_coordinates.grid_dim))
constexpr int warpSize = 32;

// ---- barriers, warp collectives, traps (kernels/emulator/scheduler.cpp) --------------------
namespace ember::emu {
enum class ShuffleKind { Index, Up, Down, Xor };
enum class VoteKind { Any, All, Ballot };
enum class BarrierReduce { None, Count, And, Or };

// Each takes the call site (file, line) for the synccheck messages. block_barrier and
// active_mask also tell one call from another by their own return address, a place in the
// kernel's code: the wrappers below are always inlined, and end with an empty asm so that the
// call is never a tail call (whose return address would be the kernel's caller's).
int block_barrier(BarrierReduce reduce, int predicate, const char* file, int line);
void warp_barrier(unsigned mask, const char* file, int line);
uint64_t warp_shuffle(ShuffleKind kind, unsigned mask, uint64_t bits, int lane_or_delta, int width,
                      const char* file, int line);
unsigned warp_vote(VoteKind kind, unsigned mask, int predicate, const char* file, int line);
unsigned active_mask(const char* file, int line);
[[noreturn]] void trap(const char* file, int line);

// Bytes of the dynamic shared memory the current block was launched with.
void* dynamic_shared_memory();

// ---- the grid cap and the grid-stride coverage (kernels/emulator/scheduler.cpp) ---------------
// kernels/cuda/launch.cuh's strided_blocks asks for `blocks` blocks in one grid dimension that
// the kernel strides over: the answer is at most EMBER_EMULATOR_GRID_CAP (when set). A capped
// answer is remembered until the next launch, which then counts as capped (LaunchConfig).
int64_t cap_strided_blocks(int64_t blocks);
// The largest block count cap_strided_blocks lowered since the last call (0: none), cleared.
int64_t take_capped_blocks();
// A grid_stride loop of the current CUDA thread ended after `passes` passes.
void note_stride_passes(int64_t passes);
}  // namespace ember::emu

#define EMBER_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::ember::emu::dynamic_shared_memory())

#define EMBER_EMU_NO_TAIL_CALL() asm volatile("")
__attribute__((always_inline)) inline void __syncthreads(const char* file = __builtin_FILE(),
                                                         int line = __builtin_LINE()) {
  ::ember::emu::block_barrier(::ember::emu::BarrierReduce::None, 0, file, line);
  EMBER_EMU_NO_TAIL_CALL();
}
__attribute__((always_inline)) inline int __syncthreads_count(int predicate,
                                                              const char* file = __builtin_FILE(),
                                                              int line = __builtin_LINE()) {
  const int r =
      ::ember::emu::block_barrier(::ember::emu::BarrierReduce::Count, predicate, file, line);
  EMBER_EMU_NO_TAIL_CALL();
  return r;
}
__attribute__((always_inline)) inline int __syncthreads_and(int predicate,
                                                            const char* file = __builtin_FILE(),
                                                            int line = __builtin_LINE()) {
  const int r =
      ::ember::emu::block_barrier(::ember::emu::BarrierReduce::And, predicate, file, line);
  EMBER_EMU_NO_TAIL_CALL();
  return r;
}
__attribute__((always_inline)) inline int __syncthreads_or(int predicate,
                                                           const char* file = __builtin_FILE(),
                                                           int line = __builtin_LINE()) {
  const int r = ::ember::emu::block_barrier(::ember::emu::BarrierReduce::Or, predicate, file, line);
  EMBER_EMU_NO_TAIL_CALL();
  return r;
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  ::ember::emu::warp_barrier(mask, file, line);
}
// The lanes converged with the caller: those at the same __activemask() call from the same warp
// synchronization (docs/emulator.md, "Warps and barriers"), not every live lane.
__attribute__((always_inline)) inline unsigned __activemask(const char* file = __builtin_FILE(),
                                                            int line = __builtin_LINE()) {
  const unsigned r = ::ember::emu::active_mask(file, line);
  EMBER_EMU_NO_TAIL_CALL();
  return r;
}
[[noreturn]] inline void __trap(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::emu::trap(file, line);
}

namespace ember::emu {
// A shuffled value travels as its bytes: every type CUDA's shuffles take is at most 8 bytes.
template <typename T>
inline T shuffle_value(ShuffleKind kind, unsigned mask, T var, int arg, int width, const char* file,
                       int line) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "__shfl_*_sync takes values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = warp_shuffle(kind, mask, bits, arg, width, file, line);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
}  // namespace ember::emu

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
                     const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::emu::shuffle_value(::ember::emu::ShuffleKind::Index, mask, var, src_lane, width,
                                     file, line);
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                        const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::emu::shuffle_value(::ember::emu::ShuffleKind::Up, mask, var,
                                     static_cast<int>(delta), width, file, line);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::emu::shuffle_value(::ember::emu::ShuffleKind::Down, mask, var,
                                     static_cast<int>(delta), width, file, line);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::ember::emu::shuffle_value(::ember::emu::ShuffleKind::Xor, mask, var, lane_mask, width,
                                     file, line);
}
inline unsigned __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  return ::ember::emu::warp_vote(::ember::emu::VoteKind::Ballot, mask, predicate, file, line);
}
inline int __any_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return static_cast<int>(
      ::ember::emu::warp_vote(::ember::emu::VoteKind::Any, mask, predicate, file, line));
}
inline int __all_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return static_cast<int>(
      ::ember::emu::warp_vote(::ember::emu::VoteKind::All, mask, predicate, file, line));
}

// ---- atomics (kernels/emulator/atomics.cpp) --------------------------------------------------
// Real atomic read-modify-writes on the CPU (blocks run on several CPU threads at once), each
// also checked by memcheck like any other access. They return the old value, as in CUDA.
int atomicAdd(int* address, int val);
unsigned int atomicAdd(unsigned int* address, unsigned int val);
unsigned long long atomicAdd(unsigned long long* address, unsigned long long val);
float atomicAdd(float* address, float val);
double atomicAdd(double* address, double val);
int atomicSub(int* address, int val);
unsigned int atomicSub(unsigned int* address, unsigned int val);
int atomicExch(int* address, int val);
unsigned int atomicExch(unsigned int* address, unsigned int val);
unsigned long long atomicExch(unsigned long long* address, unsigned long long val);
float atomicExch(float* address, float val);
int atomicMin(int* address, int val);
unsigned int atomicMin(unsigned int* address, unsigned int val);
long long atomicMin(long long* address, long long val);
unsigned long long atomicMin(unsigned long long* address, unsigned long long val);
int atomicMax(int* address, int val);
unsigned int atomicMax(unsigned int* address, unsigned int val);
long long atomicMax(long long* address, long long val);
unsigned long long atomicMax(unsigned long long* address, unsigned long long val);
unsigned int atomicInc(unsigned int* address, unsigned int val);
unsigned int atomicDec(unsigned int* address, unsigned int val);
int atomicCAS(int* address, int compare, int val);
unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int val);
unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare,
                             unsigned long long val);
int atomicAnd(int* address, int val);
unsigned int atomicAnd(unsigned int* address, unsigned int val);
unsigned long long atomicAnd(unsigned long long* address, unsigned long long val);
int atomicOr(int* address, int val);
unsigned int atomicOr(unsigned int* address, unsigned int val);
unsigned long long atomicOr(unsigned long long* address, unsigned long long val);
int atomicXor(int* address, int val);
unsigned int atomicXor(unsigned int* address, unsigned int val);
unsigned long long atomicXor(unsigned long long* address, unsigned long long val);

// Memory fences: the emulator's CPU threads see each other's writes through the C++ memory
// model; a fence is a sequentially consistent fence there.
void __threadfence();
void __threadfence_block();
void __threadfence_system();

// ---- math ----------------------------------------------------------------------------------------
// CUDA offers the classification functions in the global namespace, for float and double.
using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

// ---- loads ---------------------------------------------------------------------------------------
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}

// ---- IEEE arithmetic with a named rounding ------------------------------------------------------
// On a GPU, nvcc contracts a plain a * b + c into one fused multiply-add (one rounding) by default,
// but never an _rn intrinsic: __fmul_rn(a, b) + c rounds twice. The emulation build contracts
// as nvcc does when EMBER_EMULATOR_FMA is on (GCC's -ffp-contract=fast, CMakeLists.txt), so the
// intrinsics below hide their operands and results from the optimizer (EMBER_EMU_FP_BARRIER:
// an empty asm that claims to change the value in its register) and every one of them rounds
// once, on its own, as on the GPU. fmaf / fma and __fmaf_rn / __fma_rn round once for the fused
// operation.
#if defined(__x86_64__) || defined(__i386__)
#define EMBER_EMU_FP_BARRIER(v) asm("" : "+x"(v))
#elif defined(__aarch64__)
#define EMBER_EMU_FP_BARRIER(v) asm("" : "+w"(v))
#else
#define EMBER_EMU_FP_BARRIER(v) \
  do {                          \
    volatile auto opaque_ = v;  \
    v = opaque_;                \
  } while (0)
#endif
namespace ember::emu {
template <typename T, typename Op>
inline T rounded_once(T a, T b, Op op) {
  EMBER_EMU_FP_BARRIER(a);
  EMBER_EMU_FP_BARRIER(b);
  T r = op(a, b);
  EMBER_EMU_FP_BARRIER(r);
  return r;
}
}  // namespace ember::emu
inline float __fadd_rn(float a, float b) {
  return ::ember::emu::rounded_once(a, b, [](float x, float y) { return x + y; });
}
inline float __fsub_rn(float a, float b) {
  return ::ember::emu::rounded_once(a, b, [](float x, float y) { return x - y; });
}
inline float __fmul_rn(float a, float b) {
  return ::ember::emu::rounded_once(a, b, [](float x, float y) { return x * y; });
}
inline float __fdiv_rn(float a, float b) {
  return ::ember::emu::rounded_once(a, b, [](float x, float y) { return x / y; });
}
inline float __frcp_rn(float a) { return __fdiv_rn(1.0f, a); }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) {
  return ::ember::emu::rounded_once(a, b, [](double x, double y) { return x + y; });
}
inline double __dsub_rn(double a, double b) {
  return ::ember::emu::rounded_once(a, b, [](double x, double y) { return x - y; });
}
inline double __dmul_rn(double a, double b) {
  return ::ember::emu::rounded_once(a, b, [](double x, double y) { return x * y; });
}
inline double __ddiv_rn(double a, double b) {
  return ::ember::emu::rounded_once(a, b, [](double x, double y) { return x / y; });
}
inline double __drcp_rn(double a) { return __ddiv_rn(1.0, a); }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }

// The fast-math intrinsics are approximations on a GPU (__expf has about 2 ulp of error over a
// small range). The emulator computes them exactly instead: it cannot reproduce the hardware's
// approximation, so code that depends on its exact bits is not testable here.
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __saturatef(float x) { return x != x ? 0.0f : (x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x)); }

// ---- integer intrinsics --------------------------------------------------------------------------
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<uint64_t>(a) * b) >> 32);
}
inline int __mulhi(int a, int b) {
  return static_cast<int>((static_cast<int64_t>(a) * b) >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
  unsigned int r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}

// ---- reinterpreting bits ---------------------------------------------------------------------------
inline int __float_as_int(float x) {
  int r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline unsigned int __float_as_uint(float x) {
  unsigned int r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline float __int_as_float(int x) {
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline float __uint_as_float(unsigned int x) {
  float r;
  std::memcpy(&r, &x, 4);
  return r;
}
inline long long __double_as_longlong(double x) {
  long long r;
  std::memcpy(&r, &x, 8);
  return r;
}
inline double __longlong_as_double(long long x) {
  double r;
  std::memcpy(&r, &x, 8);
  return r;
}

// ---- the launch ----------------------------------------------------------------------------------
namespace ember::emu {

// Where and what a launch is: the <<<grid, block, shared_bytes, stream>>> of the kernel, and
// its name and call site for the messages.
struct LaunchConfig {
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;
  const char* kernel;
  const char* file;
  int line;
  // The blocks one of the grid's dimensions needed before EMBER_EMULATOR_GRID_CAP capped it; 0
  // when the grid was not capped.
  int64_t capped_from = 0;
};

// Runs body(closure) once on every thread of the grid (kernels/emulator/scheduler.cpp).
// [params, params + params_size) is the launch's copy of the arguments, which every thread may
// read. A bad configuration or a checker's report becomes this host thread's last error
// (cudaGetLastError), exactly where a GPU would report it, and is also returned.
cudaError_t run_grid(const LaunchConfig& config, void (*body)(void*), void* closure,
                     const void* params, size_t params_size);
// Called by each CUDA thread before it calls the kernel: from here on its memory accesses are
// the kernel's own, and memcheck / racecheck / initcheck watch them.
void enter_kernel_code();

// Stream capture (kernels/emulator/graph.cpp). What a launch on config.stream does:
enum class LaunchDisposition {
  Run,      // the stream runs work: launch now
  Record,   // the stream captures: record the launch as a node of its graph
  Queue,    // the asynchronous mode (EMBER_EMULATOR_ASYNC): queue it; a worker runs it later
  Refused,  // forbidden (the legacy stream while a blocking stream captures): the error is set
};
LaunchDisposition launch_disposition(const LaunchConfig& config);
// Appends a kernel node to the capture of config.stream; `replay(stream)` runs the kernel on the
// stream a graph launch names. (If the capture ended meanwhile, the launch runs now.)
void record_launch(const LaunchConfig& config, std::function<cudaError_t(cudaStream_t)> replay);
// The asynchronous mode (kernels/emulator/async.cpp): checks the configuration now (a bad one is
// this thread's last error at once, as on a GPU) and queues `run` on config.stream; a fault of
// the kernel becomes the device's sticky error when the worker runs it.
void queue_launch(const LaunchConfig& config, std::function<cudaError_t()> run);

// EMBER_LAUNCH(grid, block, shared, stream, kernel)(args...) in the emulation build: the
// arguments are copied once at the launch (a GPU copies them into the kernel's parameter
// space), then every CUDA thread calls the kernel with them (its by-value parameters are its
// own copies, on its own stack). On a capturing stream the launch is recorded instead: the node
// keeps its own copy of the arguments, by value, as a kernel node of a CUDA graph does, and
// every replay runs the kernel with that copy. In the asynchronous mode the launch is queued on
// its stream with such a copy, and the emulator's worker thread runs it later.
template <typename Call>
class Launcher {
 public:
  Launcher(const LaunchConfig& config, Call call) : config_(config), call_(call) {}

  template <typename... Args>
  void operator()(Args... args) {
    using Params = std::tuple<Args...>;
    switch (launch_disposition(config_)) {
      case LaunchDisposition::Refused:
        return;
      case LaunchDisposition::Record: {
        auto params = std::make_shared<Params>(std::move(args)...);
        const Call call = call_;
        const LaunchConfig config = config_;
        record_launch(config_, [call, params, config](cudaStream_t s) {
          LaunchConfig on = config;
          on.stream = s;
          return run(on, call, *params);
        });
        return;
      }
      case LaunchDisposition::Queue: {
        // Like a recorded launch: the queued kernel keeps its own copy of the arguments.
        auto params = std::make_shared<Params>(std::move(args)...);
        const Call call = call_;
        const LaunchConfig config = config_;
        queue_launch(config_, [call, params, config]() { return run(config, call, *params); });
        return;
      }
      case LaunchDisposition::Run:
        break;
    }
    Params params(std::move(args)...);
    run(config_, call_, params);
  }

 private:
  template <typename Params>
  static cudaError_t run(const LaunchConfig& config, const Call& call, Params& params) {
    struct Closure {
      const Call* call;
      const Params* params;
    };
    Closure closure{&call, &params};
    return run_grid(config, [](void* p) {
      // Everything read from the host's side happens before enter_kernel_code().
      const auto* c = static_cast<const Closure*>(p);
      Call call = *c->call;
      Params& params = *const_cast<Params*>(c->params);  // the parameter space (readable)
      enter_kernel_code();
      std::apply(call, params);
    }, &closure, &params, sizeof(params));
  }

  LaunchConfig config_;
  Call call_;
};

template <typename Call>
Launcher<Call> make_launcher(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                             const char* kernel, const char* file, int line, Call call) {
  // The grid was computed (strided_blocks) before this call: a cap it applied belongs to it.
  return Launcher<Call>(LaunchConfig{grid, block, shared_bytes, stream, kernel, file, line,
                                     take_capped_blocks()},
                        call);
}

}  // namespace ember::emu
