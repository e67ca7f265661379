// bench/bench_conv.cu — ember's CUDA convolutions against cuDNN, layer by layer, for the two CNNs
// the examples train.
//
// Layers (NCHW, 5x5 kernels, stride 1, no padding, with bias, as the examples build them):
//   cats_vs_dogs (seed 002, batch 100)   conv1 [100,1,50,50]  x [32,1,5,5]
//                                        conv2 [100,32,23,23] x [64,32,5,5]
//                                        conv3 [100,64,9,9]   x [128,64,5,5]
//   cifar10_cnn (seed 001, batch 4 as in the tutorial, and batch 64)
//                                        conv1 [B,3,32,32]    x [6,3,5,5]
//                                        conv2 [B,6,14,14]    x [16,6,5,5]
// Passes: forward (y = conv(x, w) + b), input gradient (dx from dy and w) and weight gradient
// (dw and db from x and dy), each the call of kernels/cuda/conv.h that a training step makes.
//
// Algorithms (kernels/cuda/conv.h): cuDNN first, the reference ("kernel 0"), with the algorithm
// cuDNN itself finds fastest for the shape (its first call times them all, like
// torch.backends.cudnn.benchmark = True; that call is before the timing); then ember's
// Im2colGemm (im2col + cuBLAS), ImplicitGemm (one kernel, no scratch) and Auto (what a training
// step runs; the cell says which of the two it chose). ImplicitGemm has no weight-gradient
// kernel: asked for one it runs the im2col path, and the row says so.
//
// Precision: float32 everywhere with TF32 off (ember::cuda::set_allow_tf32(false)), so cuDNN
// runs plain FP32 FMA math as ember does — the same precision, which is what "x cuDNN" compares.
// (PyTorch lets cuDNN use TF32 by default; bench/pytorch/bench_conv.py turns it off to match.)
//
// Validation, before anything is timed: cuDNN's outputs are compared with ember's CPU kernel
// (kernels/cpu/conv.h) run in float64 on copies of the same inputs, and each of ember's outputs
// with cuDNN's (or with the float64 CPU result when this build has no cuDNN). Tolerance per
// output tensor: |got - ref| <= atol + rtol * |ref| with rtol = 1e-4 and atol = 1e-4 * max|ref|
// (float32 sums over up to 211,600 products — conv1's weight gradient — in different orders
// differ by far less; a wrong index is off by the size of the values). A wrong result prints
// FAIL instead of its numbers.
//
// Columns: ms is the median of --runs timed runs after 3 warm-ups, L2 flushed before each (see
// bench/harness.h); GFLOP/s counts 2*N*K*P*Q*C*R*S for every pass (the bias is not counted);
// "x cuDNN" is cuDNN's time / this row's time (above 1: faster than cuDNN).
//
// Usage: bench_conv [--runs 20] [--json FILE]
// Without a GPU it says why and exits 0. Its PyTorch twin: bench/pytorch/bench_conv.py.
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
#include "kernels/conv_geometry.h"
#include "kernels/cpu/conv.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_index.h"

