#include "kernels/cpu/parallel.h"

#include <cstdlib>
#include <thread>

#include <Eigen/Core>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace ember::kernels::cpu {

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

int& thread_count() {
  static int n = [] {
    const int t = initial_threads();
    Eigen::setNbThreads(t);
    return t;
  }();
  return n;
}
}  // namespace

int num_threads() { return thread_count(); }

void set_num_threads(int n) {
  if (n < 1) n = 1;
  thread_count() = n;
  Eigen::setNbThreads(n);
}

namespace detail {
void parallel_run(int64_t begin, int64_t end, int threads, void* ctx,
                  void (*fn)(void*, int64_t, int64_t)) {
  const int64_t n = end - begin;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int nt = omp_get_num_threads();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = begin + t * chunk;
    const int64_t e = std::min(end, b + chunk);
    if (b < e) fn(ctx, b, e);
  }
#else
  (void)threads;
  (void)n;
  fn(ctx, begin, end);
#endif
}
}  // namespace detail

}  // namespace ember::kernels::cpu
