// Every op on CUDA against the CPU: the forward output and the gradient of every input.
//
// Two kinds of tests live here:
//   * "cuda parity": every case of the op table (tests/op_cases.h, tests/cases/*.cpp);
//   * "cuda sweep": each op family over sizes 0, 1, 7, 1023, 65537 and a large one (about 4M
//     elements, or [2049, 2049] for 2-d ops), with contiguous, strided (every other element) and
//     transposed inputs — the sizes where a kernel's tail handling, its grid arithmetic and its
//     strided path go wrong — plus float32 runs of the ops people train with.
// A CUDA input is built with exactly the layout of its CPU twin (same strides, same offset into a
// copy of the same buffer), so a strided CPU case really runs the strided CUDA path.
//
// On a machine without a usable GPU (CI, most laptops) each [cuda] test prints
// "SKIPPED: <reason>", which CTest reports as a skipped test. The "[registry]" test at the end
// runs everywhere.
//
// How far the sweeps go depends on where they run (tier() below): everything on a GPU;
// EMBER_PARITY_SMALL=1 leaves the largest sizes out (for runs under compute-sanitizer, which is
// 10-100x slower); in the emulation build (-DEMBER_CUDA=EMULATE, where the CPU runs every CUDA
// thread) the long lengths also shrink, to the smallest that still take every path of the
// kernels (see long_len()). EMBER_PARITY_TIER=full|small|emulated overrides. Building this file
// with -DEMBER_PARITY_SELF_CHECK compares the CPU with itself: a check of this harness (input
// layouts, index ranges, shapes every op accepts) on a machine without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "op_cases.h"
#ifdef EMBER_CUDA_EMULATED
#include "kernels/emulator/emulator.h"
#endif

using namespace ember;

namespace {

// ---- where the second run goes --------------------------------------------------------------

#ifdef EMBER_PARITY_SELF_CHECK
Device target() { return Device::cpu(); }
bool skip_without_gpu() { return false; }
#else
Device target() { return Device::cuda(0); }
bool skip_without_gpu() {
  if (cuda::is_available()) return false;
  std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
  return true;
}
#endif

enum class Tier { Full, Small, Emulated };

Tier tier() {
  static const Tier t = [] {
    if (const char* e = std::getenv("EMBER_PARITY_TIER"); e != nullptr && *e != '\0') {
      const std::string v(e);
      if (v == "full") return Tier::Full;
      if (v == "small") return Tier::Small;
      if (v == "emulated") return Tier::Emulated;
      std::cerr << "EMBER_PARITY_TIER=" << v << " is not full, small or emulated; ignored\n";
    }
    if (cuda::is_emulated()) return Tier::Emulated;
    const char* s = std::getenv("EMBER_PARITY_SMALL");
    return s != nullptr && *s != '\0' && std::string(s) != "0" ? Tier::Small : Tier::Full;
  }();
  return t;
}

// Leave the largest sizes out?
bool small_only() { return tier() != Tier::Full; }

// The "long" length of the sweeps. On a GPU 65537: past 2^16, so several full blocks and a
// ragged tail. In emulation 8209: still several blocks and a tail, still longer than a warp's
// row (2048) and a softmax row per warp (1024), and still more than twice the 4096 elements a
// row segment must have for a reduction to split into two passes — every code path of those
// kernels, at an eighth of the work.
int64_t long_len() { return tier() == Tier::Emulated ? 8209 : 65537; }

// ---- tolerances -----------------------------------------------------------------------------
//
// An element passes when |cuda - cpu| <= rtol * |cpu| + atol * max|cpu|, where max|cpu| is the
// largest magnitude in the CPU tensor. Scaling atol by the tensor's own size keeps the test sharp
// for tensors of small numbers (the softmax of a 4M-wide row, mean's gradient w / n, the
// cross-entropy gradient (p - onehot) / N): a fixed atol of 1e-9 would pass them whatever their
// values.
//
//   ops                                     float64 rtol/atol  float32 rtol/atol
//   neg abs relu max min argmax argmin      0 / 0              0 / 0
//   eq ne lt le gt ge contiguous clone
//   to_dtype cat
//       values are moved or selected, never computed: exact on every device.
//   exp log tanh sigmoid pow                1e-8 / 1e-9        1e-5 / 1e-6
//       CUDA's libm and glibc may differ by an ulp or two.
//   sum mean sum_to softmax log_softmax     1e-8 / 1e-9        1e-5 / 1e-6
//   cross_entropy mse_loss
//       sums in another order: trees of partial sums, warp shuffles, atomics.
//   matmul                                  1e-8 / 1e-9        1e-5 / 1e-5
//       cuBLAS blocks and fuses (FMA) differently; float32 products are summed in float32 on
//       both devices, so the error grows with k.
//   everything else                         1e-9 / 1e-9        1e-5 / 1e-6
//       one rounding per step, but a formula may be arranged differently (g / (2 sqrt x)
//       versus 0.5 g / sqrt x) and broadcast gradients are sums.
struct Tol {
  double rtol;
  double atol;
};

Tol tolerance(const std::string& op, DType dtype) {
  static const std::set<std::string> exact = {"neg",      "abs",    "relu", "max",        "min",
                                              "argmax",   "argmin", "eq",   "ne",         "lt",
                                              "le",       "gt",     "ge",   "contiguous", "clone",
                                              "to_dtype", "cat"};
  static const std::set<std::string> libm = {"exp", "log", "tanh", "sigmoid", "pow"};
  static const std::set<std::string> summing = {
      "sum", "mean", "sum_to", "softmax", "log_softmax", "cross_entropy", "mse_loss", "matmul"};
  if (exact.count(op)) return {0.0, 0.0};
  if (dtype == kFloat32) return op == "matmul" ? Tol{1e-5, 1e-5} : Tol{1e-5, 1e-6};
  if (libm.count(op) || summing.count(op)) return {1e-8, 1e-9};
  return {1e-9, 1e-9};
}

// ---- comparing two tensors ------------------------------------------------------------------

bool close(double ref, double got, double rtol, double atol) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (ref == got) return true;  // also equal infinities
  return std::fabs(got - ref) <= rtol * std::fabs(ref) + atol;
}

// "[2, 17]" for flat index 2 * 1023 + 17 of a [3, 1023] tensor.
std::string coords(int64_t flat, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return shape_str(c);
}

// Checks shape, dtype, device and every value; on failure says how many elements differ, where
// the first and the worst are, and what both devices computed there.
void require_close(const Tensor& ref, const Tensor& got, Tol tol, const std::string& what) {
  INFO(what);
  REQUIRE(ref.defined());
  REQUIRE(got.defined());
  CHECK(got.device() == target());
  REQUIRE(shape_str(got.shape()) == shape_str(ref.shape()));
  REQUIRE(got.dtype() == ref.dtype());
  const std::vector<double> a = ref.to_vector<double>();
  const std::vector<double> b = got.to_vector<double>();
  REQUIRE(a.size() == b.size());
  double scale = 0.0;
  for (double x : a)
    if (std::isfinite(x)) scale = std::max(scale, std::fabs(x));
  const double atol = tol.atol * scale;
  int64_t bad = 0, first = -1, worst = -1;
  double worst_excess = -1.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (close(a[i], b[i], tol.rtol, atol)) continue;
    ++bad;
    if (first < 0) first = static_cast<int64_t>(i);
    const double diff = std::fabs(b[i] - a[i]);
    const double excess = std::isnan(diff) ? INFINITY : diff - (tol.rtol * std::fabs(a[i]) + atol);
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = static_cast<int64_t>(i);
    }
  }
  std::ostringstream msg;
  msg.precision(17);
  msg << "shape " << shape_str(ref.shape()) << ", " << ref.dtype() << ", rtol " << tol.rtol
      << ", atol " << tol.atol << " x max|cpu| " << scale;
  if (bad > 0) {
    msg << ": " << bad << " of " << a.size() << " elements differ; first at "
        << coords(first, ref.shape()) << " (cpu " << a[static_cast<size_t>(first)] << ", "
        << target() << " " << b[static_cast<size_t>(first)] << "), worst at "
        << coords(worst, ref.shape()) << " (cpu " << a[static_cast<size_t>(worst)] << ", "
        << target() << " " << b[static_cast<size_t>(worst)] << ")";
  }
  INFO(msg.str());
  CHECK(bad == 0);
}

