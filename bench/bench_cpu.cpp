// bench/bench_cpu.cpp — how fast is ember's CPU core next to what it is built on?
//
// Table 1, matmul GFLOP/s in float32: ember::matmul against raw Eigen (`C.noalias() = A * B`
// on row-major Eigen matrices of the same shapes). ember's CPU matmul ends in ember's own SIMD
// kernel for most float32 shapes on a CPU that has AVX-512 or AVX2 (kernels/cpu/gemm_simd.h; the
// version in use is in the header line, EMBER_CPU_ISA chooses another), and in Eigen's GEMM for
// the rest (kernels/cpu/gemm.cpp says which): where it ends in Eigen, the gap
// between the two columns is ember's own cost around it — argument checks, allocating the
// output, copying an operand that is not laid out for the GEMM; where it ends in the own kernel,
// the ratio is the kernel against Eigen. Eigen is
// built without OpenMP (issue 12), so the Eigen column is always one thread, while ember cuts a
// large product into panels over its thread pool: with --threads N > 1 the ratio also holds
// ember's speed-up from the other threads, and the goal below is for --threads 1. The
// shapes are those of the MNIST MLP (batch 64, 784-512-256-128-64-10), plus the two backward
// products of its first layer written the way the backward writes them, with transposed views:
//   dX = dY @ W^T   [64,512] @ [512,784]   (W is stored [784,512]; W^T is a view)
//   dW = X^T @ dY   [784,64] @ [64,512]    (X is stored [64,784]; X^T is a view)
// the products of the cats-vs-dogs CNN's two large convolutions as kernels/cpu/conv_im2col.cpp
// calls them (conv2: 32->64 channels, 5x5, a 19x19 output, one image per product; conv3:
// 64->128, a 5x5 output, 10 images side by side per product): forward W @ col (W passed as the
// transpose of a stored W^T), input gradient W^T @ dY, weight gradient computed transposed,
// col @ dY^T (float32 on an AVX-512 CPU now runs these two layers as an implicit GEMM instead,
// whose products read rows in place and are not matmul calls: table 3 times the calls);
// and the squares 512 and 1024, where the GEMM itself dominates. Goal: within 10% of Eigen.
//
// Table 2, dispatch overhead: microseconds per call of an op on 1 or 8 elements, where the
// arithmetic is nothing and what is left is what ember does around it — checks, broadcasting,
// allocating the output's TensorImpl and Storage and, when an input requires grad, building the
// tape node. Goal: at most 2 us (PyTorch 1.13 on CPU, called from Python: about 2-4 us).
//
// Method (both tables): warm up, then call repeatedly until a time budget is spent (0.3 s, or
// 0.05 s with --quick), reading the clock once per batch of calls so that reading it costs
// nothing next to a sub-microsecond op; time per call = elapsed / calls. Each number printed is
// the median of 5 such measurements; the two columns of a row are measured in turns, so that
// other work on a shared machine slows both alike. Every matmul result is checked against
// Eigen's before it is timed. The load average before and after is printed last: on a machine
// busy with other work the numbers mean little. bench/pytorch/bench_cpu.py prints the same rows
// for PyTorch; bench/RESULTS.md holds measured tables and how to read them.
//
// Table 3, convolution: ms per call of the CPU convolution kernels (kernels/cpu/conv.h) on the
// cats-vs-dogs CNN's three layers at batch 100, forward and backward (both gradients in one
// call), with the GFLOP/s of the two together. No goal of its own: it is where the CNN's
// training step spends most of its time (bench/RESULTS.md, "Implicit-GEMM convolution").
//
// Usage: bench_cpu [--threads N] [--json FILE] [--quick] [--only matmul|dispatch|conv]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <Eigen/Core>

#include "core/ember.h"
#include "kernels/conv_geometry.h"
#include "kernels/cpu/conv.h"

