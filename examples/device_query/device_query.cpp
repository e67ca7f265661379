// examples/device_query — seed 000's check that "CUDA works": the CUDA samples' deviceQuery,
// done through ember's own runtime API (core/cuda.h) instead of the CUDA runtime directly.
//
// For every visible device it prints the name, compute capability, memory, SM count, clocks,
// memory bus, L2 cache, the driver and runtime versions — and what deviceQuery cannot tell you:
// whether this build of ember carries code for that GPU (and, if not, the CMake flag to rebuild
// with; seed 001's "GPU too old" case, answered before training starts instead of during it).
//
//   device_query
//
// A machine without a GPU, or a CPU-only build of ember, is not an error here: the program says
// which it is and exits 0, so it doubles as a quick "what will ember use?" check. Which devices
// are visible follows CUDA_VISIBLE_DEVICES, as in PyTorch (seed 004).
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "core/ember.h"

using namespace ember;

namespace {

// 13000 -> "13.0", as CUDA encodes versions (1000 * major + 10 * minor).
std::string version_str(int v) {
  if (v <= 0) return "unknown";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string mhz(int khz) {
  if (khz <= 0) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f MHz (%.2f GHz)", khz / 1e3, khz / 1e6);
  return buf;
}

std::string mebibytes(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f MiB (%zu bytes)", static_cast<double>(bytes) / (1 << 20),
                bytes);
  return buf;
}

void row(const char* label, const std::string& value) {
  std::printf("  %-46s %s\n", label, value.c_str());
}

void print_device(int index) {
  const cuda::DeviceProperties p = cuda::get_device_properties(index);
  std::printf("\nDevice %d: \"%s\"\n", index, p.name.c_str());
  row("CUDA driver version / runtime version:",
      version_str(cuda::driver_version()) + " / " + version_str(cuda::runtime_version()));
  row("CUDA capability major/minor version number:",
      std::to_string(p.major) + "." + std::to_string(p.minor) + " (sm_" +
          std::to_string(p.major) + std::to_string(p.minor) + ")");
  row("Total amount of global memory:", mebibytes(p.total_memory));
  row("Multiprocessors (SMs):", std::to_string(p.multiprocessor_count));
  row("GPU max clock rate:", mhz(p.clock_rate_khz));
  row("Memory clock rate:", mhz(p.memory_clock_rate_khz));
  row("Memory bus width:", std::to_string(p.memory_bus_width) + "-bit");
  if (p.memory_clock_rate_khz > 0 && p.memory_bus_width > 0) {
    // Two transfers per memory clock (double data rate), bus width bits per transfer: the peak
    // that ember's bandwidth-bound kernels (elementwise ops, reductions) are measured against.
    const double gbs = 2.0 * p.memory_clock_rate_khz * 1e3 * (p.memory_bus_width / 8.0) / 1e9;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f GB/s", gbs);
    row("Peak memory bandwidth (theoretical):", buf);
  }
  row("L2 cache size:", std::to_string(p.l2_cache_size) + " bytes");
  row("Shared memory per block:", std::to_string(p.shared_memory_per_block) + " bytes");
  row("Maximum threads per block:", std::to_string(p.max_threads_per_block));
  row("Warp size:", std::to_string(p.warp_size));
  if (!p.pci_bus_id.empty()) row("PCI bus id:", p.pci_bus_id);
  std::string why;
  const bool ok = cuda::device_supported(index, &why);
  row("Can this build of ember run on it:",
      ok ? std::string("yes (built for ") + cuda::built_architectures() + ")" : "NO");
  if (!ok) std::printf("    %s\n", why.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: list the visible CUDA devices (seed 000's deviceQuery) and whether this "
               "build of ember can use them"};
  CLI11_PARSE(app, argc, argv);

  std::printf("device_query (ember's deviceQuery)\n");
  if (!cuda::is_built()) {
    std::printf("%s\n", cuda::unavailable_reason());  // "ember was built without CUDA (...)"
    std::printf("Result = no CUDA in this build (ember runs on the CPU)\n");
    return 0;
  }
  if (!cuda::is_available()) {
    std::printf("No usable CUDA device: %s\n", cuda::unavailable_reason());
    std::printf("Result = no GPU (ember runs on the CPU)\n");
    return 0;
  }

  try {
    const int count = cuda::device_count();
    std::printf("Detected %d CUDA capable device(s)\n", count);
    int supported = 0;
    for (int i = 0; i < count; ++i) {
      print_device(i);
      if (cuda::device_supported(i)) ++supported;
    }
    std::printf("\nCUDA driver %s, CUDA runtime %s, ember built for %s, %d device(s), %d usable\n",
                version_str(cuda::driver_version()).c_str(),
                version_str(cuda::runtime_version()).c_str(), cuda::built_architectures(), count,
                supported);
    std::printf("Result = %s\n", supported > 0 ? "PASS" : "no device this build can use");
  } catch (const Error& e) {
    std::fprintf(stderr, "device_query: %s\n", e.what());
    return 1;
  }
  return 0;
}
