// Op card: cross_entropy — softmax + negative log-likelihood of the target class, fused.
//
// Math      for row r with target t_r (rows with t_r == ignore_index are left out):
//             loss_r = w[t_r] * -log softmax(logits_r)[t_r] = w[t_r] * (lse_r - logits[r, t_r])
//           with lse_r = log sum_c exp(logits[r, c]) and w = 1 without a weight. A row is one
//           sample of logits [N, C], or one position (n, d1, ..., dk) of logits
//           [N, C, d1, ..., dk], whose C scores are logits[n, :, d1, ..., dk] (segmentation).
//           Reduction::None -> loss shaped like target (0 for ignored rows); Sum -> sum_r loss_r;
//           Mean -> sum_r loss_r / sum_r w[t_r] over the rows not ignored (the weighted mean,
//           exactly as torch.nn.functional.cross_entropy; without a weight, divided by the number
//           of rows not ignored; nan when every row is ignored, as in PyTorch).
//           label_smoothing eps in [0, 1] trains towards (1 - eps) * onehot(t) + eps / C:
//             loss_r = (1 - eps) * w[t_r] * (lse_r - logits[r, t_r])
//                      + eps / C * sum_c w[c] * (lse_r - logits[r, c])
//           and Mean divides the whole by sum_r w[t_r] over the rows not ignored, as above
//           (PyTorch 1.13's formula, which divides its two parts by that same sum).
//           Probability targets (target float, shaped like logits, each row a distribution q):
//             loss_r = -sum_c w[c] * q'[r, c] * log softmax(logits_r)[c],
//             q' = (1 - eps) * q + eps / C;   Mean divides by the number of rows.
//           This form is composed of differentiable ops (log_softmax, mul, sum), so it needs no
//           kernel or backward of its own, has a gradient for target too, and rejects
//           ignore_index (PyTorch does).
// Backward  d lse_r / d logits[r, c] = softmax[r, c] and d logits[r, t] / d logits[r, c] is
//           [c == t], so  dL/dlogits[r, c] = g_r * w[t_r] * (softmax[r, c] - [c == t_r])
//           where g_r = dL/dloss_r (None), dL/dout (Sum) or dL/dout / sum w (Mean); 0 for ignored
//           rows. With label smoothing a row adds eps / C * (W * softmax[r, c] - w[c]),
//           W = sum_c w[c] (C without a weight).
//           softmax[r, c] = exp((logits[r, c] - max_r) - logsum_r) from the two saved row
//           statistics (not from a rounded lse_r, which would cost float32 logits of 1e4 four
//           digits of their gradient: kernels/cross_entropy.h). One fused kernel; under
//           create_graph the same formula as recorded ops (softmax, mul, sub), differentiable
//           again.
//           No gradient for target (integers) or weight (PyTorch has none either).
// Shapes    logits [N, C] float with target int64 [N]; logits [N, C, d1, ..., dk] with target
//           [N, d1, ..., dk]; logits [C] with a 0-d target (one sample). Target values in
//           [0, C) or == ignore_index; weight [C] (optional).
// Dtypes    logits float32 or float64 (the output's dtype); target int64; weight of the logits'
//           dtype.
// Saved     a private copy of logits (PyTorch saves the log-softmax it computed, never the
//           input: changing logits in place after the loss is allowed), target and weight
//           (contiguous; version-checked like PyTorch's nll_loss), the row stats [2, R] (max,
//           log of the shifted sum; R = N * d1 * ... * dk), the divisor of the mean, and with
//           label smoothing and a weight W = sum_c w[c].
// Kernels   CPU: kernels/cpu/cross_entropy.cpp cross_entropy_forward, cross_entropy_backward.
//           CUDA: kernels/cuda/cross_entropy.cu. On both, the reduced loss and the mean's
//           divisor stay in the device's memory (kernels/cross_entropy.h).
#include <algorithm>

#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/cross_entropy.h"
#include "kernels/index.h"

