// bench/bench_memory.cu — ember's memory-bound CUDA kernels against the copy bandwidth the GPU
// actually delivers.
//
// An elementwise op, a reduction, a softmax or an optimizer step does a handful of flops per
// element it loads: its speed is set by how fast it moves bytes between DRAM and the SMs, and the
// best any kernel can do is the rate of a plain device-to-device copy. So the reference, "kernel
// 0" of this table, is cudaMemcpyAsync(device to device) measured at the same size in the same
// run, and each op is reported as
//
//   GB/s = bytes moved / time,   % copy = its GB/s / the copy's GB/s at that size,
//
// where "bytes moved" is the least traffic the op needs: every input read once, every output
// written once (S = the bytes of the op's main tensor, float32; the formula of each op is in the
// table and in kOps below). An implementation that makes more passes (unfused, or re-reading its
// input) shows up as a lower GB/s, which is the point. Goal (issue 6): at least 85% of copy
// bandwidth from 64 MB up, where launch latency no longer hides in the time; rows below it are
// marked. The small sizes are shown for what they are: 1 MB moves in ~1 us on an H100, about the
// cost of a launch.
//
// How each op is called:
//   relu, exp, add, broadcast add, sum, softmax — ember's public ops (core/ember.h) on CUDA
//     tensors, what a user's code runs; each call also allocates its output from the caching
//     allocator (a cache hit after the warm-up), host work that overlaps the GPU's.
//   cross_entropy forward + backward — the kernels (kernels/cross_entropy.h) directly: the
//     op card first checks the targets on the GPU and reads the answer back (the host waits, by
//     design, so a bad label gets a readable error), and the backward would go through the
//     autograd engine and accumulate into .grad; both would blur the kernels' bandwidth.
//   Adam — the fused multi-tensor kernel (kernels/cuda/optim.cu adam_step, what optim::Adam
//   launches)
//     on a ParamList of one big parameter, directly: optim::Adam would also need a backward pass
//     to produce the gradient.
//
// Method (bench/harness.h): 3 warm-up runs, then 20 timed runs, each with the L2 cache flushed
// first (a 2x-L2 memset outside the timed region) and timed with CUDA events; the median is
// printed. Before anything is timed, every op's result at every size is compared with a CPU
// result computed here in double from copies of the same inputs; an op that is wrong prints FAIL
// instead of numbers (tolerances: |got - ref| <= atol + rtol * |ref|, per op in kOps). Inputs
// are random normal (uniform for Adam's second moment), made on the GPU.
//
// Usage: bench_memory [--max-mb 1024] [--runs 20] [--json FILE]
// Without a GPU it says why and exits 0. Its PyTorch twin: bench/pytorch/bench_memory.py.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/harness.h"
#include "core/ember.h"
#include "kernels/backend.h"
#include "kernels/cross_entropy.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/optim.h"

namespace {

namespace bench = ember::bench;
namespace kc = ember::kernels::cuda;
using ember::Device;
using ember::Tensor;
using ember::TensorOptions;

constexpr int64_t kMB = int64_t{1} << 20;
constexpr int64_t kRowLength = 1024;  // columns of the 2-d ops: broadcast add, row sums, softmax
constexpr int64_t kClasses = 1000;    // cross_entropy's C (ImageNet-sized logits)
constexpr double kGoal = 85.0;        // % of copy bandwidth, from kGoalFromMB up
constexpr int64_t kGoalFromMB = 64;

TensorOptions on_gpu(ember::DType dtype = ember::kFloat32) {
  return TensorOptions(dtype).device(Device::cuda(0));
}

// ---- validation ------------------------------------------------------------------------------

// The outcome of comparing a GPU result with its CPU reference. `ok` is false at the first
// element with |got - ref| > atol + rtol * |ref| (or a NaN where the reference has a number).
struct Verdict {
  bool ok = true;
  std::string why;  // for a failure: which element, what it is, what it should be
};

// got: a CPU copy of the GPU result; ref(i): the reference for element i (double).
template <typename Ref>
Verdict compare(const char* what, const Tensor& got_cpu, Ref ref, double atol, double rtol) {
  const float* got = got_cpu.data_ptr<float>();
  const int64_t n = got_cpu.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double r = ref(i);
    const double err = std::fabs(static_cast<double>(got[i]) - r);
    if (!(err <= atol + rtol * std::fabs(r))) {  // written so that a NaN fails
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "%s[%lld] = %.9g, expected %.9g (tolerance %.3g + %.3g * |ref|)", what,
                    static_cast<long long>(i), static_cast<double>(got[i]), r, atol, rtol);
      return {false, buf};
    }
  }
  return {};
}