// ---- inputs on both devices -----------------------------------------------------------------

// A copy of `t` on device d with exactly t's layout: its whole buffer is copied and the same
// view (shape, strides, offset) is taken of the copy. Tensor::to would return a contiguous copy
// and the strided kernels would never run.
Tensor same_layout_on(const Tensor& t, Device d) {
  const auto storage_numel = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  const Tensor whole = make_view(t, {storage_numel}, {1}, 0);
  const Tensor moved = whole.to(d);
  Tensor v = make_view(moved, t.shape(), t.strides(), t.offset());
  if (t.requires_grad()) v.requires_grad_(true);
  return v;
}

// The gradient fed into backward: random values in [-1, 1), so every input gradient carries
// information (with all ones the gradient of softmax would be zero whatever the kernel did).
Tensor upstream(const Tensor& y) {
  manual_seed(0x5eed);
  return (rand(y.shape(), kFloat64) * 2.0 - 1.0).to(y.dtype());
}

using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

DType float_dtype_of(const Inputs& in) {
  for (const Tensor& t : in)
    if (t.defined() && is_floating(t.dtype())) return t.dtype();
  return kFloat64;
}

// Runs fn on the CPU inputs and on their twins on the target device; compares the outputs and,
// for a differentiable case, the gradient of every input that requires one. The inputs are
// re-wrapped as fresh leaves on both sides, so a tensor passed to several check_case calls does
// not carry the gradient of an earlier one.
void check_case(const std::string& op, const Inputs& inputs, const Fn& fn,
                bool differentiable = true) {
  const Tol tol = tolerance(op, float_dtype_of(inputs));
  Inputs cpu_in, dev_in;
  for (const Tensor& t : inputs) {
    if (t.defined()) REQUIRE(t.device().is_cpu());
    cpu_in.push_back(t.defined() ? same_layout_on(t, Device::cpu()) : Tensor());
    dev_in.push_back(t.defined() ? same_layout_on(t, target()) : Tensor());
    if (t.defined()) REQUIRE(dev_in.back().strides() == t.strides());
  }
  const Tensor y_cpu = fn(cpu_in);
  const Tensor y_dev = fn(dev_in);
  require_close(y_cpu, y_dev, tol, op + ": forward output");
  if (!differentiable || !y_cpu.requires_grad()) return;
  REQUIRE(y_dev.requires_grad());
  const Tensor w = upstream(y_cpu);
  y_cpu.backward(w);
  y_dev.backward(w.to(target()));
  for (size_t i = 0; i < cpu_in.size(); ++i) {
    if (!cpu_in[i].defined() || !cpu_in[i].requires_grad()) continue;
    const std::string what = op + ": gradient of input " + std::to_string(i);
    {
      INFO(what);
      // An input the output does not depend on gets no gradient on either device.
      REQUIRE(dev_in[i].grad().defined() == cpu_in[i].grad().defined());
    }
    if (cpu_in[i].grad().defined()) require_close(cpu_in[i].grad(), dev_in[i].grad(), tol, what);
  }
}

// ---- building inputs of every layout --------------------------------------------------------

enum class Layout { Contiguous, Strided, Transposed };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Strided: return "strided";
    case Layout::Transposed: return "transposed";
  }
  return "?";
}

// Makes a contiguous CPU tensor of the given shape (deterministic: each seeds the generator).
using Gen = std::function<Tensor(const Shape&)>;

// `shape` laid out as asked: contiguous; every other element of a buffer twice as long in the
// last dim (Strided); or the transpose of a contiguous tensor with the last two dims swapped
// (Transposed — rank < 2 falls back to Strided, so the input is never silently contiguous).
Tensor with_layout(const Shape& shape, Layout layout, const Gen& gen, bool requires_grad) {
  Tensor t;
  if (layout == Layout::Transposed && shape.size() >= 2) {
    Shape s = shape;
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    t = gen(s).transpose(-1, -2);
  } else if (layout != Layout::Contiguous) {
    Shape s = shape.empty() ? Shape{1} : shape;
    s.back() *= 2;
    t = gen(s).slice(-1, 0, s.back(), 2);
    if (shape.empty()) t = t.select(0, 0);
  } else {
    t = gen(shape);
  }
  t = t.detach();
  if (requires_grad) t.requires_grad_(true);
  return t;
}

// Uniform in [lo, hi), drawn in float64 and converted, so a float32 input is the rounding of the
// float64 one.
Gen uniform(uint64_t seed, double lo, double hi, DType dtype = kFloat64) {
  return [=](const Shape& s) {
    manual_seed(seed);
    return (rand(s, kFloat64) * (hi - lo) + lo).to(dtype);
  };
}
// Integers -2..2 stored as float64: many exact ties (comparisons, argmax's first-index rule).
Gen small_ints(uint64_t seed) {
  return [=](const Shape& s) {
    manual_seed(seed);
    return randint(-2, 3, s).to(kFloat64);
  };
}
// Distinct values (a shuffled ramp in [-1, 1)): max/min and their gradients have no ties.
Gen distinct(uint64_t seed, DType dtype = kFloat64) {
  return [=](const Shape& s) {
    const int64_t n = shape_numel(s);
    manual_seed(seed);
    const double step = 2.0 / static_cast<double>(std::max<int64_t>(n, 1));
    return (randperm(n, kFloat64) * step - 1.0).reshape(s).to(dtype);
  };
}
Gen bool_mask(uint64_t seed) {
  return [=](const Shape& s) {
    manual_seed(seed);
    return rand(s, kFloat64).gt(scalar_tensor(0.5, kFloat64));
  };
}
Gen index_values(int64_t high, uint64_t seed) {
  return [=](const Shape& s) {
    manual_seed(seed);
    return randint(0, high, s);
  };
}

Tensor floats(const Shape& s, Layout l, uint64_t seed, double lo = -1.0, double hi = 1.0,
              DType dtype = kFloat64) {
  return with_layout(s, l, uniform(seed, lo, hi, dtype), true);
}

// ---- the sizes ------------------------------------------------------------------------------

constexpr int64_t kLarge1d = (int64_t{1} << 22) + 1;  // odd, above every power-of-two grid size

struct Input {
  Shape shape;
  Layout layout;
};

std::string describe(const Shape& s, Layout l) { return shape_str(s) + " " + layout_name(l); }

// 1-d sizes (contiguous and strided) and 2-d shapes (all three layouts), for elementwise ops.
std::vector<Input> elementwise_inputs(bool with_empty = true) {
  std::vector<Shape> one_d = {{1}, {7}, {1023}, {long_len()}};
  if (with_empty) one_d.insert(one_d.begin(), Shape{0});
  if (!small_only()) one_d.push_back({kLarge1d});
  std::vector<Shape> two_d = {{7, 3}, {33, 1023}};
  if (with_empty) two_d.push_back({3, 0});
  if (!small_only()) two_d.push_back({2049, 2049});
  std::vector<Input> out;
  if (with_empty) out.push_back({{}, Layout::Contiguous});  // 0-d
  for (const Shape& s : one_d)
    for (Layout l : {Layout::Contiguous, Layout::Strided}) out.push_back({s, l});
  for (const Shape& s : two_d)
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::Transposed})
      out.push_back({s, l});
  return out;
}

