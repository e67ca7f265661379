// ember/nn/nn.h — include this one header to use ember's neural-network library (torch.nn).
//
//   #include "nn/nn.h"
//   namespace nn = ember::nn;
//   namespace F = ember::nn::functional;
#pragma once

#include "nn/activation.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/data_parallel.h"
#include "nn/dropout.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/module.h"
