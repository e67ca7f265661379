// The differential suite: ember against PyTorch 1.13 on sample inputs of every registered op —
// every dtype and dtype pair, edge values (+-0, +-inf, NaN, subnormals, the largest finite
// values, integer extremes), broadcasting, non-contiguous and overlapping inputs, sizes 0, 1 and
// long enough for vectorized loops — modelled on PyTorch's OpInfo tests.
//
// tests/fixtures/differential.txt holds PyTorch's answers (written by make_differential.py; the
// tests never run Python): outputs with their dtypes, gradients in each input's dtype, or the fact
// that PyTorch raised. A case AGREES when ember gives the same dtypes and shapes and the same
// values (bit for bit where no arithmetic is involved, within a few ulps for elementwise math,
// within a summation-order tolerance for reductions), or raises where PyTorch raised.
//
// A case that does not agree must be listed in tests/fixtures/differences.txt, which names the
// entry of docs/from_pytorch.md ("Differences") that says why ember answers otherwise: every
// remaining difference is a decision, written down. An entry that no longer matches a
// disagreement fails too, so the list cannot go stale. Set EMBER_DIFFERENTIAL_REPORT=1 to print
// every disagreement and the count of cases per op and how many agree.
//
// The [cuda] test runs the same cases on the GPU (inputs with the same layout on the device): a
// case where the CPU agrees with PyTorch must agree on the GPU, and a documented difference must
// come out on the GPU as it does on the CPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/ember.h"
#include "fixture_file.h"

using namespace ember;
using namespace ember::test;

namespace {

const char* const kRegenerate = "/usr/bin/python3 tests/fixtures/make_differential.py";

const FixtureFile& differential() { return load_fixtures("differential.txt", kRegenerate); }

// ---- how closely each op must agree -----------------------------------------------------------

enum class Match {
  Exact,    // values moved, selected or compared: the same bits (and the same sign of zero)
  Ulps,     // one rounding of elementwise math: within a few units in the last place
  Summing,  // sums in another order (reductions, products, losses, gradients)
};

Match match_for(const std::string& op) {
  static const std::set<std::string> exact = {
      "neg",          "abs",        "relu",        "max",        "min",          "argmax",
      "argmin",       "eq",         "ne",          "lt",         "le",           "gt",
      "ge",           "where",      "masked_fill", "gather",     "index_select", "cat",
      "stack",        "view",       "reshape",     "permute",    "transpose",    "narrow",
      "slice",        "select",     "squeeze",     "unsqueeze",  "expand",       "contiguous",
      "clone",        "to_dtype",   "to_device",   "copy_",      "fill_",        "zero_",
      "floor_divide", "max_pool2d", "clamp",       "clamp_min",  "clamp_max",    "maximum",
      "minimum",      "amax",       "amin",        "any",        "all",          "isnan",
      "isinf",        "isfinite",   "logical_and", "logical_or", "logical_xor",  "logical_not",
      "fmod",         "remainder",  "split",       "chunk",      "sort",         "topk"};
  static const std::set<std::string> ulps = {"add", "sub", "mul", "div", "pow", "exp", "log",
                                             "sqrt", "sigmoid", "tanh", "add_", "sub_", "mul_",
                                             "div_"};
  if (exact.count(op)) return Match::Exact;
  if (ulps.count(op)) return Match::Ulps;
  return Match::Summing;
}

struct Tolerance {
  Match match;
  int64_t ulps = 0;      // Match::Ulps
  double rtol64 = 0.0;   // Match::Summing: |got - want| <= rtol * (|want| + max|want|)
  double rtol32 = 0.0;
};

// On the CPU ember's libm and PyTorch's (Sleef) differ by an ulp or two; a GPU's math library
// by a few more.
Tolerance tolerance_for(const std::string& op, bool gradient, bool on_gpu) {
  const Match m = gradient ? Match::Summing : match_for(op);
  return Tolerance{m, on_gpu ? 8 : 4, 1e-9, 2e-5};
}

// Distance in representable numbers between two finite values of one float type.
template <typename F, typename I>
long double ulp_distance(F a, F b) {
  I ia, ib;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  // Two's-complement order of the bit patterns: negative floats count down from zero.
  if (ia < 0) ia = std::numeric_limits<I>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<I>::min() - ib;
  return std::fabs(static_cast<long double>(ia) - static_cast<long double>(ib));
}

// "" when `got` matches the reference; otherwise what differs.
std::string compare(const Tensor& got, const FixtureTensor& want, const Tolerance& tol) {
  std::ostringstream os;
  os.precision(17);
  if (!got.defined()) return "ember returned an undefined tensor";
  if (dtype_name(got.dtype()) != want.dtype)
    return "dtype " + std::string(dtype_name(got.dtype())) + ", PyTorch's is " + want.dtype;
  if (got.shape() != want.shape)
    return "shape " + shape_str(got.shape()) + ", PyTorch's is " + shape_str(want.shape);
  int bad = 0;
  auto report = [&](size_t i, const std::string& g, const std::string& w) {
    if (bad < 4) os << "[" << i << "] ember " << g << ", PyTorch " << w << "; ";
    ++bad;
  };
  if (!want.ints.empty()) {
    const std::vector<int64_t> g = got.to_vector<int64_t>();
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] != want.ints[i]) report(i, std::to_string(g[i]), std::to_string(want.ints[i]));
  } else {
    const std::vector<double> g = got.to_vector<double>();
    const bool f32 = want.dtype == "float32";
    double scale = 0.0;
    for (double w : want.values)
      if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
    for (size_t i = 0; i < g.size(); ++i) {
      const double w = want.values[i], x = g[i];
      bool ok;
      if (std::isnan(w) || std::isnan(x)) {
        ok = std::isnan(w) && std::isnan(x);
      } else if (std::isinf(w) || std::isinf(x)) {
        ok = w == x;
      } else if (tol.match == Match::Summing) {
        const double rtol = f32 ? tol.rtol32 : tol.rtol64;
        ok = std::fabs(x - w) <= rtol * (std::fabs(w) + scale);
      } else {
        const long double d = f32 ? ulp_distance<float, int32_t>(static_cast<float>(x), static_cast<float>(w))
                                  : ulp_distance<double, int64_t>(x, w);
        ok = d <= (tol.match == Match::Exact ? 0 : tol.ulps);
        if (ok && x == 0.0 && w == 0.0) ok = std::signbit(x) == std::signbit(w);
      }
      if (ok) continue;
      std::ostringstream g, ws;
      g.precision(17);
      ws.precision(17);
      g << x;
      ws << w;
      report(i, g.str(), ws.str());
    }
  }
  if (bad > 0) os << bad << " of " << got.numel() << " values differ";
  return os.str();
}