// ---- the ops ------------------------------------------------------------------------------------

// One op made ready at one size: its inputs live on the GPU (captured by `run`), it has been
// checked against the CPU, and `run` enqueues one call of it on ember's stream.
struct Prepared {
  std::function<void()> run;
  double bytes = 0;  // bytes moved by one call (the op's formula)
  Verdict verdict;
};

struct MemOp {
  const char* name;
  const char* via;      // how it is called (see the top of the file)
  const char* formula;  // bytes moved, S = bytes of the main tensor
  std::function<Prepared(int64_t bytes)> prepare;
};

int64_t floats_in(int64_t bytes) { return std::max<int64_t>(1, bytes / 4); }
int64_t rows_in(int64_t bytes, int64_t row_length) {
  return std::max<int64_t>(1, bytes / (4 * row_length));
}

// The reference: cudaMemcpyAsync of S bytes, device to device. It reads S and writes S.
Prepared prepare_copy(int64_t bytes) {
  const int64_t n = floats_in(bytes);
  const Tensor src = ember::randn({n}, on_gpu());
  const Tensor dst = ember::empty({n}, on_gpu());
  Prepared p;
  p.bytes = 2.0 * 4.0 * static_cast<double>(n);
  p.run = [src, dst, n] {
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), static_cast<size_t>(n) * 4,
                                     cudaMemcpyDeviceToDevice, kc::stream()));
  };
  return p;
}

// relu / exp, [n] -> [n]: reads S, writes S.
Prepared prepare_unary(int64_t bytes, bool is_exp) {
  const int64_t n = floats_in(bytes);
  const Tensor x = ember::randn({n}, on_gpu());
  const Tensor x_cpu = x.cpu();
  const Tensor y_cpu = (is_exp ? ember::exp(x) : ember::relu(x)).cpu();
  const float* xv = x_cpu.data_ptr<float>();
  Prepared p;
  p.bytes = 2.0 * 4.0 * static_cast<double>(n);
  if (is_exp) {
    p.verdict = compare(
        "exp(x)", y_cpu, [xv](int64_t i) { return std::exp(double(xv[i])); }, 1e-7, 1e-6);
    p.run = [x] { ember::exp(x); };
  } else {
    p.verdict = compare(
        "relu(x)", y_cpu, [xv](int64_t i) { return std::max(0.0, double(xv[i])); }, 0.0, 0.0);
    p.run = [x] { ember::relu(x); };
  }
  return p;
}

// a + b, both [n]: reads 2S, writes S.
Prepared prepare_add(int64_t bytes) {
  const int64_t n = floats_in(bytes);
  const Tensor a = ember::randn({n}, on_gpu());
  const Tensor b = ember::randn({n}, on_gpu());
  const Tensor a_cpu = a.cpu(), b_cpu = b.cpu();
  const Tensor y_cpu = ember::add(a, b).cpu();
  const float* av = a_cpu.data_ptr<float>();
  const float* bv = b_cpu.data_ptr<float>();
  Prepared p;
  p.bytes = 3.0 * 4.0 * static_cast<double>(n);
  // float + float rounded once is exact to compare with the double sum rounded to float.
  p.verdict = compare(
      "a + b", y_cpu, [av, bv](int64_t i) { return double(av[i] + bv[i]); }, 0.0, 0.0);
  p.run = [a, b] { ember::add(a, b); };
  return p;
}

// a [rows, 1024] + b [1024] (b broadcast over the rows): reads S + 4 KB, writes S.
Prepared prepare_broadcast_add(int64_t bytes) {
  const int64_t rows = rows_in(bytes, kRowLength);
  const Tensor a = ember::randn({rows, kRowLength}, on_gpu());
  const Tensor b = ember::randn({kRowLength}, on_gpu());
  const Tensor a_cpu = a.cpu(), b_cpu = b.cpu();
  const Tensor y_cpu = ember::add(a, b).cpu();
  const float* av = a_cpu.data_ptr<float>();
  const float* bv = b_cpu.data_ptr<float>();
  Prepared p;
  p.bytes = 4.0 * (2.0 * static_cast<double>(rows * kRowLength) + kRowLength);
  p.verdict = compare(
      "a + b[row]", y_cpu, [av, bv](int64_t i) { return double(av[i] + bv[i % kRowLength]); }, 0.0,
      0.0);
  p.run = [a, b] { ember::add(a, b); };
  return p;
}

