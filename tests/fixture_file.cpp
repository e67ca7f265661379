#include "fixture_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

namespace ember::test {

bool parse_number(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

bool parse_int(const std::string& s, int64_t& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && end == s.c_str() + s.size() && errno == 0;
}

namespace {

bool known_dtype(const std::string& d, int version) {
  return d == "float64" || d == "float32" || d == "int64" || d == "bool" ||
         (version >= 2 && (d == "uint8" || d == "int32"));
}

bool is_integer_dtype(const std::string& d) {
  return d == "int64" || d == "int32" || d == "uint8" || d == "bool";
}

// Reads `count` values into t (doubles, and exact integers for the integer dtypes).
std::string parse_values(const std::vector<std::string>& toks, size_t first, size_t count,
                         FixtureTensor& t) {
  if (toks.size() - first != count) {
    std::ostringstream os;
    os << "shape " << shape_str(t.shape) << " needs " << count << " values, the line has "
       << toks.size() - first;
    return os.str();
  }
  t.values.resize(count);
  if (is_integer_dtype(t.dtype)) t.ints.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const std::string& tok = toks[first + i];
    if (is_integer_dtype(t.dtype)) {
      if (!parse_int(tok, t.ints[i])) return "bad integer '" + tok + "'";
      t.values[i] = static_cast<double>(t.ints[i]);
    } else if (!parse_number(tok, t.values[i])) {
      return "bad number '" + tok + "'";
    }
  }
  return "";
}

// Reads `<ndim> <dims...>` from toks[at...] into t.shape; returns the index after it.
std::string parse_shape(const std::vector<std::string>& toks, size_t at, Shape& shape, size_t& next) {
  int64_t ndim = 0;
  if (at >= toks.size() || !parse_int(toks[at], ndim) || ndim < 0 || ndim > 16)
    return "expected a dimension count";
  if (at + 1 + static_cast<size_t>(ndim) > toks.size()) return "line ends inside the shape";
  shape.clear();
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t s = 0;
    if (!parse_int(toks[at + 1 + static_cast<size_t>(d)], s) || s < 0) return "bad size in shape";
    shape.push_back(s);
  }
  next = at + 1 + static_cast<size_t>(ndim);
  return "";
}

// `<ndim> <dims...> <values...>`: the values must fill the shape exactly, so a line cut short is
// caught here.
std::string parse_tensor(const std::vector<std::string>& toks, size_t at, FixtureTensor& t) {
  size_t first = 0;
  const std::string why = parse_shape(toks, at, t.shape, first);
  if (!why.empty()) return why;
  return parse_values(toks, first, static_cast<size_t>(shape_numel(t.shape)), t);
}

std::string rest_of_line(const std::vector<std::string>& toks) {
  std::string s;
  for (size_t i = 1; i < toks.size(); ++i) s += (i > 1 ? " " : "") + toks[i];
  return s;
}
}  // namespace