// ---- running a case ---------------------------------------------------------------------------

// What ember did with a case, and how it compares with PyTorch's answer.
struct Outcome {
  bool agrees = false;
  std::string what;        // why it does not agree
  bool threw = false;      // ember raised in the forward
  std::string message;     // ember's error message
  Outputs outputs;         // on the CPU
  std::vector<Tensor> grads;  // per input, on the CPU (undefined: none)
};

Outcome run_case(const FixtureCase& c, Device device) {
  Outcome r;
  const auto it = fixture_dispatch().find(c.op);
  if (it == fixture_dispatch().end()) {
    r.what = "no dispatch entry for op '" + c.op + "' in tests/fixture_file.cpp";
    return r;
  }
  const bool gpu = !device.is_cpu();
  Inputs inputs;
  Outputs outs;
  try {
    inputs = make_inputs(c, device);
    outs = it->second(inputs, Args{c.args});
  } catch (const Error& e) {
    r.threw = true;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.threw = true;
    r.message = std::string("not an ember::Error: ") + e.what();
  }
  if (!c.error.empty()) {
    r.agrees = r.threw && r.message.rfind("not an ember::Error", 0) != 0;
    if (!r.agrees)
      r.what = r.threw ? "PyTorch raised (" + c.error + ") and ember threw " + r.message
                       : "PyTorch raised (" + c.error + ") but ember returned a result";
    for (const Tensor& o : outs) r.outputs.push_back(o.defined() ? o.cpu() : o);
    return r;
  }
  if (r.threw) {
    r.what = "ember raised: " + r.message;
    return r;
  }
  for (const Tensor& o : outs) r.outputs.push_back(o.defined() ? o.cpu() : o);
  if (outs.size() < c.outputs.size()) {
    r.what = "ember returned " + std::to_string(outs.size()) + " outputs, PyTorch " +
             std::to_string(c.outputs.size());
    return r;
  }
  std::string diffs;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const std::string d = compare(r.outputs[k], c.outputs[k], tolerance_for(c.op, false, gpu));
    if (!d.empty()) diffs += "output " + std::to_string(k) + ": " + d + "; ";
  }
  if (c.has_weight) {
    bool backward_threw = false;
    std::string backward_message;
    try {
      if (!is_floating(outs[0].dtype())) throw ValueError("the output is not a float tensor");
      const Tensor w = from_vector<double>(c.weight.values, c.weight.shape, outs[0].dtype());
      sum(mul(outs[0], w.to(outs[0].device()))).backward();
    } catch (const std::exception& e) {
      backward_threw = true;
      backward_message = e.what();
    }
    if (!c.grad_error.empty()) {
      if (!backward_threw) diffs += "PyTorch's backward raised (" + c.grad_error + "), ember's did not; ";
    } else if (backward_threw) {
      diffs += "ember's backward raised: " + backward_message + "; ";
    } else {
      r.grads.resize(inputs.size());
      bool has_narrow_input = false;
      for (const Tensor& in : inputs) has_narrow_input |= in.defined() && in.dtype() != kFloat64;
      for (const auto& [i, want] : c.grads) {
        Tensor g = inputs[static_cast<size_t>(i)].grad();
        // An input the output does not depend on gets no gradient: that is a zero one.
        if (!g.defined()) g = zeros_like(inputs[static_cast<size_t>(i)]);
        g = g.cpu();
        r.grads[static_cast<size_t>(i)] = g;
        Tolerance tol = tolerance_for(c.op, true, gpu);
        // A float64 gradient of a case with float32 or integer inputs can carry a float32
        // intermediate (pow's exponent gradient is out * log(base), with log taken of the
        // float32 or integer base in float32, in PyTorch as in ember). On a GPU that log is
        // CUDA's logf, an ulp or so from glibc's, so the gradient is only as close as float32
        // math allows (about 1e-7, relative).
        if (gpu && has_narrow_input) tol.rtol64 = 1e-6;
        const std::string d = compare(g, want, tol);
        if (!d.empty()) diffs += "gradient of input " + std::to_string(i) + ": " + d + "; ";
      }
    }
  }
  r.agrees = diffs.empty();
  r.what = diffs;
  return r;
}

