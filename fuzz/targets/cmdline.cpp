// fuzz/targets/cmdline.cpp — the command lines of the training examples. Each example's source is
// compiled into this library with its main() renamed (fuzz/CMakeLists.txt), so the real flag
// definitions, checks and start-up run: CLI11's parsing, the thread count, the device choice, the
// seed. --data always names an empty folder, so a command line that gets that far stops at the
// data ("no such file", "no class folders") instead of training.
//
// Input: byte 0 picks the example (mnist_mlp, cifar10_cnn, cats_vs_dogs), the rest is the
// arguments, one per line.
//
// Properties: every command line ends in a return from main (no crash, no exit(), no uncaught
// exception) with a status the example documents: 0 only for the help, 1 or 2 with a line on stderr
// saying why, or one of CLI11's "bad flag" statuses (104..114 but 112) with its message; and it
// leaves the library usable (the thread count is put back afterwards, as a new process would
// have it).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "core/ember.h"
#include "fuzz/targets/common.h"

int mnist_mlp_main(int argc, char** argv);
int cifar10_cnn_main(int argc, char** argv);
int cats_vs_dogs_main(int argc, char** argv);

namespace ember::fuzz {

namespace {

struct Example {
  const char* name;
  int (*main)(int, char**);
};

const Example kExamples[] = {
    {"mnist_mlp", mnist_mlp_main},
    {"cifar10_cnn", cifar10_cnn_main},
    {"cats_vs_dogs", cats_vs_dogs_main},
};

// Sends stdout and stderr to a memory file while alive; text() is what was written.
class Capture {
 public:
  Capture() : file_("cmdline_output") {
    std::fflush(stdout);
    std::fflush(stderr);
    std::cout.flush();
    std::cerr.flush();
    saved_out_ = ::dup(1);
    saved_err_ = ::dup(2);
    const int fd = ::open(file_.path().c_str(), O_WRONLY);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~Capture() { restore(); }
  std::string text() {
    restore();
    const Bytes b = read_file(file_.path());
    return std::string(b.begin(), b.end());
  }

 private:
  void restore() {
    if (saved_out_ < 0) return;
    std::cout.flush();
    std::cerr.flush();
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out_, 1);
    ::dup2(saved_err_, 2);
    ::close(saved_out_);
    ::close(saved_err_);
    saved_out_ = saved_err_ = -1;
  }
  MemFile file_;
  int saved_out_ = -1, saved_err_ = -1;
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

void cmdline(const uint8_t* data, size_t n) {
  if (n < 1) return;
  const Example& ex = kExamples[data[0] % 3];
  static const std::string empty_data = [] {
    const std::string d = scratch_dir() + "/cmdline_empty_data";
    std::filesystem::create_directories(d);
    return d;
  }();
  static const int default_threads = get_num_threads();

  std::vector<std::string> args = {ex.name};
  const std::vector<std::string> given = split(data + 1, n - 1, '\n');
  for (size_t i = 0; i < given.size() && args.size() < 40; ++i) {
    const std::string& a = given[i];
    if (a == "--data") {  // its value too: the data is always the empty folder
      ++i;
      continue;
    }
    if (a.rfind("--data=", 0) == 0) continue;
    args.push_back(a);
  }
  args.push_back("--data");
  args.push_back(empty_data);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int rc = 0;
  std::string output;
  {
    Capture capture;
    try {
      rc = ex.main(static_cast<int>(args.size()), argv.data());
    } catch (...) {
      output = capture.text();
      set_num_threads(default_threads);
      throw;  // the driver reports it: an example must not let an exception out of main
    }
    output = capture.text();
  }
  set_num_threads(default_threads);
  const std::string context = std::string(ex.name) + " returned " + std::to_string(rc) + ":\n" + output;
  const bool cli11_error = rc >= 104 && rc <= 114 && rc != 112;
  FUZZ_CHECK(rc == 0 || rc == 1 || rc == 2 || cli11_error, context);
  // Status 0 means CLI11 printed the help (asked for with -h or --help, also inside a cluster of
  // short flags such as -hv) and nothing else happened.
  if (rc == 0) {
    FUZZ_CHECK(has(output, std::string("Usage: ") + ex.name) && has(output, "--data"),
               "status 0 without the help: " + context);
  }
  if (rc == 1 || rc == 2) FUZZ_CHECK(has(output, std::string(ex.name) + ": "), "no reason given: " + context);
  if (cli11_error) FUZZ_CHECK(output.find_first_not_of(" \n") != std::string::npos, "no message: " + context);
}

}  // namespace ember::fuzz
