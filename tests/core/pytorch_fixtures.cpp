// ember against PyTorch: every case in tests/fixtures/ops.txt (written by
// tests/fixtures/make_fixtures.py with PyTorch 1.13) is run through the matching ember op, and
// the outputs and the gradients of sum(output0 * weight) must match the reference values.
//
// gradcheck proves that each backward agrees with its own forward; these fixtures prove that the
// forward means what PyTorch means (broadcasting, reduction, ignore_index, clamping of slices...).
// The file format is described at the top of make_fixtures.py; the parser and the ember call
// for each op are shared with the differential suite (tests/fixture_file.cpp). No Python needed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/ember.h"
#include "fixture_file.h"

using namespace ember;

namespace {

using namespace ember::test;

const char* const kRegenerate = "/usr/bin/python3 tests/fixtures/make_fixtures.py";

// Tolerances: |got - want| <= rtol * (|want| + kFloor). The floor keeps values that cancel to
// ~0 (a sum of +-1 terms) from demanding a relative precision no summation order could give.
constexpr double kOutputRtol64 = 1e-10;
constexpr double kGradRtol64 = 1e-9;
constexpr double kRtol32 = 1e-6;
constexpr double kFloor = 1e-3;

const FixtureFile& fixtures() { return load_fixtures("ops.txt", kRegenerate); }

// ---- comparing ----------------------------------------------------------------------------------

// "" when `got` matches the reference; otherwise what differs, for the failure message.
std::string compare(const Tensor& got, const FixtureTensor& want, double rtol64) {
  std::ostringstream os;
  os.precision(17);
  if (!got.defined()) return "ember returned an undefined tensor";
  if (dtype_name(got.dtype()) != want.dtype)
    os << "dtype " << dtype_name(got.dtype()) << ", expected " << want.dtype << "; ";
  if (got.shape() != want.shape) {
    os << "shape " << shape_str(got.shape()) << ", expected " << shape_str(want.shape);
    return os.str();
  }
  const std::vector<double> g = got.to_vector<double>();
  const bool exact = want.dtype == "int64" || want.dtype == "bool";
  const double rtol = want.dtype == "float32" ? kRtol32 : rtol64;
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = want.values[i];
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g[i]);
    else if (exact) ok = g[i] == w;
    else ok = std::fabs(g[i] - w) <= rtol * (std::fabs(w) + kFloor);
    if (ok) continue;
    if (bad < 5)
      os << "[" << i << "] got " << g[i] << ", expected " << w << " (diff " << g[i] - w << "); ";
    ++bad;
  }
  if (bad > 0) os << bad << " of " << g.size() << " values differ";
  return os.str();
}

}  // namespace

TEST_CASE("fixtures: ember matches PyTorch 1.13 reference values", "[fixtures]") {
  const FixtureFile& f = fixtures();
  if (!f.error.empty()) FAIL(f.error);
  REQUIRE(!f.cases.empty());
  for (const FixtureCase& c : f.cases) {
    DYNAMIC_SECTION(c.op << " " << c.label) {
      INFO("fixture " << c.op << " " << c.label << " (tests/fixtures/ops.txt:" << c.line
                      << ", torch " << f.torch_version << ")");
      const auto it = fixture_dispatch().find(c.op);
      if (it == fixture_dispatch().end())
        FAIL("no dispatch entry for op '" << c.op << "': add one to tests/fixture_file.cpp");
      const Inputs inputs = make_inputs(c);
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        const FixtureTensor& t = c.inputs[i];
        // The harness itself: a layout that can differ from row-major must really differ.
        const size_t nd = t.shape.size();
        const bool can_differ = (t.layout == "strided" && inputs[i].numel() > 0) ||
                                (t.layout == "transposed" && t.shape[nd - 1] > 1 &&
                                 t.shape[nd - 2] > 1);
        if (can_differ) CHECK_FALSE(inputs[i].is_contiguous());
      }
      const Args args{c.args};

      Outputs outs;
      try {
        outs = it->second(inputs, args);
      } catch (const std::exception& e) {
        FAIL("ember threw: " << e.what());
      }
      REQUIRE(outs.size() >= c.outputs.size());
      for (size_t k = 0; k < c.outputs.size(); ++k) {
        const std::string diff = compare(outs[k], c.outputs[k], kOutputRtol64);
        INFO("output " << k << ": " << diff);
        CHECK(diff.empty());
      }

      if (c.has_weight) {
        REQUIRE(is_floating(outs[0].dtype()));
        const Tensor w = from_vector<double>(c.weight.values, c.weight.shape, outs[0].dtype());
        try {
          sum(mul(outs[0], w)).backward();
        } catch (const std::exception& e) {
          FAIL("ember's backward threw: " << e.what());
        }
        for (const auto& [i, want] : c.grads) {
          Tensor g = inputs[static_cast<size_t>(i)].grad();
          // An input the output does not depend on gets no gradient: that is a zero one.
          if (!g.defined()) g = zeros_like(inputs[static_cast<size_t>(i)]);
          const std::string diff = compare(g, want, kGradRtol64);
          INFO("gradient of input " << i << ": " << diff);
          CHECK(diff.empty());
        }
      }
    }
  }
}