// ---- the documented differences ---------------------------------------------------------------

struct Difference {
  std::string op, pattern, doc_id;  // pattern: the case label, '*' matching any run of characters
  int line = 0;
};

bool glob_match(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<Difference> load_differences(std::string& error) {
  const std::string path = std::string(EMBER_FIXTURE_DIR) + "/differences.txt";
  std::ifstream in(path);
  std::vector<Difference> out;
  if (!in) {
    error = "cannot open " + path;
    return out;
  }
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    Difference d;
    d.line = n;
    if (!(ls >> d.op >> d.pattern >> d.doc_id)) {
      error = path + ":" + std::to_string(n) + ": expected '<op> <label pattern> <doc id>'";
      return {};
    }
    out.push_back(d);
  }
  return out;
}

const Difference* documented(const std::vector<Difference>& diffs, const FixtureCase& c) {
  for (const Difference& d : diffs)
    if (d.op == c.op && glob_match(d.pattern, c.label)) return &d;
  return nullptr;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool report_requested() {
  const char* s = std::getenv("EMBER_DIFFERENTIAL_REPORT");
  return s != nullptr && *s != '\0' && std::string(s) != "0";
}

}  // namespace

TEST_CASE("differential: ember agrees with PyTorch 1.13, or the difference is documented",
          "[differential]") {
  const FixtureFile& f = differential();
  if (!f.error.empty()) FAIL(f.error);
  REQUIRE(f.format_version == 2);
  std::string diff_error;
  const std::vector<Difference> diffs = load_differences(diff_error);
  if (!diff_error.empty()) FAIL(diff_error);

  struct Count {
    int cases = 0, agree = 0, documented = 0;
  };
  std::map<std::string, Count> per_op;
  std::map<const Difference*, int> used;
  int undocumented = 0;
  for (const FixtureCase& c : f.cases) {
    Count& n = per_op[c.op];
    ++n.cases;
    const Outcome r = run_case(c, Device::cpu());
    const Difference* d = documented(diffs, c);
    if (r.agrees) {
      ++n.agree;
      continue;
    }
    if (report_requested())
      std::cout << (d ? "documented " : "DISAGREES ") << c.op << " " << c.label << ": " << r.what
                << "\n";
    if (d != nullptr) {
      ++n.documented;
      ++used[d];
      continue;
    }
    ++undocumented;
    if (undocumented <= 40) {
      // One failure per disagreement, each naming the case and the way out.
      INFO("case " << c.op << " " << c.label << " (tests/fixtures/differential.txt:" << c.line
                   << ", torch " << f.torch_version << ")");
      INFO(r.what);
      FAIL_CHECK("ember disagrees with PyTorch and tests/fixtures/differences.txt does not list "
                 "the case: fix ember, or document the difference in docs/from_pytorch.md and "
                 "list it");
    }
  }
  CHECK(undocumented == 0);
  for (const Difference& d : diffs) {
    INFO("tests/fixtures/differences.txt:" << d.line << " (" << d.op << " " << d.pattern
                                           << ") matches no case where ember disagrees: remove it");
    CHECK(used.count(&d) == 1);
  }

  int cases = 0, agree = 0, documented_count = 0;
  for (const auto& [op, n] : per_op) {
    cases += n.cases;
    agree += n.agree;
    documented_count += n.documented;
  }
  std::cout << "differential: " << cases << " cases over " << per_op.size() << " ops; " << agree
            << " agree with PyTorch " << f.torch_version << ", " << documented_count
            << " are documented differences\n";
  if (report_requested()) {
    std::cout << std::left << std::setw(16) << "op" << std::right << std::setw(8) << "cases"
              << std::setw(8) << "agree" << std::setw(12) << "documented" << "\n";
    for (const auto& [op, n] : per_op)
      std::cout << std::left << std::setw(16) << op << std::right << std::setw(8) << n.cases
                << std::setw(8) << n.agree << std::setw(12) << n.documented << "\n";
  }
}

