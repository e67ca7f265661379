// Fits y = 3x - 1 with one weight and one bias: proves a program outside the ember tree can
// include its headers, link it, and train through its autograd.
#include <cstdio>

#include "core/ember.h"

int main() {
  using namespace ember;
  Tensor x = linspace(-1, 1, 32).reshape({32, 1});
  Tensor y = x * 3.0 - 1.0;
  Tensor w = zeros({1, 1}, TensorOptions().requires_grad());
  Tensor b = zeros({1}, TensorOptions().requires_grad());
  for (int i = 0; i < 300; ++i) {
    Tensor loss = mse_loss(x.matmul(w) + b, y);
    loss.backward();
    NoGradGuard ng;
    w.sub_(w.grad(), 0.1);
    b.sub_(b.grad(), 0.1);
    w.zero_grad();
    b.zero_grad();
  }
  const double wv = w.item(), bv = b.item();
  std::printf("consumer: w = %.4f, b = %.4f (expected 3, -1)\n", wv, bv);
  return (wv > 2.99 && wv < 3.01 && bv > -1.01 && bv < -0.99) ? 0 : 1;
}
