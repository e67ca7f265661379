// bench/harness.cpp — the timing, machine header and table code shared by ember's benchmarks
// (see harness.h). The CUDA parts (events, the L2 flush) are compiled only with EMBER_WITH_CUDA;
// everything that describes the GPU goes through core/cuda.h, which answers "no GPU" in a
// CPU-only build, so this file needs no CUDA at all there.
#include "bench/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include <unistd.h>

#include "core/cuda.h"
#include "core/threading.h"
#include "kernels/base/error.h"

#ifdef EMBER_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace ember::bench {

namespace {

Timing summarize(std::vector<double> ms) {
  Timing t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  t.median_ms = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.runs = static_cast<int>(n);
  return t;
}

// "2026-11-22 00:52 UTC"
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

// A cell is printed right-aligned in a column of numbers. "Numbers" include what a numeric
// column also holds: "-", "n/a", "FAIL", "12.3%", "1.02x".
bool looks_numeric(const std::string& s) {
  if (s.empty() || s == "-" || s == "n/a" || s == "FAIL") return true;
  bool digit = false;
  for (const char c : s) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != '.' && c != '-' && c != '+' && c != '%' && c != 'x' && c != 'e' &&
               c != ' ') {
      return false;
    }
  }
  return digit;
}

#ifdef EMBER_WITH_CUDA
void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw DeviceError(std::string("bench harness: ") + what + " failed: " +
                      cudaGetErrorString(err));
  }
}

// A device buffer of twice the L2 size, one per device, kept for the whole program. Writing it
// all evicts whatever an earlier run left in L2, so every timed run reads its operands from HBM.
struct FlushBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};

FlushBuffer& flush_buffer(int device) {
  static std::vector<FlushBuffer> buffers;
  if (static_cast<int>(buffers.size()) <= device) buffers.resize(device + 1);
  FlushBuffer& b = buffers[device];
  if (b.ptr == nullptr) {
    int l2 = 0;
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
    b.bytes = std::max<size_t>(2 * static_cast<size_t>(l2), size_t{1} << 20);
    check(cudaMalloc(&b.ptr, b.bytes), "cudaMalloc(L2 flush buffer)");
  }
  return b;
}
#endif

}  // namespace

// ---- timing -----------------------------------------------------------------------------------

Timing time_cuda(const std::function<void()>& fn, int warmup, int runs, bool flush_l2) {
#ifndef EMBER_WITH_CUDA
  (void)fn, (void)warmup, (void)runs, (void)flush_l2;
  throw DeviceError(
      "bench::time_cuda: this build of ember has no CUDA backend: reconfigure with "
      "-DEMBER_CUDA=ON on a machine with the CUDA toolkit to time GPU kernels");
#else
  if (!cuda::is_available()) {
    throw DeviceError(std::string("bench::time_cuda: no usable GPU: ") +
                      cuda::unavailable_reason());
  }
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::string why;
  if (!cuda::device_supported(device, &why)) throw DeviceError("bench::time_cuda: " + why);
  const cudaStream_t stream = 0;  // ember's stream (kernels/cuda/launch.cuh)
  if (flush_l2) flush_buffer(device);  // cudaMalloc once, before anything is timed

  for (int i = 0; i < warmup; ++i) fn();
  check(cudaStreamSynchronize(stream), "synchronizing after the warm-up runs");

  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> ms;
  ms.reserve(std::max(runs, 0));
  try {
    for (int r = 0; r < runs; ++r) {
      if (flush_l2) {
        // Queued before the start event, so the flush is outside the timed region; the events
        // are in stream order, so the timed region begins only when the flush has finished.
        const FlushBuffer& b = flush_buffer(device);
        check(cudaMemsetAsync(b.ptr, r & 0xff, b.bytes, stream), "L2 flush (cudaMemsetAsync)");
      }
      check(cudaEventRecord(start, stream), "cudaEventRecord(start)");
      fn();
      check(cudaEventRecord(stop, stream), "cudaEventRecord(stop)");
      check(cudaEventSynchronize(stop), "waiting for the timed run (cudaEventSynchronize)");
      check(cudaGetLastError(), "the timed run");
      float elapsed = 0.0f;
      check(cudaEventElapsedTime(&elapsed, start, stop), "cudaEventElapsedTime");
      ms.push_back(elapsed);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return summarize(std::move(ms));
#endif
}

Timing time_host(const std::function<void()>& fn, int warmup, int runs) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  ms.reserve(std::max(runs, 0));
  for (int r = 0; r < runs; ++r) {
    const Clock::time_point t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return summarize(std::move(ms));
}

// ---- machine headers -----------------------------------------------------------------------

std::string gpu_header(int device) {
  std::ostringstream os;
  if (!cuda::is_built()) {
    os << "  gpu: none (ember was built without CUDA)\n  date: " << utc_now() << "\n";
    return os.str();
  }
  if (!cuda::is_available() || device < 0 || device >= cuda::device_count()) {
    os << "  gpu " << device << ": none ("
       << (cuda::is_available() ? "no such device" : cuda::unavailable_reason()) << ")\n"
       << "  ember built for sm: " << cuda::built_architectures() << "\n"
       << "  date: " << utc_now() << "\n";
    return os.str();
  }
  const cuda::DeviceProperties p = cuda::get_device_properties(device);
  const auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  };
  // Peak DRAM bandwidth: memory clock (kHz) x 2 (DDR) x bus width (bytes).
  const double peak_gbs =
      2.0 * p.memory_clock_rate_khz * 1e3 * (p.memory_bus_width / 8.0) / 1e9;
  os << "  gpu " << device << ": " << p.name << " (sm_" << p.major << p.minor << ", "
     << p.multiprocessor_count << " SMs, pci " << p.pci_bus_id << ")\n"
     << "  clocks: SM " << p.clock_rate_khz / 1000 << " MHz (max), memory "
     << p.memory_clock_rate_khz / 1000 << " MHz x " << p.memory_bus_width << " bit = "
     << fmt(peak_gbs, 0) << " GB/s peak\n"
     << "  memory: " << fmt(p.total_memory / double(1 << 30), 1) << " GiB, L2 "
     << fmt(p.l2_cache_size / double(1 << 20), 1) << " MiB, shared memory per block "
     << p.shared_memory_per_block / 1024 << " KiB\n"
     << "  driver: CUDA " << version(cuda::driver_version()) << ", runtime: CUDA "
     << version(cuda::runtime_version()) << ", ember built for sm: "
     << cuda::built_architectures() << "\n"
     << "  date: " << utc_now() << "\n";
  return os.str();
}

#ifndef EMBER_BENCH_NATIVE
#define EMBER_BENCH_NATIVE 0
#endif
constexpr bool kBuiltNative = EMBER_BENCH_NATIVE;

std::string cpu_header(int threads) {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        model = line.substr(colon + 1);
        model.erase(0, model.find_first_not_of(' '));
      }
      break;
    }
  }
  std::ostringstream os;
  os << "  cpu: " << model << ", " << std::thread::hardware_concurrency()
     << " logical cores; threads: " << threads << "; cpu kernels: " << get_cpu_isa()
     << (kBuiltNative ? " (build: -march=native)" : " (build: portable)") << "\n"
     << "  date: " << utc_now() << "\n";
  return os.str();
}