TEST_CASE("differential: every registered op has cases, and every difference is explained",
          "[differential][registry]") {
  const FixtureFile& f = differential();
  if (!f.error.empty()) FAIL(f.error);
  std::map<std::string, std::set<std::string>> dtypes;  // op -> dtypes of its inputs
  for (const FixtureCase& c : f.cases) {
    auto& s = dtypes[c.op];
    for (const FixtureTensor& t : c.inputs) s.insert(t.dtype);
  }
  for (const OpInfo& op : op_registry()) {
    INFO("op '" << op.name << "' (" << op.card << ") needs differential cases: add samples to "
                "tests/fixtures/make_differential.py and regenerate");
    REQUIRE(dtypes.count(op.name) == 1);
    // More than one dtype: the samples of an op cover the dtypes it could be given.
    CHECK(dtypes[op.name].size() >= 2);
    // An op sampled with int64 inputs is sampled with int32 too (issue 27: int32 everywhere).
    if (dtypes[op.name].count("int64") == 1) CHECK(dtypes[op.name].count("int32") == 1);
    CHECK(fixture_dispatch().count(op.name) == 1);
  }
  for (const auto& [op, s] : dtypes) {
    INFO("differential.txt names op '" << op << "', which core/registry.cpp does not know");
    CHECK(find_op(op) != nullptr);
  }
  std::string diff_error;
  const std::vector<Difference> diffs = load_differences(diff_error);
  if (!diff_error.empty()) FAIL(diff_error);
  const std::string doc = read_file(std::string(EMBER_SOURCE_DIR) + "/docs/from_pytorch.md");
  const size_t section = doc.find("\n## Differences from PyTorch 1.13");
  REQUIRE(section != std::string::npos);
  for (const Difference& d : diffs) {
    INFO("differences.txt line " << d.line << " names '" << d.doc_id
                                 << "', which docs/from_pytorch.md's Differences section lacks");
    CHECK(find_op(d.op) != nullptr);
    CHECK(doc.find("`" + d.doc_id + "`", section) != std::string::npos);
  }
}

