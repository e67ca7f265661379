// fuzz/targets/main_cifar10_cnn.cpp — examples/cifar10_cnn compiled with its main() renamed cifar10_cnn_main, for the
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

#define main cifar10_cnn_main
#include "examples/cifar10_cnn/cifar10_cnn.cpp"
#undef main
