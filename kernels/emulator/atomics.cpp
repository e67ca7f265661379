// ember/kernels/emulator/atomics.cpp — CUDA's atomic functions on the CPU.
//
// Blocks run on several CPU threads at once, so these are real atomic read-modify-writes
// (GCC's __atomic builtins; float and double additions through a compare-and-swap loop on their
// bits, as a GPU without a native instruction would do). Each first goes through memcheck and
// initcheck like any other access of the kernel.
#include <cstring>

#include "kernels/emulator/internal.h"

namespace ember::emu::detail {
void check_atomic(void* p, size_t n, const void* pc);
}

namespace {

using ember::emu::detail::check_atomic;

template <typename T>
T load(T* p) {
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

// *p = f(*p), atomically; returns the old value.
template <typename T, typename F>
T update(T* p, F f) {
  T old = load(p);
  while (!__atomic_compare_exchange_n(p, &old, f(old), true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}

// The same for a floating-point value, through the integer of its size.
template <typename T, typename U, typename F>
T update_float(T* p, F f) {
  U* bits = reinterpret_cast<U*>(p);
  U old = load(bits);
  for (;;) {
    T x;
    std::memcpy(&x, &old, sizeof x);
    const T y = f(x);
    U ny;
    std::memcpy(&ny, &y, sizeof ny);
    if (__atomic_compare_exchange_n(bits, &old, ny, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return x;
  }
}

#define EMBER_EMU_CHECK(p) check_atomic(p, sizeof(*(p)), __builtin_return_address(0))

}  // namespace

int atomicAdd(int* a, int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
unsigned int atomicAdd(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) { EMBER_EMU_CHECK(a); return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
float atomicAdd(float* a, float v) {
  EMBER_EMU_CHECK(a);
  return update_float<float, uint32_t>(a, [v](float x) { return x + v; });
}
double atomicAdd(double* a, double v) {
  EMBER_EMU_CHECK(a);
  return update_float<double, uint64_t>(a, [v](double x) { return x + v; });
}
int atomicSub(int* a, int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
unsigned int atomicSub(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
int atomicExch(int* a, int v) { EMBER_EMU_CHECK(a); return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }
unsigned int atomicExch(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }
unsigned long long atomicExch(unsigned long long* a, unsigned long long v) { EMBER_EMU_CHECK(a); return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }
float atomicExch(float* a, float v) {
  EMBER_EMU_CHECK(a);
  return update_float<float, uint32_t>(a, [v](float) { return v; });
}
int atomicMin(int* a, int v) { EMBER_EMU_CHECK(a); return update(a, [v](int x) { return v < x ? v : x; }); }
unsigned int atomicMin(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return update(a, [v](unsigned int x) { return v < x ? v : x; }); }
long long atomicMin(long long* a, long long v) { EMBER_EMU_CHECK(a); return update(a, [v](long long x) { return v < x ? v : x; }); }
unsigned long long atomicMin(unsigned long long* a, unsigned long long v) { EMBER_EMU_CHECK(a); return update(a, [v](unsigned long long x) { return v < x ? v : x; }); }
int atomicMax(int* a, int v) { EMBER_EMU_CHECK(a); return update(a, [v](int x) { return v > x ? v : x; }); }
unsigned int atomicMax(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return update(a, [v](unsigned int x) { return v > x ? v : x; }); }
long long atomicMax(long long* a, long long v) { EMBER_EMU_CHECK(a); return update(a, [v](long long x) { return v > x ? v : x; }); }
unsigned long long atomicMax(unsigned long long* a, unsigned long long v) { EMBER_EMU_CHECK(a); return update(a, [v](unsigned long long x) { return v > x ? v : x; }); }
// ((old >= val) ? 0 : (old + 1)) and (((old == 0) || (old > val)) ? val : (old - 1)), as in CUDA.
unsigned int atomicInc(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return update(a, [v](unsigned int x) { return x >= v ? 0u : x + 1; }); }
unsigned int atomicDec(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return update(a, [v](unsigned int x) { return (x == 0 || x > v) ? v : x - 1; }); }
int atomicCAS(int* a, int c, int v) { EMBER_EMU_CHECK(a); __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c; }
unsigned int atomicCAS(unsigned int* a, unsigned int c, unsigned int v) { EMBER_EMU_CHECK(a); __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c; }
unsigned long long atomicCAS(unsigned long long* a, unsigned long long c, unsigned long long v) { EMBER_EMU_CHECK(a); __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c; }
int atomicAnd(int* a, int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }
unsigned int atomicAnd(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }
unsigned long long atomicAnd(unsigned long long* a, unsigned long long v) { EMBER_EMU_CHECK(a); return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }
int atomicOr(int* a, int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }
unsigned int atomicOr(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }
unsigned long long atomicOr(unsigned long long* a, unsigned long long v) { EMBER_EMU_CHECK(a); return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }
int atomicXor(int* a, int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }
unsigned int atomicXor(unsigned int* a, unsigned int v) { EMBER_EMU_CHECK(a); return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }
unsigned long long atomicXor(unsigned long long* a, unsigned long long v) { EMBER_EMU_CHECK(a); return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }

void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