FixtureFile parse_fixtures(std::istream& in, const std::string& name, const std::string& regenerate) {
  FixtureFile f;
  auto fail = [&](int line, const std::string& why) {
    std::ostringstream os;
    os << name << ":" << line << ": " << why << " (file truncated or corrupt? regenerate it with: "
       << regenerate << ")";
    f.error = os.str();
    f.cases.clear();
    return f;
  };
  std::string text;
  int line_no = 0;
  bool header = false, in_case = false, done = false;
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
      if (version != 1 && version != 2)
        return fail(line_no, "format version " + toks[1] + ", this test reads versions 1 and 2");
      f.format_version = static_cast<int>(version);
      f.torch_version = toks[3];
      header = true;
      continue;
    }
    const int v = f.format_version;
    if (kind == "case") {
      if (in_case) return fail(line_no, "'case' before the previous case's 'end'");
      if (toks.size() != 3) return fail(line_no, "expected 'case <op> <label>'");
      cur = FixtureCase();
      cur.op = toks[1];
      cur.label = toks[2];
      cur.line = line_no;
      in_case = true;
      done = false;
    } else if (kind == "total") {
      if (in_case) return fail(line_no, "'total' inside a case");
      if (toks.size() != 2 || !parse_int(toks[1], total) || total < 0)
        return fail(line_no, "expected 'total <count>'");
      if (total != static_cast<int64_t>(f.cases.size()))
        return fail(line_no, "'total " + toks[1] + "' but the file holds " +
                                 std::to_string(f.cases.size()) + " cases");
    } else if (!in_case) {
      return fail(line_no, "'" + kind + "' outside a case");
    } else if (done && kind != "end") {
      return fail(line_no, "'" + kind + "' after the case's error line");
    } else if (kind == "storage" && v >= 2) {
      int64_t s = 0, n = 0;
      if (toks.size() < 4 || !parse_int(toks[1], s) || s != static_cast<int64_t>(cur.storages.size()) ||
          !known_dtype(toks[2], v) || !parse_int(toks[3], n) || n < 0)
        return fail(line_no, "expected 'storage <s> <dtype> <n> <values...>' with storages in order");
      FixtureTensor t;
      t.dtype = toks[2];
      t.shape = {n};
      const std::string why = parse_values(toks, 4, static_cast<size_t>(n), t);
      if (!why.empty()) return fail(line_no, why);
      cur.storages.push_back(t);
    } else if (kind == "input") {
      int64_t i = 0;
      if (toks.size() < 5 || !parse_int(toks[1], i) || i != static_cast<int64_t>(cur.inputs.size()))
        return fail(line_no, "expected 'input <i> <dtype> <layout> ...' with inputs in order");
      FixtureTensor t;
      t.dtype = toks[2];
      t.layout = toks[3];
      if (!known_dtype(t.dtype, v)) return fail(line_no, "unknown dtype '" + t.dtype + "'");
      if (t.layout == "view" && v >= 2) {
        int64_t s = 0;
        size_t next = 0;
        if (toks.size() < 7 || !parse_int(toks[4], s) || s < 0 ||
            s >= static_cast<int64_t>(cur.storages.size()) || !parse_int(toks[5], t.offset) ||
            t.offset < 0)
          return fail(line_no, "expected 'input <i> <dtype> view <storage> <offset> <ndim> ...'");
        const std::string why = parse_shape(toks, 6, t.shape, next);
        if (!why.empty()) return fail(line_no, why);
        if (toks.size() - next != t.shape.size()) return fail(line_no, "expected one stride per dim");
        for (size_t d = 0; d < t.shape.size(); ++d) {
          int64_t st = 0;
          if (!parse_int(toks[next + d], st) || st < 0) return fail(line_no, "bad stride");
          t.strides.push_back(st);
        }
        t.storage = static_cast<int>(s);
        // The view must stay inside its storage.
        int64_t last = t.offset;
        for (size_t d = 0; d < t.shape.size(); ++d)
          last += (t.shape[d] > 0 ? t.shape[d] - 1 : 0) * t.strides[d];
        if (shape_numel(t.shape) > 0 && last >= cur.storages[static_cast<size_t>(s)].shape[0])
          return fail(line_no, "the view reaches past the end of its storage");
        if (cur.storages[static_cast<size_t>(s)].dtype != t.dtype)
          return fail(line_no, "the view's dtype differs from its storage's");
      } else {
        if (t.layout != "contiguous" && t.layout != "transposed" && t.layout != "strided")
          return fail(line_no, "unknown layout '" + t.layout + "'");
        const std::string why = parse_tensor(toks, 4, t);
        if (!why.empty()) return fail(line_no, why);
        if ((t.layout == "transposed" && t.shape.size() < 2) ||
            (t.layout == "strided" && t.shape.empty()))
          return fail(line_no, "layout '" + t.layout + "' needs more dimensions");
      }
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
      if (!known_dtype(t.dtype, v)) return fail(line_no, "unknown dtype '" + t.dtype + "'");
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
    } else if (kind == "error" && v >= 2) {
      if (!cur.outputs.empty()) return fail(line_no, "'error' after an output");
      cur.error = rest_of_line(toks);
      if (cur.error.empty()) cur.error = "(no message)";
      done = true;
    } else if (kind == "grad_error" && v >= 2) {
      if (cur.outputs.empty() || !cur.has_weight)
        return fail(line_no, "'grad_error' needs the outputs and the weight first");
      cur.grad_error = rest_of_line(toks);
      if (cur.grad_error.empty()) cur.grad_error = "(no message)";
      done = true;
    } else if (kind == "end") {
      if (cur.outputs.empty() && cur.error.empty())
        return fail(line_no, "case " + cur.op + " " + cur.label + " has no output");
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

const FixtureFile& load_fixtures(const std::string& file, const std::string& regenerate) {
  static std::map<std::string, std::unique_ptr<FixtureFile>> cache;
  auto& slot = cache[file];
  if (!slot) {
    const std::string path = std::string(EMBER_FIXTURE_DIR) + "/" + file;
    std::ifstream in(path);
    slot = std::make_unique<FixtureFile>();
    if (!in) slot->error = "cannot open " + path + ": regenerate it with: " + regenerate;
    else *slot = parse_fixtures(in, path, regenerate);
  }
  return *slot;
}

DType dtype_from_name(const std::string& d) {
  if (d == "float64") return kFloat64;
  if (d == "float32") return kFloat32;
  if (d == "int64") return kInt64;
  if (d == "int32") return kInt32;
  if (d == "uint8") return kUInt8;
  if (d == "bool") return kBool;
  throw ValueError("fixtures: unknown dtype " + d);
}

namespace {
// A contiguous CPU tensor of `shape` holding t's values exactly (integers never go through a
// double, so INT64_MIN and 2^63 - 1 arrive intact).
Tensor from_values(const FixtureTensor& t, const std::vector<double>& values,
                   const std::vector<int64_t>& ints, const Shape& shape) {
  const DType dt = dtype_from_name(t.dtype);
  if (dt == kInt64) return from_vector<int64_t>(ints, shape, kInt64);
  if (dt == kInt32) return from_vector<int64_t>(ints, shape, kInt64).to(kInt32);  // in range
  if (dt == kUInt8 || dt == kBool) {
    std::vector<uint8_t> b(ints.size());
    for (size_t i = 0; i < ints.size(); ++i) b[i] = static_cast<uint8_t>(ints[i]);
    return from_vector<uint8_t>(b, shape, kUInt8).to(dt);
  }
  return from_vector<double>(values, shape, dt);
}

// The values of `t` placed into a buffer of `n` elements at positions pos(i) (others: pad).
Tensor scattered(const FixtureTensor& t, int64_t n, const std::function<int64_t(size_t)>& pos) {
  const DType dt = dtype_from_name(t.dtype);
  std::vector<double> buf(static_cast<size_t>(n), is_floating(dt) ? std::nan("") : 0.0);
  std::vector<int64_t> ibuf(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < t.values.size(); ++i) {
    buf[static_cast<size_t>(pos(i))] = t.values[i];
    if (!t.ints.empty()) ibuf[static_cast<size_t>(pos(i))] = t.ints[i];
  }
  return from_values(t, buf, ibuf, {n});
}

// An input laid out as the fixture says. The buffers are built by hand (not with ember's
// transpose/slice) so the layout does not depend on the ops under test.
Tensor make_input(const FixtureTensor& t, const std::vector<Tensor>& storages) {
  if (t.layout == "view") {
    const Tensor& s = storages[static_cast<size_t>(t.storage)];
    return make_view(s, t.shape, t.strides, t.offset);
  }
  if (t.layout == "contiguous") return from_values(t, t.values, t.ints, t.shape);
  const size_t nd = t.shape.size();
  if (t.layout == "transposed") {
    // Memory holds the tensor with its last two dims swapped: logical [.., m, n] is stored as
    // [.., n, m], and the view's strides swap back.
    const int64_t m = t.shape[nd - 2], n = t.shape[nd - 1];
    Shape swapped = t.shape;
    std::swap(swapped[nd - 2], swapped[nd - 1]);
    Shape strides = contiguous_strides(swapped);
    std::swap(strides[nd - 2], strides[nd - 1]);
    const Tensor buf = scattered(t, shape_numel(t.shape), [&](size_t i) {
      const auto k = static_cast<int64_t>(i);
      const int64_t b = k / std::max<int64_t>(m * n, 1), ij = k % std::max<int64_t>(m * n, 1);
      return b * m * n + (ij % n) * m + ij / n;
    });
    return make_view(buf, t.shape, strides, 0);
  }
  // strided: every other element of a buffer twice as wide in the last dim (NaN / 0 between).
  Shape wide = t.shape;
  wide.back() *= 2;
  Shape strides = contiguous_strides(wide);
  strides.back() = 2;
  const Tensor buf = scattered(t, shape_numel(wide), [](size_t i) { return 2 * static_cast<int64_t>(i); });
  return make_view(buf, t.shape, strides, 0);
}
}  // namespace

std::vector<Tensor> make_inputs(const FixtureCase& c, Device device) {
  std::vector<Tensor> storages;
  for (const FixtureTensor& s : c.storages) {
    Tensor t = from_values(s, s.values, s.ints, s.shape);
    if (!device.is_cpu()) t = t.to(device);
    storages.push_back(t);
  }
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Tensor x = make_input(c.inputs[i], storages);
    if (!device.is_cpu() && c.inputs[i].layout != "view") {
      // The same layout on the device: copy the whole buffer, take the same view of the copy.
      const auto n = static_cast<int64_t>(x.storage()->nbytes() / x.element_size());
      const Tensor moved = make_view(x, {n}, {1}, 0).to(device);
      x = make_view(moved, x.shape(), x.strides(), x.offset());
    }
    if (c.grads.count(static_cast<int>(i))) x.requires_grad_(true);
    inputs.push_back(x);
  }
  return inputs;
}

