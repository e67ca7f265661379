// ember/kernels/cuda/graph_pool.h — what a CUDA graph (kernels/cuda/graph.cu) asks of the caching
// allocator (kernels/cuda/allocator.cu): a private memory pool per graph.
//
// Why a pool of its own: a captured graph reads and writes fixed addresses at every replay —
// the activations, gradients and scratch buffers its kernels were given during the capture.
// Those blocks must never be handed to anything else while the graph exists, even after the
// tensors that held them during the capture are gone. So, while a thread captures:
//   - its allocations on the captured device come from the graph's pool (its own free blocks,
//     else fresh cudaMalloc'd ones), never from the general cache;
//   - every block it frees goes to the pool, also a block allocated before the capture began
//     (a kernel recorded before the free may still read it at every replay);
// and at any later time, a pool block whose tensor dies goes back to the pool, not to the
// general cache. The pool is released by reset(): its free blocks join the general cache, and
// its live blocks become ordinary ones (returned to the general cache when their tensors die).
//
// (The pool lives on the kernels side, beside the allocator; core/cuda_graph.h only sees a
// graph's pool through the DeviceRuntime table: pool_reserved(), pool_owns().)
#pragma once

#include <cstdint>

namespace ember::kernels::cuda {

struct GraphPool;  // defined in kernels/cuda/allocator.cu

GraphPool* create_graph_pool(int device);
// From now on this thread's allocations on the pool's device come from `pool`, and the blocks it
// frees go to it (nullptr: back to the general cache). Counts captures underway in the process:
// while there are any, the allocator never calls cudaFree (it would break a capture).
void begin_allocating_to(GraphPool* pool);
void end_allocating_to();
// Gives the pool back (see above) and deletes it.
void release_graph_pool(GraphPool* pool);
int64_t graph_pool_reserved(const GraphPool* pool);     // bytes of the blocks the pool owns
bool graph_pool_owns(const GraphPool* pool, const void* ptr);  // ptr inside one of its blocks?
int captures_underway();  // in the whole process

}  // namespace ember::kernels::cuda