// Shapes for reductions and softmax: the reduced length runs through 1, 7, 1023 and the long
// length along the last dim and along dim 0, with few and many rows.
std::vector<Shape> reduction_shapes() {
  const int64_t L = long_len();
  std::vector<Shape> s = {{1},       {7},       {1023}, {L},    {1, 1},   {7, 7},
                          {3, 1023}, {1023, 3}, {2, L}, {L, 2}, {3, 5, 7}};
  if (!small_only()) {
    s.push_back({kLarge1d});
    s.push_back({2049, 2049});
  }
  return s;
}

std::vector<Layout> layouts_for(const Shape& s) {
  if (s.size() >= 2) return {Layout::Contiguous, Layout::Strided, Layout::Transposed};
  return {Layout::Contiguous, Layout::Strided};
}

using T = const Tensor&;

}  // namespace

// =============================================================================================
// Every case of the op table.
// =============================================================================================

TEST_CASE("cuda parity: every op case matches the CPU (output and input gradients)", "[cuda]") {
  if (skip_without_gpu()) return;
  for (const test::OpCase& c : test::op_cases()) {
    DYNAMIC_SECTION(c.op << ": " << c.label) {
      check_case(c.op, c.inputs(), c.fn, c.differentiable);
    }
  }
}

// =============================================================================================
// The size sweep, one test per op family.
// =============================================================================================

TEST_CASE("cuda sweep: unary elementwise ops", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  struct Unary {
    const char* op;
    const char* label;
    double lo, hi;  // input range: inside the op's domain, away from kinks
    std::function<Tensor(T)> f;
  };
  const std::vector<Unary> ops = {
      {"neg", "", -1, 1, [](T a) { return neg(a); }},
      {"exp", "", -3, 3, [](T a) { return exp(a); }},
      {"log", "", 0.05, 4, [](T a) { return log(a); }},
      {"sqrt", "", 0.05, 4, [](T a) { return sqrt(a); }},
      {"abs", "", -1, 1, [](T a) { return abs(a); }},
      {"relu", "", -1, 1, [](T a) { return relu(a); }},
      {"sigmoid", "", -8, 8, [](T a) { return sigmoid(a); }},
      {"tanh", "", -4, 4, [](T a) { return tanh(a); }},
      {"pow", " x^2", -1.5, 1.5, [](T a) { return pow(a, 2.0); }},
      {"pow", " x^3", -1.5, 1.5, [](T a) { return pow(a, 3.0); }},
      {"pow", " x^0.5", 0.05, 4, [](T a) { return pow(a, 0.5); }},
      {"pow", " x^-1.5", 0.2, 2, [](T a) { return pow(a, -1.5); }},
  };
  uint64_t seed = 1000;
  for (const Unary& u : ops) {
    for (const Input& in : elementwise_inputs()) {
      ++seed;
      DYNAMIC_SECTION(u.op << u.label << " " << describe(in.shape, in.layout)) {
        const auto f = u.f;
        check_case(u.op, {floats(in.shape, in.layout, seed, u.lo, u.hi)},
                   [f](const Inputs& x) { return f(x[0]); });
      }
    }
  }
}

TEST_CASE("cuda sweep: binary ops, same shape and broadcast", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  struct Binary {
    const char* op;
    double blo, bhi;  // range of b (div: away from zero)
    std::function<Tensor(T, T)> f;
  };
  const std::vector<Binary> ops = {
      {"add", -1, 1, [](T a, T b) { return add(a, b); }},
      {"sub", -1, 1, [](T a, T b) { return sub(a, b); }},
      {"mul", -1, 1, [](T a, T b) { return mul(a, b); }},
      {"div", 0.5, 1.5, [](T a, T b) { return div(a, b); }},
  };
  // (a, b) shape pairs: same shape in every layout pairing, then broadcasts of every kind.
  struct Pair {
    Input a, b;
  };
  std::vector<Pair> pairs;
  for (const Input& in : elementwise_inputs()) {
    pairs.push_back({in, {in.shape, Layout::Contiguous}});
    if (in.layout != Layout::Contiguous) pairs.push_back({in, in});
  }
  std::vector<int64_t> lengths = {1, 7, 1023, long_len()};
  if (!small_only()) lengths.push_back(kLarge1d);
  for (int64_t n : lengths) {
    pairs.push_back({{{n}, Layout::Contiguous}, {{}, Layout::Contiguous}});  // [n] op 0-d
    pairs.push_back({{{}, Layout::Contiguous}, {{n}, Layout::Strided}});     // 0-d op [n]
    pairs.push_back({{{n}, Layout::Strided}, {{1}, Layout::Contiguous}});    // [n] op [1]
  }
  // Rows whose length is a multiple of the 16-byte vector (6 x 64, 33 x 1024) take the
  // row-broadcast path of kernels/cuda/elementwise.cu; the odd ones the strided path.
  std::vector<Shape> mats = {{7, 3}, {33, 1023}, {1023, 33}, {6, 64}, {33, 1024}};
  if (!small_only()) mats.push_back({2049, 2049});
  for (const Shape& m : mats) {
    const int64_t r = m[0], c = m[1];
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::Transposed}) {
      pairs.push_back({{m, l}, {{c}, Layout::Contiguous}});     // row vector
      pairs.push_back({{m, l}, {{r, 1}, Layout::Contiguous}});  // column vector
      pairs.push_back({{{1, c}, Layout::Strided}, {m, l}});     // broadcast a
    }
    pairs.push_back({{{c}, Layout::Strided}, {{r, 1}, Layout::Contiguous}});  // outer: both grow
    pairs.push_back({{{r, 1}, Layout::Contiguous}, {{1, c}, Layout::Contiguous}});
  }
  pairs.push_back({{{5, 1, 7}, Layout::Transposed}, {{3, 1}, Layout::Contiguous}});
  pairs.push_back({{{2, 3, 1, 5}, Layout::Contiguous}, {{4, 1}, Layout::Strided}});

  uint64_t seed = 2000;
  for (const Binary& op : ops) {
    std::set<std::string> seen;  // a section name twice would silently run once
    for (const Pair& p : pairs) {
      seed += 2;
      const std::string label =
          describe(p.a.shape, p.a.layout) + " with " + describe(p.b.shape, p.b.layout);
      if (!seen.insert(label).second) continue;
      DYNAMIC_SECTION(op.op << " " << label) {
        const auto f = op.f;
        check_case(op.op,
                   {floats(p.a.shape, p.a.layout, seed),
                    floats(p.b.shape, p.b.layout, seed + 1, op.blo, op.bhi)},
                   [f](const Inputs& x) { return f(x[0], x[1]); });
      }
    }
  }
}