// ---- arguments ------------------------------------------------------------------------------------

const std::vector<std::string>& Args::raw(const std::string& name) const {
  auto it = m.find(name);
  if (it == m.end()) throw ValueError("fixtures: the case has no 'arg " + name + "'");
  return it->second;
}

const std::string& Args::one(const std::string& name) const {
  const auto& v = raw(name);
  if (v.size() != 1) throw ValueError("fixtures: 'arg " + name + "' should hold one value");
  return v[0];
}

int64_t Args::i(const std::string& name) const {
  int64_t v = 0;
  if (!parse_int(one(name), v)) throw ValueError("fixtures: 'arg " + name + "' is not an integer");
  return v;
}

double Args::d(const std::string& name) const {
  double v = 0;
  if (!parse_number(one(name), v)) throw ValueError("fixtures: 'arg " + name + "' is not a number");
  return v;
}

Shape Args::shape(const std::string& name) const {
  Shape s;
  for (const std::string& tok : raw(name)) {
    int64_t v = 0;
    if (!parse_int(tok, v)) throw ValueError("fixtures: 'arg " + name + "' holds a non-integer");
    s.push_back(v);
  }
  return s;
}

std::array<int64_t, 2> Args::pair(const std::string& name) const {
  const Shape s = shape(name);
  if (s.size() != 2) throw ValueError("fixtures: 'arg " + name + "' should hold two values");
  return {s[0], s[1]};
}

