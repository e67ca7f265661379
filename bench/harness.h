#pragma once
// The benchmark harness every ember bench program uses: timing (CUDA events with an L2 flush, or
// host wall time), the lines that describe the machine, and tables that print aligned and also
// serialize to JSON. A benchmark is a program, not a test: warm up, time several runs, report the
// median, and put the reference (cuBLAS, Eigen, PyTorch) in the same table from the same run.
//
// The CUDA parts exist only in a build with EMBER_WITH_CUDA; in a CPU-only build time_cuda throws
// ember::DeviceError saying so, and gpu_header says there is no GPU.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace ember::bench {

// Summary of a set of timed runs, in milliseconds.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

// GPU work enqueued by fn on ember's stream (stream 0), timed with cudaEvents around each run;
// `warmup` untimed runs first; before each timed run the L2 cache is flushed by writing a buffer of
// 2x the L2 size (outside the timed region), so every run starts with cold caches as it would in a
// training step that touched other tensors in between. Returns the median etc.
// Throws ember::DeviceError when ember was built without CUDA or no GPU is present.
Timing time_cuda(const std::function<void()>& fn, int warmup = 3, int runs = 20,
                 bool flush_l2 = true);

// Host wall time (std::chrono::steady_clock) of fn, which must finish its work (synchronize itself
// if it enqueues GPU work).
Timing time_host(const std::function<void()>& fn, int warmup = 1, int runs = 5);

// Lines describing the machine: GPU name, sm, SM count, clocks, memory, driver and runtime
// versions, ember's built archs, date; or the CPU model and thread count for CPU benches.
// gpu_header never throws: without CUDA or a GPU it says so in its text.
std::string gpu_header(int device = 0);
std::string cpu_header(int threads);

// A table printed with aligned columns and also serializable to JSON.
class Table {
 public:
  Table(std::string title, std::vector<std::string> columns);
  // Throws std::invalid_argument when the row does not have one cell per column.
  void add_row(std::vector<std::string> cells);
  void print(std::ostream& os) const;
  std::string to_json() const;  // {"title":..., "columns":[...], "rows":[[...],...]}

  const std::string& title() const { return title_; }
  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

 private:
  std::string title_;
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Writes {"bench": name, "header": header, "tables": [...]} to path atomically (temp + rename).
// Throws std::runtime_error when the file cannot be written.
void write_json(const std::string& path, const std::string& name, const std::string& header,
                const std::vector<Table>& tables);

// Fixed-point formatting helper: fmt(3.14159, 2) == "3.14".
std::string fmt(double v, int digits = 1);

}  // namespace ember::bench