namespace {

namespace bench = ember::bench;
namespace kc = ember::kernels::cuda;
using ember::Device;
using ember::Tensor;
using ember::TensorOptions;
using ember::kernels::ConvGeometry;

constexpr double kRtol = 1e-4;
constexpr double kAtolOfMax = 1e-4;  // atol = this * max|ref|

struct Layer {
  const char* model;
  const char* name;
  int64_t N, C, H, W, K, R, S;
};

const std::vector<Layer>& layers() {
  static const std::vector<Layer> list = {
      {"cats_vs_dogs", "conv1", 100, 1, 50, 50, 32, 5, 5},
      {"cats_vs_dogs", "conv2", 100, 32, 23, 23, 64, 5, 5},
      {"cats_vs_dogs", "conv3", 100, 64, 9, 9, 128, 5, 5},
      {"cifar b4", "conv1", 4, 3, 32, 32, 6, 5, 5},
      {"cifar b4", "conv2", 4, 6, 14, 14, 16, 5, 5},
      {"cifar b64", "conv1", 64, 3, 32, 32, 6, 5, 5},
      {"cifar b64", "conv2", 64, 6, 14, 14, 16, 5, 5},
  };
  return list;
}

ConvGeometry geometry(const Layer& l) {
  ConvGeometry g;
  g.N = l.N, g.C = l.C, g.H = l.H, g.W = l.W;
  g.K = l.K, g.R = l.R, g.S = l.S;
  g.P = ember::kernels::conv_out_size(l.H, l.R, 1, 0, 1);
  g.Q = ember::kernels::conv_out_size(l.W, l.S, 1, 0, 1);
  return g;
}

std::string layer_label(const Layer& l) {
  return std::string(l.model) + " " + l.name + " [" + std::to_string(l.N) + "," +
         std::to_string(l.C) + "," + std::to_string(l.H) + "," + std::to_string(l.W) + "]x[" +
         std::to_string(l.K) + "," + std::to_string(l.C) + "," + std::to_string(l.R) + "," +
         std::to_string(l.S) + "]";
}

enum class Pass { Forward, BackwardInput, BackwardWeight };
const char* pass_name(Pass p) {
  switch (p) {
    case Pass::Forward: return "forward";
    case Pass::BackwardInput: return "input grad";
    case Pass::BackwardWeight: return "weight grad";
  }
  return "?";
}

const char* algo_name(kc::ConvAlgo a) {
  switch (a) {
    case kc::ConvAlgo::Auto: return "Auto";
    case kc::ConvAlgo::Im2colGemm: return "Im2colGemm";
    case kc::ConvAlgo::ImplicitGemm: return "ImplicitGemm";
    case kc::ConvAlgo::Cudnn: return "cuDNN";
    case kc::ConvAlgo::Direct: return "Direct";
  }
  return "?";
}

// The algorithm ember actually runs for `asked` on this pass (conv.cu's routing).
kc::ConvAlgo effective_algo(kc::ConvAlgo asked, Pass pass, const ConvGeometry& g, int sms) {
  if (asked == kc::ConvAlgo::Cudnn || asked == kc::ConvAlgo::Direct) return asked;
  if (pass == Pass::BackwardWeight) return kc::choose_backward_weight_algo(g);  // im2col only
  if (asked != kc::ConvAlgo::Auto) return asked;
  return pass == Pass::Forward ? kc::choose_forward_algo(g, sms)
                               : kc::choose_backward_input_algo(g, sms);
}

// ---- the tensors of one layer ------------------------------------------------------------------

// Inputs (random normal, made on the GPU) and the outputs of one pass, on the GPU.
struct LayerData {
  ConvGeometry g;
  Tensor x, w, b, dy;  // inputs of the three passes
  Tensor y, dx, dw, db;  // outputs, overwritten by each algorithm in turn
};

LayerData make_layer(const Layer& l) {
  const TensorOptions gpu = TensorOptions(ember::kFloat32).device(Device::cuda(0));
  LayerData d;
  d.g = geometry(l);
  const ConvGeometry& g = d.g;
  d.x = ember::randn({g.N, g.C, g.H, g.W}, gpu);
  d.w = ember::randn({g.K, g.C, g.R, g.S}, gpu);
  d.b = ember::randn({g.K}, gpu);
  d.dy = ember::randn({g.N, g.K, g.P, g.Q}, gpu);
  d.y = ember::empty({g.N, g.K, g.P, g.Q}, gpu);
  d.dx = ember::empty({g.N, g.C, g.H, g.W}, gpu);
  d.dw = ember::empty({g.K, g.C, g.R, g.S}, gpu);
  d.db = ember::empty({g.K}, gpu);
  return d;
}

// Enqueues one call of `pass` with `algo` on ember's stream.
void run_pass(LayerData& d, Pass pass, kc::ConvAlgo algo) {
  switch (pass) {
    case Pass::Forward:
      kc::conv2d_forward(ember::kFloat32, d.g, d.x.raw_data(), d.w.raw_data(), d.b.raw_data(),
                         d.y.raw_data(), algo);
      break;
    case Pass::BackwardInput:
      kc::conv2d_backward_input(ember::kFloat32, d.g, d.dy.raw_data(), d.w.raw_data(),
                                d.dx.raw_data(), algo);
      break;
    case Pass::BackwardWeight:
      kc::conv2d_backward_weight(ember::kFloat32, d.g, d.x.raw_data(), d.dy.raw_data(),
                                 d.dw.raw_data(), d.db.raw_data(), algo);
      break;
  }
}

// The outputs of a pass, copied to the CPU as float64 (one tensor, or dw and db).
std::vector<Tensor> outputs_cpu(const LayerData& d, Pass pass) {
  auto host = [](const Tensor& t) { return t.cpu().to(ember::kFloat64); };
  switch (pass) {
    case Pass::Forward: return {host(d.y)};
    case Pass::BackwardInput: return {host(d.dx)};
    case Pass::BackwardWeight: return {host(d.dw), host(d.db)};
  }
  return {};
}

// The float64 CPU reference of a pass (kernels/cpu/conv.h) on copies of the GPU inputs.
std::vector<Tensor> cpu_reference(const LayerData& d, Pass pass) {
  auto host = [](const Tensor& t) { return t.cpu().to(ember::kFloat64); };
  const ConvGeometry& g = d.g;
  const TensorOptions f64(ember::kFloat64);
  namespace cpu = ember::kernels::cpu;
  switch (pass) {
    case Pass::Forward: {
      const Tensor x = host(d.x), w = host(d.w), b = host(d.b);
      Tensor y = ember::empty({g.N, g.K, g.P, g.Q}, f64);
      cpu::conv2d_forward(ember::kFloat64, g, x.raw_data(), w.raw_data(), b.raw_data(),
                          y.raw_data());
      return {y};
    }
    case Pass::BackwardInput: {
      const Tensor dy = host(d.dy), w = host(d.w);
      Tensor dx = ember::empty({g.N, g.C, g.H, g.W}, f64);
      cpu::conv2d_backward_input(ember::kFloat64, g, dy.raw_data(), w.raw_data(), dx.raw_data());
      return {dx};
    }
    case Pass::BackwardWeight: {
      const Tensor x = host(d.x), dy = host(d.dy);
      Tensor dw = ember::empty({g.K, g.C, g.R, g.S}, f64);
      Tensor db = ember::empty({g.K}, f64);
      cpu::conv2d_backward_weight(ember::kFloat64, g, x.raw_data(), dy.raw_data(), dw.raw_data(),
                                  db.raw_data());
      return {dw, db};
    }
  }
  return {};
}

// "" when every output is within tolerance of its reference, else what is wrong.
std::string mismatch(const std::vector<Tensor>& got, const std::vector<Tensor>& ref) {
  static const char* const kNames[] = {"output", "db"};
  for (size_t t = 0; t < got.size() && t < ref.size(); ++t) {
    const double* gv = got[t].data_ptr<double>();
    const double* rv = ref[t].data_ptr<double>();
    const int64_t n = ref[t].numel();
    double max_ref = 0;
    for (int64_t i = 0; i < n; ++i) max_ref = std::max(max_ref, std::fabs(rv[i]));
    const double atol = kAtolOfMax * max_ref;
    for (int64_t i = 0; i < n; ++i) {
      const double err = std::fabs(gv[i] - rv[i]);
      if (!(err <= atol + kRtol * std::fabs(rv[i]))) {  // written so that a NaN fails
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s[%lld] = %.7g, expected %.7g (tolerance %.3g + %.0e*|ref|)",
                      kNames[t], static_cast<long long>(i), gv[i], rv[i], atol, kRtol);
        return buf;
      }
    }
  }
  return "";
}

