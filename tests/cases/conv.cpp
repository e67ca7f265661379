// Op cases for conv2d: strides, paddings, dilations, rectangular and 1x1 kernels (the kernel's
// im2col-free path), a kernel as large as the image, odd sizes, batch 1 to 3, one and three
// input channels, with and without bias, non-contiguous inputs and weights, one 3-d image;
// groups: depthwise (groups == C, the CPU's direct loops and CUDA's direct kernels, one large
// enough that a grid capped at 2 blocks loops), depthwise with a channel multiplier, and
// 1 < groups < C (the GEMM algorithms one group at a time).
//
// A convolution output is a sum of C*R*S products and is linear in each argument, so central
// differences are exact up to rounding: the tolerances are tighter than the defaults.
#include "op_cases.h"

namespace ember::test {
namespace {

Conv2dOptions opts(std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                   std::array<int64_t, 2> dilation = {1, 1}, int64_t groups = 1) {
  Conv2dOptions o;
  o.stride = stride;
  o.padding = padding;
  o.dilation = dilation;
  o.groups = groups;
  return o;
}

// inputs: x, w and (when given) b; fn: conv2d of them with `o`, after `prep` on x.
OpCase conv_case(const std::string& label, std::function<Tensor()> x, std::function<Tensor()> w,
                 std::function<Tensor()> b, const Conv2dOptions& o,
                 std::function<Tensor(const Tensor&)> prep = nullptr) {
  OpCase c{"conv2d", label,
           [x, w, b] {
             std::vector<Tensor> in{x(), w()};
             if (b) in.push_back(b());
             return in;
           },
           [o, prep](const std::vector<Tensor>& in) {
             const Tensor input = prep ? prep(in[0]) : in[0];
             return conv2d(input, in[1], in.size() > 2 ? in[2] : Tensor(), o);
           }};
  c.atol = 1e-6;
  c.rtol = 1e-4;
  return c;
}

EMBER_OP_CASES({
    conv_case(
        "[2, 3, 6, 6] * [4, 3, 3, 3] + bias",
        [] {
          return leaf({2, 3, 6, 6}, 501);
        },
        [] {
          return leaf({4, 3, 3, 3}, 502);
        },
        [] { return leaf({4}, 503); }, opts({1, 1}, {0, 0})),
    conv_case(
        "odd [1, 3, 7, 5] * [2, 3, 3, 3], stride 2, padding 1, bias",
        [] {
          return leaf({1, 3, 7, 5}, 504);
        },
        [] {
          return leaf({2, 3, 3, 3}, 505);
        },
        [] { return leaf({2}, 506); }, opts({2, 2}, {1, 1})),
    conv_case(
        "batch 3, C = 1 [3, 1, 7, 7] * [2, 1, 3, 3], dilation 2, padding 2, no bias",
        [] {
          return leaf({3, 1, 7, 7}, 507);
        },
        [] {
          return leaf({2, 1, 3, 3}, 508);
        },
        nullptr, opts({1, 1}, {2, 2}, {2, 2})),
    conv_case(
        "rectangular kernel [2, 2, 6, 7] * [3, 2, 2, 3], stride (2, 1), padding (0, 1)",
        [] {
          return leaf({2, 2, 6, 7}, 509);
        },
        [] {
          return leaf({3, 2, 2, 3}, 510);
        },
        [] { return leaf({3}, 511); }, opts({2, 1}, {0, 1})),
    conv_case(
        "dilation (1, 2), stride (1, 3), padding (2, 0) [1, 2, 5, 9] * [2, 2, 3, 2]",
        [] {
          return leaf({1, 2, 5, 9}, 512);
        },
        [] {
          return leaf({2, 2, 3, 2}, 513);
        },
        [] { return leaf({2}, 514); }, opts({1, 3}, {2, 0}, {1, 2})),
    conv_case(
        "1x1 pointwise, one image [1, 3, 4, 5] * [4, 3, 1, 1] + bias (no im2col)",
        [] {
          return leaf({1, 3, 4, 5}, 515);
        },
        [] {
          return leaf({4, 3, 1, 1}, 516);
        },
        [] { return leaf({4}, 517); }, opts({1, 1}, {0, 0})),
    conv_case(
        "1x1 pointwise, batch 2, no bias [2, 3, 4, 5] * [3, 3, 1, 1]",
        [] {
          return leaf({2, 3, 4, 5}, 543);
        },
        [] {
          return leaf({3, 3, 1, 1}, 544);
        },
        nullptr, opts({1, 1}, {0, 0})),
    conv_case(
        "1x1 with stride 2 and padding 1 [1, 3, 5, 5] * [2, 3, 1, 1]",
        [] {
          return leaf({1, 3, 5, 5}, 518);
        },
        [] {
          return leaf({2, 3, 1, 1}, 519);
        },
        nullptr, opts({2, 2}, {1, 1})),
    conv_case(
        "kernel as large as the input [2, 3, 4, 4] * [5, 3, 4, 4] -> 1x1",
        [] {
          return leaf({2, 3, 4, 4}, 520);
        },
        [] {
          return leaf({5, 3, 4, 4}, 521);
        },
        [] { return leaf({5}, 522); }, opts({1, 1}, {0, 0})),
    conv_case(
        "stride 3 > kernel 2 (skipped pixels) [1, 2, 8, 7] * [2, 2, 2, 2]",
        [] {
          return leaf({1, 2, 8, 7}, 523);
        },
        [] {
          return leaf({2, 2, 2, 2}, 524);
        },
        [] { return leaf({2}, 525); }, opts({3, 3}, {0, 0})),
    conv_case(
        "padding 3 > kernel/2 (windows all padding) [1, 1, 3, 4] * [2, 1, 3, 3]",
        [] {
          return leaf({1, 1, 3, 4}, 526);
        },
        [] {
          return leaf({2, 1, 3, 3}, 527);
        },
        [] { return leaf({2}, 528); }, opts({1, 2}, {3, 3})),
    conv_case(
        "1x1 image [3, 2, 1, 1] * [3, 2, 1, 1] + bias",
        [] {
          return leaf({3, 2, 1, 1}, 529);
        },
        [] {
          return leaf({3, 2, 1, 1}, 530);
        },
        [] { return leaf({3}, 531); }, opts({1, 1}, {0, 0})),
    conv_case(
        "NHWC memory: [2, 5, 6, 3].permute(0, 3, 1, 2) * [2, 3, 3, 3], padding 1",
        [] {
          return leaf({2, 5, 6, 3}, 532);
        },
        [] {
          return leaf({2, 3, 3, 3}, 533);
        },
        [] { return leaf({2}, 534); }, opts({1, 1}, {1, 1}),
        [](const Tensor& x) {
          return x.permute({0, 3, 1, 2});
        }),
    conv_case(
        "transposed H/W input [1, 2, 5, 6] * [3, 2, 2, 2], stride 2",
        [] {
          return leaf_transposed({1, 2, 5, 6}, 535);
        },
        [] {
          return leaf({3, 2, 2, 2}, 536);
        },
        nullptr, opts({2, 2}, {0, 0})),
    conv_case(
        "strided input (every other column) [2, 1, 5, 5] * transposed weight [2, 1, 3, 3]",
        [] {
          return leaf_strided({2, 1, 5, 5}, 537);
        },
        [] {
          return leaf_transposed({2, 1, 3, 3}, 538);
        },
        [] { return leaf({2}, 539); }, opts({1, 1}, {1, 0})),
    conv_case(
        "one 3-d image [3, 5, 6] * [2, 3, 3, 3] + bias, padding 1",
        [] {
          return leaf({3, 5, 6}, 540);
        },
        [] {
          return leaf({2, 3, 3, 3}, 541);
        },
        [] { return leaf({2}, 542); }, opts({1, 1}, {1, 1})),
    conv_case(
        "depthwise [2, 4, 12, 12] * [4, 1, 3, 3] + bias, padding 1, groups 4",
        [] {
          return leaf({2, 4, 12, 12}, 545);
        },
        [] {
          return leaf({4, 1, 3, 3}, 546);
        },
        [] { return leaf({4}, 547); }, opts({1, 1}, {1, 1}, {1, 1}, 4)),
    conv_case(
        "depthwise x2 [1, 3, 7, 6] * [6, 1, 3, 2], stride 2, dilation (1, 2), groups 3",
        [] {
          return leaf({1, 3, 7, 6}, 548);
        },
        [] {
          return leaf({6, 1, 3, 2}, 549);
        },
        nullptr, opts({2, 2}, {1, 1}, {1, 2}, 3)),
    conv_case(
        "groups 2 [2, 4, 5, 6] * [6, 2, 3, 3] + bias, stride (1, 2), padding (1, 0)",
        [] {
          return leaf({2, 4, 5, 6}, 550);
        },
        [] {
          return leaf({6, 2, 3, 3}, 551);
        },
        [] { return leaf({6}, 552); }, opts({1, 2}, {1, 0}, {1, 1}, 2)),
    conv_case(
        "groups 3, 1x1 [2, 6, 3, 4] * [3, 2, 1, 1] (pointwise per group)",
        [] {
          return leaf({2, 6, 3, 4}, 553);
        },
        [] {
          return leaf({3, 2, 1, 1}, 554);
        },
        nullptr, opts({1, 1}, {0, 0}, {1, 1}, 3)),
    conv_case(
        "groups 2, NHWC memory [1, 5, 6, 4].permute(0, 3, 1, 2) * [2, 2, 2, 2]",
        [] {
          return leaf({1, 5, 6, 4}, 555);
        },
        [] {
          return leaf({2, 2, 2, 2}, 556);
        },
        [] { return leaf({2}, 557); }, opts({1, 1}, {0, 0}, {1, 1}, 2),
        [](const Tensor& x) {
          return x.permute({0, 3, 1, 2});
        }),
});

}  // namespace
}  // namespace ember::test