// sum over the last dim, [rows, 1024] -> [rows]: reads S, writes S / 1024.
Prepared prepare_sum_rows(int64_t bytes) {
  const int64_t rows = rows_in(bytes, kRowLength);
  const Tensor x = ember::randn({rows, kRowLength}, on_gpu());
  const Tensor x_cpu = x.cpu();
  const Tensor y_cpu = ember::sum(x, {1}).cpu();
  const float* xv = x_cpu.data_ptr<float>();
  Prepared p;
  p.bytes = 4.0 * static_cast<double>(rows * kRowLength + rows);
  p.verdict = compare(
      "sum(x, 1)", y_cpu,
      [xv](int64_t r) {
        double s = 0;
        for (int64_t j = 0; j < kRowLength; ++j) s += xv[r * kRowLength + j];
        return s;
      },
      1e-4, 1e-5);
  p.run = [x] { ember::sum(x, {1}); };
  return p;
}

// sum of all elements, [n] -> []: reads S, writes 4 bytes.
Prepared prepare_sum_all(int64_t bytes) {
  const int64_t n = floats_in(bytes);
  const Tensor x = ember::randn({n}, on_gpu());
  const Tensor x_cpu = x.cpu();
  const Tensor y_cpu = ember::sum(x).cpu();
  const float* xv = x_cpu.data_ptr<float>();
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += xv[i];
  Prepared p;
  p.bytes = 4.0 * static_cast<double>(n + 1);
  // The sum of n normal values is ~sqrt(n) in size (16384 at 1 GB): rtol covers the rounding
  // of the result to float, atol an accumulation order other than this loop's.
  p.verdict = compare(
      "sum(x)", y_cpu, [s](int64_t) { return s; }, 1e-3, 1e-5);
  p.run = [x] { ember::sum(x); };
  return p;
}

// softmax over the last dim, [rows, 1024] -> [rows, 1024]: reads S, writes S (one pass over the
// data is the ideal; a kernel that keeps a row in registers or shared memory reaches it).
Prepared prepare_softmax(int64_t bytes) {
  const int64_t rows = rows_in(bytes, kRowLength);
  const Tensor x = ember::randn({rows, kRowLength}, on_gpu());
  const Tensor x_cpu = x.cpu();
  const Tensor y_cpu = ember::softmax(x, 1).cpu();
  const float* xv = x_cpu.data_ptr<float>();
  // The reference, one row at a time (the comparison walks the elements in order).
  std::vector<double> row(kRowLength);
  int64_t row_done = -1;
  auto ref = [&](int64_t i) {
    const int64_t r = i / kRowLength;
    if (r != row_done) {
      const float* xr = xv + r * kRowLength;
      double mx = xr[0];
      for (int64_t j = 1; j < kRowLength; ++j) mx = std::max(mx, double(xr[j]));
      double total = 0;
      for (int64_t j = 0; j < kRowLength; ++j) total += (row[j] = std::exp(double(xr[j]) - mx));
      for (int64_t j = 0; j < kRowLength; ++j) row[j] /= total;
      row_done = r;
    }
    return row[i % kRowLength];
  };
  Prepared p;
  p.bytes = 2.0 * 4.0 * static_cast<double>(rows * kRowLength);
  p.verdict = compare("softmax(x, 1)", y_cpu, ref, 1e-8, 1e-5);
  p.run = [x] { ember::softmax(x, 1); };
  return p;
}

