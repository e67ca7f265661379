// ember/core/ember.h — include this one header to use ember.
#pragma once

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/cuda.h"
#include "core/cuda_graph.h"
#include "core/device.h"
#include "kernels/base/dtype.h"
#include "kernels/base/error.h"
#include "core/gradcheck.h"
#include "core/host_memory.h"
#include "core/ops.h"
#include "core/profile.h"
#include "core/random.h"
#include "core/registry.h"
#include "core/serialize.h"
#include "core/tensor.h"
#include "core/threading.h"
