// The layers of the library, checked on every source file and header (issue 24). Bottom up:
//
//   kernels/base      the C++ library only
//   kernels/emulator  kernels/base (and Boost.Context)
//   kernels           kernels/ (the family headers kernels/*.h, cpu/, cuda/); a family header
//                     never includes a backend, and neither backend includes the other's files
//                     (the CUDA kernels may ask the emulator, their runtime in emulation builds)
//   core              kernels/base and the family headers kernels/*.h, never a backend's files
//   nn, data          kernels/base, core
//   optim             kernels/base, the family headers, core, nn
//   distributed       kernels/base, core, nn, optim, data
//
// The build enforces the same rules for the compiled layers (CMakeLists.txt compiles each layer
// against a folder of links to what it may see); this test also covers headers that no .cpp of
// their own layer includes, and distributed/. The last test case feeds the checker one include
// of each forbidden kind, so the checker cannot silently go lenient.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = EMBER_SOURCE_DIR;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// A family header: a file directly in kernels/ (kernels/reduce.h, kernels/backend.h, ...).
bool is_family_header(const std::string& inc) {
  return starts_with(inc, "kernels/") && inc.find('/', 8) == std::string::npos;
}

// The room of a file, by the longest rule that matches its path.
std::string room_of(const std::string& file) {
  for (const char* room : {"kernels/base/", "kernels/emulator/", "kernels/cpu/", "kernels/cuda/"})
    if (starts_with(file, room)) return std::string(room, std::string(room).size() - 1);
  for (const char* room : {"kernels/", "core/", "nn/", "optim/", "data/", "distributed/"})
    if (starts_with(file, room)) return std::string(room, std::string(room).size() - 1);
  return "";
}

// Why `file` may not include `inc` (a quoted include with a '/'), or "" when it may.
std::string violation(const std::string& file, const std::string& inc) {
  const std::string room = room_of(file);
  const bool base = starts_with(inc, "kernels/base/");
  const bool family = is_family_header(inc);
  auto in = [&](std::initializer_list<const char*> prefixes) {
    for (const char* p : prefixes)
      if (starts_with(inc, p)) return true;
    return false;
  };
  if (room == "kernels/base")
    return base ? "" : "kernels/base is the bottom layer: it includes the C++ library only";
  if (room == "kernels/emulator")
    return base || in({"kernels/emulator/"}) ? "" : "the emulator sees kernels/base only";
  if (room == "kernels")  // a family header
    return base || family ? "" : "a family header names no backend: the backends include it";
  if (room == "kernels/cpu")
    return base || family || in({"kernels/cpu/"})
               ? ""
               : "the CPU kernels see kernels/ only, and no CUDA file";
  if (room == "kernels/cuda")
    return base || family || in({"kernels/cuda/", "kernels/emulator/"})
               ? ""
               : "the CUDA kernels see kernels/ (and, emulated, the emulator) only, and no CPU "
                 "file";
  if (room == "core")
    return base || family || in({"core/"})
               ? ""
               : "core reaches the kernels through the family headers kernels/*.h only";
  if (room == "nn") return base || in({"core/", "nn/"}) ? "" : "nn sees kernels/base and core";
  if (room == "data")
    return base || in({"core/", "data/"}) ? "" : "data sees kernels/base and core";
  if (room == "optim")
    return base || family || in({"core/", "nn/", "optim/"})
               ? ""
               : "optim sees kernels/base, the family headers, core and nn (never data/)";
  if (room == "distributed")
    return base || in({"core/", "nn/", "optim/", "data/", "distributed/"})
               ? ""
               : "distributed sees kernels/base, core, nn, optim and data";
  return "";
}

struct Finding {
  std::string where, what;
};

// Every quoted include of one file that crosses a layer the wrong way.
std::vector<Finding> check_file(const std::string& rel, std::istream& in) {
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<Finding> found;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    if (!std::regex_search(line, m, include_re)) continue;
    const std::string inc = m[1];
    if (inc.find('/') == std::string::npos) continue;  // a sibling, or a generated header
    const std::string why = violation(rel, inc);
    if (!why.empty())
      found.push_back({rel + ":" + std::to_string(n), "includes \"" + inc + "\": " + why});
  }
  return found;
}

}  // namespace

TEST_CASE("no include crosses a layer upward", "[layers]") {
  std::vector<Finding> found;
  int files = 0;
  for (const char* top : {"kernels", "core", "nn", "optim", "data", "distributed"}) {
    REQUIRE(fs::is_directory(kRoot / top));
    for (const auto& entry : fs::recursive_directory_iterator(kRoot / top)) {
      if (!entry.is_regular_file()) continue;
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh") continue;
      const std::string rel = fs::relative(entry.path(), kRoot).generic_string();
      std::ifstream in(entry.path());
      for (Finding& f : check_file(rel, in)) found.push_back(std::move(f));
      ++files;
    }
  }
  INFO("checked " << files << " files");
  CHECK(files > 150);
  for (const Finding& f : found) UNSCOPED_INFO(f.where << ": " << f.what);
  CHECK(found.empty());
}

TEST_CASE("the layer check reports every kind of upward include", "[layers]") {
  struct Case {
    const char* file;
    const char* include;
  };
  const Case bad[] = {
      {"kernels/base/dtype.h", "kernels/loop.h"},             // base reaching up
      {"kernels/cpu/reduce.cpp", "core/tensor.h"},            // a kernel reaching core
      {"kernels/cpu/reduce.cpp", "kernels/cuda/launch.cuh"},  // one backend into the other
      {"kernels/cuda/conv.cu", "kernels/cpu/conv.h"},
      {"kernels/reduce.h", "kernels/cpu/reduce.h"},  // a family header naming a backend
      {"kernels/emulator/runtime.cpp", "kernels/cuda/launch.cuh"},
      {"core/ops/sum.cpp", "kernels/cpu/reduce.h"},  // an op card past the seam
      {"core/tensor.cpp", "nn/module.h"},
      {"nn/linear.cpp", "optim/sgd.h"},
      {"nn/linear.cpp", "kernels/reduce.h"},
      {"optim/checkpoint.h", "data/dataloader.h"},  // the checkpoint's old include
      {"optim/adam.h", "kernels/cpu/optim.h"},
      {"data/dataloader.cpp", "kernels/cpu/parallel.h"},
      {"distributed/backend.h", "examples/common/run_tools.h"},
  };
  for (const Case& c : bad) {
    std::istringstream in(std::string("#include <vector>\n#include \"") + c.include + "\"\n");
    INFO(c.file << " including " << c.include);
    const std::vector<Finding> found = check_file(c.file, in);
    REQUIRE(found.size() == 1);
    CHECK(found[0].where == std::string(c.file) + ":2");
  }
  const Case good[] = {
      {"kernels/cpu/reduce.cpp", "kernels/reduce.h"},
      {"kernels/cuda/conv.cu", "kernels/cuda/conv_internal.cuh"},
      {"core/ops/sum.cpp", "kernels/reduce.h"},
      {"core/tensor.h", "kernels/base/dtype.h"},
      {"optim/sgd.cpp", "kernels/optim.h"},
      {"distributed/process_group.cpp", "optim/optimizer.h"},
  };
  for (const Case& c : good) {
    std::istringstream in(std::string("#include \"") + c.include + "\"\n");
    INFO(c.file << " including " << c.include);
    CHECK(check_file(c.file, in).empty());
  }
}
