// ember/data/data.h — include this one header for datasets, transforms and the DataLoader.
#pragma once

#include "data/dataloader.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/mnist.h"
#include "data/transforms.h"