// ---- tables ------------------------------------------------------------------------------------

Table::Table(std::string title, std::vector<std::string> columns)
    : title_(std::move(title)), columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) {
    throw std::invalid_argument("Table '" + title_ + "': a row of " +
                                std::to_string(cells.size()) + " cells for " +
                                std::to_string(columns_.size()) + " columns");
  }
  rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& os) const {
  const size_t n = columns_.size();
  std::vector<size_t> width(n);
  std::vector<bool> right(n, true);
  for (size_t c = 0; c < n; ++c) {
    width[c] = columns_[c].size();
    for (const auto& row : rows_) {
      width[c] = std::max(width[c], row[c].size());
      if (!looks_numeric(row[c])) right[c] = false;
    }
    if (rows_.empty()) right[c] = false;
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < n; ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      out += "  ";
      out += right[c] ? pad + cells[c] : cells[c] + pad;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    os << out << "\n";
  };
  os << title_ << "\n";
  line(columns_);
  for (const auto& row : rows_) line(row);
}

std::string Table::to_json() const {
  std::ostringstream os;
  os << "{\"title\": " << json_escape(title_) << ", \"columns\": [";
  for (size_t c = 0; c < columns_.size(); ++c) os << (c ? ", " : "") << json_escape(columns_[c]);
  os << "], \"rows\": [";
  for (size_t r = 0; r < rows_.size(); ++r) {
    os << (r ? ",\n    [" : "\n    [");
    for (size_t c = 0; c < rows_[r].size(); ++c) {
      os << (c ? ", " : "") << json_escape(rows_[r][c]);
    }
    os << "]";
  }
  os << (rows_.empty() ? "]}" : "\n  ]}");
  return os.str();
}

void write_json(const std::string& path, const std::string& name, const std::string& header,
                const std::vector<Table>& tables) {
  std::ostringstream os;
  os << "{\"bench\": " << json_escape(name) << ",\n \"header\": " << json_escape(header)
     << ",\n \"tables\": [";
  for (size_t t = 0; t < tables.size(); ++t) os << (t ? ",\n  " : "\n  ") << tables[t].to_json();
  os << "\n ]}\n";

  // Written next to the target and renamed over it: a reader never sees half a file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("write_json: cannot open " + tmp + " for writing");
    f << os.str();
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw std::runtime_error("write_json: writing " + tmp + " failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("write_json: cannot rename " + tmp + " to " + path);
  }
}

std::string fmt(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::max(digits, 0), v);
  return buf;
}

}  // namespace ember::bench