double gflop(const ConvGeometry& g) {
  return 2.0 * static_cast<double>(g.N * g.K * g.P * g.Q) * static_cast<double>(g.C * g.R * g.S) *
         1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_conv: ember's CUDA convolutions vs cuDNN on the example CNNs' layers"};
  int runs = 20;
  std::string json_path;
  app.add_option("--runs", runs, "timed runs per row; the median is printed (default 20)")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "also write the table to this JSON file");
  CLI11_PARSE(app, argc, argv);

  if (!ember::cuda::is_available()) {
    std::printf("bench_conv: nothing to measure, no usable GPU: %s\n",
                ember::cuda::unavailable_reason());
    return 0;
  }
  std::string why;
  if (!ember::cuda::device_supported(0, &why)) {
    std::fprintf(stderr, "bench_conv: %s\n", why.c_str());
    return 1;
  }

  try {
    ember::manual_seed(0);  // the same inputs on every run
    ember::cuda::set_allow_tf32(false);  // cuDNN in plain FP32, the precision of ember's kernels
    const bool cudnn = ember::cudnn_available();
    const int sms = ember::cuda::get_device_properties(0).multiprocessor_count;
    const std::string header = bench::gpu_header(0);
    std::cout << "ember bench_conv: convolution layers of the example CNNs, float32, TF32 off\n"
              << header << "  cuDNN: "
              << (cudnn ? "yes (the reference; its fastest algorithm per shape)"
                        : "not in this build: ember is checked against its float64 CPU kernel "
                          "and there is no x cuDNN column")
              << "\n  method: median of " << runs << " runs after 3 warm-ups, CUDA events, L2 "
              << "flushed before each run; every result checked first (tolerance "
              << kAtolOfMax << "*max|ref| + " << kRtol << "*|ref|)\n\n";

    // The same title and columns as bench/pytorch/bench_conv.py; bench/run_all.py joins the
    // rows on (layer, pass, algo): PyTorch's rows are algo "cuDNN", next to ember's cuDNN row.
    bench::Table table("conv2d layers of the example CNNs (float32, TF32 off)",
                       {"layer", "pass", "algo", "ms", "GFLOP/s", "x cuDNN"});
    int failures = 0;
    std::vector<kc::ConvAlgo> algos;
    if (cudnn) algos.push_back(kc::ConvAlgo::Cudnn);
    algos.insert(algos.end(),
                 {kc::ConvAlgo::Im2colGemm, kc::ConvAlgo::ImplicitGemm, kc::ConvAlgo::Auto});

    for (const Layer& l : layers()) {
      LayerData d = make_layer(l);
      const std::string label = layer_label(l);
      for (const Pass pass : {Pass::Forward, Pass::BackwardInput, Pass::BackwardWeight}) {
        const std::vector<Tensor> cpu_ref = cpu_reference(d, pass);
        std::vector<Tensor> ref = cpu_ref;  // becomes cuDNN's outputs once they are checked
        double cudnn_ms = 0;
        for (const kc::ConvAlgo algo : algos) {
          const kc::ConvAlgo runs_as = effective_algo(algo, pass, d.g, sms);
          std::string algo_cell = algo_name(algo);
          if (algo != kc::ConvAlgo::Cudnn && runs_as != algo)
            algo_cell += std::string(" (=") + algo_name(runs_as) + ")";
          std::vector<std::string> row = {label, pass_name(pass), algo_cell, "", "", ""};
          try {
            run_pass(d, pass, algo);  // also cuDNN's algorithm search, on its first call
            const std::vector<Tensor> got = outputs_cpu(d, pass);
            const std::string wrong = mismatch(got, algo == kc::ConvAlgo::Cudnn ? cpu_ref : ref);
            if (!wrong.empty()) {
              ++failures;
              std::fprintf(stderr, "FAIL %s %s %s: %s\n", label.c_str(), pass_name(pass),
                           algo_name(algo), wrong.c_str());
              row[3] = row[4] = row[5] = "FAIL";
            } else {
              if (algo == kc::ConvAlgo::Cudnn) ref = got;
              const bench::Timing t = bench::time_cuda([&] { run_pass(d, pass, algo); }, 3, runs,
                                                       true);
              if (algo == kc::ConvAlgo::Cudnn) cudnn_ms = t.median_ms;
              row[3] = bench::fmt(t.median_ms, 4);
              row[4] = bench::fmt(gflop(d.g) / (t.median_ms * 1e-3), 0);
              row[5] = cudnn_ms > 0 ? bench::fmt(cudnn_ms / t.median_ms, 2) + "x" : "n/a";
            }
          } catch (const ember::DeviceError& e) {
            // A cuDNN that is in the build but fails here (a library mismatch): the row says so
            // and ember's rows are checked against the CPU instead.
            ++failures;
            std::fprintf(stderr, "%s %s %s: %s\n", label.c_str(), pass_name(pass),
                         algo_name(algo), e.what());
            row[3] = row[4] = row[5] = "FAIL";
          }
          table.add_row(row);
        }
      }
    }

    table.print(std::cout);
    if (failures > 0)
      std::cout << "  " << failures << " rows FAILED (see stderr)\n";
    if (!json_path.empty()) {
      bench::write_json(json_path, "bench_conv", header, {table});
      std::cout << "results written to " << json_path << "\n";
    }
    return failures > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_conv: %s\n", e.what());
    return 1;
  }
}
