// fuzz/targets/main_mnist_mlp.cpp — examples/mnist_mlp compiled with its main() renamed mnist_mlp_main, for the
// command-line target (fuzz/targets/cmdline.cpp). Its headers come first, so that the rename
// touches nothing but the example's own main.
#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "data/data.h"
#include "examples/common/device.h"
#include "examples/common/models.h"
#include "examples/common/run_tools.h"
#include "nn/nn.h"
#include "optim/optim.h"

#define main mnist_mlp_main
#include "examples/mnist_mlp/mnist_mlp.cpp"
#undef main
