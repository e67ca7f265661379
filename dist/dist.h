// ember/dist/dist.h — include this one header for multi-process training (torch.distributed):
// the process group and its collectives, and nn::DistributedDataParallel. Link ember::dist
// (built when CMake finds MPI; see the README, "Training on several GPUs or machines").
#pragma once

#include "dist/distributed_data_parallel.h"
#include "dist/process_group.h"