TEST_CASE("cuda sweep: comparisons, where and masked_fill", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  using Cmp = Tensor (*)(T, T);
  const std::vector<std::pair<const char*, Cmp>> cmps = {
      {"eq", [](T a, T b) { return eq(a, b); }}, {"ne", [](T a, T b) { return ne(a, b); }},
      {"lt", [](T a, T b) { return lt(a, b); }}, {"le", [](T a, T b) { return le(a, b); }},
      {"gt", [](T a, T b) { return gt(a, b); }}, {"ge", [](T a, T b) { return ge(a, b); }}};
  uint64_t seed = 3000;
  for (const auto& [name, f] : cmps) {
    for (const Input& in : elementwise_inputs()) {
      seed += 2;
      // Same shape (small integers: many ties), then against a broadcast row or a 0-d scalar.
      DYNAMIC_SECTION(name << " " << describe(in.shape, in.layout) << " vs same shape") {
        check_case(
            name,
            {with_layout(in.shape, in.layout, small_ints(seed), false),
             with_layout(in.shape, Layout::Contiguous, small_ints(seed + 1), false)},
            [f = f](const Inputs& x) { return f(x[0], x[1]); }, false);
      }
      const Shape b_shape = in.shape.empty() ? Shape{} : Shape{in.shape.back()};
      DYNAMIC_SECTION(name << " " << describe(in.shape, in.layout) << " vs broadcast "
                           << shape_str(b_shape)) {
        check_case(
            name,
            {with_layout(in.shape, in.layout, small_ints(seed), false),
             with_layout(b_shape, Layout::Strided, small_ints(seed + 1), false)},
            [f = f](const Inputs& x) { return f(x[0], x[1]); }, false);
      }
    }
    DYNAMIC_SECTION(name << " int64 [1023, 7] vs [7]") {
      check_case(
          name,
          {with_layout({1023, 7}, Layout::Transposed, index_values(3, seed), false),
           with_layout({7}, Layout::Contiguous, index_values(3, seed + 1), false)},
          [f = f](const Inputs& x) { return f(x[0], x[1]); }, false);
    }
  }
  for (const Input& in : elementwise_inputs()) {
    seed += 3;
    DYNAMIC_SECTION("where " << describe(in.shape, in.layout) << ", all three the same shape") {
      check_case("where",
                 {with_layout(in.shape, in.layout, bool_mask(seed), false),
                  floats(in.shape, in.layout, seed + 1),
                  floats(in.shape, Layout::Contiguous, seed + 2)},
                 [](const Inputs& x) { return where(x[0], x[1], x[2]); });
    }
    if (in.shape.size() == 2) {
      const Shape col = {in.shape[0], 1}, row = {in.shape[1]};
      DYNAMIC_SECTION("where cond " << shape_str(col) << ", a " << shape_str(row) << ", b "
                                    << describe(in.shape, in.layout)) {
        check_case("where",
                   {with_layout(col, Layout::Contiguous, bool_mask(seed), false),
                    floats(row, Layout::Strided, seed + 1), floats(in.shape, in.layout, seed + 2)},
                   [](const Inputs& x) { return where(x[0], x[1], x[2]); });
      }
      DYNAMIC_SECTION("where cond " << describe(in.shape, in.layout) << ", a, 0-d b") {
        check_case("where",
                   {with_layout(in.shape, in.layout, bool_mask(seed), false),
                    floats(in.shape, Layout::Contiguous, seed + 1),
                    floats({}, Layout::Contiguous, seed + 2)},
                   [](const Inputs& x) { return where(x[0], x[1], x[2]); });
      }
      DYNAMIC_SECTION("masked_fill " << describe(in.shape, in.layout) << " mask "
                                     << shape_str(row)) {
        check_case("masked_fill",
                   {floats(in.shape, in.layout, seed + 1),
                    with_layout(row, Layout::Contiguous, bool_mask(seed), false)},
                   [](const Inputs& x) { return masked_fill(x[0], x[1], -0.5); });
      }
    }
  }
}

TEST_CASE("cuda sweep: reductions over the last dim, dim 0 and all dims", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  uint64_t seed = 4000;
  for (const Shape& s : reduction_shapes()) {
    for (Layout l : layouts_for(s)) {
      ++seed;
      const std::string in = describe(s, l);
      // The dims to reduce: the last, the first (when that is another one), and all.
      std::vector<std::pair<std::string, Shape>> dims = {{"dim -1", {-1}}};
      if (s.size() > 1) dims.push_back({"dim 0", {0}});
      dims.push_back({"all dims", {}});
      for (const auto& [dname, d] : dims) {
        DYNAMIC_SECTION("sum " << in << " " << dname) {
          check_case("sum", {floats(s, l, seed)},
                     [d = d](const Inputs& x) { return sum(x[0], d); });
        }
        DYNAMIC_SECTION("mean " << in << " " << dname) {
          check_case("mean", {floats(s, l, seed)},
                     [d = d](const Inputs& x) { return mean(x[0], d); });
        }
      }
      DYNAMIC_SECTION("sum " << in << " dim -1 keepdim") {
        check_case("sum", {floats(s, l, seed)},
                   [](const Inputs& x) { return sum(x[0], {-1}, true); });
      }
      // max/min/argmax/argmin along one dim: values (and their gradient) and indices.
      std::vector<std::pair<std::string, int64_t>> one_dims = {{"dim -1", -1}};
      if (s.size() > 1) one_dims.push_back({"dim 0", 0});
      for (const auto& [dname, d] : one_dims) {
        for (const char* op : {"max", "min"}) {
          const bool is_max = std::string(op) == "max";
          DYNAMIC_SECTION(op << " " << in << " " << dname << " values") {
            check_case(op, {with_layout(s, l, distinct(seed), true)},
                       [d = d, is_max](const Inputs& x) {
                         return is_max ? max(x[0], d).values : min(x[0], d).values;
                       });
          }
          DYNAMIC_SECTION(op << " " << in << " " << dname << " indices") {
            check_case(
                op, {with_layout(s, l, distinct(seed), false)},
                [d = d, is_max](const Inputs& x) {
                  return is_max ? max(x[0], d).indices : min(x[0], d).indices;
                },
                false);
          }
          // Ties everywhere: both devices must keep the first index (and send the gradient there).
          DYNAMIC_SECTION(op << " " << in << " " << dname << " with ties") {
            check_case(op, {with_layout(s, l, small_ints(seed), true)},
                       [d = d, is_max](const Inputs& x) {
                         return is_max ? max(x[0], d).values : min(x[0], d).values;
                       });
            check_case(
                op, {with_layout(s, l, small_ints(seed), false)},
                [d = d, is_max](const Inputs& x) {
                  return is_max ? max(x[0], d).indices : min(x[0], d).indices;
                },
                false);
          }
        }
        DYNAMIC_SECTION("argmax " << in << " " << dname) {
          check_case(
              "argmax", {with_layout(s, l, distinct(seed), false)},
              [d = d](const Inputs& x) { return argmax(x[0], d); }, false);
          check_case(
              "argmax", {with_layout(s, l, small_ints(seed), false)},
              [d = d](const Inputs& x) { return argmax(x[0], d); }, false);
        }
        DYNAMIC_SECTION("argmin " << in << " " << dname) {
          check_case(
              "argmin", {with_layout(s, l, distinct(seed), false)},
              [d = d](const Inputs& x) { return argmin(x[0], d); }, false);
          check_case(
              "argmin", {with_layout(s, l, small_ints(seed), false)},
              [d = d](const Inputs& x) { return argmin(x[0], d); }, false);
        }
      }
      DYNAMIC_SECTION("max/min/argmax " << in << " all dims") {
        check_case("max", {with_layout(s, l, distinct(seed), true)},
                   [](const Inputs& x) { return max(x[0]); });
        check_case("min", {with_layout(s, l, distinct(seed), true)},
                   [](const Inputs& x) { return min(x[0]); });
        check_case(
            "argmax", {with_layout(s, l, distinct(seed), false)},
            [](const Inputs& x) { return argmax(x[0]); }, false);
        check_case("max", {with_layout(s, l, small_ints(seed), true)},
                   [](const Inputs& x) { return max(x[0]); });
        check_case(
            "argmax", {with_layout(s, l, small_ints(seed), false)},
            [](const Inputs& x) { return argmax(x[0]); }, false);
      }
    }
  }
  // NaN wins a max and a min, and its (first) index is the argmax/argmin.
  for (const Shape& s : std::vector<Shape>{{7, 7}, {3, 1023}, {1023, 3}}) {
    DYNAMIC_SECTION("max/min/argmax with NaNs " << shape_str(s)) {
      auto with_nans = [](const Shape& shape) {
        std::vector<double> v = distinct(77)(shape).to_vector<double>();
        for (size_t i = 3; i < v.size(); i += 11) v[i] = NAN;
        return tensor(v, shape, kFloat64);
      };
      const Tensor x = with_nans(s);
      for (int64_t d : {int64_t{-1}, int64_t{0}}) {
        INFO("dim " << d);
        check_case(
            "max", {x}, [d](const Inputs& in) { return max(in[0], d).values; }, false);
        check_case(
            "max", {x}, [d](const Inputs& in) { return max(in[0], d).indices; }, false);
        check_case(
            "min", {x}, [d](const Inputs& in) { return min(in[0], d).values; }, false);
        check_case(
            "argmax", {x}, [d](const Inputs& in) { return argmax(in[0], d); }, false);
        check_case(
            "argmin", {x}, [d](const Inputs& in) { return argmin(in[0], d); }, false);
      }
      check_case(
          "max", {x}, [](const Inputs& in) { return max(in[0]); }, false);
      check_case(
          "argmax", {x}, [](const Inputs& in) { return argmax(in[0]); }, false);
    }
  }
}

