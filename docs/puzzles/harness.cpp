// ember/docs/puzzles/harness.cpp — the checker of the GPU puzzles (docs/puzzles/README.md).
//
//   puzzles               runs every puzzle
//   puzzles 3 | map       runs one (several may be named)
//   puzzles --list        lists them with their budgets
//
// For each puzzle it turns on the emulator's memcheck, racecheck, synccheck and initcheck and its
// access counters (kernels/emulator/emulator.h), runs the puzzle (which launches its kernel and
// compares the output with its CPU reference), and prints what one thread did at most against the
// budget. A puzzle passes when the output matches, no checker reported, and every count is within
// budget. The exit status is 0 only when every selected puzzle passed.
//
// The same file, linked with the solutions (docs/puzzles/solutions/), is `puzzle_solutions`.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "docs/puzzles/puzzles.h"
#include "kernels/base/error.h"
#include "kernels/emulator/emulator.h"

namespace puzzles {

namespace {

// The output differs from the reference.
struct Mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}

std::string index_name(const std::string& name, size_t i, int cols) {
  if (cols > 0)
    return name + "[" + std::to_string(i / cols) + "][" + std::to_string(i % cols) + "]";
  return name + "[" + std::to_string(i) + "]";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.7g", v);
  return buf;
}

template <typename T, typename Same>
void compare(const std::string& name, const T* device, const std::vector<T>& expected, int cols,
             Same same) {
  std::vector<T> got(expected.size());
  cuda_check(cudaMemcpy(got.data(), device, got.size() * sizeof(T), cudaMemcpyDeviceToHost),
             "copying the output back");
  size_t first = got.size(), wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (same(got[i], expected[i])) continue;
    if (wrong++ == 0) first = i;
  }
  if (wrong == 0) return;
  throw Mismatch(index_name(name, first, cols) + " expected " + number(expected[first]) + ", got " +
                 number(got[first]) + " (" + std::to_string(wrong) + " of " +
                 std::to_string(got.size()) + " elements differ)");
}

std::vector<Puzzle>& registry() {
  static std::vector<Puzzle> puzzles;
  return puzzles;
}

}  // namespace

Run::~Run() {
  for (void* p : blocks_) cudaFree(p);
}

void* Run::allocate(size_t bytes) {
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc");
  blocks_.push_back(p);
  return p;
}

float* Run::to_device(const std::vector<float>& host) {
  auto* p = static_cast<float*>(allocate(host.size() * sizeof(float)));
  cuda_check(cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
             "copying an input");
  return p;
}
int* Run::to_device(const std::vector<int>& host) {
  auto* p = static_cast<int*>(allocate(host.size() * sizeof(int)));
  cuda_check(cudaMemcpy(p, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice),
             "copying an input");
  return p;
}
float* Run::zeros(size_t n) {
  auto* p = static_cast<float*>(allocate(n * sizeof(float)));
  cuda_check(cudaMemset(p, 0, n * sizeof(float)), "cudaMemset");
  return p;
}
int* Run::zeros_int(size_t n) {
  auto* p = static_cast<int*>(allocate(n * sizeof(int)));
  cuda_check(cudaMemset(p, 0, n * sizeof(int)), "cudaMemset");
  return p;
}

void Run::expect(const std::string& name, const float* device, const std::vector<float>& expected,
                 float tol, int cols) {
  compare(name, device, expected, cols, [tol](float g, float e) {
    if (std::isnan(g) || std::isnan(e)) return false;
    if (tol == 0) return g == e;
    return std::fabs(g - e) <= tol * std::max(1.0f, std::fabs(e));
  });
}
void Run::expect(const std::string& name, const int* device, const std::vector<int>& expected,
                 int cols) {
  compare(name, device, expected, cols, [](int g, int e) { return g == e; });
}

int add(int number, const char* name, const char* idea, const char* launch, Budget budget,
        void (*run)(Run&)) {
  registry().push_back(Puzzle{number, name, idea, launch, budget, run});
  return static_cast<int>(registry().size());
}

const std::vector<Puzzle>& all() {
  std::vector<Puzzle>& r = registry();
  std::sort(r.begin(), r.end(),
            [](const Puzzle& a, const Puzzle& b) { return a.number < b.number; });
  return r;
}

}  // namespace puzzles

namespace {

using puzzles::Puzzle;

std::string label(const Puzzle& p) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "puzzle %02d %s", p.number, p.name);
  return buf;
}

