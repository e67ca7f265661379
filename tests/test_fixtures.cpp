// ember against PyTorch: every case in tests/fixtures/ops.txt (written by
// tests/fixtures/make_fixtures.py with PyTorch 1.13) is run through the matching ember op, and
// the outputs and the gradients of sum(output0 * weight) must match the reference values.
//
// gradcheck proves that each backward agrees with its own forward; these fixtures prove that the
// forward means what PyTorch means (broadcasting, reduction, ignore_index, clamping of slices...).
// The file format is described at the top of make_fixtures.py. The test needs no Python.
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

using namespace ember;

namespace {

const char* const kRegenerate =
    "regenerate it with: /usr/bin/python3 tests/fixtures/make_fixtures.py";
constexpr int kFormatVersion = 1;

// Tolerances: |got - want| <= rtol * (|want| + kFloor). The floor keeps values that cancel to
// ~0 (a sum of +-1 terms) from demanding a relative precision no summation order could give.
constexpr double kOutputRtol64 = 1e-10;
constexpr double kGradRtol64 = 1e-9;
constexpr double kRtol32 = 1e-6;
constexpr double kFloor = 1e-3;

// ---- the parsed file --------------------------------------------------------------------------

struct FixtureTensor {
  std::string dtype;   // float64, float32, int64, bool
  std::string layout;  // contiguous, transposed, strided (inputs only)
  Shape shape;
  std::vector<double> values;  // logical elements, row-major
};

struct FixtureCase {
  std::string op, label;
  int line = 0;  // of the `case` line, for messages
  std::vector<FixtureTensor> inputs;
  std::map<std::string, std::vector<std::string>> args;
  bool has_weight = false;
  FixtureTensor weight;
  std::vector<FixtureTensor> outputs;
  std::map<int, FixtureTensor> grads;  // input index -> d(sum(out0 * weight))/d(input)
};

struct FixtureFile {
  std::vector<FixtureCase> cases;
  std::string torch_version;
  std::string error;  // non-empty: the file is missing, truncated or corrupt
};

bool parse_number(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

bool parse_int(const std::string& s, int64_t& out) {
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && end == s.c_str() + s.size();
}

// Reads `<ndim> <dims...> <values...>` from toks[at...]; the values must fill the shape exactly,
// so a line cut short is caught here.
std::string parse_tensor(const std::vector<std::string>& toks, size_t at, FixtureTensor& t) {
  int64_t ndim = 0;
  if (at >= toks.size() || !parse_int(toks[at], ndim) || ndim < 0 || ndim > 16)
    return "expected a dimension count";
  if (at + 1 + static_cast<size_t>(ndim) > toks.size()) return "line ends inside the shape";
  t.shape.clear();
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t s = 0;
    if (!parse_int(toks[at + 1 + static_cast<size_t>(d)], s) || s < 0) return "bad size in shape";
    t.shape.push_back(s);
  }
  const size_t first = at + 1 + static_cast<size_t>(ndim);
  const size_t have = toks.size() - first;
  const auto want = static_cast<size_t>(shape_numel(t.shape));
  if (have != want) {
    std::ostringstream os;
    os << "shape " << shape_str(t.shape) << " needs " << want << " values, the line has " << have;
    return os.str();
  }
  t.values.resize(want);
  for (size_t i = 0; i < want; ++i)
    if (!parse_number(toks[first + i], t.values[i])) return "bad number '" + toks[first + i] + "'";
  return "";
}

bool known_dtype(const std::string& d) {
  return d == "float64" || d == "float32" || d == "int64" || d == "bool";
}

FixtureFile parse_fixtures(std::istream& in, const std::string& name) {
  FixtureFile f;
  auto fail = [&](int line, const std::string& why) {
    std::ostringstream os;
    os << name << ":" << line << ": " << why << " (file truncated or corrupt? " << kRegenerate
       << ")";
    f.error = os.str();
    f.cases.clear();
    return f;
  };
  std::string text;
  int line_no = 0;
  bool header = false, in_case = false;
  int64_t total = -1;
  FixtureCase cur;
  while (std::getline(in, text)) {
    ++line_no;
    if (text.empty() || text[0] == '#') continue;
    std::istringstream ls(text);
    std::vector<std::string> toks;
    for (std::string tok; ls >> tok;) toks.push_back(tok);
    if (toks.empty()) continue;
    const std::string& kind = toks[0];
    if (total >= 0) return fail(line_no, "content after the closing 'total' line");
    if (!header) {
      int64_t version = 0;
      if (kind != "fixtures" || toks.size() != 4 || !parse_int(toks[1], version) ||
          toks[2] != "torch")
        return fail(line_no, "expected the header 'fixtures <version> torch <version>'");
      if (version != kFormatVersion)
        return fail(line_no, "format version " + toks[1] + ", this test reads version " +
                                 std::to_string(kFormatVersion));
      f.torch_version = toks[3];
      header = true;
      continue;
    }
    if (kind == "case") {
      if (in_case) return fail(line_no, "'case' before the previous case's 'end'");
      if (toks.size() != 3) return fail(line_no, "expected 'case <op> <label>'");
      cur = FixtureCase();
      cur.op = toks[1];
      cur.label = toks[2];
      cur.line = line_no;
      in_case = true;
    } else if (kind == "total") {
      if (in_case) return fail(line_no, "'total' inside a case");
      if (toks.size() != 2 || !parse_int(toks[1], total) || total < 0)
        return fail(line_no, "expected 'total <count>'");
      if (total != static_cast<int64_t>(f.cases.size()))
        return fail(line_no, "'total " + toks[1] + "' but the file holds " +
                                 std::to_string(f.cases.size()) + " cases");
    } else if (!in_case) {
      return fail(line_no, "'" + kind + "' outside a case");
    } else if (kind == "input") {
      int64_t i = 0;
      if (toks.size() < 5 || !parse_int(toks[1], i) || i != static_cast<int64_t>(cur.inputs.size()))
        return fail(line_no, "expected 'input <i> <dtype> <layout> ...' with inputs in order");
      FixtureTensor t;
      t.dtype = toks[2];
      t.layout = toks[3];
      if (!known_dtype(t.dtype)) return fail(line_no, "unknown dtype '" + t.dtype + "'");
      if (t.layout != "contiguous" && t.layout != "transposed" && t.layout != "strided")
        return fail(line_no, "unknown layout '" + t.layout + "'");
      const std::string why = parse_tensor(toks, 4, t);
      if (!why.empty()) return fail(line_no, why);
      if ((t.layout == "transposed" && t.shape.size() < 2) ||
          (t.layout == "strided" && t.shape.empty()))
        return fail(line_no, "layout '" + t.layout + "' needs more dimensions");
      cur.inputs.push_back(t);
    } else if (kind == "arg") {
      if (toks.size() < 2) return fail(line_no, "expected 'arg <name> <values...>'");
      cur.args[toks[1]] = std::vector<std::string>(toks.begin() + 2, toks.end());
    } else if (kind == "weight") {
      const std::string why = parse_tensor(toks, 1, cur.weight);
      if (!why.empty()) return fail(line_no, why);
      cur.has_weight = true;
    } else if (kind == "output") {
      int64_t k = 0;
      if (toks.size() < 4 || !parse_int(toks[1], k) ||
          k != static_cast<int64_t>(cur.outputs.size()))
        return fail(line_no, "expected 'output <k> <dtype> ...' with outputs in order");
      FixtureTensor t;
      t.dtype = toks[2];
      if (!known_dtype(t.dtype)) return fail(line_no, "unknown dtype '" + t.dtype + "'");
      const std::string why = parse_tensor(toks, 3, t);
      if (!why.empty()) return fail(line_no, why);
      cur.outputs.push_back(t);
    } else if (kind == "grad") {
      int64_t i = 0;
      if (toks.size() < 3 || !parse_int(toks[1], i) || i < 0 ||
          i >= static_cast<int64_t>(cur.inputs.size()))
        return fail(line_no, "expected 'grad <i> ...' naming an input of the case");
      FixtureTensor t;
      t.dtype = cur.inputs[static_cast<size_t>(i)].dtype;
      const std::string why = parse_tensor(toks, 2, t);
      if (!why.empty()) return fail(line_no, why);
      cur.grads[static_cast<int>(i)] = t;
    } else if (kind == "end") {
      if (cur.outputs.empty()) return fail(line_no, "case " + cur.op + " " + cur.label +
                                                        " has no output");
      if (!cur.grads.empty() && !cur.has_weight)
        return fail(line_no, "case " + cur.op + " " + cur.label + " has grads but no weight");
      f.cases.push_back(cur);
      in_case = false;
    } else {
      return fail(line_no, "unknown line kind '" + kind + "'");
    }
  }
  if (!header) return fail(line_no, "no 'fixtures' header: the file is empty");
  if (in_case) return fail(line_no, "the file ends inside case " + cur.op + " " + cur.label);
  if (total < 0) return fail(line_no, "no closing 'total <count>' line");
  return f;
}

const FixtureFile& fixtures() {
  static const FixtureFile f = [] {
    const std::string path = std::string(EMBER_FIXTURE_DIR) + "/ops.txt";
    std::ifstream in(path);
    if (!in) {
      FixtureFile missing;
      missing.error = "cannot open " + path + ": " + kRegenerate;
      return missing;
    }
    return parse_fixtures(in, path);
  }();
  return f;
}

// ---- building tensors ---------------------------------------------------------------------------

DType dtype_from_name(const std::string& d) {
  if (d == "float64") return kFloat64;
  if (d == "float32") return kFloat32;
  if (d == "int64") return kInt64;
  if (d == "bool") return kBool;
  throw ValueError("fixtures: unknown dtype " + d);
}

// The input as a leaf laid out in memory as the fixture says. The buffers are built by hand
// (not with ember's transpose/slice) so the layout does not depend on the ops under test.
Tensor make_input(const FixtureTensor& t, bool requires_grad) {
  const DType dt = dtype_from_name(t.dtype);
  Tensor x;
  if (t.layout == "contiguous") {
    x = from_vector<double>(t.values, t.shape, dt);
  } else if (t.layout == "transposed") {
    // Memory holds the tensor with its last two dims swapped: logical [.., m, n] is stored as
    // [.., n, m], and the view's strides swap back.
    const size_t nd = t.shape.size();
    const int64_t m = t.shape[nd - 2], n = t.shape[nd - 1];
    const int64_t batch = shape_numel(t.shape) / std::max<int64_t>(m * n, 1);
    std::vector<double> buf(t.values.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          buf[static_cast<size_t>(b * m * n + j * m + i)] =
              t.values[static_cast<size_t>(b * m * n + i * n + j)];
    Shape swapped = t.shape;
    std::swap(swapped[nd - 2], swapped[nd - 1]);
    Shape strides = contiguous_strides(swapped);
    std::swap(strides[nd - 2], strides[nd - 1]);
    x = make_view(from_vector<double>(buf, swapped, dt), t.shape, strides, 0);
  } else {  // strided: every other element of a buffer twice as wide in the last dim
    const double pad = is_floating(dt) ? std::nan("") : 0.0;
    Shape wide = t.shape;
    wide.back() *= 2;
    std::vector<double> buf(static_cast<size_t>(shape_numel(wide)), pad);
    for (size_t i = 0; i < t.values.size(); ++i) buf[2 * i] = t.values[i];
    Shape strides = contiguous_strides(wide);
    strides.back() = 2;
    x = make_view(from_vector<double>(buf, wide, dt), t.shape, strides, 0);
  }
  if (requires_grad) x.requires_grad_(true);
  return x;
}

// ---- from an op name and its args to an ember call ----------------------------------------------

struct Args {
  const std::map<std::string, std::vector<std::string>>& m;

  bool has(const std::string& name) const { return m.count(name) != 0; }
  const std::vector<std::string>& raw(const std::string& name) const {
    auto it = m.find(name);
    if (it == m.end()) throw ValueError("fixtures: the case has no 'arg " + name + "'");
    return it->second;
  }
  const std::string& one(const std::string& name) const {
    const auto& v = raw(name);
    if (v.size() != 1) throw ValueError("fixtures: 'arg " + name + "' should hold one value");
    return v[0];
  }
  int64_t i(const std::string& name) const {
    int64_t v = 0;
    if (!parse_int(one(name), v))
      throw ValueError("fixtures: 'arg " + name + "' is not an integer");
    return v;
  }
  double d(const std::string& name) const {
    double v = 0;
    if (!parse_number(one(name), v))
      throw ValueError("fixtures: 'arg " + name + "' is not a number");
    return v;
  }
  bool b(const std::string& name) const { return i(name) != 0; }
  Shape shape(const std::string& name) const {
    Shape s;
    for (const std::string& tok : raw(name)) {
      int64_t v = 0;
      if (!parse_int(tok, v)) throw ValueError("fixtures: 'arg " + name + "' holds a non-integer");
      s.push_back(v);
    }
    return s;
  }
  // A (height, width) pair: conv2d and pooling's kernel_size, stride, padding, dilation.
  std::array<int64_t, 2> pair(const std::string& name) const {
    const Shape s = shape(name);
    if (s.size() != 2) throw ValueError("fixtures: 'arg " + name + "' should hold two values");
    return {s[0], s[1]};
  }
  Reduction reduction() const {
    const std::string& r = one("reduction");
    if (r == "mean") return Reduction::Mean;
    if (r == "sum") return Reduction::Sum;
    if (r == "none") return Reduction::None;
    throw ValueError("fixtures: unknown reduction " + r);
  }
};

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
using OpCall = std::function<Outputs(const Inputs&, const Args&)>;

const std::map<std::string, OpCall>& dispatch() {
  using T = Tensor;
  auto unary = [](T (*fn)(const T&)) {
    return OpCall([fn](const Inputs& x, const Args&) { return Outputs{fn(x[0])}; });
  };
  auto binary = [](T (*fn)(const T&, const T&)) {
    return OpCall([fn](const Inputs& x, const Args&) { return Outputs{fn(x[0], x[1])}; });
  };
  static const std::map<std::string, OpCall> table = {
      {"add", binary(add)},
      {"sub", binary(sub)},
      {"mul", binary(mul)},
      {"div", binary(div)},
      {"neg", unary(neg)},
      {"pow", [](const Inputs& x, const Args& a) { return Outputs{pow(x[0], a.d("exponent"))}; }},
      {"exp", unary(exp)},
      {"log", unary(log)},
      {"sqrt", unary(sqrt)},
      {"abs", unary(abs)},
      {"relu", unary(relu)},
      {"sigmoid", unary(sigmoid)},
      {"tanh", unary(tanh)},
      {"sum", [](const Inputs& x, const Args& a) {
         return Outputs{sum(x[0], a.shape("dims"), a.b("keepdim"))};
       }},
      {"mean", [](const Inputs& x, const Args& a) {
         return Outputs{mean(x[0], a.shape("dims"), a.b("keepdim"))};
       }},
      {"sum_to", [](const Inputs& x, const Args& a) {
         return Outputs{sum_to(x[0], a.shape("shape"))};
       }},
      {"max", [](const Inputs& x, const Args& a) {
         if (!a.has("dim")) return Outputs{max(x[0])};
         ValuesIndices r = max(x[0], a.i("dim"), a.b("keepdim"));
         return Outputs{r.values, r.indices};
       }},
      {"min", [](const Inputs& x, const Args& a) {
         if (!a.has("dim")) return Outputs{min(x[0])};
         ValuesIndices r = min(x[0], a.i("dim"), a.b("keepdim"));
         return Outputs{r.values, r.indices};
       }},
      {"argmax", [](const Inputs& x, const Args& a) {
         if (!a.has("dim")) return Outputs{argmax(x[0])};
         return Outputs{argmax(x[0], a.i("dim"), a.b("keepdim"))};
       }},
      {"argmin", [](const Inputs& x, const Args& a) {
         return Outputs{argmin(x[0], a.i("dim"), a.b("keepdim"))};
       }},
      {"matmul", binary(matmul)},
      {"softmax", [](const Inputs& x, const Args& a) {
         return Outputs{softmax(x[0], a.i("dim"))};
       }},
      {"log_softmax", [](const Inputs& x, const Args& a) {
         return Outputs{log_softmax(x[0], a.i("dim"))};
       }},
      {"cross_entropy", [](const Inputs& x, const Args& a) {
         const Tensor weight = x.size() > 2 ? x[2] : Tensor();
         return Outputs{cross_entropy(x[0], x[1], weight, a.reduction(), a.i("ignore_index"))};
       }},
      {"mse_loss", [](const Inputs& x, const Args& a) {
         return Outputs{mse_loss(x[0], x[1], a.reduction())};
       }},
      {"eq", binary(eq)},
      {"ne", binary(ne)},
      {"lt", binary(lt)},
      {"le", binary(le)},
      {"gt", binary(gt)},
      {"ge", binary(ge)},
      {"where", [](const Inputs& x, const Args&) { return Outputs{where(x[0], x[1], x[2])}; }},
      {"masked_fill", [](const Inputs& x, const Args& a) {
         return Outputs{masked_fill(x[0], x[1], a.d("value"))};
       }},
      {"gather", [](const Inputs& x, const Args& a) {
         return Outputs{gather(x[0], a.i("dim"), x[1])};
       }},
      {"scatter_add", [](const Inputs& x, const Args& a) {
         return Outputs{scatter_add(x[0], a.i("dim"), x[1], x[2])};
       }},
      {"index_select", [](const Inputs& x, const Args& a) {
         return Outputs{index_select(x[0], a.i("dim"), x[1])};
       }},
      {"index_add", [](const Inputs& x, const Args& a) {
         return Outputs{index_add(x[0], a.i("dim"), x[1], x[2])};
       }},
      {"cat", [](const Inputs& x, const Args& a) { return Outputs{cat(x, a.i("dim"))}; }},
      {"stack", [](const Inputs& x, const Args& a) { return Outputs{stack(x, a.i("dim"))}; }},
      {"conv2d", [](const Inputs& x, const Args& a) {
         Conv2dOptions o;
         o.stride = a.pair("stride");
         o.padding = a.pair("padding");
         o.dilation = a.pair("dilation");
         return Outputs{conv2d(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), o)};
       }},
      {"max_pool2d", [](const Inputs& x, const Args& a) {
         Pool2dOptions o;
         o.kernel_size = a.pair("kernel_size");
         o.stride = a.pair("stride");  // [0, 0]: the kernel size
         o.padding = a.pair("padding");
         return Outputs{max_pool2d(x[0], o)};
       }},
      {"avg_pool2d", [](const Inputs& x, const Args& a) {
         Pool2dOptions o;
         o.kernel_size = a.pair("kernel_size");
         o.stride = a.pair("stride");
         o.padding = a.pair("padding");
         return Outputs{avg_pool2d(x[0], o)};
       }},
      {"view", [](const Inputs& x, const Args& a) {
         return Outputs{view(x[0], a.shape("shape"))};
       }},
      {"reshape", [](const Inputs& x, const Args& a) {
         return Outputs{reshape(x[0], a.shape("shape"))};
       }},
      {"permute", [](const Inputs& x, const Args& a) {
         return Outputs{permute(x[0], a.shape("dims"))};
       }},
      {"transpose", [](const Inputs& x, const Args& a) {
         return Outputs{transpose(x[0], a.i("dim0"), a.i("dim1"))};
       }},
      {"narrow", [](const Inputs& x, const Args& a) {
         return Outputs{narrow(x[0], a.i("dim"), a.i("start"), a.i("length"))};
       }},
      {"slice", [](const Inputs& x, const Args& a) {
         return Outputs{slice(x[0], a.i("dim"), a.i("start"), a.i("end"), a.i("step"))};
       }},
      {"select", [](const Inputs& x, const Args& a) {
         return Outputs{select(x[0], a.i("dim"), a.i("index"))};
       }},
      {"squeeze", [](const Inputs& x, const Args& a) {
         return Outputs{squeeze(x[0], a.i("dim"))};
       }},
      {"unsqueeze", [](const Inputs& x, const Args& a) {
         return Outputs{unsqueeze(x[0], a.i("dim"))};
       }},
      {"expand", [](const Inputs& x, const Args& a) {
         return Outputs{expand(x[0], a.shape("shape"))};
       }},
      {"contiguous", unary(contiguous)},
      {"clone", unary(clone)},
      {"to_dtype", [](const Inputs& x, const Args& a) {
         return Outputs{to_dtype(x[0], dtype_from_name(a.one("dtype")))};
       }},
      {"to_device", [](const Inputs& x, const Args& a) {
         return Outputs{to_device(x[0], Device(a.one("device")))};
       }},
  };
  return table;
}

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
      const auto it = dispatch().find(c.op);
      if (it == dispatch().end())
        FAIL("no dispatch entry for op '" << c.op << "': add one to tests/test_fixtures.cpp");
      Inputs inputs;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        const FixtureTensor& t = c.inputs[i];
        inputs.push_back(make_input(t, c.grads.count(static_cast<int>(i)) != 0));
        // The harness itself: a layout that can differ from row-major must really differ.
        const size_t nd = t.shape.size();
        const bool can_differ = (t.layout == "strided" && inputs.back().numel() > 0) ||
                                (t.layout == "transposed" && t.shape[nd - 1] > 1 &&
                                 t.shape[nd - 2] > 1);
        if (can_differ) CHECK_FALSE(inputs.back().is_contiguous());
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

TEST_CASE("fixtures: every registered op has a PyTorch reference case", "[fixtures][registry]") {
  const FixtureFile& f = fixtures();
  if (!f.error.empty()) FAIL(f.error);
  std::set<std::string> covered;
  for (const FixtureCase& c : f.cases) covered.insert(c.op);
  std::string missing;
  for (const OpInfo& op : op_registry())
    if (!covered.count(op.name)) missing += std::string(missing.empty() ? "" : ", ") + op.name;
  INFO("ops in core/registry.cpp with no case in tests/fixtures/ops.txt: "
       << missing << " (add cases to tests/fixtures/make_fixtures.py and regenerate)");
  CHECK(missing.empty());
  std::string unknown;
  for (const std::string& op : covered)
    if (!find_op(op)) unknown += std::string(unknown.empty() ? "" : ", ") + op;
  INFO("fixture ops that the registry does not know: " << unknown);
  CHECK(unknown.empty());
  std::string undispatched;
  for (const OpInfo& op : op_registry())
    if (!dispatch().count(op.name))
      undispatched += std::string(undispatched.empty() ? "" : ", ") + op.name;
  INFO("registered ops with no dispatch entry in tests/test_fixtures.cpp: " << undispatched);
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
    const FixtureFile f = parse_fixtures(in, "good");
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
    const FixtureFile f = parse_fixtures(in, "cut");
    INFO("cut at " << cut << ": '" << good.substr(0, cut) << "'");
    CHECK(!f.error.empty());
    CHECK(f.cases.empty());
  }
  std::istringstream bad_number(
      "fixtures 1 torch 1.13.0\ncase neg x\ninput 0 float64 contiguous 1 2 1.0 abc\n");
  CHECK_THAT(parse_fixtures(bad_number, "bad").error, Catch::Contains("bad number 'abc'"));
}
