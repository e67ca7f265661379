// ember/core/autograd/to_dot.h — the tape as a picture.
//
// to_dot(loss) writes the graph behind a tensor in Graphviz's language: one box per node of the
// tape (its name, and the tensors it saved for backward), one per leaf that requires grad (its
// shape and dtype, and its name when `names` has it), a dashed one per input that needs no
// gradient, and the tensor itself at the bottom. Arrows run the way the forward pass ran, each
// labelled with the shape and dtype of the tensor it carries; backward() walks them in reverse.
//
//   std::printf("%s", ember::autograd::to_dot(loss, model.named_parameters()).c_str());
//
// Render it with Graphviz (`dot -Tsvg tape.dot > tape.svg`), or run scripts/draw-tape, which
// draws the pictures in docs/images/. Nodes are numbered in the order a depth-first walk from
// the root meets them, so the same graph gives the same text on every run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ember::autograd {

std::string to_dot(const Tensor& root,
                   const std::vector<std::pair<std::string, Tensor>>& names = {});

}  // namespace ember::autograd