// The message, indented, with the checkout's path left out of its file names (the launch site
// comes with the absolute path the compiler was given).
std::string indent(std::string text, const char* pad) {
#ifdef EMBER_PUZZLES_SOURCE_DIR
  const std::string root = EMBER_PUZZLES_SOURCE_DIR "/";
  for (size_t p = text.find(root); p != std::string::npos; p = text.find(root, p))
    text.erase(p, root.size());
#endif
  std::string out = pad;
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

// Runs one puzzle and prints its report; true when it passed.
bool check(const Puzzle& p) {
  std::printf("%s: %s\n", label(p).c_str(), p.idea);
  std::printf("  launch: %s\n", p.launch);
  std::fflush(stdout);
  std::string failure;
  bool stopped = false;
  ember::emu::set_checks(ember::emu::kMemcheck | ember::emu::kRacecheck | ember::emu::kSynccheck |
                         ember::emu::kInitcheck);
  ember::emu::set_access_counting(true);
  try {
    puzzles::Run run;
    p.run(run);
  } catch (const puzzles::Mismatch& e) {
    failure = e.what();
  } catch (const ember::Error& e) {
    // A checker stopped the kernel: EMBER_LAUNCH_CHECK raised the launch's error, and its
    // message carries the emulator's report.
    failure = "a checker stopped the kernel:\n" + indent(e.what(), "    ");
    stopped = true;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const ember::emu::AccessCounts c = ember::emu::access_counts();
  ember::emu::set_access_counting(false);

  struct Row {
    const char* kind;
    int64_t seen, budget;
  };
  const Row rows[] = {{"global reads", c.global_reads.max_per_thread, p.budget.global_reads},
                      {"global writes", c.global_writes.max_per_thread, p.budget.global_writes},
                      {"shared reads", c.shared_reads.max_per_thread, p.budget.shared_reads},
                      {"shared writes", c.shared_writes.max_per_thread, p.budget.shared_writes}};
  std::string over;
  if (stopped) {
    // The stopped block's threads made only some of their accesses: nothing to hold to a budget.
    std::printf("%s: %s\n\n", label(p).c_str(), failure.c_str());
    return false;
  }
  std::printf("  %-14s %22s %7s\n", "kind", "seen per thread (max)", "budget");
  for (const Row& r : rows) {
    const bool ok = r.seen <= r.budget;
    std::printf("  %-14s %22lld %7lld  %s\n", r.kind, static_cast<long long>(r.seen),
                static_cast<long long>(r.budget), ok ? "ok" : "OVER");
    if (!ok) {
      over += std::string(over.empty() ? "" : "; ") + r.kind + ": " + std::to_string(r.seen) +
              " per thread, budget " + std::to_string(r.budget);
    }
  }
  if (!over.empty()) failure += failure.empty() ? "over budget: " + over : " (and over budget)";
  if (failure.empty()) {
    std::printf("%s: passed\n\n", label(p).c_str());
    return true;
  }
  std::printf("%s: %s\n\n", label(p).c_str(), failure.c_str());
  return false;
}

void list() {
  std::printf("%-4s %-12s %-46s %7s %7s %7s %7s\n", "#", "name", "idea", "g.read", "g.write",
              "s.read", "s.write");
  for (const Puzzle& p : puzzles::all()) {
    const puzzles::Budget& b = p.budget;
    std::printf("%02d   %-12s %-46s %7lld %7lld %7lld %7lld\n", p.number, p.name, p.idea,
                static_cast<long long>(b.global_reads), static_cast<long long>(b.global_writes),
                static_cast<long long>(b.shared_reads), static_cast<long long>(b.shared_writes));
  }
  std::printf("(budgets: the most accesses one CUDA thread may make, per kind)\n");
}

void usage(const char* argv0) {
  std::printf(
      "usage: %s [--list] [PUZZLE...]\n"
      "  GPU puzzles for ember's CUDA emulator (docs/puzzles/README.md). With no PUZZLE, runs\n"
      "  them all; a PUZZLE is a number (3, 03) or a name (map). Each runs under memcheck,\n"
      "  racecheck, synccheck and initcheck, is compared with its CPU reference, and its memory\n"
      "  accesses per thread are held to its budget.\n"
      "  --list   the puzzles, their ideas and budgets\n"
      "  --help   this text\n"
      "Exit status: 0 when every selected puzzle passed, 1 when one failed, 2 on bad usage.\n",
      argv0);
}

}  // namespace

int main(int argc, char** argv) {
  // The harness prints a checker's report as the puzzle's failure; the emulator need not print
  // it to stderr as well.
  setenv("EMBER_EMULATOR_QUIET", "1", 0);
  std::vector<const Puzzle*> selected;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(argv[0]);
      return 0;
    }
    if (a == "--list") {
      list();
      return 0;
    }
    const Puzzle* found = nullptr;
    for (const Puzzle& p : puzzles::all()) {
      const bool digits = !a.empty() && a.find_first_not_of("0123456789") == std::string::npos;
      if ((digits && std::atoi(a.c_str()) == p.number) || a == p.name) found = &p;
    }
    if (found == nullptr) {
      std::fprintf(stderr, "puzzles: no puzzle \"%s\" (puzzles --list shows them)\n", a.c_str());
      return 2;
    }
    selected.push_back(found);
  }
  if (selected.empty())
    for (const Puzzle& p : puzzles::all()) selected.push_back(&p);
  if (!ember::emu::instrumented()) {
    std::fprintf(stderr, "puzzles: the kernels were compiled without the emulator's access hooks "
                         "(EMBER_EMULATOR_INSTRUMENT=OFF), so nothing can be counted or checked\n");
    return 2;
  }

  std::vector<std::string> failed;
  for (const Puzzle* p : selected)
    if (!check(*p)) failed.push_back(label(*p).substr(7));
  const size_t passed = selected.size() - failed.size();
  std::printf("puzzles: %zu of %zu passed", passed, selected.size());
  if (!failed.empty()) {
    std::printf("; failed:");
    for (size_t i = 0; i < failed.size(); ++i)
      std::printf("%s %s", i ? "," : "", failed[i].c_str());
  }
  std::printf("\n");
  return failed.empty() ? 0 : 1;
}
