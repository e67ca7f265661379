// Direct tests of matmul, softmax/log_softmax, cross_entropy and mse_loss: hand-computed values,
// error messages, numerical stability, and large products against a plain triple loop.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

// C = A @ B by the textbook triple loop in double, on row-major values.
std::vector<double> naive_matmul(const std::vector<double>& a, const std::vector<double>& b,
                                 int64_t M, int64_t K, int64_t N) {
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) c[i * N + j] += a[i * K + k] * b[k * N + j];
  return c;
}

void check_close(const Tensor& t, const std::vector<double>& want, double tol) {
  const std::vector<double> got = t.to_vector<double>();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).margin(tol).epsilon(tol));
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- matmul ---------------------------------------------------------------------------------

TEST_CASE("matmul: exact small products in float32 and float64", "[matmul]") {
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor a = tensor({1, 2, 3, 4}, {2, 2}, dt);
    const Tensor b = tensor({5, 6, 7, 8}, {2, 2}, dt);
    const Tensor c = matmul(a, b);
    CHECK(c.shape() == Shape{2, 2});
    CHECK(c.dtype() == dt);
    CHECK(c.to_vector<double>() == std::vector<double>{19, 22, 43, 50});
    // a^T @ b and a @ b^T through transposed views (the kernel's transpose flags).
    CHECK(matmul(a.t(), b).to_vector<double>() == std::vector<double>{26, 30, 38, 44});
    CHECK(matmul(a, b.t()).to_vector<double>() == std::vector<double>{17, 23, 39, 53});
    CHECK(matmul(a.t(), b.t()).to_vector<double>() == std::vector<double>{23, 31, 34, 46});
  }
}

TEST_CASE("matmul: 1-d operands follow torch.matmul", "[matmul]") {
  const Tensor v = tensor({1, 2, 3}, kFloat64);
  const Tensor w = tensor({4, 5, 6}, kFloat64);
  const Tensor dot = matmul(v, w);
  CHECK(dot.dim() == 0);
  CHECK(dot.item() == 32.0);

  const Tensor m = tensor({1, 0, 2, 0, 1, 3}, {2, 3}, kFloat64);  // [[1, 0, 2], [0, 1, 3]]
  const Tensor mv = matmul(m, v);
  CHECK(mv.shape() == Shape{2});
  CHECK(mv.to_vector<double>() == std::vector<double>{7, 11});
  const Tensor vm = matmul(tensor({1, 2}, kFloat64), m);
  CHECK(vm.shape() == Shape{3});
  CHECK(vm.to_vector<double>() == std::vector<double>{1, 2, 8});
  // A 1-d operand against a batch: [3] @ [2, 3, 2] -> [2, 2].
  const Tensor batch = arange(12, kFloat64).reshape({2, 3, 2});
  const Tensor vb = matmul(v, batch);
  CHECK(vb.shape() == Shape{2, 2});
  CHECK(vb.to_vector<double>() == std::vector<double>{16, 22, 52, 58});
}

TEST_CASE("matmul: batched with broadcast batch dims", "[matmul]") {
  manual_seed(7);
  const Tensor a = randn({2, 1, 3, 4}, kFloat64);
  const Tensor b = randn({5, 4, 2}, kFloat64);
  const Tensor c = matmul(a, b);
  REQUIRE(c.shape() == Shape{2, 5, 3, 2});
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t s = 0; s < 5; ++s) {
      const auto want =
          naive_matmul(a[i][0].to_vector<double>(), b[s].to_vector<double>(), 3, 4, 2);
      check_close(c[i][s], want, 1e-12);
    }
  }
  // The gradient of a broadcast batch dim adds up over the copies.
  const Tensor x = ones({1, 2, 3}, TensorOptions(kFloat64).requires_grad());
  const Tensor y = ones({4, 3, 2}, TensorOptions(kFloat64).requires_grad());
  matmul(x, y).sum().backward();
  CHECK(x.grad().shape() == Shape{1, 2, 3});
  CHECK(x.grad().to_vector<double>() == std::vector<double>(6, 8.0));  // 4 batches * 2 columns
  CHECK(y.grad().shape() == Shape{4, 3, 2});
  CHECK(y.grad().to_vector<double>() == std::vector<double>(24, 2.0));  // 2 rows of x
}

