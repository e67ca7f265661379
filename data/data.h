// ember/data/data.h — include this one header for datasets, transforms and the DataLoader.
#pragma once

#include "data/cifar10.h"
#include "data/dataloader.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "data/mnist.h"
#include "data/split.h"
#include "data/transforms.h"
