// fuzz/targets/main_cats_vs_dogs.cpp — examples/cats_vs_dogs compiled with its main() renamed cats_vs_dogs_main, for the
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

#define main cats_vs_dogs_main
#include "examples/cats_vs_dogs/cats_vs_dogs.cpp"
#undef main