TEST_CASE("matmul: backward dA = dC @ B^T, dB = A^T @ dC", "[matmul][autograd]") {
  const Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, TensorOptions(kFloat64).requires_grad());
  const Tensor b = tensor({1, -1, 0, 2, 3, 1}, {3, 2}, TensorOptions(kFloat64).requires_grad());
  const Tensor c = matmul(a, b);
  CHECK(c.grad_fn()->name() == "MatmulBackward");
  const Tensor g = tensor({1, 0, 0, 2}, {2, 2}, kFloat64);
  c.backward(g);
  // dA = g @ b^T = [[1, 0, 3], [-2, 4, 2]];  dB = a^T @ g = [[1, 8], [2, 10], [3, 12]].
  CHECK(a.grad().to_vector<double>() == std::vector<double>{1, 0, 3, -2, 4, 2});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{1, 8, 2, 10, 3, 12});
}

TEST_CASE("matmul: MNIST layer shapes match a plain loop, every layout", "[matmul]") {
  manual_seed(11);
  const Tensor x = randn({64, 784});
  const Tensor w = randn({512, 784});  // nn.Linear's [out, in] weight: x @ w.t()
  const auto want = naive_matmul(x.to_vector<double>(), w.t().contiguous().to_vector<double>(), 64,
                                 784, 512);
  check_close(matmul(x, w.t()), want, 1e-3);
  check_close(matmul(x, w.t().contiguous()), want, 1e-3);
  check_close(matmul(x.t().contiguous().t(), w.t()), want, 1e-3);
  // A 3-d input folded into one GEMM: [2, 32, 784] @ [784, 512].
  check_close(matmul(x.reshape({2, 32, 784}), w.t()).reshape({64, 512}), want, 1e-3);
  // Odd sizes, with one thread and with several.
  const Tensor a = randn({7, 13}, kFloat64), b = randn({13, 5}, kFloat64);
  const auto small = naive_matmul(a.to_vector<double>(), b.to_vector<double>(), 7, 13, 5);
  const int threads = get_num_threads();
  set_num_threads(1);
  check_close(matmul(a, b), small, 1e-12);
  set_num_threads(threads);
  check_close(matmul(a, b), small, 1e-12);
}

TEST_CASE("matmul: empty operands", "[matmul]") {
  CHECK(matmul(zeros({0, 3}), zeros({3, 4})).shape() == Shape{0, 4});
  const Tensor k0 = matmul(ones({2, 0}), ones({0, 3}));  // an empty sum is 0
  CHECK(k0.shape() == Shape{2, 3});
  CHECK(k0.to_vector<double>() == std::vector<double>(6, 0.0));
  CHECK(matmul(ones({0}), ones({0})).item() == 0.0);
  CHECK(matmul(zeros({0, 2, 3}), zeros({3, 4})).shape() == Shape{0, 2, 4});
}

TEST_CASE("matmul: errors name the shapes", "[matmul][errors]") {
  CHECK(error_of([] { matmul(zeros({64, 784}), zeros({512, 256})); }) ==
        "matmul: [64, 784] @ [512, 256]: inner dimensions differ (784 vs 512)");
  CHECK_THAT(error_of([] { matmul(zeros({3}), zeros({4})); }),
             Contains("inner dimensions differ (3 vs 4)"));
  CHECK_THAT(error_of([] { matmul(scalar_tensor(2.0), zeros({3})); }),
             Contains("at least 1 dimension"));
  CHECK_THAT(error_of([] { matmul(zeros({2, 3, 4}), zeros({5, 4, 2})); }),
             Contains("batch dimensions [2] and [5] cannot be broadcast"));
  CHECK_THAT(error_of([] { matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)); }),
             Contains("dtypes differ"));
  CHECK_THAT(error_of([] { matmul(zeros({2, 3}, kInt64), zeros({3, 2}, kInt64)); }),
             Contains("expected a float32 or float64 tensor"));
}

// ---- softmax --------------------------------------------------------------------------------

TEST_CASE("softmax: sums to 1 along the dim, for every dim", "[softmax]") {
  manual_seed(3);
  const Tensor x = randn({3, 4, 5}, kFloat64) * 4.0;
  for (int64_t d : {0, 1, 2, -1}) {
    const Tensor y = softmax(x, d);
    CHECK(y.shape() == x.shape());
    const auto sums = y.sum({d}).to_vector<double>();
    for (double s : sums) CHECK(s == Approx(1.0).epsilon(1e-12));
    // log_softmax is the log of it.
    check_close(log_softmax(x, d), log(y).to_vector<double>(), 1e-12);
  }
  // A non-contiguous input gives the same values as its contiguous copy.
  const Tensor xt = x.transpose(0, 2);
  check_close(softmax(xt, 1), softmax(xt.contiguous(), 1).to_vector<double>(), 1e-15);
}

