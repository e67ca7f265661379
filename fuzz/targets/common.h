// fuzz/targets/common.h — what the fuzz targets share: the property check, an in-memory file for
// readers that take a path, a scratch folder, and the target registry.
//
// A target is a function of one input (bytes). It runs ember's code on the input and checks a
// property of the result — not only that nothing crashed — with FUZZ_CHECK. The same functions
// run under libFuzzer (fuzz/driver.cpp: a failed property aborts, so libFuzzer saves the input)
// and in the normal test suite (tests/data/fuzz_corpus.cpp replays the committed corpora and every
// input that once failed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember::fuzz {

using Bytes = std::vector<uint8_t>;

// A property that does not hold for an input.
class PropertyFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void property_failed(const char* file, int line, const std::string& what);

#define FUZZ_CHECK(cond, message)                                                          \
  do {                                                                                      \
    if (!(cond)) ::ember::fuzz::property_failed(__FILE__, __LINE__, #cond ": " + std::string(message)); \
  } while (0)

// A file that lives in memory (memfd_create): readers that take a path read it through
// /proc/self/fd/N, so a fuzz input reaches them without touching the disk.
class MemFile {
 public:
  explicit MemFile(const char* name);
  ~MemFile();
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  void assign(const uint8_t* data, size_t n);  // the file's whole content
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A folder for the targets that need real files, made once per process (in /dev/shm when there is
// one, a RAM disk) and removed at exit.
const std::string& scratch_dir();

// Writes `bytes` to `path` (whole file); throws std::runtime_error if it cannot.
void write_file(const std::string& path, const uint8_t* data, size_t n);
Bytes read_file(const std::string& path);

// Splits an input into fields at each `separator` byte (the command-line target's arguments).
std::vector<std::string> split(const uint8_t* data, size_t n, char separator);

// The targets, by name: fuzz_<name> is its libFuzzer program, fuzz/corpus/<name>/ its seeds,
// fuzz/regressions/<name>/ the inputs that once failed.
struct Target {
  const char* name;
  void (*run)(const uint8_t* data, size_t n);
  const char* what;  // one line for scripts/fuzz --list
};
const std::vector<Target>& targets();
const Target* find_target(const std::string& name);

void idx(const uint8_t* data, size_t n);
void cifar10(const uint8_t* data, size_t n);
void image(const uint8_t* data, size_t n);
void resize(const uint8_t* data, size_t n);
void image_cache(const uint8_t* data, size_t n);
void safetensors(const uint8_t* data, size_t n);
void cmdline(const uint8_t* data, size_t n);

// A valid cache file for image_cache's folder (the seed corpus starts from it).
Bytes image_cache_seed();

}  // namespace ember::fuzz
