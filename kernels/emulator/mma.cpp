// ember/kernels/emulator/mma.cpp — the warp's meeting behind the emulated tensor-core operations
// (nvcuda::wmma, kernels/emulator/mma.h): load_matrix_sync, store_matrix_sync and mma_sync.
//
// A wmma operation is a warp collective. Each lane leaves a note (its WarpMatrixCall: what it
// calls, where, with which pointer, ldm and layout, and for mma_sync where its fragments are) in
// its warp's row of a table, then waits at a full-warp barrier (warp_barrier, the machinery of
// __syncwarp in scheduler.cpp). The first lane to go on after the barrier reads every lane's
// note: all 32 lanes must have left one for this operation, with the same arguments (synccheck
// says which did not). For mma_sync that lane then does the tensor core's work for the whole
// warp: it gathers A, B and C from the 32 lanes' fragments (each lane's fragment lives on its
// own fiber stack, which this file may read: it is the emulator's code, not the kernel's, and
// not instrumented), computes D and writes each lane's part of it. The other lanes find the
// operation done and return. Each note carries a ticket, the number of operations the warp
// completed before it, so a note left over from an earlier operation is never mistaken for one.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/emulator/internal.h"
#include "kernels/emulator/mma.h"

namespace ember::emu {

using namespace detail;

namespace {

// One warp's notes. Every block runs on one CPU thread, so a thread_local table indexed by warp
// is the block's; `block_serial` says which block run it belongs to (a new block starts afresh).
struct WarpMeeting {
  uint64_t block_serial = 0;
  uint64_t completed = 0;  // wmma operations this warp has completed
  WarpMatrixCall* calls[32] = {};
};
thread_local WarpMeeting tls_meetings[32];  // at most 1024 threads: 32 warps

Thread* current(const char* what) {
  Thread* t = tls_thread;
  if (t == nullptr) {
    std::fprintf(stderr, "ember emulator: %s called outside a kernel\n", what);
    std::abort();
  }
  return t;
}

const char* op_name(MatrixOp op) {
  switch (op) {
    case MatrixOp::Load: return "wmma::load_matrix_sync";
    case MatrixOp::Store: return "wmma::store_matrix_sync";
    case MatrixOp::Mma: return "wmma::mma_sync";
  }
  return "wmma";
}

std::string site(const WarpMatrixCall& c) {
  return std::string(op_name(c.op)) + " at " + relative_path(c.file) + ":" + std::to_string(c.line);
}

// Where a tile pointer points, for the reports.
std::string place(const Thread* t, uintptr_t a) {
  const BlockRun& b = *t->block;
  if (a - t->tls_lo < t->tls_size) return "in the block's shared memory";
  const uintptr_t dyn = reinterpret_cast<uintptr_t>(b.dynamic_shared);
  if (b.dynamic_shared != nullptr && a - dyn < b.grid->config.shared_bytes)
    return "in the block's dynamic shared memory";
  return describe_address(a, 4);
}

WarpMeeting& meeting_of(const Thread* t) {
  WarpMeeting& m = tls_meetings[t->warp];
  if (m.block_serial != t->block->serial) m = WarpMeeting{t->block->serial};
  return m;
}

// Do two lanes' notes describe the same call?
bool same_call(const WarpMatrixCall& x, const WarpMatrixCall& y) {
  if (x.op != y.op || x.file != y.file || x.line != y.line) return false;
  if (x.op == MatrixOp::Mma) return true;
  return x.use == y.use && x.ptr == y.ptr && x.ldm == y.ldm && x.row_major == y.row_major;
}

// What the tensor core reads of a TF32 operand: the sign, the exponent and the top 10 mantissa
// bits. A value rounded by __float_to_tf32 is unchanged; any other loses its low 13 bits.
float tf32_operand(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return v;  // infinity, NaN
  bits &= ~0x1fffu;
  std::memcpy(&v, &bits, 4);
  return v;
}

// D = A @ B + C for the lanes in `lanes` (all 32 unless synccheck is off and some are missing:
// then their elements count as zero and they get no result, a GPU's answer being undefined).
void multiply(WarpMeeting& m, unsigned lanes) {
  float A[16][8] = {}, B[8][16] = {}, C[16][16] = {};
  for (int l = 0; l < 32; ++l) {
    if (!(lanes & (1u << l))) continue;
    const WarpMatrixCall& n = *m.calls[l];
    for (int i = 0; i < 4; ++i) {
      A[wmma_row(MatrixUse::A, l, i)][wmma_col(MatrixUse::A, l, i)] = tf32_operand(n.a[i]);
      B[wmma_row(MatrixUse::B, l, i)][wmma_col(MatrixUse::B, l, i)] = tf32_operand(n.b[i]);
    }
    for (int i = 0; i < 8; ++i)
      C[wmma_row(MatrixUse::Accumulator, l, i)][wmma_col(MatrixUse::Accumulator, l, i)] = n.c[i];
  }
  // Every product of two TF32 values (11 significant bits each) is exact in float32; the sums
  // are rounded to nearest, one addition at a time, in the order k = 0..7. This file is
  // compiled without contraction (CMakeLists.txt), so `d + a * b` is exactly that.
  float D[16][16];
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      float d = C[i][j];
      for (int k = 0; k < 8; ++k) d = d + A[i][k] * B[k][j];
      D[i][j] = d;
    }
  }
  for (int l = 0; l < 32; ++l) {
    if (!(lanes & (1u << l))) continue;
    float* out = m.calls[l]->d;  // may be the lane's C: every C was read above
    for (int i = 0; i < 8; ++i)
      out[i] = D[wmma_row(MatrixUse::Accumulator, l, i)][wmma_col(MatrixUse::Accumulator, l, i)];
  }
}