TEST_CASE("softmax: stable for large logits", "[softmax]") {
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor big = tensor({1000, 1000, 1000, 0}, {2, 2}, dt);
    check_close(softmax(big, 1), {0.5, 0.5, 1.0, 0.0}, 1e-7);
    const auto ls = log_softmax(big, 1).to_vector<double>();
    CHECK(ls[0] == Approx(-std::log(2.0)).epsilon(1e-6));
    CHECK(ls[2] == Approx(0.0).margin(1e-6));
    CHECK(ls[3] == Approx(-1000.0).epsilon(1e-6));
    const Tensor neg = tensor({-1000, -1001}, dt);
    const auto sn = softmax(neg, 0).to_vector<double>();
    CHECK(sn[0] == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  }
}

TEST_CASE("softmax: backward matches y * (g - sum(g * y))", "[softmax][autograd]") {
  const Tensor x = tensor({0.5, -1.0, 2.0}, TensorOptions(kFloat64).requires_grad());
  const Tensor g = tensor({1.0, 2.0, -1.0}, kFloat64);
  const Tensor y = softmax(x, 0);
  CHECK(y.grad_fn()->name() == "SoftmaxBackward");
  y.backward(g);
  const auto yv = y.to_vector<double>();
  const double dot = yv[0] * 1.0 + yv[1] * 2.0 - yv[2];
  check_close(x.grad(), {yv[0] * (1.0 - dot), yv[1] * (2.0 - dot), yv[2] * (-1.0 - dot)}, 1e-12);

  const Tensor x2 = tensor({0.5, -1.0, 2.0}, TensorOptions(kFloat64).requires_grad());
  const Tensor ly = log_softmax(x2, 0);
  CHECK(ly.grad_fn()->name() == "LogSoftmaxBackward");
  ly.backward(g);
  check_close(x2.grad(), {1.0 - yv[0] * 2.0, 2.0 - yv[1] * 2.0, -1.0 - yv[2] * 2.0}, 1e-12);
}

TEST_CASE("softmax: scalars, empty tensors and bad dims", "[softmax][errors]") {
  CHECK(softmax(scalar_tensor(3.0), 0).item() == 1.0);
  CHECK(softmax(zeros({0, 3}), 1).shape() == Shape{0, 3});
  CHECK_THAT(error_of([] { softmax(zeros({2, 3}), 2); }), Contains("out of range"));
  CHECK_THAT(error_of([] { softmax(zeros({2}, kInt64), 0); }),
             Contains("softmax: expected a float32 or float64 tensor"));
}

// ---- cross_entropy --------------------------------------------------------------------------

TEST_CASE("cross_entropy: hand-computed values", "[cross_entropy]") {
  for (DType dt : {kFloat32, kFloat64}) {
    // Two equal logits: -log(1/2) = ln 2.
    const Tensor l = tensor({0, 0}, {1, 2}, TensorOptions(dt).requires_grad());
    const Tensor loss = cross_entropy(l, tensor({1}, kInt64));
    CHECK(loss.dim() == 0);
    CHECK(loss.item() == Approx(std::log(2.0)).epsilon(1e-6));
    CHECK(loss.grad_fn()->name() == "CrossEntropyBackward");
    loss.backward();
    check_close(l.grad(), {0.5, -0.5}, 1e-7);  // softmax - onehot
  }
  // Large logits stay finite: loss = 1000 exactly, gradient (softmax - onehot) = [1, -1].
  const Tensor big = tensor({1000, 0}, {1, 2}, TensorOptions(kFloat32).requires_grad());
  const Tensor lb = cross_entropy(big, tensor({1}, kInt64));
  CHECK(lb.item() == Approx(1000.0));
  lb.backward();
  check_close(big.grad(), {1.0, -1.0}, 1e-6);
  // One sample: logits [C] with a 0-d target.
  const Tensor one = cross_entropy(tensor({0, 0, 0, 0}, kFloat64), tensor({2}, kInt64).reshape({}));
  CHECK(one.item() == Approx(std::log(4.0)));
}

