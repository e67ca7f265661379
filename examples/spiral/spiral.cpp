// examples/spiral — the smallest real training run: a two-layer MLP learns to separate three
// interleaved spirals (the classic non-linearly-separable toy problem) with ember's autograd.
//
// Everything a training loop needs is here in plain tensor code, with no nn/optim library yet:
// parameters are leaf tensors with requires_grad, the forward pass builds the tape, backward()
// fills .grad, and the SGD update runs under NoGradGuard.
//
//   spiral [--steps 2000] [--hidden 64] [--lr 1.0] [--seed 0] [--threads N] [--dot]
//
// --dot prints the tape of the first step (ember::autograd::to_dot) instead of training:
// scripts/draw-tape turns it into the picture in docs/images/.
#include <chrono>
#include <cmath>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "core/ember.h"

using namespace ember;

namespace {

// points_per_class points on each of `classes` spiral arms, with a little noise.
// Returns X [N, 2] float32 and y [N] int64.
std::pair<Tensor, Tensor> make_spirals(int64_t points_per_class, int64_t classes) {
  const int64_t n = points_per_class * classes;
  Tensor noise = randn({n}) * 0.2;
  const auto eps = noise.to_vector<float>();
  std::vector<float> xs(static_cast<size_t>(2 * n));
  std::vector<int64_t> ys(static_cast<size_t>(n));
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t i = 0; i < points_per_class; ++i) {
      const int64_t k = c * points_per_class + i;
      const double r = static_cast<double>(i) / static_cast<double>(points_per_class - 1);
      const double theta = 4.0 * (c + r) + eps[static_cast<size_t>(k)];
      xs[static_cast<size_t>(2 * k)] = static_cast<float>(r * std::sin(theta));
      xs[static_cast<size_t>(2 * k + 1)] = static_cast<float>(r * std::cos(theta));
      ys[static_cast<size_t>(k)] = c;
    }
  }
  return {from_vector<float>(xs, {n, 2}), from_vector<int64_t>(ys, {n}, kInt64)};
}

// Uniform in +-1/sqrt(fan_in), the scale PyTorch's nn.Linear starts from.
Tensor init_param(const Shape& shape, int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return ((rand(shape) * 2.0 - 1.0) * bound).detach().requires_grad_();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember demo: train a 2-layer MLP on three spirals (CPU)"};
  int steps = 2000, hidden = 64, threads = 0;
  double lr = 1.0;
  uint64_t seed = 0;
  bool dot = false;
  app.add_option("--steps", steps, "full-batch gradient steps")->check(CLI::PositiveNumber);
  app.add_option("--hidden", hidden, "hidden units")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "random seed");
  app.add_option("--threads", threads, "CPU threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_flag("--dot", dot, "print the tape of the first step in Graphviz's language and stop");
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) set_num_threads(threads);

  manual_seed(seed);
  auto [x, y] = make_spirals(200, 3);
  if (!dot) {
    std::printf("data: %lld points in 3 spiral classes, 2 features\n",
                static_cast<long long>(x.size(0)));
    std::printf("model: Linear(2, %d) -> ReLU -> Linear(%d, 3), SGD lr %g, %d steps, %d threads\n",
                hidden, hidden, lr, steps, get_num_threads());
  }

  Tensor w1 = init_param({2, hidden}, 2), b1 = init_param({hidden}, 2);
  Tensor w2 = init_param({hidden, 3}, hidden), b2 = init_param({3}, hidden);
  const std::vector<Tensor> params = {w1, b1, w2, b2};

  auto accuracy = [&](const Tensor& logits) {
    return logits.argmax(1).eq(y).to(kFloat32).mean().item();
  };

  const auto start = std::chrono::steady_clock::now();
  double loss_value = 0;
  for (int step = 1; step <= steps; ++step) {
    Tensor logits = (x.matmul(w1) + b1).relu().matmul(w2) + b2;
    Tensor loss = cross_entropy(logits, y);
    if (dot) {
      const std::string tape =
          autograd::to_dot(loss, {{"w1", w1}, {"b1", b1}, {"w2", w2}, {"b2", b2}, {"loss", loss}});
      std::printf("%s", tape.c_str());
      return 0;
    }
    loss.backward();
    {
      NoGradGuard no_grad;
      for (const Tensor& p : params) {
        Tensor(p).sub_(p.grad(), lr);
        Tensor(p).zero_grad();
      }
    }
    loss_value = loss.item();
    if (step == 1 || step % (steps / 10 > 0 ? steps / 10 : 1) == 0) {
      NoGradGuard no_grad;
      std::printf("step %5d  loss %.4f  train accuracy %.1f%%\n", step, loss_value,
                  100.0 * accuracy(logits.detach()));
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  NoGradGuard no_grad;
  const double acc = accuracy((x.matmul(w1) + b1).relu().matmul(w2) + b2);
  std::printf("final: loss %.4f, train accuracy %.1f%%, %.2f s (%.2f ms/step)\n", loss_value,
              100.0 * acc, seconds, 1000.0 * seconds / steps);
  return 0;
}