TEST_CASE("cuda sweep: softmax and log_softmax over the last and the first dim",
          "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  uint64_t seed = 5000;
  for (const Shape& s : reduction_shapes()) {
    for (Layout l : layouts_for(s)) {
      ++seed;
      std::vector<int64_t> dims = {-1};
      if (s.size() > 1) dims.push_back(0);
      for (int64_t d : dims) {
        DYNAMIC_SECTION("softmax " << describe(s, l) << " dim " << d) {
          check_case("softmax", {floats(s, l, seed, -5, 5)},
                     [d](const Inputs& x) { return softmax(x[0], d); });
        }
        DYNAMIC_SECTION("log_softmax " << describe(s, l) << " dim " << d) {
          check_case("log_softmax", {floats(s, l, seed, -5, 5)},
                     [d](const Inputs& x) { return log_softmax(x[0], d); });
        }
      }
    }
  }
  // Wide ranges and a large common shift: exp would overflow without subtracting the max.
  for (const Shape& s : std::vector<Shape>{{7, 7}, {3, 1023}, {2, long_len()}}) {
    DYNAMIC_SECTION("softmax and log_softmax " << shape_str(s)
                                               << " values in [-40, 40] and [960, 1040]") {
      for (double shift : {0.0, 1000.0}) {
        INFO("shift " << shift);
        check_case("softmax", {floats(s, Layout::Contiguous, seed + 1, shift - 40, shift + 40)},
                   [](const Inputs& x) { return softmax(x[0], -1); });
        check_case("log_softmax", {floats(s, Layout::Transposed, seed + 2, shift - 40, shift + 40)},
                   [](const Inputs& x) { return log_softmax(x[0], -1); });
      }
    }
  }
}

// The row kernels read and write 16 bytes at a time (4 floats, 2 doubles) when every row starts
// on 16 bytes, and one element at a time otherwise (kernels/cuda/softmax.cu): rows of a multiple
// of the vector, in warp mode (D <= 1024) and block mode, against a length that is a multiple
// of 2 but not of 4, and a tensor whose first element lies 4 or 8 bytes past a boundary, in both
// dtypes, forward and backward. In the emulation build the forward's traffic shows which path
// ran: three reads of the row and one write, per vector or per element.
TEST_CASE("cuda sweep: softmax rows go 16 bytes at a time where every row starts aligned",
          "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  uint64_t seed = 5200;
  for (DType dt : {kFloat64, kFloat32})
    for (const Shape& s : std::vector<Shape>{{6, 1024}, {3, 4100}, {4, 1026}, {5, 36}})
      for (int64_t offset : {0, 1}) {
        ++seed;
        const int64_t n = s[0] * s[1];
        const int64_t V = 16 / static_cast<int64_t>(dtype_size(dt));
        const bool vectors = offset == 0 && s[1] % V == 0;
        DYNAMIC_SECTION(dtype_name(dt) << " " << shape_str(s) << " storage offset " << offset
                                       << (vectors ? ": 16 bytes" : ": element-wise")) {
          Tensor x = uniform(seed, -5, 5, dt)({n + 1}).slice(0, offset, offset + n).reshape(s);
          REQUIRE(x.is_contiguous());
          REQUIRE(x.offset() == offset);
          x = x.detach();
          x.requires_grad_(true);
          check_case("softmax", {x}, [](const Inputs& in) { return softmax(in[0], -1); });
          check_case("log_softmax", {x}, [](const Inputs& in) { return log_softmax(in[0], -1); });
#ifdef EMBER_CUDA_EMULATED
          if (target().is_cuda()) {
            const Tensor xd = same_layout_on(x.detach(), target());
            emu::set_access_counting(true);
            const Tensor y = softmax(xd, -1);
            cuda::synchronize();
            const emu::AccessCounts c = emu::access_counts();
            emu::set_access_counting(false);
            const double per = vectors ? 1.0 / static_cast<double>(V) : 1.0;
            CHECK(c.launches == 1);
            CHECK(c.global_reads.accesses == Approx(3 * per * static_cast<double>(n)));
            CHECK(c.global_writes.accesses == Approx(per * static_cast<double>(n)));
          }
#endif
        }
      }
}

namespace {

// logits [n, c] (layout l, in [-3, 3)), targets [n] with every 5th row (from row 2) set to
// ignore_index when `ignore`, class weights in [0.5, 1.5) when `weighted`.
Inputs ce_inputs(int64_t n, int64_t c, Layout l, bool weighted, bool ignore, uint64_t seed,
                 DType dtype = kFloat64) {
  Inputs in{with_layout({n, c}, l, uniform(seed, -3, 3, dtype), true)};
  manual_seed(seed + 1);
  std::vector<int64_t> t = randint(0, c, {n}).to_vector<int64_t>();
  if (ignore)
    for (size_t i = 2; i < t.size(); i += 5) t[i] = -100;
  in.push_back(from_vector<int64_t>(t, {n}, kInt64));
  if (weighted) {
    manual_seed(seed + 2);
    in.push_back((rand({c}, kFloat64) + 0.5).to(dtype));
  }
  return in;
}

Fn ce_fn(Reduction r) {
  return
      [r](const Inputs& x) { return cross_entropy(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), r); };
}

const char* reduction_name(Reduction r) {
  return r == Reduction::Mean ? "mean" : r == Reduction::Sum ? "sum" : "none";
}

}  // namespace

TEST_CASE("cuda sweep: cross_entropy with 10 and 1000 classes", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  struct Size {
    int64_t n, c;
  };
  // A warp per row of 10 or 1000 classes; the one-block reduction over many rows.
  std::vector<Size> sizes = {{1, 10}, {7, 10}, {1023, 10}, {long_len(), 10}, {1, 1000}, {7, 1000}};
  if (tier() == Tier::Emulated) {
    sizes.push_back({129, 1000});  // more rows than one block's 8 warps
  } else {
    sizes.push_back({1023, 1000});
    sizes.push_back({4099, 1000});
  }
  if (!small_only()) sizes.push_back({419431, 10});  // 4.2M logits
  uint64_t seed = 6000;
  for (const Size& sz : sizes) {
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      seed += 3;
      const std::string in = describe({sz.n, sz.c}, l);
      for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        DYNAMIC_SECTION("cross_entropy " << in << " " << reduction_name(r)) {
          check_case("cross_entropy", ce_inputs(sz.n, sz.c, l, false, false, seed), ce_fn(r));
        }
      }
      DYNAMIC_SECTION("cross_entropy " << in << " weighted mean, ignored rows") {
        check_case("cross_entropy", ce_inputs(sz.n, sz.c, l, true, true, seed),
                   ce_fn(Reduction::Mean));
      }
      DYNAMIC_SECTION("cross_entropy " << in << " weighted none, ignored rows") {
        check_case("cross_entropy", ce_inputs(sz.n, sz.c, l, true, true, seed),
                   ce_fn(Reduction::None));
      }
    }
  }
}

