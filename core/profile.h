// ember/core/profile.h — NVTX ranges, so that Nsight Systems shows where a training step goes.
//
//   nsys profile -t cuda,nvtx build/examples/mnist_mlp/mnist_mlp --nvtx --epochs 1
//
// With ranges on, the timeline shows each step as nested ranges: "forward" (the examples), each
// module's forward inside it ("Linear", "Conv2d": nn::Layer's call operator), "backward" with one
// range per backward node ("MatmulBackward", "ReluBackward": the autograd engine), and
// "optimizer" (the examples). Off by default; on with set_nvtx_enabled(true), the examples'
// --nvtx flag, or the environment variable EMBER_NVTX=1.
//
// The ranges are compiled only into CUDA builds whose toolkit has the nvtx3 headers (header-only,
// part of the CUDA toolkit since 10.0); everywhere else Range does nothing and nvtx_compiled() is
// false. When off, a Range costs one relaxed atomic load.
#pragma once

namespace ember::profile {

// Whether this build can emit NVTX ranges at all.
bool nvtx_compiled();
void set_nvtx_enabled(bool on);
bool nvtx_enabled();

// An NVTX range from construction to destruction (push/pop on the calling thread). The name is
// copied by NVTX; it need not outlive the Range.
class Range {
 public:
  explicit Range(const char* name);
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace ember::profile