Reduction Args::reduction() const {
  const std::string& r = one("reduction");
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (r == "none") return Reduction::None;
  throw ValueError("fixtures: unknown reduction " + r);
}

Scalar Args::scalar(const std::string& name) const {
  const auto& v = raw(name);
  if (v.size() == 1) return Scalar(d(name));  // version 1: a bare float
  if (v.size() != 2) throw ValueError("fixtures: 'arg " + name + "' should be '<kind> <value>'");
  if (v[0] == "int") {
    int64_t x = 0;
    if (!parse_int(v[1], x)) throw ValueError("fixtures: bad int in 'arg " + name + "'");
    return Scalar(x);
  }
  if (v[0] == "bool") return Scalar(v[1] == "1");
  double x = 0;
  if (v[0] != "float" || !parse_number(v[1], x))
    throw ValueError("fixtures: bad number in 'arg " + name + "'");
  return Scalar(x);
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  return has(name) ? one(name) : fallback;
}

// ---- from an op name and its args to an ember call --------------------------------------------

const std::map<std::string, OpCall>& fixture_dispatch() {
  using T = Tensor;
  auto unary = [](T (*fn)(const T&)) {
    return OpCall([fn](const Inputs& x, const Args&) { return Outputs{fn(x[0])}; });
  };
  // x[0] (op) x[1], or x[0] (op) a number when the case has one input.
  auto binary = [](T (*fn)(const T&, const T&), T (*fs)(const T&, const Scalar&)) {
    return OpCall([fn, fs](const Inputs& x, const Args& a) {
      return Outputs{x.size() > 1 ? fn(x[0], x[1]) : fs(x[0], a.scalar("scalar"))};
    });
  };
  // self.op_(other or number): the in-place ops return self, updated.
  auto inplace = [](std::function<void(T&, const Inputs&, const Args&)> update) {
    return OpCall([update](const Inputs& x, const Args& a) {
      T self = x[0];
      update(self, x, a);
      return Outputs{self};
    });
  };
  static const std::map<std::string, OpCall> table = {
      {"add", binary(static_cast<T (*)(const T&, const T&)>(add),
                    static_cast<T (*)(const T&, const Scalar&)>(add))},
      {"sub", binary(static_cast<T (*)(const T&, const T&)>(sub),
                    static_cast<T (*)(const T&, const Scalar&)>(sub))},
      {"mul", binary(static_cast<T (*)(const T&, const T&)>(mul),
                    static_cast<T (*)(const T&, const Scalar&)>(mul))},
      {"div", [](const Inputs& x, const Args& a) {
         const std::string mode = a.str("rounding_mode");
         return Outputs{x.size() > 1 ? div(x[0], x[1], mode) : div(x[0], a.scalar("scalar"), mode)};
       }},
      {"floor_divide", binary(static_cast<T (*)(const T&, const T&)>(floor_divide),
                             static_cast<T (*)(const T&, const Scalar&)>(floor_divide))},
      {"neg", unary(neg)},
      {"pow", [](const Inputs& x, const Args& a) {
         if (a.has("base")) return Outputs{pow(a.scalar("base"), x[0])};  // a number ^ tensor
         if (x.size() > 1) return Outputs{pow(x[0], x[1])};                // tensor ^ tensor
         return Outputs{pow(x[0], a.scalar("exponent"))};
       }},
      {"fmod", binary(static_cast<T (*)(const T&, const T&)>(fmod),
                     static_cast<T (*)(const T&, const Scalar&)>(fmod))},
      {"remainder", binary(static_cast<T (*)(const T&, const T&)>(remainder),
                          static_cast<T (*)(const T&, const Scalar&)>(remainder))},
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
      {"prod", [](const Inputs& x, const Args& a) {
         if (!a.has("dim")) return Outputs{prod(x[0])};
         return Outputs{prod(x[0], a.i("dim"), a.b("keepdim"))};
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
         if (!a.has("dim")) return Outputs{argmin(x[0])};
         return Outputs{argmin(x[0], a.i("dim"), a.b("keepdim"))};
       }},
      {"amax", [](const Inputs& x, const Args& a) {
         return Outputs{amax(x[0], a.shape("dims"), a.b("keepdim"))};
       }},
      {"amin", [](const Inputs& x, const Args& a) {
         return Outputs{amin(x[0], a.shape("dims"), a.b("keepdim"))};
       }},
      {"cumsum", [](const Inputs& x, const Args& a) { return Outputs{cumsum(x[0], a.i("dim"))}; }},
      {"sort", [](const Inputs& x, const Args& a) {
         const ValuesIndices r = sort(x[0], a.i("dim"), a.b("descending"), a.b("stable"));
         return Outputs{r.values, r.indices};
       }},
      {"topk", [](const Inputs& x, const Args& a) {
         const int64_t dim = a.i("dim");
         const ValuesIndices r = topk(x[0], a.i("k"), dim, a.b("largest"), a.b("sorted"));
         if (a.b("sorted")) return Outputs{r.values, r.indices};
         // sorted=False: PyTorch's order is open, so the fixture lists the k picks in the order
         // of their positions (make_differential.py's tk_by_position); so do we.
         const Tensor order = sort(r.indices, dim).indices;
         return Outputs{gather(r.values, dim, order), gather(r.indices, dim, order)};
       }},
      {"any", [](const Inputs& x, const Args& a) {
         if (!a.has("dim")) return Outputs{any(x[0])};
         return Outputs{any(x[0], a.i("dim"), a.b("keepdim"))};
       }},
      {"all", [](const Inputs& x, const Args& a) {
         if (!a.has("dim")) return Outputs{all(x[0])};
         return Outputs{all(x[0], a.i("dim"), a.b("keepdim"))};
       }},
      {"matmul", [](const Inputs& x, const Args&) { return Outputs{matmul(x[0], x[1])}; }},
      {"softmax", [](const Inputs& x, const Args& a) {
         return Outputs{softmax(x[0], a.i("dim"))};
       }},
      {"log_softmax", [](const Inputs& x, const Args& a) {
         return Outputs{log_softmax(x[0], a.i("dim"))};
       }},
      {"cross_entropy", [](const Inputs& x, const Args& a) {
         const Tensor weight = x.size() > 2 ? x[2] : Tensor();
         const double smoothing = a.has("label_smoothing") ? a.d("label_smoothing") : 0.0;
         return Outputs{
             cross_entropy(x[0], x[1], weight, a.reduction(), a.i("ignore_index"), smoothing)};
       }},
      {"mse_loss", [](const Inputs& x, const Args& a) {
         return Outputs{mse_loss(x[0], x[1], a.reduction())};
       }},
      {"eq", binary(eq, eq)},
      {"ne", binary(ne, ne)},
      {"lt", binary(lt, lt)},
      {"le", binary(le, le)},
      {"gt", binary(gt, gt)},
      {"ge", binary(ge, ge)},
      {"where", [](const Inputs& x, const Args& a) {
         // A number in place of either value: 'arg self' / 'arg other' (torch.where's names).
         if (a.has("self") && a.has("other"))
           return Outputs{where(x[0], a.scalar("self"), a.scalar("other"))};
         if (a.has("self")) return Outputs{where(x[0], a.scalar("self"), x[1])};
         if (a.has("other")) return Outputs{where(x[0], x[1], a.scalar("other"))};
         return Outputs{where(x[0], x[1], x[2])};
       }},
      {"masked_fill", [](const Inputs& x, const Args& a) {
         return Outputs{masked_fill(x[0], x[1], a.scalar("value"))};
       }},
      {"clamp", [](const Inputs& x, const Args& a) {
         const std::optional<Scalar> lo = a.has("min") ? std::optional<Scalar>(a.scalar("min")) : std::nullopt;
         const std::optional<Scalar> hi = a.has("max") ? std::optional<Scalar>(a.scalar("max")) : std::nullopt;
         return Outputs{clamp(x[0], lo, hi)};
       }},
      {"clamp_min", [](const Inputs& x, const Args& a) { return Outputs{clamp_min(x[0], a.scalar("min"))}; }},
      {"clamp_max", [](const Inputs& x, const Args& a) { return Outputs{clamp_max(x[0], a.scalar("max"))}; }},
      {"maximum", [](const Inputs& x, const Args&) { return Outputs{maximum(x[0], x[1])}; }},
      {"minimum", [](const Inputs& x, const Args&) { return Outputs{minimum(x[0], x[1])}; }},
      {"isnan", unary(isnan)},
      {"isinf", unary(isinf)},
      {"isfinite", unary(isfinite)},
      {"logical_not", unary(logical_not)},
      {"logical_and", [](const Inputs& x, const Args&) { return Outputs{logical_and(x[0], x[1])}; }},
      {"logical_or", [](const Inputs& x, const Args&) { return Outputs{logical_or(x[0], x[1])}; }},
      {"logical_xor", [](const Inputs& x, const Args&) { return Outputs{logical_xor(x[0], x[1])}; }},
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
         if (a.has("groups")) o.groups = a.i("groups");
         return Outputs{conv2d(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), o)};
       }},
      {"max_pool2d", [](const Inputs& x, const Args& a) {
         Pool2dOptions o;
         o.kernel_size = a.pair("kernel_size");
         o.stride = a.pair("stride");  // [0, 0]: the kernel size
         o.padding = a.pair("padding");
         if (a.has("dilation")) o.dilation = a.pair("dilation");
         if (a.has("ceil_mode")) o.ceil_mode = a.b("ceil_mode");
         if (a.has("return_indices") && a.b("return_indices")) {
           const ValuesIndices vi = max_pool2d_with_indices(x[0], o);
           return Outputs{vi.values, vi.indices};
         }
         return Outputs{max_pool2d(x[0], o)};
       }},
      {"avg_pool2d", [](const Inputs& x, const Args& a) {
         Pool2dOptions o;
         o.kernel_size = a.pair("kernel_size");
         o.stride = a.pair("stride");
         o.padding = a.pair("padding");
         if (a.has("ceil_mode")) o.ceil_mode = a.b("ceil_mode");
         if (a.has("count_include_pad")) o.count_include_pad = a.b("count_include_pad");
         return Outputs{avg_pool2d(x[0], o)};
       }},
      {"view", [](const Inputs& x, const Args& a) { return Outputs{view(x[0], a.shape("shape"))}; }},
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
      {"squeeze", [](const Inputs& x, const Args& a) { return Outputs{squeeze(x[0], a.i("dim"))}; }},
      {"unsqueeze", [](const Inputs& x, const Args& a) {
         return Outputs{unsqueeze(x[0], a.i("dim"))};
       }},
      {"expand", [](const Inputs& x, const Args& a) { return Outputs{expand(x[0], a.shape("shape"))}; }},
      {"split", [](const Inputs& x, const Args& a) {
         if (a.has("split_size")) return Outputs(split(x[0], a.i("split_size"), a.i("dim")));
         return Outputs(split(x[0], a.shape("split_sizes"), a.i("dim")));
       }},
      {"chunk", [](const Inputs& x, const Args& a) {
         return Outputs(chunk(x[0], a.i("chunks"), a.i("dim")));
       }},
      {"contiguous", unary(contiguous)},
      {"clone", unary(clone)},
      {"to_dtype", [](const Inputs& x, const Args& a) {
         return Outputs{to_dtype(x[0], dtype_from_name(a.one("dtype")))};
       }},
      {"to_device", [](const Inputs& x, const Args& a) {
         return Outputs{to_device(x[0], Device(a.one("device")))};
       }},
      {"add_", inplace([](T& s, const Inputs& x, const Args& a) {
         const double alpha = a.has("alpha") ? a.scalar("alpha").to_double() : 1.0;
         if (x.size() > 1) s.add_(x[1], alpha);
         else s.add_(a.scalar("other"));
       })},
      {"sub_", inplace([](T& s, const Inputs& x, const Args& a) {
         const double alpha = a.has("alpha") ? a.scalar("alpha").to_double() : 1.0;
         if (x.size() > 1) s.sub_(x[1], alpha);
         else s.sub_(a.scalar("other"));
       })},
      {"mul_", inplace([](T& s, const Inputs& x, const Args& a) {
         if (x.size() > 1) s.mul_(x[1]);
         else s.mul_(a.scalar("other"));
       })},
      {"div_", inplace([](T& s, const Inputs& x, const Args& a) {
         const std::string mode = a.str("rounding_mode");
         if (x.size() > 1) s.div_(x[1], mode);
         else s.div_(a.scalar("other"), mode);
       })},
      {"copy_", inplace([](T& s, const Inputs& x, const Args&) { s.copy_(x[1]); })},
      {"fill_", inplace([](T& s, const Inputs&, const Args& a) { s.fill_(a.scalar("value")); })},
      {"zero_", inplace([](T& s, const Inputs&, const Args&) { s.zero_(); })},
  };
  return table;
}

}  // namespace ember::test