// The first lane back from the barrier: check the notes, do the work, close the operation.
void resolve(Thread* t, WarpMeeting& m, const WarpMatrixCall& mine) {
  unsigned agree = 0, other = 0;
  int first_other = -1;
  for (int l = 0; l < 32; ++l) {
    const WarpMatrixCall* n = m.calls[l];
    if (n == nullptr || n->ticket != mine.ticket) continue;  // not at a wmma operation now
    if (same_call(*n, mine)) {
      agree |= 1u << l;
    } else {
      other |= 1u << l;
      if (first_other < 0) first_other = l;
    }
  }
  if (agree != 0xffffffffu && (t->checks & kSynccheck)) {
    std::string why;
    if (first_other >= 0) {
      const WarpMatrixCall& n = *m.calls[first_other];
      why = "lane " + std::to_string(first_other) + " is at " + site(n);
      if (n.op != MatrixOp::Mma && n.op == mine.op && n.file == mine.file && n.line == mine.line)
        why += " with another pointer, ldm or layout (" + hex(reinterpret_cast<uintptr_t>(n.ptr)) +
               ", ldm " + std::to_string(n.ldm) + " against " +
               hex(reinterpret_cast<uintptr_t>(mine.ptr)) + ", ldm " + std::to_string(mine.ldm) +
               ")";
    } else {
      why = "they are at another warp operation";
    }
    fault(t, cudaErrorLaunchFailure,
          "synccheck: " + site(mine) + ": lanes " + hex(agree) + " of warp " +
              std::to_string(t->warp) + " call it, lanes " + hex(~agree & 0xffffffffu) +
              " do not (" + why +
              "): all 32 lanes of a warp must call a wmma operation together, at the same place, "
              "with the same pointer, ldm and layout");
  }
  if (mine.op == MatrixOp::Mma) multiply(m, agree);
  ++m.completed;
  for (WarpMatrixCall*& n : m.calls) n = nullptr;
}

}  // namespace

int wmma_lane_for_access(const WarpMatrixCall& call) {
  Thread* t = current(op_name(call.op));
  if (t->checks & kMemcheck) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(call.ptr);
    if (a % 32 != 0) {
      const std::string what = "the tile at " + hex(a) + " (" + place(t, a) + ")";
      fault(t, cudaErrorMisalignedAddress,
            "memcheck: misaligned " + site(call) + ": " + what +
                " is not 32-byte aligned; a wmma load or store needs a 256-bit aligned pointer");
    }
    if (call.ldm % 4 != 0) {
      const std::string lines = call.row_major ? "rows" : "columns";
      fault(t, cudaErrorMisalignedAddress,
            "memcheck: misaligned " + site(call) + ": ldm = " + std::to_string(call.ldm) +
                " is not a multiple of 4 floats (16 bytes), so the tile's " + lines +
                " after the first do not start 16-byte aligned (the tile at " + hex(a) + ", " +
                place(t, a) + ")");
    }
  }
  return static_cast<int>(t->lane);
}

void wmma_meet(WarpMatrixCall& call) {
  Thread* t = current(op_name(call.op));
  if (t->checks & kSynccheck) {  // what the barrier would say too, in the operation's words
    const Warp& w = t->block->warps[t->warp];
    if (w.existing != 0xffffffffu) {
      fault(t, cudaErrorLaunchFailure,
            "synccheck: " + site(call) + ": warp " + std::to_string(t->warp) + " has only lanes " +
                hex(w.existing) + " (the block has " + std::to_string(t->block->nthreads) +
                " threads, not a multiple of 32): a wmma operation needs all 32 lanes of a warp");
    }
    if (w.exited != 0) {
      fault(t, cudaErrorLaunchFailure,
            "synccheck: " + site(call) + ": lanes " + hex(w.exited) + " of warp " +
                std::to_string(t->warp) +
                " have already returned from the kernel: all 32 lanes of a warp must call a wmma "
                "operation together");
    }
  }
  WarpMeeting& m = meeting_of(t);
  call.ticket = m.completed;
  m.calls[t->lane] = &call;
  warp_barrier(0xffffffffu, call.file, call.line);
  if (m.completed == call.ticket) resolve(t, m, call);  // else a lane before this one did it
}

}  // namespace ember::emu
