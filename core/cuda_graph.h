// ember/core/cuda_graph.h — CUDA graphs: record a whole training step once, replay it with one
// launch (torch.cuda.CUDAGraph's counterpart; kernels/cuda/graph.cu implements it, reached
// through core/cuda_graph.cpp and the runtime table of kernels/device_runtime.h).
//
// Why: a small model's step is hundreds of short kernels, and on a GPU each launch costs the CPU
// a few microseconds — often more than the kernel itself. A graph records the step's kernels and
// copies once (with their arguments: the same pointers, sizes and scalars) and replays all of
// them with one cudaGraphLaunch.
//
// The recipe, as in PyTorch (torch.cuda.graph):
//
//   Tensor static_x = x0.to(cuda), static_y = y0.to(cuda);     // fixed addresses
//   for (int i = 0; i < 3; ++i) train_step(static_x, static_y); // eager warm-up steps
//   cuda::CUDAGraph graph;
//   Tensor static_loss;
//   optimizer.zero_grad();                                      // grads to none, outside
//   cuda::capture(graph, [&] {                                  // = with torch.cuda.graph(g):
//     static_loss = criterion(model(static_x), static_y);
//     static_loss.backward();
//     optimizer.step();
//   });
//   for (const Batch& b : loader) {
//     static_x.copy_(b.data);  static_y.copy_(b.target);        // new data, same addresses
//     graph.replay();                                           // forward, backward, step
//     double loss = static_loss.item();                         // after replay, never inside
//   }
//
// What a replay does: exactly the recorded work, on the recorded addresses. Whatever the host
// decided during the capture is frozen into the graph — shapes, which kernels, the learning rate
// and momentum, random seeds — and whatever the host does during a replay is not in it. So:
//   - inputs change only through copies into the static tensors the capture read;
//   - outputs (the loss, the gradients, the parameters) are the tensors the capture wrote; read
//     them after replay();
//   - warm up first: the first steps create state (momentum buffers, cuBLAS's and cuDNN's
//     handles and plans) that a capture cannot create;
//   - a changed hyper-parameter (an LR schedule) needs a new capture: reset(), then capture.
//
// Memory: what the capture allocates comes from a private pool of the caching allocator that the
// graph owns (kernels/cuda/graph_pool.h): the replays keep using those blocks, and eager work
// never receives one of them. reset() (or the destructor) gives the pool back.
//
// Streams: CUDA cannot capture the legacy default stream, which ember's eager work uses, so the
// capture runs on a side stream of the graph's own (ordered after the eager work queued before
// it), and replays run on the legacy stream, in order with eager work.
//
// What a capture refuses, with a DeviceError that says what to do, before anything reaches
// CUDA (so the capture is still intact and can be ended): anything that makes the host wait for
// the GPU (cuda::synchronize, .item(), a copy to or from the CPU, .cpu(), printing a tensor),
// pin_memory(), empty_cache(), random numbers (the seed would be frozen), SGD's first step with
// momentum and Adam's step (their state needs warm-up / changes per step), the first use of cuBLAS
// or a new cuDNN convolution shape, work for another device, a nested capture; and replay() of a
// graph that holds no capture. cuda::capture() ends an interrupted capture cleanly
// (abandon_capture) before the exception leaves it.
//
// A CPU-only build has the class too: every member that would need a GPU raises a DeviceError.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace ember::cuda {

class CUDAGraph {
 public:
  CUDAGraph();
  ~CUDAGraph();  // reset(), errors ignored
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  // Starts recording the calling thread's CUDA work on the current device. From here until
  // capture_end() ember's kernels and copies are recorded, not run.
  void capture_begin();
  // Stops recording and makes the graph ready to replay. Throws a DeviceError when CUDA could not
  // make a graph of what was recorded (the graph is then empty again).
  void capture_end();
  // Ends a capture without keeping it: after an exception in the captured code. Nothing recorded
  // ever runs; tensors written by the captured code hold whatever they held.
  void abandon_capture();
  // Runs the recorded work once, on the legacy stream (asynchronously, like any launch).
  void replay();
  // Drops the recorded graph and gives its memory pool back; the object can capture again.
  void reset();

  bool captured() const;   // holds a graph to replay
  bool capturing() const;  // between capture_begin() and capture_end()
  int device() const;      // the device it captures / replays on (-1 before the first capture)
  // The kernels and copies the capture recorded: the launches one replay() stands for.
  int64_t num_nodes() const;
  // Bytes of device memory the graph's private pool holds, and whether a pointer lies in it.
  int64_t pool_reserved() const;
  bool pool_owns(const void* ptr) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Captures `step` into `graph`: capture_begin(), step(), capture_end(). If step throws, the
// capture is abandoned (the graph stays empty) and the exception goes on. PyTorch's
// `with torch.cuda.graph(graph): step()`.
void capture(CUDAGraph& graph, const std::function<void()>& step);

// Is the calling thread capturing a CUDA graph? (torch.cuda.is_current_stream_capturing)
bool is_capturing();

}  // namespace ember::cuda