TEST_CASE("differential: the comparison itself (ulps, signed zeros, NaN, dtypes)", "[differential]") {
  FixtureTensor want;
  want.dtype = "float64";
  want.shape = {4};
  want.values = {1.0, 0.0, std::nan(""), 4.2e-322};
  const Tolerance exact{Match::Exact}, ulps{Match::Ulps, 4};
  CHECK(compare(tensor({1.0, 0.0, std::nan(""), 4.2e-322}, kFloat64), want, exact).empty());
  // -0.0 is not 0.0 where no arithmetic is involved; a subnormal is not a (much larger) normal.
  CHECK_FALSE(compare(tensor({1.0, -0.0, std::nan(""), 4.2e-322}, kFloat64), want, exact).empty());
  CHECK_FALSE(compare(tensor({1.0, 0.0, std::nan(""), 5.6e-309}, kFloat64), want, ulps).empty());
  CHECK_FALSE(compare(tensor({1.0, 0.0, 1.0, 4.2e-322}, kFloat64), want, ulps).empty());
  CHECK(compare(tensor({std::nextafter(1.0, 2.0), 0.0, std::nan(""), 4.2e-322}, kFloat64), want, ulps)
            .empty());
  CHECK_FALSE(compare(tensor({1.0, 0.0, std::nan(""), 4.2e-322}, kFloat32), want, ulps).empty());
  CHECK(glob_match("edges_*_int64", "edges_table_int64"));
  CHECK_FALSE(glob_match("edges_*_int64", "edges_table_uint8"));
  CHECK(glob_match("*", ""));
}

TEST_CASE("differential on cuda: the GPU agrees with PyTorch where the CPU does", "[cuda][differential]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  const FixtureFile& f = differential();
  if (!f.error.empty()) FAIL(f.error);
  std::string diff_error;
  const std::vector<Difference> diffs = load_differences(diff_error);
  if (!diff_error.empty()) FAIL(diff_error);
  int checked = 0, failures = 0, gpu_agrees = 0;
  for (const FixtureCase& c : f.cases) {
    const Outcome cpu = run_case(c, Device::cpu());
    const Outcome gpu = run_case(c, Device::cuda(0));
    ++checked;
    if (gpu.agrees) ++gpu_agrees;
    std::string why;
    if (cpu.agrees) {
      if (!gpu.agrees) why = "the CPU agrees with PyTorch, the GPU does not: " + gpu.what;
    } else if (documented(diffs, c) != nullptr) {
      // A documented difference: the GPU must give ember's (CPU) answer.
      if (cpu.threw != gpu.threw) {
        why = std::string("the ") + (cpu.threw ? "CPU" : "GPU") + " raised and the other did not";
      } else if (!cpu.threw) {
        for (size_t k = 0; k < cpu.outputs.size() && k < gpu.outputs.size(); ++k) {
          if (!cpu.outputs[k].defined()) continue;
          FixtureTensor ref;
          ref.dtype = dtype_name(cpu.outputs[k].dtype());
          ref.shape = cpu.outputs[k].shape();
          if (is_floating(cpu.outputs[k].dtype())) ref.values = cpu.outputs[k].to_vector<double>();
          else ref.ints = cpu.outputs[k].to_vector<int64_t>();
          const std::string d = compare(gpu.outputs[k], ref, tolerance_for(c.op, false, true));
          if (!d.empty()) why += "output " + std::to_string(k) + " differs from the CPU's: " + d;
        }
      }
    } else {
      continue;  // an undocumented CPU disagreement fails the CPU test already
    }
    if (why.empty()) continue;
    ++failures;
    if (failures <= 40) {
      INFO("case " << c.op << " " << c.label << " (tests/fixtures/differential.txt:" << c.line << ")");
      INFO(why);
      FAIL_CHECK("the GPU does not answer as the CPU does");
    }
  }
  CHECK(failures == 0);
  CHECK(checked > 0);
  std::cout << "differential on " << Device::cuda(0) << ": " << checked << " cases; " << gpu_agrees
            << " agree with PyTorch " << f.torch_version << "\n";
}
