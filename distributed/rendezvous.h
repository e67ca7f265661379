// ember/distributed/rendezvous.h — how ranks started without mpirun (torchrun's RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT) meet: rank 0 hands a few bytes — NCCL's 128-byte unique id — to
// every other rank over one TCP connection each. Only that id travels here; tensors go
// through NCCL.
#pragma once

#include <cstddef>
#include <string>

namespace ember::distributed {

// Rank 0 listens on `port` (all interfaces) until the other size-1 ranks have connected and sends
// each of them `bytes`; every other rank connects to addr:port (retrying while rank 0 is not
// listening yet) and receives them into `bytes`. Each connection first states the rank and the
// world size, and rank 0 refuses a rank it does not expect. Throws DistError naming the address,
// the ranks that did not come, or what differed, when timeout_s passes or something does not
// add up.
void rendezvous_bytes(const std::string& addr, int port, int rank, int size, void* bytes, size_t n,
                      double timeout_s);

}  // namespace ember::distributed