namespace ember {

namespace {
struct CrossEntropyBackward final : ops::Node {
  ops::SavedTensor logits, target, weight, stats;
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  Tensor weight_total;  // label smoothing with a weight: the 0-d sum_c w[c]
  Tensor divisor;  // Mean: the 0-d sum of weights, left where the kernels wrote it
  std::string name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const Tensor x = logits.unpack(*this, "logits");
    const Tensor t = target.unpack(*this, "target");
    const Tensor w = weight.defined() ? weight.unpack(*this, "weight") : Tensor();
    if (is_grad_enabled() && (g.requires_grad() || x.requires_grad()))
      return {recorded_backward(g, x, t, w)};  // create_graph
    const Tensor st = stats.unpack(*this, "row stats");
    const Tensor gc = g.contiguous();
    Tensor gx = ops::new_output(x.shape(), x);
    // Reduction::None sends one gradient per row; Sum and Mean one for all rows (stride 0).
    const int64_t grad_stride = reduction == Reduction::None ? 1 : 0;
    const void* wp = w.defined() ? w.raw_data() : nullptr;
    const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(N * C, 1);
    KernelsOn(x)->cross_entropy.backward(
        x.dtype(), N, C, S, x.raw_data(), t.data_ptr<int64_t>(), wp, ignore_index, label_smoothing,
        weight_total.defined() ? weight_total.raw_data() : nullptr, st.raw_data(), gc.raw_data(),
        grad_stride, divisor.defined() ? divisor.raw_data() : nullptr, gx.raw_data());
    return {gx};
  }
  // The kernel's gradient written with recorded ops, so that it can be differentiated again
  // (create_graph). Per row r that is not ignored, with p = softmax(logits_r):
  //   dL/dlogits_r = g_r * [(1 - eps) w[t_r] (p - onehot(t_r)) + eps / C (W p - w)]
  // (w = 1 and W = C without a weight); ignored rows get 0. Only p depends on the logits.
  Tensor recorded_backward(const Tensor& g, const Tensor& x, const Tensor& t,
                           const Tensor& w) const {
    const int64_t C = x.size(1);
    const double eps = label_smoothing;
    Shape class_shape(x.dim(), 1);  // [1, C, 1, ..., 1]: one entry per class
    class_shape[1] = C;
    const Tensor valid = ne(t, Scalar(ignore_index));
    const Tensor t_safe = where(valid, t, Scalar(0));  // ignored rows: any class, weighted 0
    const Tensor classes = arange(static_cast<double>(C), t.options()).reshape(class_shape);
    const Tensor onehot = eq(classes, unsqueeze(t_safe, 1)).to(x.dtype());
    Tensor w_t = valid.to(x.dtype());  // w[t_r], 0 where ignored
    if (w.defined()) w_t = mul(w_t, index_select(w, 0, t_safe.reshape({-1})).reshape(t.shape()));
    const Tensor p = softmax(x, 1);
    Tensor term = mul(unsqueeze(mul(w_t, Scalar(1.0 - eps)), 1), sub(p, onehot));
    if (eps > 0.0) {
      const Tensor spread = w.defined() ? sub(mul(p, weight_total), w.reshape(class_shape))
                                        : sub(mul(p, Scalar(static_cast<double>(C))), Scalar(1.0));
      const Tensor row_share = mul(valid.to(x.dtype()), Scalar(eps / static_cast<double>(C)));
      term = add(term, mul(spread, unsqueeze(row_share, 1)));
    }
    const Tensor scale = reduction == Reduction::None   ? unsqueeze(g, 1)
                         : reduction == Reduction::Mean ? div(g, divisor)
                                                        : g;
    return mul(term, scale);
  }
  void release_saved() override {
    logits.reset();
    target.reset();
    weight.reset();
    stats.reset();
    divisor = Tensor();
    weight_total = Tensor();
  }
};
// Probability targets: a composition of differentiable ops (see the card above).
Tensor cross_entropy_probabilities(const Tensor& logits, const Tensor& target, const Tensor& weight,
                                   Reduction reduction, int64_t ignore_index,
                                   double label_smoothing) {
  const char* op = "cross_entropy";
  EMBER_CHECK(ignore_index == -100, "cross_entropy: ignore_index (", ignore_index,
              ") applies to "
              "class-index targets only; with probability targets (a float target) give a row "
              "of zeros instead, or leave ignore_index at its default -100");
  EMBER_CHECK(logits.dim() >= 1, "cross_entropy: logits must be [N, C], [N, C, d1, ..., dk] or "
                                 "[C], got a 0-d tensor");
  EMBER_CHECK(target.shape() == logits.shape(),
              "cross_entropy: target must hold int64 class "
              "indices, got ",
              target.dtype(), " of shape ", shape_str(target.shape()),
              "; a float "
              "target holds class probabilities and needs the shape of logits ",
              shape_str(logits.shape()), " (for class indices convert with .to(ember::kInt64))");
  ops::check_same_device(op, logits, target);
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  const int64_t C = logits.size(class_dim);
  Tensor q = target;
  if (label_smoothing > 0.0)
    q = add(mul(target, Scalar(1.0 - label_smoothing)),
            Scalar(label_smoothing / static_cast<double>(C)));
  Tensor terms = mul(log_softmax(logits, class_dim), q);
  if (weight.defined()) {
    ops::check_same_device(op, logits, weight);
    EMBER_CHECK(weight.shape() == Shape{C}, "cross_entropy: weight must have shape [", C,
                "] (one per class of logits ", shape_str(logits.shape()), "), got ",
                shape_str(weight.shape()));
    Shape w_shape(logits.dim(), 1);  // [1, C, 1, ..., 1]: one weight per class
    w_shape[class_dim] = C;
    terms = mul(terms, weight.reshape(w_shape));
  }
  switch (reduction) {
    case Reduction::None: return neg(sum(terms, {class_dim}));
    case Reduction::Sum: return neg(sum(terms));
    case Reduction::Mean:
    default:
      // Divided by the number of rows: nan for no rows (0 / 0), as in PyTorch.
      const int64_t rows = C > 0 ? logits.numel() / C : 0;
      return div(neg(sum(terms)), Scalar(static_cast<double>(rows)));
  }
}
}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                     Reduction reduction, int64_t ignore_index, double label_smoothing) {
  const char* op = "cross_entropy";
  ops::check_defined(op, logits, "logits");
  ops::check_defined(op, target, "target");
  EMBER_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
              "cross_entropy: label_smoothing "
              "must be between 0.0 and 1.0 (the share of the target spread over all classes), "
              "got ",
              label_smoothing);
  if (is_floating(target.dtype())) {
    ops::check_float(op, logits);
    return cross_entropy_probabilities(logits, target, weight, reduction, ignore_index,
                                       label_smoothing);
  }
  if (logits.dim() == 1) {
    // One sample: logits [C] and a 0-d class index, as PyTorch accepts.
    EMBER_CHECK(target.dim() == 0, "cross_entropy: logits of shape ", shape_str(logits.shape()),
                " are one sample and need a 0-d target (one class index), got target shape ",
                shape_str(target.shape()));
    Tensor out = cross_entropy(logits.unsqueeze(0), target.reshape({1}), weight, reduction,
                               ignore_index, label_smoothing);
    return reduction == Reduction::None ? out.reshape({}) : out;
  }
  EMBER_CHECK(logits.dim() >= 2, "cross_entropy: logits must be [N, C], [N, C, d1, ..., dk] or "
              "[C] (with a 0-d target), got a 0-d tensor");
  ops::check_float(op, logits);
  ops::check_same_device(op, logits, target);
  EMBER_CHECK(target.dtype() == kInt64,
              "cross_entropy: target must hold int64 class indices "
              "(or float class probabilities shaped like logits), got ",
              target.dtype(), " (convert with .to(ember::kInt64))");
  // Rows: N samples times the positions d1 * ... * dk (S of them) of each.
  const int64_t N = logits.size(0), C = logits.size(1);
  Shape target_shape = logits.shape();
  target_shape.erase(target_shape.begin() + 1);
  EMBER_CHECK(target.shape() == target_shape, "cross_entropy: logits ", shape_str(logits.shape()),
              " (classes in dim 1) need a target of shape ", shape_str(target_shape),
              ", got ", shape_str(target.shape()));
  const int64_t R = shape_numel(target_shape);
  const int64_t S = N > 0 ? R / N : 0;
  if (weight.defined()) {
    ops::check_same_device(op, logits, weight);
    ops::check_same_dtype(op, logits, weight);
    EMBER_CHECK(weight.shape() == Shape{C}, "cross_entropy: weight must have shape [", C,
                "] (one per class of logits ", shape_str(logits.shape()), "), got ",
                shape_str(weight.shape()));
    EMBER_CHECK(!(is_grad_enabled() && weight.requires_grad()), "cross_entropy: no gradient "
                "with respect to the class weights (PyTorch has none either): pass "
                "weight.detach()");
  }

  const Tensor t = target.detach().contiguous();
  // Checked here, before the multi-threaded kernel, so the message can name the bad entry.
  // (On a GPU this waits for the device; a kernel must not read out of bounds.)
  const int64_t bad =
      KernelsOn(t)->index.first_out_of_range(t.data_ptr<int64_t>(), R, C, true, ignore_index);
  if (bad >= 0) {
    // The position as coordinates of target: [n, d1, ..., dk].
    Shape at(target_shape.size());
    for (int64_t d = static_cast<int64_t>(at.size()) - 1, rest = bad; d >= 0; --d) {
      at[d] = rest % target_shape[d];
      rest /= target_shape[d];
    }
    const int64_t value = t.reshape({R})[bad].item<int64_t>();
    throw ValueError(detail::concat("cross_entropy: target", shape_str(at), " = ", value,
                                    " is out of range for ", C, " classes (valid: 0 to ", C - 1,
                                    ", or ignore_index ", ignore_index, ")"));
  }
  // A private copy: the backward reads these values, and PyTorch lets the caller change logits
  // in place after the loss (it saves its own log-softmax), so no alias of logits is kept.
  const Tensor x = logits.is_contiguous() ? logits.detach().clone() : logits.detach().contiguous();
  const Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  const void* wp = w.defined() ? w.raw_data() : nullptr;
  Tensor loss = ops::new_output(target_shape, logits);
  Tensor stats = ops::new_output({2, R}, logits);

  // The reduction stays with the kernels: on a GPU the host never waits for the loss value.
  Tensor out, weight_sum;
  if (reduction != Reduction::None) {
    out = ops::new_output({}, logits);
    weight_sum = ops::new_output({}, logits);
  }
  const auto red = reduction == Reduction::None  ? kernels::CrossEntropyReduction::None
                   : reduction == Reduction::Sum ? kernels::CrossEntropyReduction::Sum
                                                 : kernels::CrossEntropyReduction::Mean;
  KernelsOn(x)->cross_entropy.forward(x.dtype(), N, C, S, x.raw_data(), t.data_ptr<int64_t>(), wp,
                                      ignore_index, label_smoothing, loss.raw_data(),
                                      stats.raw_data(), red,
                                      out.defined() ? out.raw_data() : nullptr,
                                      weight_sum.defined() ? weight_sum.raw_data() : nullptr);
  if (reduction == Reduction::None) out = loss;
  const Tensor divisor = reduction == Reduction::Mean ? weight_sum : Tensor();
  if (autograd::grad_needed({&logits})) {
    auto node = std::make_shared<CrossEntropyBackward>();
    node->logits = ops::SavedTensor::private_copy_of(x, logits);
    node->target = ops::SavedTensor(t, target);
    if (w.defined()) node->weight = ops::SavedTensor(w, weight);
    node->stats = ops::SavedTensor(stats);
    node->reduction = reduction;
    node->ignore_index = ignore_index;
    node->label_smoothing = label_smoothing;
    if (label_smoothing > 0.0 && w.defined()) node->weight_total = sum(w);
    node->divisor = divisor;
    autograd::connect(node, out, {&logits});
  }
  return out;
}

}  // namespace ember