namespace {

using ember::Tensor;
using Clock = std::chrono::steady_clock;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Settings {
  int threads = 2;
  bool quick = false;
  double budget_s() const { return quick ? 0.05 : 0.3; }  // per measurement
  static constexpr int kMeasurements = 5;                 // the median of these is reported
};

// ---- timing ---------------------------------------------------------------------------------

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One measurement: seconds per call of fn, calling it in doubling batches until `budget`
// seconds have passed. Batches stop growing at 1/8 of the budget, so the overshoot stays small.
template <typename F>
double seconds_per_call(const F& fn, double budget) {
  int64_t calls = 0;
  int64_t batch = 1;
  const Clock::time_point t0 = Clock::now();
  double elapsed = 0.0;
  do {
    for (int64_t i = 0; i < batch; ++i) fn();
    calls += batch;
    elapsed = seconds_since(t0);
    if (elapsed < budget / 8) batch *= 2;
  } while (elapsed < budget);
  return elapsed / static_cast<double>(calls);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Warm-up (first calls allocate, fault in pages, start ember's thread pool, size Eigen's
// blocking buffers), then the median of Settings::kMeasurements measurements.
template <typename F>
double median_seconds_per_call(const F& fn, const Settings& s) {
  seconds_per_call(fn, s.budget_s() / 4);
  std::vector<double> runs;
  for (int r = 0; r < Settings::kMeasurements; ++r) {
    runs.push_back(seconds_per_call(fn, s.budget_s()));
  }
  return median(runs);
}

// The same for the two columns of one row, their measurements interleaved (f, g, f, g, ...):
// a burst of other work on the machine then slows both columns alike instead of one of them,
// which keeps their ratio honest on a shared machine.
template <typename F, typename G>
std::pair<double, double> median_seconds_per_call(const F& f, const G& g, const Settings& s) {
  seconds_per_call(f, s.budget_s() / 4);
  seconds_per_call(g, s.budget_s() / 4);
  std::vector<double> runs_f, runs_g;
  for (int r = 0; r < Settings::kMeasurements; ++r) {
    runs_f.push_back(seconds_per_call(f, s.budget_s()));
    runs_g.push_back(seconds_per_call(g, s.budget_s()));
  }
  return {median(runs_f), median(runs_g)};
}

// ---- table 1: matmul ------------------------------------------------------------------------

// C[m,n] = A[m,k] @ B[k,n]. A transposed operand is stored with its dimensions swapped and
// passed as a transposed view, as matmul's backward passes W^T and X^T.
struct MatmulCase {
  const char* what;
  int64_t m, k, n;
  bool a_transposed;  // A is stored [k, m] and used as A.t()
  bool b_transposed;  // B is stored [n, k] and used as B.t()
};

struct MatmulRow {
  std::string shape;
  std::string what;
  double ember_gflops;
  double eigen_gflops;
  double ratio() const { return ember_gflops / eigen_gflops; }
};

std::string matmul_label(const MatmulCase& c) {
  std::ostringstream os;
  os << "[" << c.m << "," << c.k << "] @ [" << c.k << "," << c.n << "]";
  return os.str();
}

// The raw-Eigen reference for one case: the product expression Eigen is given for it.
std::function<void()> eigen_product(const RowMat& A, const RowMat& B, RowMat& C, bool ta, bool tb) {
  if (ta && tb) return [&] { C.noalias() = A.transpose() * B.transpose(); };
  if (ta) return [&] { C.noalias() = A.transpose() * B; };
  if (tb) return [&] { C.noalias() = A * B.transpose(); };
  return [&] { C.noalias() = A * B; };
}

RowMat to_eigen(const Tensor& t) {
  return Eigen::Map<const RowMat>(t.data_ptr<float>(), t.size(0), t.size(1));
}

MatmulRow bench_matmul(const MatmulCase& c, const Settings& s) {
  const Tensor a_stored = c.a_transposed ? ember::randn({c.k, c.m}) : ember::randn({c.m, c.k});
  const Tensor b_stored = c.b_transposed ? ember::randn({c.n, c.k}) : ember::randn({c.k, c.n});
  const Tensor a = c.a_transposed ? a_stored.t() : a_stored;
  const Tensor b = c.b_transposed ? b_stored.t() : b_stored;

  const RowMat A = to_eigen(a_stored);
  const RowMat B = to_eigen(b_stored);
  RowMat C(c.m, c.n);
  const std::function<void()> eigen = eigen_product(A, B, C, c.a_transposed, c.b_transposed);

  // Check ember against Eigen before timing: a fast wrong answer is no result.
  eigen();
  const Tensor out = ember::matmul(a, b);
  EMBER_CHECK(out.shape() == ember::Shape({c.m, c.n}), "matmul ", matmul_label(c),
              " returned shape ", ember::shape_str(out.shape()));
  const RowMat got = to_eigen(out.contiguous());
  float scale = 1.0f;  // a plain loop: GCC 12 warns spuriously on Eigen's AVX-512 maxCoeff
  float err = 0.0f;
  for (Eigen::Index i = 0; i < C.size(); ++i) {
    scale = std::max(scale, std::abs(C.data()[i]));
    err = std::max(err, std::abs(got.data()[i] - C.data()[i]));
  }
  EMBER_CHECK(err <= 1e-4f * scale, "matmul ", matmul_label(c),
              " differs from Eigen by ", err, " (largest |value| ", scale, ")");

  const double flops = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.k) *
                       static_cast<double>(c.n);
  const auto [t_ember, t_eigen] = median_seconds_per_call([&] { ember::matmul(a, b); }, eigen, s);
  return {matmul_label(c), c.what, flops / t_ember * 1e-9, flops / t_eigen * 1e-9};
}

std::vector<MatmulRow> run_matmul_table(const Settings& s) {
  const std::vector<MatmulCase> cases = {
      {"MLP layer 1", 64, 784, 512, false, false},
      {"MLP layer 2", 64, 512, 256, false, false},
      {"MLP layer 3", 64, 256, 128, false, false},
      {"MLP layer 4", 64, 128, 64, false, false},
      {"MLP layer 5", 64, 64, 10, false, false},
      {"layer 1 dX = dY W^T, view", 64, 512, 784, false, true},
      {"layer 1 dW = X^T dY, view", 784, 64, 512, true, false},
      {"conv2 fwd W col", 64, 800, 361, true, false},
      {"conv2 dx: W^T dY", 800, 64, 361, true, false},
      {"conv2 dw: col dY^T", 800, 361, 64, false, true},
      {"conv3 fwd, 10 images", 128, 1600, 250, true, false},
      {"conv3 dx, 10 images", 1600, 128, 250, true, false},
      {"conv3 dw, 10 images", 1600, 250, 128, false, true},
      {"square 512", 512, 512, 512, false, false},
      {"square 1024", 1024, 1024, 1024, false, false},
  };
  std::printf("Table 1: matmul, float32, GFLOP/s (median of %d runs of %.2f s)\n",
              Settings::kMeasurements, s.budget_s());
  std::printf("  %-26s %-26s %10s %10s %8s\n", "shape", "what", "ember", "Eigen", "ember/Eigen");
  std::vector<MatmulRow> rows;
  int met = 0;
  for (const MatmulCase& c : cases) {
    const MatmulRow r = bench_matmul(c, s);
    const bool ok = r.ratio() >= 0.9;
    met += ok ? 1 : 0;
    std::printf("  %-26s %-26s %10.1f %10.1f %8.2f%s\n", r.shape.c_str(), r.what.c_str(),
                r.ember_gflops, r.eigen_gflops, r.ratio(), ok ? "" : "   <- below goal");
    std::fflush(stdout);
    rows.push_back(r);
  }
  std::printf("  goal: ember within 10%% of raw Eigen (ratio >= 0.90): met on %d of %zu shapes%s\n\n",
              met, rows.size(),
              ember::get_num_threads() > 1
                  ? " (Eigen runs on one thread: the goal is for --threads 1)"
                  : "");
  return rows;
}

// ---- table 2: dispatch overhead -------------------------------------------------------------

struct DispatchCase {
  const char* op;
  const char* shape;
  int64_t numel;
  std::function<Tensor(const Tensor& a, const Tensor& b)> call;
};

struct DispatchRow {
  std::string op;
  std::string shape;
  double no_grad_us;
  double grad_us;
};

// Times `call` with inputs that need no gradient, then with `a` a leaf that requires grad (so
// every call also builds a tape node, wires its edges, and frees it with the output).
DispatchRow bench_dispatch(const DispatchCase& c, const Settings& s) {
  const Tensor a = ember::randn({c.numel});
  const Tensor b = ember::randn({c.numel});
  const Tensor a_leaf = ember::randn({c.numel}).requires_grad_();

  // Make sure each variant times what it claims to: no tape node without grad, one with.
  EMBER_CHECK(!c.call(a, b).grad_fn(), c.op, " built a tape node without grad");
  EMBER_CHECK(c.call(a_leaf, b).grad_fn(), c.op, " built no tape node with grad");

  const auto [t_plain, t_grad] =
      median_seconds_per_call([&] { c.call(a, b); }, [&] { c.call(a_leaf, b); }, s);
  return {c.op, c.shape, t_plain * 1e6, t_grad * 1e6};
}

std::vector<DispatchRow> run_dispatch_table(const Settings& s) {
  const std::vector<DispatchCase> cases = {
      {"add", "[1] + [1]", 1, [](const Tensor& a, const Tensor& b) { return ember::add(a, b); }},
      {"add", "[8] + [8]", 8, [](const Tensor& a, const Tensor& b) { return ember::add(a, b); }},
      {"mul by scalar", "[8] * 2.0", 8, [](const Tensor& a, const Tensor&) { return a * 2.0; }},
      {"relu", "[8]", 8, [](const Tensor& a, const Tensor&) { return ember::relu(a); }},
      {"sum", "[8] -> []", 8, [](const Tensor& a, const Tensor&) { return ember::sum(a); }},
  };
  std::printf("Table 2: dispatch overhead, float32, microseconds per call (median of %d runs of "
              "%.2f s)\n", Settings::kMeasurements, s.budget_s());
  std::printf("  %-14s %-12s %12s %14s\n", "op", "shape", "no grad", "leaf w/ grad");
  std::vector<DispatchRow> rows;
  int met = 0;
  for (const DispatchCase& c : cases) {
    const DispatchRow r = bench_dispatch(c, s);
    const bool ok = r.no_grad_us <= 2.0 && r.grad_us <= 2.0;
    met += ok ? 1 : 0;
    std::printf("  %-14s %-12s %12.3f %14.3f%s\n", r.op.c_str(), r.shape.c_str(), r.no_grad_us,
                r.grad_us, ok ? "" : "   <- above goal");
    std::fflush(stdout);
    rows.push_back(r);
  }
  // For reading the rows above: what allocating one [8] output alone costs.
  const double t_empty = median_seconds_per_call([] { ember::empty({8}); }, s);
  std::printf("  %-14s %-12s %12.3f %14s\n", "(empty alone)", "[8]", t_empty * 1e6, "-");
  std::printf("  goal: at most 2 us per tiny op (PyTorch 1.13 CPU: about 2-4 us): met on %d of "
              "%zu ops\n\n", met, rows.size());
  rows.push_back({"empty (allocation alone)", "[8]", t_empty * 1e6, -1.0});
  return rows;
}

// ---- table 3: convolution calls -------------------------------------------------------------

struct ConvRow {
  std::string layer;
  double forward_ms, backward_ms, gflops;
};

// The cats-vs-dogs CNN's three convolutions at its batch of 100 (float32, 5x5, stride 1, no
// padding), through the CPU kernels themselves: the forward, and the backward as the autograd
// node calls it (input and weight gradients in one call; the first layer's input needs none).
std::vector<ConvRow> run_conv_table(const Settings& s) {
  struct Layer {
    const char* name;
    int64_t C, H, K;
  };
  const Layer layers[] = {{"conv1 1->32, 50x50", 1, 50, 32},
                          {"conv2 32->64, 23x23", 32, 23, 64},
                          {"conv3 64->128, 9x9", 64, 9, 128}};
  std::printf("Table 3: convolution, float32, batch 100, ms per call (median of %d runs of "
              "%.2f s)\n", Settings::kMeasurements, s.budget_s());
  std::printf("  %-22s %12s %12s %12s\n", "layer", "forward", "backward", "GFLOP/s");
  std::vector<ConvRow> rows;
  for (const Layer& l : layers) {
    ember::kernels::ConvGeometry g;
    g.N = 100;
    g.C = l.C;
    g.H = g.W = l.H;
    g.K = l.K;
    g.R = g.S = 5;
    g.P = g.Q = l.H - 4;
    const Tensor x = ember::rand({g.N, g.C, g.H, g.W}), w = ember::rand({g.K, g.C, g.R, g.S});
    const Tensor b = ember::rand({g.K}), dy = ember::rand({g.N, g.K, g.P, g.Q});
    Tensor y = ember::empty({g.N, g.K, g.P, g.Q}), dx = ember::empty(x.shape());
    Tensor dw = ember::empty(w.shape()), db = ember::empty({g.K});
    const bool want_dx = l.C > 1;
    const double fwd = median_seconds_per_call([&] {
      ember::kernels::cpu::conv2d_forward(ember::kFloat32, g, x.raw_data(), w.raw_data(),
                                          b.raw_data(), y.raw_data());
    }, s);
    const double bwd = median_seconds_per_call([&] {
      ember::kernels::cpu::conv2d_backward(ember::kFloat32, g, x.raw_data(), dy.raw_data(),
                                           w.raw_data(), want_dx ? dx.raw_data() : nullptr,
                                           dw.raw_data(), db.raw_data());
    }, s);
    const double flop = 2.0 * g.N * g.K * g.P * g.Q * g.C * g.R * g.S * (want_dx ? 3 : 2);
    const ConvRow r{l.name, fwd * 1e3, bwd * 1e3, flop / (fwd + bwd) / 1e9};
    std::printf("  %-22s %12.2f %12.2f %12.1f\n", r.layer.c_str(), r.forward_ms, r.backward_ms,
                r.gflops);
    std::fflush(stdout);
    rows.push_back(r);
  }
  std::printf("\n");
  return rows;
}

// ---- the machine, and JSON ------------------------------------------------------------------

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

// The 1-minute load average: above the core count, other programs were competing for the CPU
// and every number is an underestimate of what this machine can do.
double load_average() {
  std::ifstream f("/proc/loadavg");
  double load = -1.0;
  f >> load;
  return load;
}

std::string eigen_version() {
  return std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
         std::to_string(EIGEN_MINOR_VERSION);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

void write_json(std::ofstream& f, const Settings& s, const std::vector<MatmulRow>& mm,
                const std::vector<DispatchRow>& dispatch, const std::vector<ConvRow>& conv,
                double load_before, double load_after) {
  f << "{\n  \"benchmark\": \"bench_cpu\",\n"
    << "  \"cpu\": " << json_string(cpu_model()) << ",\n"
    << "  \"logical_cores\": " << std::thread::hardware_concurrency() << ",\n"
    << "  \"threads\": " << s.threads << ",\n"
    << "  \"quick\": " << (s.quick ? "true" : "false") << ",\n"
    << "  \"compiler\": " << json_string(__VERSION__) << ",\n"
    << "  \"eigen\": " << json_string(eigen_version()) << ",\n"
    << "  \"load_average\": [" << load_before << ", " << load_after << "],\n"
    << "  \"matmul_gflops\": [";
  for (size_t i = 0; i < mm.size(); ++i) {
    f << (i ? "," : "") << "\n    {\"shape\": " << json_string(mm[i].shape)
      << ", \"what\": " << json_string(mm[i].what) << ", \"ember\": " << mm[i].ember_gflops
      << ", \"eigen\": " << mm[i].eigen_gflops << ", \"ratio\": " << mm[i].ratio() << "}";
  }
  f << "\n  ],\n  \"dispatch_us\": [";
  for (size_t i = 0; i < dispatch.size(); ++i) {
    const DispatchRow& r = dispatch[i];
    f << (i ? "," : "") << "\n    {\"op\": " << json_string(r.op) << ", \"shape\": "
      << json_string(r.shape) << ", \"no_grad\": " << r.no_grad_us << ", \"grad\": ";
    if (r.grad_us < 0) {
      f << "null}";
    } else {
      f << r.grad_us << "}";
    }
  }
  f << "\n  ],\n  \"conv_ms\": [";
  for (size_t i = 0; i < conv.size(); ++i) {
    f << (i ? "," : "") << "\n    {\"layer\": " << json_string(conv[i].layer)
      << ", \"forward\": " << conv[i].forward_ms << ", \"backward\": " << conv[i].backward_ms
      << ", \"gflops\": " << conv[i].gflops << "}";
  }
  f << "\n  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_cpu: ember::matmul vs raw Eigen (GFLOP/s) and per-op dispatch overhead"};
  Settings s;
  std::string json_path;
  std::string only = "all";
  app.add_option("--threads", s.threads, "CPU threads for ember (default 2; Eigen uses one)")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "also write the results to this JSON file");
  app.add_flag("--quick", s.quick, "0.05 s per measurement instead of 0.3 s (CI smoke test)");
  app.add_option("--only", only, "run one table: matmul, dispatch or conv (default: all)")
      ->check(CLI::IsMember({"all", "matmul", "dispatch", "conv"}));
  CLI11_PARSE(app, argc, argv);

  try {
    // Opened first, so that a bad path fails before a minute of measuring rather than after.
    std::ofstream json;
    if (!json_path.empty()) {
      json.open(json_path);
      EMBER_CHECK(json.good(), "cannot write ", json_path, ": check that its folder exists");
    }
    ember::set_num_threads(s.threads);  // ember's pool; Eigen (no OpenMP) uses one thread
    std::printf("ember bench_cpu: CPU core benchmark\n");
    std::printf("  cpu: %s, %u logical cores; threads: %d for ember (Eigen: %d)\n",
                cpu_model().c_str(), std::thread::hardware_concurrency(),
                ember::get_num_threads(), Eigen::nbThreads());
    std::printf("  g++ %s, Eigen %s (%s), -march=native: %s, cpu kernels: %s%s\n\n", __VERSION__,
                eigen_version().c_str(), Eigen::SimdInstructionSetsInUse(),
                EMBER_BENCH_NATIVE ? "yes" : "no", ember::get_cpu_isa().c_str(),
                s.quick ? ", --quick" : "");

    ember::manual_seed(0);
    std::vector<MatmulRow> mm;
    std::vector<DispatchRow> dispatch;
    std::vector<ConvRow> conv;
    const double load_before = load_average();
    if (only == "all" || only == "matmul") mm = run_matmul_table(s);
    if (only == "all" || only == "dispatch") dispatch = run_dispatch_table(s);
    if (only == "all" || only == "conv") conv = run_conv_table(s);
    const double load_after = load_average();
    std::printf("load average (1 min) before/after: %.2f / %.2f on %u logical cores%s\n",
                load_before, load_after, std::thread::hardware_concurrency(),
                std::max(load_before, load_after) > std::thread::hardware_concurrency() + 0.5
                    ? ": the machine was shared, numbers are noisy" : "");
    if (!json_path.empty()) {
      write_json(json, s, mm, dispatch, conv, load_before, load_after);
      std::printf("results written to %s\n", json_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
