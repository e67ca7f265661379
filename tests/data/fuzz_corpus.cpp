// The fuzz targets (fuzz/targets/) in the normal suite: every target runs over its committed seed
// corpus (fuzz/corpus/<target>/) and over every input a fuzzer once found failing
// (fuzz/regressions/<target>/, each explained in fuzz/regressions/README.md), with the same
// property checks as under libFuzzer. So a bug a fuzzer found stays fixed without clang or
// libFuzzer, and a change that breaks a property on a known input fails here first.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fuzz/targets/common.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && it->path().filename().string()[0] != '.') out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs `target` over its corpus and its regressions; returns how many corpus files there were.
size_t replay(const std::string& target) {
  const ember::fuzz::Target* t = ember::fuzz::find_target(target);
  REQUIRE(t != nullptr);
  const fs::path root = EMBER_FUZZ_DIR;
  size_t corpus = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    for (const fs::path& file : files_in(root / kind / target)) {
      const ember::fuzz::Bytes input = ember::fuzz::read_file(file.string());
      INFO(kind << "/" << target << "/" << file.filename().string() << " (" << input.size() << " bytes)");
      try {
        t->run(input.data(), input.size());
      } catch (const std::exception& e) {
        FAIL_CHECK(e.what());
      }
      if (std::string(kind) == "corpus") ++corpus;
    }
  }
  return corpus;
}

}  // namespace

TEST_CASE("fuzz target idx: corpus and regressions", "[fuzz]") { CHECK(replay("idx") >= 5); }
TEST_CASE("fuzz target cifar10: corpus and regressions", "[fuzz]") { CHECK(replay("cifar10") >= 3); }
TEST_CASE("fuzz target image: corpus and regressions", "[fuzz]") { CHECK(replay("image") >= 10); }
TEST_CASE("fuzz target resize: corpus and regressions", "[fuzz]") { CHECK(replay("resize") >= 5); }
TEST_CASE("fuzz target image_cache: corpus and regressions", "[fuzz]") {
  CHECK(replay("image_cache") >= 2);
}
TEST_CASE("fuzz target safetensors: corpus and regressions", "[fuzz]") {
  CHECK(replay("safetensors") >= 3);
}
TEST_CASE("fuzz target cmdline: corpus and regressions", "[fuzz]") { CHECK(replay("cmdline") >= 5); }

TEST_CASE("every fuzz target has a seed corpus and a test here", "[fuzz]") {
  for (const ember::fuzz::Target& t : ember::fuzz::targets()) {
    INFO(t.name);
    CHECK(!files_in(fs::path(EMBER_FUZZ_DIR) / "corpus" / t.name).empty());
  }
  CHECK(ember::fuzz::targets().size() == 7);  // one TEST_CASE above per target
}