// Every registered op must have PyTorch reference cases: tests/core/differential.cpp checks that
// each has cases in differential.txt. ops.txt holds the older, hand-picked cases with tight
// float64 gradient checks; every op it names must still exist and be callable.
TEST_CASE("fixtures: the ops of ops.txt are registered and callable", "[fixtures][registry]") {
  const FixtureFile& f = fixtures();
  if (!f.error.empty()) FAIL(f.error);
  std::set<std::string> covered;
  for (const FixtureCase& c : f.cases) covered.insert(c.op);
  std::string unknown;
  for (const std::string& op : covered)
    if (!find_op(op)) unknown += std::string(unknown.empty() ? "" : ", ") + op;
  INFO("fixture ops that the registry does not know: " << unknown);
  CHECK(unknown.empty());
  std::string undispatched;
  for (const OpInfo& op : op_registry())
    if (!fixture_dispatch().count(op.name))
      undispatched += std::string(undispatched.empty() ? "" : ", ") + op.name;
  INFO("registered ops with no dispatch entry in tests/fixture_file.cpp: " << undispatched);
  CHECK(undispatched.empty());
}

TEST_CASE("fixtures: a truncated or corrupt file is reported, not crashed on", "[fixtures]") {
  const std::string good =
      "# comment\n"
      "fixtures 1 torch 1.13.0\n"
      "case add tiny\n"
      "input 0 float64 contiguous 1 2 1.0 2.0\n"
      "input 1 float64 strided 1 2 3.0 4.0\n"
      "weight 1 2 1.0 1.0\n"
      "output 0 float64 1 2 4.0 6.0\n"
      "grad 0 1 2 1.0 1.0\n"
      "end\n"
      "total 1\n";
  {
    std::istringstream in(good);
    const FixtureFile f = parse_fixtures(in, "good", kRegenerate);
    INFO(f.error);
    REQUIRE(f.error.empty());
    REQUIRE(f.cases.size() == 1);
    CHECK(f.cases[0].grads.count(0) == 1);
    CHECK(f.cases[0].inputs[1].layout == "strided");
  }
  // Cut the file at every line boundary and in the middle of the value lines: each prefix must
  // be rejected with a message, never accepted and never a crash.
  for (size_t cut = 0; cut + 1 < good.size(); ++cut) {
    if (cut > 0 && good[cut - 1] != '\n' && good[cut - 1] != ' ') continue;
    std::istringstream in(good.substr(0, cut));
    const FixtureFile f = parse_fixtures(in, "cut", kRegenerate);
    INFO("cut at " << cut << ": '" << good.substr(0, cut) << "'");
    CHECK(!f.error.empty());
    CHECK(f.cases.empty());
  }
  std::istringstream bad_number(
      "fixtures 1 torch 1.13.0\ncase neg x\ninput 0 float64 contiguous 1 2 1.0 abc\n");
  CHECK_THAT(parse_fixtures(bad_number, "bad", kRegenerate).error,
             Catch::Contains("bad number 'abc'"));
}