TEST_CASE("cross_entropy: reductions, weights and ignore_index as in PyTorch", "[cross_entropy]") {
  manual_seed(5);
  const Tensor logits = randn({6, 4}, kFloat64);
  const Tensor target = tensor({3, 0, -100, 1, 3, 2}, kInt64);
  const Tensor weight = tensor({0.5, 2.0, 1.0, 3.0}, kFloat64);
  const auto lsm = log_softmax(logits, 1).to_vector<double>();
  const std::vector<int64_t> t = target.to_vector<int64_t>();
  const std::vector<double> w = weight.to_vector<double>();
  std::vector<double> per_row(6, 0.0), per_row_w(6, 0.0);
  double sum = 0, sum_w = 0, wsum = 0;
  int64_t kept = 0;
  for (int64_t i = 0; i < 6; ++i) {
    if (t[i] == -100) continue;
    per_row[i] = -lsm[i * 4 + t[i]];
    per_row_w[i] = w[t[i]] * per_row[i];
    sum += per_row[i];
    sum_w += per_row_w[i];
    wsum += w[t[i]];
    ++kept;
  }
  check_close(cross_entropy(logits, target, Tensor(), Reduction::None), per_row, 1e-12);
  check_close(cross_entropy(logits, target, weight, Reduction::None), per_row_w, 1e-12);
  CHECK(cross_entropy(logits, target, Tensor(), Reduction::Sum).item() == Approx(sum));
  CHECK(cross_entropy(logits, target, weight, Reduction::Sum).item() == Approx(sum_w));
  CHECK(cross_entropy(logits, target).item() == Approx(sum / static_cast<double>(kept)));
  // The weighted mean divides by the weights of the rows kept, not by their count.
  CHECK(cross_entropy(logits, target, weight).item() == Approx(sum_w / wsum));

  // Gradient of the weighted mean: w_t (softmax - onehot) / sum w, zero on the ignored row.
  const Tensor lg = logits.detach().requires_grad_(true);
  cross_entropy(lg, target, weight).backward();
  const auto sm = softmax(logits, 1).to_vector<double>();
  std::vector<double> want(24, 0.0);
  for (int64_t i = 0; i < 6; ++i) {
    if (t[i] == -100) continue;
    for (int64_t c = 0; c < 4; ++c)
      want[i * 4 + c] = w[t[i]] * (sm[i * 4 + c] - (c == t[i] ? 1.0 : 0.0)) / wsum;
  }
  check_close(lg.grad(), want, 1e-12);
}

TEST_CASE("cross_entropy: errors say what is wrong", "[cross_entropy][errors]") {
  const Tensor logits = zeros({5, 10});
  CHECK(error_of([&] { cross_entropy(logits, tensor({1, 2, 3, 12, 4}, kInt64)); }) ==
        "cross_entropy: target[3] = 12 is out of range for 10 classes (valid: 0 to 9, or "
            "ignore_index -100)");
  CHECK_THAT(error_of([&] { cross_entropy(logits, tensor({1, -1, 3, 2, 4}, kInt64)); }),
             Contains("target[1] = -1 is out of range"));
  CHECK_THAT(error_of([&] { cross_entropy(logits, tensor({1, 2, 3, 4, 5})); }),
             Contains("int64 class indices, got float32"));
  CHECK_THAT(error_of([&] { cross_entropy(logits, tensor({1, 2, 3}, kInt64)); }),
             Contains("need a target of shape [5], got [3]"));
  CHECK_THAT(error_of([&] { cross_entropy(zeros({2, 3, 4}), tensor({1, 2}, kInt64)); }),
             Contains("logits [2, 3, 4] (classes in dim 1) need a target of shape [2, 4], got [2]"));
  CHECK_THAT(error_of([&] { cross_entropy(zeros({2, 3, 4}), full({2, 4}, 3, kInt64)); }),
             Contains("target[0, 0] = 3 is out of range for 3 classes"));
  CHECK_THAT(error_of([&] { cross_entropy(logits, zeros({5}, kInt64), ones({9})); }),
             Contains("weight must have shape [10]"));
  CHECK_THAT(error_of([&] { cross_entropy(logits, zeros({5}, kInt64), ones({10}, kFloat64)); }),
             Contains("dtypes differ"));
}

// ---- mse_loss -------------------------------------------------------------------------------

TEST_CASE("mse_loss: values, reductions and shape check", "[mse_loss]") {
  const Tensor x = tensor({1, 2, 3, 4}, {2, 2}, TensorOptions(kFloat64).requires_grad());
  const Tensor y = tensor({0, 2, 5, 1}, {2, 2}, kFloat64);
  CHECK(mse_loss(x, y, Reduction::None).to_vector<double>() == std::vector<double>{1, 0, 4, 9});
  CHECK(mse_loss(x, y, Reduction::Sum).item() == 14.0);
  const Tensor m = mse_loss(x, y);
  CHECK(m.item() == 3.5);
  m.backward();
  // d/dx mean((x - y)^2) = 2 (x - y) / n.
  check_close(x.grad(), {0.5, 0.0, -1.0, 1.5}, 1e-15);
  CHECK(error_of([] { mse_loss(zeros({4}), zeros({4, 1})); }) ==
        "mse_loss: input [4] and target [4, 1] differ in shape: reshape one to match (ember does "
        "not broadcast here; an [N] vs [N, 1] mix-up would silently compare every pair)");
}