// Rows of a multiple of 16 bytes go through cross_entropy's row kernels 16 bytes at a time
// (kernels/cuda/cross_entropy.cu; the op hands the kernels a fresh copy of the logits, so every
// row starts aligned when the row length allows it), rows of an odd length one element at a time.
// Both give the CPU's loss and gradient, with weights, ignored rows and label smoothing. In the
// emulation build the forward's traffic shows which path ran: its two passes over the logits
// make 2 N C / V reads where the other path makes 2 N C, the rest (targets, weights, the
// reduction) being the same.
TEST_CASE("cuda sweep: cross_entropy rows go 16 bytes at a time where every row starts aligned",
          "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  const int64_t n = 33;
  uint64_t seed = 6500;
  for (DType dt : {kFloat64, kFloat32}) {
    const double V = 16.0 / static_cast<double>(dtype_size(dt));
    double other_reads[2] = {0, 0};  // reads that are not the two passes over the logits
    for (int64_t c : {1000, 999}) {
      seed += 3;
      const Inputs in = ce_inputs(n, c, Layout::Contiguous, true, true, seed, dt);
      DYNAMIC_SECTION(dtype_name(dt) << " [" << n << ", " << c << "]") {
        for (double eps : {0.0, 0.1})
          for (Reduction r : {Reduction::Mean, Reduction::None}) {
            INFO("label_smoothing " << eps << ", " << reduction_name(r));
            check_case("cross_entropy", in, [r, eps](const Inputs& x) {
              return cross_entropy(x[0], x[1], x[2], r, -100, eps);
            });
          }
      }
#ifdef EMBER_CUDA_EMULATED
      if (target().is_cuda()) {
        const Tensor logits = in[0].detach().to(target());
        const Tensor t = in[1].to(target()), w = in[2].to(target());
        emu::set_access_counting(true);
        const Tensor loss = cross_entropy(logits, t, w, Reduction::None);
        cuda::synchronize();
        const double passes = 2.0 * static_cast<double>(n * c) / (c == 1000 ? V : 1.0);
        other_reads[c == 1000 ? 0 : 1] =
            static_cast<double>(emu::access_counts().global_reads.accesses) - passes;
        emu::set_access_counting(false);
      }
#endif
    }
#ifdef EMBER_CUDA_EMULATED
    if (target().is_cuda()) {
      INFO(dtype_name(dt) << ": reads besides the passes over the logits " << other_reads[0]
                          << " and " << other_reads[1]);
      CHECK(other_reads[0] == other_reads[1]);
      CHECK(other_reads[0] > 0);
    }
#endif
  }
}

TEST_CASE("cuda sweep: gather, index_select, index_add, scatter_add", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  // n: the length of the indexed dim; m = n + n / 2 + 2 indices, so values repeat and the
  // backward passes (and index_add/scatter_add themselves) must add colliding contributions.
  // The emulator runs the three shorter lengths; 65537 (more blocks than one wave) and 2^20 + 1
  // are a GPU's sizes (tests/kernels/cuda_int32.cpp takes index_add to 65537 in the emulator).
  std::vector<int64_t> lengths = {1, 7, 1023};
  if (tier() != Tier::Emulated) lengths.push_back(65537);
  if (!small_only()) lengths.push_back((int64_t{1} << 20) + 1);
  uint64_t seed = 7000;
  for (int64_t n : lengths) {
    const int64_t m = n + n / 2 + 2;
    for (Layout l : {Layout::Contiguous, Layout::Strided, Layout::Transposed}) {
      seed += 4;
      const std::string tag = "n " + std::to_string(n) + ", " + layout_name(l);
      DYNAMIC_SECTION("index_select dim 0, " << tag) {
        check_case("index_select",
                   {floats({n, 3}, l, seed),
                    with_layout({m}, Layout::Contiguous, index_values(n, seed + 1), false)},
                   [](const Inputs& x) { return index_select(x[0], 0, x[1]); });
      }
      DYNAMIC_SECTION("index_select dim 1, strided index, " << tag) {
        check_case("index_select",
                   {floats({3, n}, l, seed),
                    with_layout({m}, Layout::Strided, index_values(n, seed + 1), false)},
                   [](const Inputs& x) { return index_select(x[0], 1, x[1]); });
      }
      DYNAMIC_SECTION("gather dim 0, " << tag) {
        check_case("gather",
                   {floats({n, 3}, l, seed),
                    with_layout({m, 3}, Layout::Contiguous, index_values(n, seed + 1), false)},
                   [](const Inputs& x) { return gather(x[0], 0, x[1]); });
      }
      DYNAMIC_SECTION("gather dim 1, transposed index, " << tag) {
        check_case("gather",
                   {floats({3, n}, l, seed),
                    with_layout({3, m}, Layout::Transposed, index_values(n, seed + 1), false)},
                   [](const Inputs& x) { return gather(x[0], 1, x[1]); });
      }
      DYNAMIC_SECTION("index_add dim 0, " << tag) {
        check_case("index_add",
                   {floats({n, 3}, l, seed),
                    with_layout({m}, Layout::Contiguous, index_values(n, seed + 1), false),
                    floats({m, 3}, l, seed + 2)},
                   [](const Inputs& x) { return index_add(x[0], 0, x[1], x[2]); });
      }
      DYNAMIC_SECTION("index_add dim 1, " << tag) {
        check_case("index_add",
                   {floats({3, n}, l, seed),
                    with_layout({m}, Layout::Strided, index_values(n, seed + 1), false),
                    floats({3, m}, Layout::Contiguous, seed + 2)},
                   [](const Inputs& x) { return index_add(x[0], 1, x[1], x[2]); });
      }
      DYNAMIC_SECTION("scatter_add dim 0, " << tag) {
        check_case("scatter_add",
                   {floats({n, 3}, l, seed),
                    with_layout({m, 3}, Layout::Contiguous, index_values(n, seed + 1), false),
                    floats({m, 3}, Layout::Contiguous, seed + 2)},
                   [](const Inputs& x) { return scatter_add(x[0], 0, x[1], x[2]); });
      }
      DYNAMIC_SECTION("scatter_add dim 1, src larger than index, " << tag) {
        check_case("scatter_add",
                   {floats({3, n}, l, seed),
                    with_layout({2, m}, Layout::Contiguous, index_values(n, seed + 1), false),
                    floats({3, m + 1}, l, seed + 2)},
                   [](const Inputs& x) { return scatter_add(x[0], 1, x[1], x[2]); });
      }
    }
  }
  // Hot spots: 65537 contributions into 7 rows (heavy atomic contention on the GPU).
  DYNAMIC_SECTION("index_add and scatter_add, 65537 sources into 7 rows") {
    check_case("index_add",
               {floats({7, 5}, Layout::Contiguous, 7901),
                with_layout({65537}, Layout::Contiguous, index_values(7, 7902), false),
                floats({65537, 5}, Layout::Contiguous, 7903)},
               [](const Inputs& x) { return index_add(x[0], 0, x[1], x[2]); });
    check_case("scatter_add",
               {floats({7, 5}, Layout::Contiguous, 7904),
                with_layout({65537, 5}, Layout::Contiguous, index_values(7, 7905), false),
                floats({65537, 5}, Layout::Contiguous, 7906)},
               [](const Inputs& x) { return scatter_add(x[0], 0, x[1], x[2]); });
    check_case("index_select",
               {floats({7, 5}, Layout::Transposed, 7907),
                with_layout({65537}, Layout::Contiguous, index_values(7, 7908), false)},
               [](const Inputs& x) { return index_select(x[0], 0, x[1]); });
  }
  // A few sources into a tall tensor: five runs of the sorted index among 300007 rows, and
  // every row that no source names keeps its value (no thread owns it; kernels/cuda/index.cu).
  DYNAMIC_SECTION("index_add, 5 sources into 300007 rows") {
    check_case("index_add",
               {floats({300007, 3}, Layout::Contiguous, 7911),
                with_layout({5}, Layout::Contiguous, index_values(300007, 7912), false),
                floats({5, 3}, Layout::Contiguous, 7913)},
               [](const Inputs& x) { return index_add(x[0], 0, x[1], x[2]); });
  }
}

