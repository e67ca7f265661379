// ember/core/backend.h — how core reaches the kernels: the backend of a tensor's device.
//
// kernels/backend.h defines a backend as one table per op family. KernelsOn picks the table set
// for a device and, for a GPU, makes that GPU current for its lifetime (the CUDA kernels launch
// on the current device and stream):
//
//     KernelsOn k(x);
//     k->softmax.forward(x.dtype(), log, outer, D, inner, x.raw_data(), y.raw_data());
//
// This is the one place where core chooses between CPU and CUDA; an op card never asks
// is_cuda() to pick a kernel.
#pragma once

#include "core/cuda.h"
#include "core/device.h"
#include "core/tensor.h"
#include "kernels/backend.h"

namespace ember {

// The backend that runs kernels on `device`. A DeviceError when this build has no backend for
// it (a CUDA device in a CPU-only build, which no tensor can be on in practice).
const kernels::Backend& backend_for(Device device);

class KernelsOn {
 public:
  explicit KernelsOn(Device device) : guard_(device), backend_(backend_for(device)) {}
  explicit KernelsOn(const Tensor& t) : KernelsOn(t.device()) {}
  const kernels::Backend* operator->() const { return &backend_; }
  const kernels::Backend& operator*() const { return backend_; }

 private:
  cuda::DeviceGuard guard_;
  const kernels::Backend& backend_;
};

}  // namespace ember
