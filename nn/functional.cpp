// ember/nn/functional.cpp — thin wrappers over core ops; the checks here are the ones the
// core ops cannot phrase in nn's terms (features, weights, dropout probability).
#include "nn/functional.h"

#include "core/error.h"

namespace ember::nn::functional {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  EMBER_CHECK(weight.dim() == 2, "linear: the weight must be 2-d [out_features, in_features], "
              "got shape ", shape_str(weight.shape()));
  const int64_t out_features = weight.size(0), in_features = weight.size(1);
  EMBER_CHECK(x.dim() >= 1, "linear: the input must have at least 1 dimension (its features), "
              "got a 0-d tensor");
  EMBER_CHECK(x.size(-1) == in_features, "linear: the input of shape ", shape_str(x.shape()),
              " has ", x.size(-1), " features in its last dimension but the weight ",
              shape_str(weight.shape()), " expects ", in_features);
  EMBER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_features),
              "linear: the bias must have shape [", out_features, "] to match the weight ",
              shape_str(weight.shape()), ", got ", shape_str(bias.shape()));
  // weight.t() is a free view; matmul hands it to the GEMM as a transposed operand, and a
  // [B, T, in] input becomes one [B*T, in] GEMM (see core/ops/matmul.cpp).
  const Tensor y = x.matmul(weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor relu(const Tensor& x) { return ember::relu(x); }

Tensor softmax(const Tensor& x, int64_t dim) { return ember::softmax(x, dim); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return ember::log_softmax(x, dim); }

Tensor dropout(const Tensor& x, double p, bool training) {
  EMBER_CHECK(p >= 0.0 && p < 1.0, "dropout: p is the probability of zeroing an element and must "
              "lie in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  EMBER_CHECK(is_floating(x.dtype()), "dropout: expected a float32 or float64 input, got ",
              x.dtype(), " (convert with .to(ember::kFloat32))");
  // u ~ U[0, 1) is >= p with probability 1 - p: that element is kept. The mask and its scale
  // need no gradient, so the only recorded op is the multiplication with x.
  const Tensor u = rand(x.shape(), x.options());
  const Tensor keep = ge(u, full({}, p, x.options()));
  const Tensor scale = keep.to(x.dtype()) * (1.0 / (1.0 - p));
  return x * scale;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     Reduction reduction, int64_t ignore_index) {
  return ember::cross_entropy(input, target, weight, reduction, ignore_index);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return ember::mse_loss(input, target, reduction);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  return x.flatten(start_dim, end_dim);
}

}  // namespace ember::nn::functional