TEST_CASE("cuda sweep: cat", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  std::vector<int64_t> lengths = {1, 7, 1023, long_len()};
  if (!small_only()) lengths.push_back((int64_t{1} << 20) + 1);
  uint64_t seed = 8000;
  for (int64_t n : lengths) {
    seed += 4;
    DYNAMIC_SECTION("cat dim 0 of [" << n << ", 3] contiguous, [" << n / 2 + 1
                                     << ", 3] transposed, [1, 3] strided") {
      check_case("cat",
                 {floats({n, 3}, Layout::Contiguous, seed),
                  floats({n / 2 + 1, 3}, Layout::Transposed, seed + 1),
                  floats({1, 3}, Layout::Strided, seed + 2)},
                 [](const Inputs& x) { return cat(x, 0); });
    }
    DYNAMIC_SECTION("cat dim -1 of [3, " << n << "] strided, [3, 5], [3, 0], [3, " << n
                                         << "] transposed") {
      check_case("cat",
                 {floats({3, n}, Layout::Strided, seed),
                  floats({3, 5}, Layout::Contiguous, seed + 1),
                  floats({3, 0}, Layout::Contiguous, seed + 2),
                  floats({3, n}, Layout::Transposed, seed + 3)},
                 [](const Inputs& x) { return cat(x, -1); });
    }
    DYNAMIC_SECTION("cat of 1-d [" << n << "] strided and [" << n << "] contiguous") {
      check_case("cat",
                 {floats({n}, Layout::Strided, seed), floats({n}, Layout::Contiguous, seed + 1)},
                 [](const Inputs& x) { return cat(x, 0); });
    }
  }
}

TEST_CASE("cuda sweep: matmul, odd sizes and batches", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  struct MNK {
    int64_t m, k, n;
  };
  std::vector<MNK> sizes = {{1, 1, 1},      {7, 7, 7},          {1, 1023, 1}, {1023, 1, 1023},
                            {65, 1023, 33}, {7, long_len(), 3}, {1023, 7, 1}, {1, 7, 1023}};
  if (!small_only()) sizes.push_back({1023, 1023, 1023});
  const std::vector<std::pair<Layout, Layout>> layouts = {{Layout::Contiguous, Layout::Contiguous},
                                                          {Layout::Transposed, Layout::Contiguous},
                                                          {Layout::Contiguous, Layout::Transposed},
                                                          {Layout::Transposed, Layout::Transposed},
                                                          {Layout::Strided, Layout::Strided}};
  uint64_t seed = 9000;
  for (const MNK& s : sizes) {
    for (const auto& [la, lb] : layouts) {
      seed += 2;
      DYNAMIC_SECTION("matmul " << describe({s.m, s.k}, la) << " @ " << describe({s.k, s.n}, lb)) {
        check_case("matmul", {floats({s.m, s.k}, la, seed), floats({s.k, s.n}, lb, seed + 1)},
                   [](const Inputs& x) { return matmul(x[0], x[1]); });
      }
    }
  }
  struct Batched {
    Shape a, b;
    Layout la, lb;
  };
  const std::vector<Batched> batched = {
      {{5, 33, 65}, {5, 65, 17}, Layout::Contiguous, Layout::Contiguous},
      {{5, 33, 65}, {5, 65, 17}, Layout::Transposed, Layout::Strided},
      {{3, 1, 7, 9}, {4, 9, 5}, Layout::Contiguous, Layout::Transposed},
      {{2, 1023, 65}, {65, 7}, Layout::Contiguous, Layout::Contiguous},
      {{2, 1023, 65}, {65, 7}, Layout::Transposed, Layout::Contiguous},
      {{65}, {3, 65, 1023}, Layout::Strided, Layout::Contiguous},
      {{3, 1023, 65}, {65}, Layout::Contiguous, Layout::Strided},
      {{1023, 65}, {65}, Layout::Transposed, Layout::Contiguous},
      {{long_len()}, {long_len()}, Layout::Strided, Layout::Contiguous},
  };
  for (const Batched& b : batched) {
    seed += 2;
    DYNAMIC_SECTION("matmul " << describe(b.a, b.la) << " @ " << describe(b.b, b.lb)) {
      check_case("matmul", {floats(b.a, b.la, seed), floats(b.b, b.lb, seed + 1)},
                 [](const Inputs& x) { return matmul(x[0], x[1]); });
    }
  }
}

TEST_CASE("cuda sweep: contiguous, clone, to_dtype", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  uint64_t seed = 10000;
  for (const Input& in : elementwise_inputs()) {
    seed += 2;
    const std::string tag = describe(in.shape, in.layout);
    DYNAMIC_SECTION("contiguous " << tag) {
      check_case("contiguous", {floats(in.shape, in.layout, seed)},
                 [](const Inputs& x) { return contiguous(x[0]); });
    }
    DYNAMIC_SECTION("clone " << tag) {
      check_case("clone", {floats(in.shape, in.layout, seed)},
                 [](const Inputs& x) { return clone(x[0]); });
    }
    DYNAMIC_SECTION("to_dtype float64 -> float32 -> float64 " << tag) {
      check_case("to_dtype", {floats(in.shape, in.layout, seed, -1e3, 1e3)},
                 [](const Inputs& x) { return to_dtype(to_dtype(x[0], kFloat32), kFloat64); });
    }
    DYNAMIC_SECTION("to_dtype float64 -> int64, bool; int64 -> float32 " << tag) {
      // Truncation toward zero of negative values, and "nonzero is true".
      check_case(
          "to_dtype", {with_layout(in.shape, in.layout, uniform(seed, -5, 5), false)},
          [](const Inputs& x) { return to_dtype(x[0], kInt64); }, false);
      check_case(
          "to_dtype", {with_layout(in.shape, in.layout, small_ints(seed), false)},
          [](const Inputs& x) { return to_dtype(x[0], kBool); }, false);
      check_case(
          "to_dtype", {with_layout(in.shape, in.layout, index_values(1000, seed), false)},
          [](const Inputs& x) { return to_dtype(x[0], kFloat32); }, false);
    }
  }
}