// cross_entropy (mean over rows) forward + backward, logits [N, 1000], int64 targets [N]:
//   forward   reads logits (S) and targets (8N), writes loss and the row stats (12N: max and
//             log-sum per row), and the 0-d mean
//   backward  reads logits (S), targets (8N) and the stats (8N), writes dlogits (S)
// = 3S + 36N bytes. (A fused implementation needs no more: the backward recomputes the softmax
// from the saved row max and log-sum instead of storing it.)
Prepared prepare_cross_entropy(int64_t bytes) {
  const int64_t N = rows_in(bytes, kClasses);
  const int64_t C = kClasses;
  const Tensor logits = ember::randn({N, C}, on_gpu());
  const Tensor target = ember::randint(0, C, {N}, on_gpu(ember::kInt64));
  const Tensor loss = ember::empty({N}, on_gpu());
  const Tensor stats = ember::empty({2, N}, on_gpu());
  const Tensor mean = ember::empty({}, on_gpu());
  const Tensor weight_sum = ember::empty({}, on_gpu());
  const Tensor grad_out = ember::ones({}, on_gpu());  // d(loss)/d(loss) = 1
  const Tensor dlogits = ember::empty({N, C}, on_gpu());
  auto run = [=] {
    kc::cross_entropy_kernels.forward(ember::kFloat32, N, C, /*S*/ 1, logits.raw_data(),
                                      target.data_ptr<int64_t>(), nullptr, -100,
                                      /*label_smoothing*/ 0.0, loss.raw_data(), stats.raw_data(),
                                      ember::kernels::CrossEntropyReduction::Mean, mean.raw_data(),
                                      weight_sum.raw_data());
    kc::cross_entropy_kernels.backward(ember::kFloat32, N, C, /*S*/ 1, logits.raw_data(),
                                       target.data_ptr<int64_t>(), nullptr, -100,
                                       /*label_smoothing*/ 0.0, /*weight_total*/ nullptr,
                                       stats.raw_data(), grad_out.raw_data(), /*grad_stride*/ 0,
                                       weight_sum.raw_data(), dlogits.raw_data());
  };
  run();
  const Tensor x_cpu = logits.cpu();
  const Tensor t_cpu = target.cpu();
  const float* xv = x_cpu.data_ptr<float>();
  const int64_t* tv = t_cpu.data_ptr<int64_t>();
  std::vector<double> lse_ref(N);
  double loss_sum = 0;
  for (int64_t i = 0; i < N; ++i) {
    const float* xr = xv + i * C;
    double mx = xr[0];
    for (int64_t j = 1; j < C; ++j) mx = std::max(mx, double(xr[j]));
    double total = 0;
    for (int64_t j = 0; j < C; ++j) total += std::exp(double(xr[j]) - mx);
    lse_ref[i] = mx + std::log(total);
    loss_sum += lse_ref[i] - xr[tv[i]];
  }
  const double mean_ref = loss_sum / static_cast<double>(N);
  Prepared p;
  p.bytes = 3.0 * 4.0 * static_cast<double>(N * C) + 36.0 * static_cast<double>(N);
  p.verdict = compare(
      "cross_entropy", mean.cpu(), [mean_ref](int64_t) { return mean_ref; }, 1e-5, 1e-5);
  if (p.verdict.ok) {
    // dlogits[i, c] = (softmax(x_i)[c] - [c == t_i]) / N: values near 1/(1000 N), so atol is
    // scaled by 1/N too.
    const double inv_n = 1.0 / static_cast<double>(N);
    p.verdict = compare(
        "dlogits", dlogits.cpu(),
        [&](int64_t k) {
          const int64_t i = k / C, c = k % C;
          const double prob = std::exp(double(xv[k]) - lse_ref[i]);
          return (prob - (c == tv[i] ? 1.0 : 0.0)) * inv_n;
        },
        1e-8 * inv_n, 1e-4);
  }
  p.run = run;
  return p;
}

