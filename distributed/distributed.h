// ember/distributed/distributed.h — include this one header for multi-process training (torch.distributed):
// the process group and its collectives, and nn::DistributedDataParallel. Link ember::distributed
// (built when CMake finds MPI; see the README, "Training on several GPUs or machines").
#pragma once

#include "distributed/distributed_data_parallel.h"
#include "distributed/process_group.h"