TEST_CASE("cuda sweep: float32", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  const DType f = kFloat32;
  std::vector<Shape> shapes = {{7}, {1023}, {long_len()}, {33, 1023}, {1023, 33}};
  if (!small_only()) shapes.push_back({2049, 2049});
  uint64_t seed = 11000;
  for (const Shape& s : shapes) {
    for (Layout l : layouts_for(s)) {
      seed += 3;
      const std::string tag = describe(s, l);
      DYNAMIC_SECTION("float32 elementwise " << tag) {
        const Tensor a = floats(s, l, seed, -2, 2, f);
        const Tensor b = floats({s.back()}, Layout::Contiguous, seed + 1, 0.5, 1.5, f);
        check_case("add", {a, b}, [](const Inputs& x) { return add(x[0], x[1]); });
        check_case("mul", {a, b}, [](const Inputs& x) { return mul(x[0], x[1]); });
        check_case("div", {a, b}, [](const Inputs& x) { return div(x[0], x[1]); });
        check_case("exp", {a}, [](const Inputs& x) { return exp(x[0]); });
        check_case("tanh", {a}, [](const Inputs& x) { return tanh(x[0]); });
        check_case("sigmoid", {a}, [](const Inputs& x) { return sigmoid(x[0]); });
        check_case("relu", {a}, [](const Inputs& x) { return relu(x[0]); });
        check_case("log", {floats(s, l, seed + 2, 0.05, 4, f)},
                   [](const Inputs& x) { return log(x[0]); });
      }
      DYNAMIC_SECTION("float32 reductions " << tag) {
        const Tensor a = floats(s, l, seed, -2, 2, f);
        check_case("sum", {a}, [](const Inputs& x) { return sum(x[0], {-1}); });
        check_case("sum", {a}, [](const Inputs& x) { return sum(x[0]); });
        check_case("mean", {a}, [](const Inputs& x) { return mean(x[0], {0}); });
        check_case("max", {with_layout(s, l, distinct(seed, f), true)},
                   [](const Inputs& x) { return max(x[0], -1).values; });
        check_case(
            "argmax", {with_layout(s, l, distinct(seed, f), false)},
            [](const Inputs& x) { return argmax(x[0], 0); }, false);
      }
      DYNAMIC_SECTION("float32 softmax and log_softmax " << tag) {
        const Tensor a = floats(s, l, seed, -5, 5, f);
        check_case("softmax", {a}, [](const Inputs& x) { return softmax(x[0], -1); });
        check_case("log_softmax", {a}, [](const Inputs& x) { return log_softmax(x[0], -1); });
        check_case("softmax", {a}, [](const Inputs& x) { return softmax(x[0], 0); });
      }
    }
  }
  for (int64_t c : {int64_t{10}, int64_t{1000}}) {
    const int64_t n = c == 10 ? long_len() : 1023;
    DYNAMIC_SECTION("float32 cross_entropy [" << n << ", " << c << "]") {
      check_case("cross_entropy", ce_inputs(n, c, Layout::Contiguous, false, false, seed + c, f),
                 ce_fn(Reduction::Mean));
      check_case("cross_entropy", ce_inputs(n, c, Layout::Transposed, true, true, seed + c, f),
                 ce_fn(Reduction::Mean));
    }
  }
  struct MM {
    Shape a, b;
    Layout la, lb;
  };
  std::vector<MM> mms = {{{257, 129}, {129, 65}, Layout::Contiguous, Layout::Contiguous},
                         {{257, 129}, {129, 65}, Layout::Transposed, Layout::Transposed},
                         {{7, 1023}, {1023, 3}, Layout::Strided, Layout::Contiguous},
                         {{4, 33, 65}, {65, 17}, Layout::Contiguous, Layout::Transposed},
                         {{64, 784}, {784, 512}, Layout::Contiguous, Layout::Transposed}};
  if (!small_only())
    mms.push_back({{1023, 1023}, {1023, 1023}, Layout::Contiguous, Layout::Contiguous});
  for (const MM& mm : mms) {
    seed += 2;
    DYNAMIC_SECTION("float32 matmul " << describe(mm.a, mm.la) << " @ " << describe(mm.b, mm.lb)) {
      check_case("matmul",
                 {floats(mm.a, mm.la, seed, -1, 1, f), floats(mm.b, mm.lb, seed + 1, -1, 1, f)},
                 [](const Inputs& x) { return matmul(x[0], x[1]); });
    }
  }
}

// More work than the largest grid ember launches: grid_for (kernels/cuda/launch.cuh) caps a grid
// at 2^16 blocks of 256 threads, and the grid-stride loops must then take every element after
// the first 2^24 on a second lap. An elementwise op on a strided uint8 view (the strided kernel:
// one element per thread per lap) of 2^24 + 2^20 + 3 elements, and a sum of them.
TEST_CASE("cuda sweep: more elements than the capped grid has threads", "[cuda][cuda-sweep]") {
  if (skip_without_gpu()) return;
  NoGradGuard no_grad;
  const int64_t n = (int64_t{1} << 24) + (int64_t{1} << 20) + 3;
  std::vector<uint8_t> host(static_cast<size_t>(2 * n));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>((i * 7 + 3) % 251);
  const Tensor cpu = from_vector<uint8_t>(host, {2 * n}, kUInt8);
  const Tensor dev = cpu.to(target());
  const Tensor view_cpu = cpu.slice(0, 1, 2 * n, 2), view_dev = dev.slice(0, 1, 2 * n, 2);
  REQUIRE(view_dev.numel() == n);
#ifdef EMBER_CUDA_EMULATED
  const int64_t threads_before = emu::stats().threads;
#endif
  const Tensor five = full({}, 5.0, TensorOptions(kUInt8).device(target()));
  const Tensor got = view_dev + five;  // uint8 + uint8: one strided kernel
#ifdef EMBER_CUDA_EMULATED
  // The launch really was capped: 2^16 blocks of 256 threads for more elements than that (or
  // fewer blocks, under EMBER_EMULATOR_GRID_CAP).
  const int64_t blocks =
      emu::grid_cap() > 0 ? std::min<int64_t>(emu::grid_cap(), 1 << 16) : 1 << 16;
  cuda::synchronize();  // (in the asynchronous mode, EMBER_EMULATOR_ASYNC, the kernel runs now)
  CHECK(emu::stats().threads - threads_before == blocks * 256);
#endif
  const Tensor want = view_cpu + five.cpu();
  CHECK(got.to_vector<uint8_t>() == want.to_vector<uint8_t>());
  CHECK(sum(view_dev).item() == sum(view_cpu).item());
}

// More than 2^31 elements: 32-bit index arithmetic anywhere on the way (a grid-stride loop, an
// offset, a reduction's index) shows up here. Needs about 20 GB of GPU memory.
TEST_CASE("cuda sweep: a tensor of more than 2^31 elements", "[cuda][cuda-sweep][cuda-huge]") {
  if (skip_without_gpu()) return;
  if (tier() == Tier::Emulated) {
    std::cout << "SKIPPED: too large to emulate (2^31 CUDA threads and 16 GiB of tensors; the "
                 "emulation build runs every thread on the CPU)\n";
    return;
  }
  if (small_only()) {
    std::cout << "SKIPPED: EMBER_PARITY_SMALL is set\n";
    return;
  }
  const int64_t n = (int64_t{1} << 31) + 5;
  const size_t need = static_cast<size_t>(n) * 4 * 2 + (size_t{1} << 30);
  if (target().is_cuda() && cuda::get_device_properties(0).total_memory < need) {
    std::cout << "SKIPPED: this GPU has less than " << (need >> 30) << " GiB\n";
    return;
  }
  if (target().is_cpu()) {  // the self-check would need 20 GB of host memory
    std::cout << "SKIPPED: not run against the CPU\n";
    return;
  }
  NoGradGuard no_grad;
  Tensor x = ones({n}, TensorOptions(kFloat32).device(target()));
  x.narrow(0, n - 1, 1).fill_(5.0);  // the maximum sits at an index above 2^31
  Tensor y = x * 2.0;
  const std::vector<double> tail = y.narrow(0, n - 3, 3).to_vector<double>();
  CHECK(tail == std::vector<double>{2.0, 2.0, 10.0});
  CHECK(argmax(y).item<int64_t>() == n - 1);
  CHECK(max(y).item() == 10.0);
  // Summed in double and rounded once to float32, as the CPU kernel does.
  const double exact = 2.0 * static_cast<double>(n - 1) + 10.0;
  CHECK(sum(y).item() == static_cast<double>(static_cast<float>(exact)));
  const Tensor every_other = y.slice(0, 1, n, 2);  // 2^30 + 2 elements, stride 2
  CHECK(every_other.numel() == (n - 1) / 2);
  CHECK(sum(every_other).item() ==
        static_cast<double>(static_cast<float>(2.0 * static_cast<double>(every_other.numel()))));
}

// =============================================================================================
// The registry names a CUDA kernel for every op (runs everywhere: it reads a table).
// =============================================================================================

TEST_CASE("registry: every op names its CUDA kernel", "[registry]") {
  for (const OpInfo& op : op_registry()) {
    const std::string name = op.name;
    const std::string kernel = op.cuda_kernel != nullptr ? op.cuda_kernel : "";
    INFO("op '" << name << "' (" << op.card << "): cuda_kernel is \"" << kernel << "\"");
    if (kernel.empty()) FAIL_CHECK("op '" << name << "' has no CUDA kernel in core/registry.cpp");
    // A named source file must exist ("kernels/cuda/elementwise.cu binary(Add)").
    if (kernel.rfind("kernels/", 0) == 0) {
      const std::string path = kernel.substr(0, kernel.find(' '));
      std::ifstream file(std::string(EMBER_SOURCE_DIR) + "/" + path);
      INFO("file " << path);
      CHECK(file.good());
    }
  }
}