// One Adam step on one parameter of n floats: reads p, g, m, v (4S), writes p, m, v (3S) = 7S.
Prepared prepare_adam(int64_t bytes) {
  const int64_t n = floats_in(bytes);
  const Tensor param = ember::randn({n}, on_gpu());
  const Tensor grad = ember::randn({n}, on_gpu());
  const Tensor exp_avg = ember::randn({n}, on_gpu()) * 0.1;
  // v > 0 and not tiny, as after a few steps: sqrt(v) stays far above eps.
  const Tensor exp_avg_sq = ember::rand({n}, on_gpu()) * 0.01 + 1e-4;

  // torch.optim.Adam's defaults at step 10 (so both bias corrections matter).
  ember::kernels::AdamStep s;
  s.lr = 1e-3;
  s.beta1 = 0.9;
  s.beta2 = 0.999;
  s.eps = 1e-8;
  s.weight_decay = 0.0;
  const double t = 10;
  s.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(s.beta2, t));
  s.step_size = s.lr / (1.0 - std::pow(s.beta1, t));

  ember::kernels::ParamList list;
  list.params = {param.raw_data()};
  list.grads = {grad.raw_data()};
  list.sizes = {n};
  const std::vector<void*> exp_avgs = {exp_avg.raw_data()};
  const std::vector<void*> exp_avg_sqs = {exp_avg_sq.raw_data()};
  auto run = [=] {
    kc::optim_kernels.adam_step(ember::kFloat32, list, exp_avgs, exp_avg_sqs, {}, s);
  };

  // The reference: the CPU kernel (kernels/cpu/optim.cpp, the same math) on copies of the state.
  const Tensor p_ref = param.cpu(), g_ref = grad.cpu();
  const Tensor m_ref = exp_avg.cpu(), v_ref = exp_avg_sq.cpu();
  ember::kernels::ParamList ref;
  ref.params = {p_ref.raw_data()};
  ref.grads = {g_ref.raw_data()};
  ref.sizes = {n};
  ember::kernels::cpu_backend().optim.adam_step(ember::kFloat32, ref, {m_ref.raw_data()},
                                                {v_ref.raw_data()}, {}, s);
  run();
  const float* pv = p_ref.data_ptr<float>();
  const float* mv = m_ref.data_ptr<float>();
  const float* vv = v_ref.data_ptr<float>();
  // Both devices round the same operations; the CPU build may skip an FMA (kernels/optim.h).
  Prepared p;
  p.bytes = 7.0 * 4.0 * static_cast<double>(n);
  p.verdict = compare(
      "param", param.cpu(), [pv](int64_t i) { return double(pv[i]); }, 1e-7, 1e-6);
  if (p.verdict.ok)
    p.verdict = compare(
        "exp_avg", exp_avg.cpu(), [mv](int64_t i) { return double(mv[i]); }, 1e-9, 1e-6);
  if (p.verdict.ok)
    p.verdict = compare(
        "exp_avg_sq", exp_avg_sq.cpu(), [vv](int64_t i) { return double(vv[i]); }, 1e-12, 1e-6);
  p.run = run;
  return p;
}

const std::vector<MemOp>& ops() {
  static const std::vector<MemOp> list = {
      {"relu", "ember::relu", "2S", [](int64_t b) { return prepare_unary(b, false); }},
      {"exp", "ember::exp", "2S", [](int64_t b) { return prepare_unary(b, true); }},
      {"add", "ember::add, same shape", "3S", prepare_add},
      {"broadcast add", "ember::add [R,1024]+[1024]", "2S + 4K", prepare_broadcast_add},
      {"sum rows", "ember::sum(x, {1}) [R,1024]", "S + S/1024", prepare_sum_rows},
      {"sum all", "ember::sum(x)", "S + 4", prepare_sum_all},
      {"softmax", "ember::softmax(x, 1) [R,1024]", "2S", prepare_softmax},
      {"cross_entropy fwd+bwd", "kernels [N,1000], mean", "3S + 28N", prepare_cross_entropy},
      {"adam step", "kernel adam_step, 1 param", "7S", prepare_adam},
  };
  return list;
}

