// ember/docs/puzzles/puzzles.h — what a puzzle file (docs/puzzles/NN_name.cu) and the checker
// (harness.cpp) share: a puzzle's description and traffic budget, and Run, the few calls a
// puzzle's host code makes to put arrays on the device, launch, and compare with its reference.
//
// The puzzles are CUDA files compiled for the emulator (docs/emulator.md), so this header uses
// nothing but the standard library: the same text would build with nvcc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace puzzles {

// The most memory accesses one CUDA thread may make, per kind, as the emulator counts them
// (kernels/emulator/emulator.h, set_access_counting): one load or store instruction is one access,
// a thread's own variables and the kernel's parameters are registers and do not count.
struct Budget {
  int64_t global_reads = 0, global_writes = 0, shared_reads = 0, shared_writes = 0;
};

// What a puzzle's run() gets from the checker: device memory that lives until the puzzle ends,
// and the comparison with the CPU reference.
class Run {
 public:
  Run() = default;
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  ~Run();

  // A device copy of a host array (an input).
  float* to_device(const std::vector<float>& host);
  int* to_device(const std::vector<int>& host);
  // n zeros on the device (an output: what a kernel that writes nothing leaves behind).
  float* zeros(size_t n);
  int* zeros_int(size_t n);

  // Copies `device` (expected.size() elements) back and compares it with the reference. The
  // first difference ends the puzzle with "name[i] expected E, got G" (name[r][c] when `cols`
  // says the array is a matrix of that many columns). Floats match when |got - expected| <= tol
  // * max(1, |expected|); tol = 0 asks for the exact value. NaN never matches.
  void expect(const std::string& name, const float* device, const std::vector<float>& expected,
              float tol = 0, int cols = 0);
  void expect(const std::string& name, const int* device, const std::vector<int>& expected,
              int cols = 0);

 private:
  void* allocate(size_t bytes);
  std::vector<void*> blocks_;
};

struct Puzzle {
  int number = 0;
  const char* name = "";    // "map": what `puzzles map` selects
  const char* idea = "";    // the one new idea, in a few words
  const char* launch = "";  // the launch configuration the puzzle fixes
  Budget budget;
  void (*run)(Run&) = nullptr;  // makes the inputs, launches the kernel, checks the output
};

// Registers a puzzle (each puzzle file does, at start-up); the checker lists them by number.
int add(int number, const char* name, const char* idea, const char* launch, Budget budget,
        void (*run)(Run&));
const std::vector<Puzzle>& all();

}  // namespace puzzles
