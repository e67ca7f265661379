// ember/kernels/backend.h — the seam between the op cards (core/ops/) and the kernels.
//
// A backend is one table per op family. Every family has one header at this level
// (kernels/elementwise.h, kernels/reduce.h, ...) that fixes the signature of each of its kernels
// once; the CPU implements it in kernels/cpu/<family>.cpp and CUDA in kernels/cuda/<family>.cu,
// and each of those files ends with the family's table. An op card asks for the backend of its
// tensors' device and calls the family through it:
//
//     ops::KernelsOn k(x);                  // core/ops/common.h: x's backend, x's GPU current
//     k->reduce.sum(dtype, outer, r, inner, in, out, scale);
//
// and still names, in its header comment, the two files that `sum` reaches. Why tables and not
// virtual classes: a table is a plain aggregate that the reader can see whole at the bottom of
// a kernel file, one line per kernel, and a missing entry is a compile error there.
//
// The CPU-only build has no CUDA table at all: cuda_backend() returns nullptr, and core answers
// "not built" from that one place (core/cuda.cpp), instead of from stubs per kernel.
#pragma once

namespace ember::kernels {

struct ElementwiseKernels;
struct ReduceKernels;
struct SoftmaxKernels;
struct CrossEntropyKernels;
struct IndexKernels;
struct PoolKernels;
struct ConvKernels;
struct GemmKernels;
struct OptimKernels;
struct RandomKernels;
struct SortKernels;
struct DeviceRuntime;

struct Backend {
  const char* name;  // "cpu", "cuda"
  const ElementwiseKernels& elementwise;
  const ReduceKernels& reduce;
  const SoftmaxKernels& softmax;
  const CrossEntropyKernels& cross_entropy;
  const IndexKernels& index;
  const PoolKernels& pool;
  const ConvKernels& conv;
  const GemmKernels& gemm;
  const OptimKernels& optim;
  const RandomKernels& random;
  const SortKernels& sort;
  // Devices, streams, memory and graphs (kernels/device_runtime.h); nullptr for the CPU.
  const DeviceRuntime* runtime;
};

// The CPU backend: always built. In a portable x86-64 build (EMBER_NATIVE=OFF) there is one per
// instruction set (kernels/cpu/isa_variant.h), and this returns the one for cpu_isa() now:
// EMBER_CPU_ISA and set_cpu_isa switch the elementwise, reduction, softmax, cross-entropy,
// pooling and optimizer kernels with the GEMM's.
const Backend& cpu_backend();
// Which compiled variant of those kernels cpu_backend() hands out now: "avx512" or "avx2" (in a
// portable x86-64 build, on a CPU that has them), else "baseline" (compiled for the build's own
// target: SSE2 in a portable x86-64 build, the machine itself with -march=native, NEON on
// aarch64).
const char* cpu_backend_variant();
// The CUDA backend (real or emulated), or nullptr when this build has none.
const Backend* cuda_backend();

}  // namespace ember::kernels
