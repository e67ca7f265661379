// ember/core/profile.cpp — NVTX ranges (see profile.h); nothing at all without the nvtx3 headers.
#include "core/profile.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(EMBER_WITH_CUDA) && !defined(EMBER_CUDA_EMULATED) && defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define EMBER_HAVE_NVTX 1
#endif
#endif

namespace ember::profile {

namespace {
bool enabled_from_env() {
  const char* v = std::getenv("EMBER_NVTX");
  return v && *v && std::strcmp(v, "0") != 0;
}
std::atomic<bool> g_enabled{enabled_from_env()};
}  // namespace

#ifdef EMBER_HAVE_NVTX
bool nvtx_compiled() { return true; }
#else
bool nvtx_compiled() { return false; }
#endif

void set_nvtx_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }
bool nvtx_enabled() { return nvtx_compiled() && g_enabled.load(std::memory_order_relaxed); }

Range::Range(const char* name) {
#ifdef EMBER_HAVE_NVTX
  if (g_enabled.load(std::memory_order_relaxed)) {
    nvtxRangePushA(name);
    pushed_ = true;
  }
#else
  (void)name;
#endif
}

Range::~Range() {
#ifdef EMBER_HAVE_NVTX
  if (pushed_) nvtxRangePop();
#endif
}

}  // namespace ember::profile