std::string size_label(int64_t mb) {
  return mb >= 1024 && mb % 1024 == 0 ? std::to_string(mb / 1024) + " GB"
                                      : std::to_string(mb) + " MB";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "bench_memory: ember's memory-bound CUDA kernels vs device-to-device copy bandwidth"};
  int64_t max_mb = 1024;
  int runs = 20;
  std::string json_path;
  app.add_option("--max-mb", max_mb, "largest tensor, in MB (sizes 1, 4, 16, ... up to it)")
      ->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "timed runs per row; the median is printed (default 20)")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "also write the table to this JSON file");
  CLI11_PARSE(app, argc, argv);

  if (!ember::cuda::is_available()) {
    std::printf("bench_memory: nothing to measure, no usable GPU: %s\n",
                ember::cuda::unavailable_reason());
    return 0;
  }
  std::string why;
  if (!ember::cuda::device_supported(0, &why)) {
    std::fprintf(stderr, "bench_memory: %s\n", why.c_str());
    return 1;
  }

  try {
    const std::string header = bench::gpu_header(0);
    std::cout << "ember bench_memory: memory-bound kernels vs device-to-device copy, float32\n"
              << header << "  method: median of " << runs
              << " runs after 3 warm-ups, CUDA events, L2 "
              << "flushed before each run; every result checked against a CPU reference first\n"
              << "  GB/s = bytes moved / time (S = bytes of the main tensor; formula per row); "
              << "goal: >= " << kGoal << "% of copy from " << kGoalFromMB << " MB up\n\n";

    ember::manual_seed(0);  // the same inputs on every run
    std::vector<int64_t> sizes_mb;
    for (int64_t mb = 1; mb <= max_mb; mb *= 4) sizes_mb.push_back(mb);

    // The same title, columns and row keys (op, size) as bench/pytorch/bench_memory.py, so that
    // bench/run_all.py joins the two tables row by row.
    bench::Table table("memory-bound ops vs device-to-device copy (float32)",
                       {"op", "size", "ms", "GB/s", "% copy", "bytes moved", "called as", "goal"});
    std::vector<double> copy_gbs(sizes_mb.size(), 0.0);
    int failures = 0, goal_rows = 0, goal_met = 0;

    // One row: prepare (inputs + validation), time, format. Errors of one row (a FAIL, out of
    // memory) are reported in the row and the bench goes on.
    auto measure = [&](const char* name, const char* via, const char* formula,
                       const std::function<Prepared(int64_t)>& prepare, size_t si,
                       bool is_reference) {
      const int64_t mb = sizes_mb[si];
      std::vector<std::string> row = {name, size_label(mb), "", "", "", formula, via, ""};
      try {
        Prepared p = prepare(mb * kMB);
        if (!p.verdict.ok) {
          ++failures;
          std::fprintf(stderr, "FAIL %s at %s: %s\n", name, size_label(mb).c_str(),
                       p.verdict.why.c_str());
          row[2] = row[3] = row[4] = "FAIL";
          row[7] = "wrong result";
        } else {
          const bench::Timing t = bench::time_cuda(p.run, 3, runs, true);
          const double gbs = p.bytes / (t.median_ms * 1e-3) / 1e9;
          if (is_reference) copy_gbs[si] = gbs;
          const double pct = copy_gbs[si] > 0 ? 100.0 * gbs / copy_gbs[si] : 0.0;
          row[2] = bench::fmt(t.median_ms, 4);
          row[3] = bench::fmt(gbs, 0);
          row[4] = copy_gbs[si] > 0 ? bench::fmt(pct, 1) + "%" : "n/a";
          if (is_reference) {
            row[7] = "reference";
          } else if (mb >= kGoalFromMB) {
            ++goal_rows;
            const bool met = pct >= kGoal;
            goal_met += met ? 1 : 0;
            row[7] = met ? "ok" : "<- below goal";
          } else {
            row[7] = "-";
          }
        }
      } catch (const ember::OutOfMemoryError& e) {
        row[2] = row[3] = row[4] = "n/a";
        row[7] = "out of GPU memory";
        std::fprintf(stderr, "%s at %s: %s\n", name, size_label(mb).c_str(), e.what());
      }
      table.add_row(row);
      ember::cuda::empty_cache();  // the next row's tensors may have other sizes
    };

    for (size_t si = 0; si < sizes_mb.size(); ++si)
      measure("copy (reference)", "cudaMemcpyAsync D2D", "2S", prepare_copy, si, true);
    for (const MemOp& op : ops())
      for (size_t si = 0; si < sizes_mb.size(); ++si)
        measure(op.name, op.via, op.formula, op.prepare, si, false);

    table.print(std::cout);
    std::cout << "  goal (>= " << kGoal << "% of copy bandwidth from " << kGoalFromMB
              << " MB up): met on " << goal_met << " of " << goal_rows << " rows";
    if (failures > 0) std::cout << "; " << failures << " rows FAILED validation (see stderr)";
    std::cout << "\n";

    if (!json_path.empty()) {
      bench::write_json(json_path, "bench_memory", header, {table});
      std::cout << "results written to " << json_path << "\n";
    }
    return failures > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_memory: %s\n", e.what());
    return 1;
  }
}
