// Op cases for the softmax family and the losses: softmax, log_softmax, cross_entropy, mse_loss.
#include "op_cases.h"

namespace ember::test {
namespace {

using T = const Tensor&;

// Class weights in [0.5, 1.5]: plain float64 data, never differentiated.
Tensor class_weight(int64_t C, uint64_t seed) {
  manual_seed(seed);
  return rand({C}, kFloat64) + 0.5;
}

Tensor targets(std::initializer_list<double> values) {
  return tensor(std::vector<double>(values), {-1}, kInt64);
}

// cross_entropy(logits, target[, weight]) with the given reduction and ignore_index.
OpCase ce_case(const std::string& label, std::function<Tensor()> logits,
               std::function<Tensor()> target, std::function<Tensor()> weight, Reduction r,
               int64_t ignore_index = -100, double label_smoothing = 0.0) {
  return OpCase{"cross_entropy", label,
                [logits, target, weight] {
                  std::vector<Tensor> in{logits(), target()};
                  if (weight) in.push_back(weight());
                  return in;
                },
                [r, ignore_index, label_smoothing](const std::vector<Tensor>& x) {
                  return cross_entropy(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), r, ignore_index,
                                       label_smoothing);
                }};
}

OpCase mse_case(const std::string& label, std::function<Tensor()> input,
                std::function<Tensor()> target, Reduction r) {
  return OpCase{"mse_loss", label,
                [input, target] { return std::vector<Tensor>{input(), target()}; },
                [r](const std::vector<Tensor>& x) { return mse_loss(x[0], x[1], r); }};
}

EMBER_OP_CASES({
    // softmax over every dim of a 3-d tensor: inner == 1, outer == 1 and both > 1.
    unary_case("softmax", "[2, 3, 5] dim 0", [] { return leaf({2, 3, 5}, 201, -3, 3); },
               [](T a) { return softmax(a, 0); }),
    unary_case("softmax", "[2, 3, 5] dim 1", [] { return leaf({2, 3, 5}, 202, -3, 3); },
               [](T a) { return softmax(a, 1); }),
    unary_case("softmax", "[2, 3, 5] dim -1", [] { return leaf({2, 3, 5}, 203, -3, 3); },
               [](T a) { return a.softmax(-1); }),
    unary_case("softmax", "transposed [3, 4, 6] dim -1",
               [] { return leaf_transposed({3, 4, 6}, 204, -3, 3); },
               [](T a) { return softmax(a, -1); }),
    unary_case("softmax", "strided [4, 7] dim 0", [] { return leaf_strided({4, 7}, 205, -3, 3); },
               [](T a) { return softmax(a, 0); }),
    unary_case("softmax", "[13] one row", [] { return leaf({13}, 206, -3, 3); },
               [](T a) { return softmax(a, 0); }),
    unary_case("softmax", "[3, 1] over a dim of size 1", [] { return leaf({3, 1}, 207); },
               [](T a) { return softmax(a, 1); }),
    unary_case("log_softmax", "[2, 3, 5] dim 0", [] { return leaf({2, 3, 5}, 208, -3, 3); },
               [](T a) { return log_softmax(a, 0); }),
    unary_case("log_softmax", "[2, 3, 5] dim 1", [] { return leaf({2, 3, 5}, 209, -3, 3); },
               [](T a) { return log_softmax(a, 1); }),
    unary_case("log_softmax", "[2, 3, 5] dim -1", [] { return leaf({2, 3, 5}, 210, -3, 3); },
               [](T a) { return a.log_softmax(-1); }),
    unary_case("log_softmax", "transposed [3, 4, 6] dim 1",
               [] { return leaf_transposed({3, 4, 6}, 211, -3, 3); },
               [](T a) { return log_softmax(a, 1); }),
    unary_case("log_softmax", "strided [5, 7] dim -1, shifted by 50",
               [] { return leaf_strided({5, 7}, 212, 47, 53); },
               [](T a) { return log_softmax(a, -1); }),

    // cross_entropy: every reduction, with and without class weights, ignored rows.
    ce_case("[5, 4] mean", [] { return leaf({5, 4}, 220, -2, 2); },
            [] { return indices({5}, 4, 221); }, nullptr, Reduction::Mean),
    ce_case("[6, 3] sum", [] { return leaf({6, 3}, 222, -2, 2); },
            [] { return indices({6}, 3, 223); }, nullptr, Reduction::Sum),
    ce_case("[4, 7] none", [] { return leaf({4, 7}, 224, -2, 2); },
            [] { return indices({4}, 7, 225); }, nullptr, Reduction::None),
    ce_case("[5, 4] weighted mean", [] { return leaf({5, 4}, 226, -2, 2); },
            [] { return targets({3, 0, 3, 1, 2}); }, [] { return class_weight(4, 227); },
            Reduction::Mean),
    ce_case("[5, 4] weighted sum", [] { return leaf({5, 4}, 228, -2, 2); },
            [] { return indices({5}, 4, 229); }, [] { return class_weight(4, 230); },
            Reduction::Sum),
    ce_case("[5, 4] weighted none", [] { return leaf({5, 4}, 231, -2, 2); },
            [] { return indices({5}, 4, 232); }, [] { return class_weight(4, 233); },
            Reduction::None),
    ce_case("[5, 4] weighted mean with an ignored row (-100)",
            [] { return leaf({5, 4}, 234, -2, 2); },
            [] { return targets({1, -100, 3, 0, 1}); }, [] { return class_weight(4, 235); },
            Reduction::Mean),
    ce_case("[4, 3] none, ignore_index = 2 (a real class)", [] { return leaf({4, 3}, 236, -2, 2); },
            [] { return targets({2, 0, 2, 1}); }, nullptr, Reduction::None, 2),
    ce_case("transposed logits [7, 5] mean", [] { return leaf_transposed({7, 5}, 237, -2, 2); },
            [] { return indices({7}, 5, 238); }, nullptr, Reduction::Mean),
    ce_case("strided logits [3, 6] sum, large logits",
            [] { return leaf_strided({3, 6}, 239, 95, 105); },
            [] { return indices({3}, 6, 240); }, nullptr, Reduction::Sum),
    ce_case("one sample: logits [6], 0-d target", [] { return leaf({6}, 241, -2, 2); },
            [] { return targets({4}).reshape({}); }, nullptr, Reduction::Mean),
    ce_case("[1, 1] one class", [] { return leaf({1, 1}, 242); }, [] { return targets({0}); },
            nullptr, Reduction::Sum),
    // N-d: logits [N, C, d1, ..., dk], a class per position (segmentation).
    ce_case("[2, 3, 4] mean, a class per position", [] { return leaf({2, 3, 4}, 243, -2, 2); },
            [] { return indices({2, 4}, 3, 244); }, nullptr, Reduction::Mean),
    ce_case("[2, 4, 3, 5] none", [] { return leaf({2, 4, 3, 5}, 245, -2, 2); },
            [] { return indices({2, 3, 5}, 4, 246); }, nullptr, Reduction::None),
    ce_case("[3, 4, 5] weighted mean with ignored positions",
            [] { return leaf({3, 4, 5}, 247, -2, 2); },
            [] {
              Tensor t = indices({3, 5}, 4, 248);
              return masked_fill(t, indices({3, 5}, 3, 249).eq(Scalar(0)), Scalar(-100));
            },
            [] { return class_weight(4, 258); }, Reduction::Mean),
    ce_case("transposed [2, 3, 6] sum", [] { return leaf_transposed({2, 3, 6}, 259, -2, 2); },
            [] { return indices({2, 6}, 3, 260); }, [] { return class_weight(3, 261); },
            Reduction::Sum),

    // cross_entropy with label_smoothing: every reduction, weights, ignored rows (the mean
    // without weights divides the smoothing part by all rows), N-d, strided logits.
    ce_case(
        "[5, 4] mean, label_smoothing 0.2",
        [] {
          return leaf({5, 4}, 2601, -2, 2);
        },
        [] { return indices({5}, 4, 2602); }, nullptr, Reduction::Mean, -100, 0.2),
    ce_case(
        "[6, 3] sum, label_smoothing 0.1",
        [] {
          return leaf({6, 3}, 2603, -2, 2);
        },
        [] { return indices({6}, 3, 2604); }, nullptr, Reduction::Sum, -100, 0.1),
    ce_case(
        "[4, 7] weighted none, label_smoothing 0.3",
        [] {
          return leaf({4, 7}, 2605, -2, 2);
        },
        [] { return indices({4}, 7, 2606); }, [] { return class_weight(7, 2607); }, Reduction::None,
        -100, 0.3),
    ce_case(
        "[5, 4] mean with ignored rows, label_smoothing 0.25",
        [] {
          return leaf({5, 4}, 2608, -2, 2);
        },
        [] {
          return targets({1, -100, 3, -100, 2});
        },
        nullptr, Reduction::Mean, -100, 0.25),
    ce_case(
        "[5, 4] weighted mean with an ignored row, label_smoothing 0.4",
        [] {
          return leaf({5, 4}, 2609, -2, 2);
        },
        [] {
          return targets({1, 3, -100, 0, 1});
        },
        [] { return class_weight(4, 2610); }, Reduction::Mean, -100, 0.4),
    ce_case(
        "[4, 3] none, ignore_index = 2, label_smoothing 1.0",
        [] {
          return leaf({4, 3}, 2611, -2, 2);
        },
        [] {
          return targets({2, 0, 2, 1});
        },
        nullptr, Reduction::None, 2, 1.0),
    ce_case(
        "[3, 4, 5] weighted mean with ignored positions, label_smoothing 0.15",
        [] {
          return leaf({3, 4, 5}, 2612, -2, 2);
        },
        [] {
          Tensor t = indices({3, 5}, 4, 2613);
          return masked_fill(t, indices({3, 5}, 3, 2614).eq(Scalar(0)), Scalar(-100));
        },
        [] { return class_weight(4, 2615); }, Reduction::Mean, -100, 0.15),
    ce_case(
        "transposed [7, 5] mean with an ignored row, label_smoothing 0.2",
        [] {
          return leaf_transposed({7, 5}, 2616, -2, 2);
        },
        [] {
          return targets({0, 4, -100, 1, 2, 3, 4});
        },
        nullptr, Reduction::Mean, -100, 0.2),
    ce_case(
        "one sample [6], label_smoothing 0.3", [] { return leaf({6}, 2617, -2, 2); },
        [] { return targets({4}).reshape({}); }, nullptr, Reduction::Mean, -100, 0.3),
    ce_case(
        "[2, 3, 4] sum, a class per position, label_smoothing 0.5",
        [] {
          return leaf({2, 3, 4}, 2618, -2, 2);
        },
        [] {
          return indices({2, 4}, 3, 2619);
        },
        [] { return class_weight(3, 2620); }, Reduction::Sum, -100, 0.5),

    // cross_entropy with probability targets (float, shaped like logits): differentiable in
    // the target too.
    ce_case(
        "probabilities [5, 4] mean",
        [] {
          return leaf({5, 4}, 2621, -2, 2);
        },
        [] {
          return leaf({5, 4}, 2622, 0, 1);
        },
        nullptr, Reduction::Mean),
    ce_case(
        "probabilities [4, 6] weighted sum, label_smoothing 0.2",
        [] {
          return leaf({4, 6}, 2623, -2, 2);
        },
        [] {
          return leaf({4, 6}, 2624, 0, 1);
        },
        [] { return class_weight(6, 2625); }, Reduction::Sum, -100, 0.2),
    ce_case(
        "probabilities [2, 3, 5] weighted none",
        [] {
          return leaf({2, 3, 5}, 2626, -2, 2);
        },
        [] {
          return leaf({2, 3, 5}, 2627, 0, 1);
        },
        [] { return class_weight(3, 2628); }, Reduction::None),
    ce_case(
        "probabilities transposed [6, 3] mean, label_smoothing 0.1",
        [] {
          return leaf_transposed({6, 3}, 2629, -2, 2);
        },
        [] {
          return leaf({6, 3}, 2630, 0, 1);
        },
        nullptr, Reduction::Mean, -100, 0.1),
    ce_case(
        "probabilities one sample [5]", [] { return leaf({5}, 2631, -2, 2); },
        [] { return leaf({5}, 2632, 0, 1); }, nullptr, Reduction::Mean),

    // mse_loss: both inputs differentiable.
    mse_case("[4, 5] mean", [] { return leaf({4, 5}, 250); }, [] { return leaf({4, 5}, 251); },
             Reduction::Mean),
    mse_case("[7] sum", [] { return leaf({7}, 252); }, [] { return leaf({7}, 253); },
             Reduction::Sum),
    mse_case("[3, 4] none, transposed input", [] { return leaf_transposed({3, 4}, 254); },
             [] { return leaf({3, 4}, 255); }, Reduction::None),
    mse_case("strided [2, 3, 5] mean", [] { return leaf_strided({2, 3, 5}, 256); },
             [] { return leaf({2, 3, 5}, 257); }, Reduction::Mean),
});

}  // namespace
}  // namespace ember::test
