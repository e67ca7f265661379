// ember/kernels/emulator/mma.h — tensor-core warp matrix operations (CUDA's nvcuda::wmma) for the
// emulator: the TF32 m16n16k8 fragments that bench/gemm/08_tf32_mma.cuh uses. A kernel writes
// `#include <mma.h>` and finds this file through kernels/emulator/include/mma.h.
//
// The idea. On a GPU the 32 lanes of a warp hold a small matrix between them, a few elements per
// lane in registers: a "fragment". One tensor-core instruction, mma_sync, computes
//     D[16 x 16] = A[16 x 8] @ B[8 x 16] + C[16 x 16]
// from four fragments, and load_matrix_sync / store_matrix_sync move a tile between memory and
// the lanes. All three are warp collectives: every lane of the warp calls them together, at the
// same place in the code, with the same pointer, ldm and layout.
//
// How the emulator does it (the warp's meeting is in kernels/emulator/mma.cpp):
//   - a fragment is what it is on a GPU: each CUDA thread's own array of floats (x[],
//     num_elements), holding the elements the lane mapping below gives to its lane;
//   - load_matrix_sync: each lane reads its own elements with plain loads in the kernel's code,
//     so memcheck, racecheck, initcheck and the access counts see them like any other access
//     (one 4-byte access per element), then the warp meets; store_matrix_sync: the warp meets,
//     then each lane writes its elements. So the meeting does not order the tile's own
//     accesses for racecheck: another lane's element is readable only after a __syncwarp, as
//     on a GPU;
//   - at the meeting synccheck reports lanes that are missing (returned, or somewhere else) or
//     that pass another pointer, ldm or layout. memcheck reports a pointer that is not 32-byte
//     (256-bit) aligned, or an ldm that is not a multiple of 4 floats (16 bytes), before any
//     access: cudaErrorMisalignedAddress;
//   - mma_sync: the warp meets, and the first lane to go on computes the whole tile from every
//     lane's fragments and writes each lane's part of D, which the hardware does in one
//     instruction. Each input is read as TF32 (its low 13 mantissa bits ignored), so each
//     product is exact in float32; the 8 products are added to C in the order k = 0..7, every
//     addition rounded to nearest in float32 (a GPU's tensor core adds in its own order and
//     internal precision: results agree to within float32 summation error, not bit for bit);
//   - __float_to_tf32 is PTX's cvt.rna.tf32.f32: round to nearest, ties away from zero, to 10
//     mantissa bits, returned as a float whose low 13 bits are zero. Round inputs with it (as
//     rung 8 does); an input that is not rounded is truncated by mma_sync.
//   - fill_fragment and x[] are per-lane, as on a GPU: no meeting.
//
// Which lane holds which element. CUDA leaves this unspecified (it may change between GPUs), so
// code must not depend on it, except for element-wise work on x[] (scaling, rounding with
// __float_to_tf32) that treats every element alike. The emulator uses the register layout the
// PTX ISA documents for mma.sync.m16n8k8 with TF32 operands, two of them side by side for the 16
// columns of B, C and D. With g = lane / 4 and t = lane % 4:
//   matrix_a     16 x 8,  x[0..3]:  row g + 8 * (i % 2),       column t + 4 * (i / 2)
//   matrix_b     8 x 16,  x[0..3]:  row t + 4 * (i % 2),       column g + 8 * (i / 2)
//   accumulator  16 x 16, x[0..7]:  row g + 8 * (i / 2 % 2),   column 2 * t + i % 2 + 8 * (i / 4)
// (wmma_row / wmma_col below; the tests check that each element has exactly one owner.)
//
// What is here: fragment<matrix_a | matrix_b, 16, 16, 8, precision::tf32, row_major | col_major>,
// fragment<accumulator, 16, 16, 8, float>, fill_fragment, load_matrix_sync, store_matrix_sync
// (mem_row_major | mem_col_major), mma_sync, __float_to_tf32. Other shapes and types (half,
// bf16, int8, double) are not: a fragment of them fails to compile with a message saying so.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/emulator/device.h"

namespace nvcuda::wmma {
struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
namespace precision {
struct tf32;
}
enum layout_t { mem_row_major, mem_col_major };
}  // namespace nvcuda::wmma

namespace ember::emu {

// ---- the lane mapping ---------------------------------------------------------------------------
enum class MatrixUse : int { A, B, Accumulator };

// The row and column of element x[i] of `lane`'s fragment (see the table at the top).
constexpr int wmma_row(MatrixUse use, int lane, int i) {
  const int g = lane / 4, t = lane % 4;
  switch (use) {
    case MatrixUse::A: return g + 8 * (i % 2);
    case MatrixUse::B: return t + 4 * (i % 2);
    case MatrixUse::Accumulator: return g + 8 * (i / 2 % 2);
  }
  return 0;
}
constexpr int wmma_col(MatrixUse use, int lane, int i) {
  const int g = lane / 4, t = lane % 4;
  switch (use) {
    case MatrixUse::A: return t + 4 * (i / 2);
    case MatrixUse::B: return g + 8 * (i / 2);
    case MatrixUse::Accumulator: return 2 * t + i % 2 + 8 * (i / 4);
  }
  return 0;
}

// ---- the warp's meeting (kernels/emulator/mma.cpp) ----------------------------------------------
enum class MatrixOp : int { Load, Store, Mma };

// One lane's part of a warp matrix operation: what it passes, for the checks at the meeting.
struct WarpMatrixCall {
  MatrixOp op = MatrixOp::Load;
  MatrixUse use = MatrixUse::A;
  const void* ptr = nullptr;  // load / store: the tile in memory
  unsigned ldm = 0;
  bool row_major = true;
  const float* a = nullptr;  // mma: this lane's fragments (d may be c)
  const float* b = nullptr;
  const float* c = nullptr;
  float* d = nullptr;
  const char* file = nullptr;  // the call site, for the reports
  int line = 0;
  uint64_t ticket = 0;  // set by wmma_meet
};

// Before a load or store touches memory: this lane's index in its warp, after memcheck's
// alignment rules (a report ends the block).
int wmma_lane_for_access(const WarpMatrixCall& call);
// The warp meets (a warp collective): returns when every lane has arrived. synccheck reports
// lanes missing or passing other arguments; for an mma, D is computed for every lane.
void wmma_meet(WarpMatrixCall& call);

// A fragment: this lane's elements.
template <typename Element, int Size>
struct __align__(8) WmmaFragment {
  enum { num_elements = Size, num_storage_elements = Size };
  using element_type = Element;
  using storage_element_type = float;
  float x[Size];
};

template <typename Use>
constexpr MatrixUse matrix_use() {
  if constexpr (std::is_same_v<Use, nvcuda::wmma::matrix_a>) return MatrixUse::A;
  if constexpr (std::is_same_v<Use, nvcuda::wmma::matrix_b>) return MatrixUse::B;
  return MatrixUse::Accumulator;
}

template <typename T>
struct always_false : std::false_type {};

// Each lane reads its elements of a tile at p; `use` says which mapping (kernel code: checked).
template <int Size>
inline void wmma_load(float (&x)[Size], const float* p, unsigned ldm, bool row_major, MatrixUse use,
                      const char* file, int line) {
  WarpMatrixCall call;
  call.op = MatrixOp::Load;
  call.use = use;
  call.ptr = p;
  call.ldm = ldm;
  call.row_major = row_major;
  call.file = file;
  call.line = line;
  const int lane = wmma_lane_for_access(call);
  for (int i = 0; i < Size; ++i) {
    const size_t r = static_cast<size_t>(wmma_row(use, lane, i));
    const size_t c = static_cast<size_t>(wmma_col(use, lane, i));
    x[i] = row_major ? p[r * ldm + c] : p[c * ldm + r];
  }
  wmma_meet(call);
}

}  // namespace ember::emu

namespace nvcuda::wmma {

// Only the TF32 m16n16k8 fragments exist in the emulator.
template <typename Use, int m, int n, int k, typename T, typename Layout = void>
class fragment {
  static_assert(::ember::emu::always_false<T>::value,
                "the emulator's <mma.h> (kernels/emulator/mma.h) has only the TF32 m16n16k8 "
                "fragments: fragment<matrix_a or matrix_b, 16, 16, 8, precision::tf32, row_major "
                "or col_major> and fragment<accumulator, 16, 16, 8, float>");
};
template <typename Layout>
class fragment<matrix_a, 16, 16, 8, precision::tf32, Layout>
    : public ::ember::emu::WmmaFragment<precision::tf32, 4> {
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>,
                "a matrix_a fragment's layout is row_major or col_major");
};
template <typename Layout>
class fragment<matrix_b, 16, 16, 8, precision::tf32, Layout>
    : public ::ember::emu::WmmaFragment<precision::tf32, 4> {
  static_assert(std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>,
                "a matrix_b fragment's layout is row_major or col_major");
};
template <>
class fragment<accumulator, 16, 16, 8, float> : public ::ember::emu::WmmaFragment<float, 8> {};

// Rounds a float to TF32 as cvt.rna.tf32.f32 does: to nearest, ties away from zero, keeping 10
// of float32's 23 mantissa bits (the low 13 become zero). Adding half of the dropped part's
// weight (0x1000) to the magnitude bits and clearing them rounds the magnitude half up, which is
// away from zero; a carry into the exponent is the right answer too (up to infinity). NaN stays
// NaN (a quiet one: clearing the low bits could turn a NaN into infinity).
inline float __float_to_tf32(float in) {
  uint32_t bits;
  std::memcpy(&bits, &in, 4);
  const bool nan = (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0;
  bits = nan ? ((bits | 0x00400000u) & ~0x1fffu) : ((bits + 0x1000u) & ~0x1fffu);
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

template <typename Element, int Size>
inline void fill_fragment(::ember::emu::WmmaFragment<Element, Size>& f, float v) {
  for (int i = 0; i < Size; ++i) f.x[i] = v;
}

// The operand tiles: the layout is part of the fragment's type.
template <typename Use, typename Layout>
inline void load_matrix_sync(fragment<Use, 16, 16, 8, precision::tf32, Layout>& f, const float* p,
                             unsigned ldm, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  ::ember::emu::wmma_load(f.x, p, ldm, std::is_same_v<Layout, row_major>,
                          ::ember::emu::matrix_use<Use>(), file, line);
}

// The accumulator: the layout is an argument.
inline void load_matrix_sync(fragment<accumulator, 16, 16, 8, float>& f, const float* p,
                             unsigned ldm, layout_t layout, const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  ::ember::emu::wmma_load(f.x, p, ldm, layout == mem_row_major,
                          ::ember::emu::MatrixUse::Accumulator, file, line);
}

inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 8, float>& f,
                              unsigned ldm, layout_t layout, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  using ::ember::emu::MatrixUse;
  ::ember::emu::WarpMatrixCall call;
  call.op = ::ember::emu::MatrixOp::Store;
  call.use = MatrixUse::Accumulator;
  call.ptr = p;
  call.ldm = ldm;
  call.row_major = layout == mem_row_major;
  call.file = file;
  call.line = line;
  const int lane = ::ember::emu::wmma_lane_for_access(call);
  ::ember::emu::wmma_meet(call);  // first: another lane's element is not there before a __syncwarp
  for (int i = 0; i < 8; ++i) {
    const size_t r = static_cast<size_t>(::ember::emu::wmma_row(MatrixUse::Accumulator, lane, i));
    const size_t c = static_cast<size_t>(::ember::emu::wmma_col(MatrixUse::Accumulator, lane, i));
    p[call.row_major ? r * ldm + c : c * ldm + r] = f.x[i];
  }
}

// d = a @ b + c for the warp's 16 x 16 tile (d may be c).
template <typename LayoutA, typename LayoutB>
inline void mma_sync(fragment<accumulator, 16, 16, 8, float>& d,
                     const fragment<matrix_a, 16, 16, 8, precision::tf32, LayoutA>& a,
                     const fragment<matrix_b, 16, 16, 8, precision::tf32, LayoutB>& b,
                     const fragment<accumulator, 16, 16, 8, float>& c,
                     const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::emu::WarpMatrixCall call;
  call.op = ::ember::emu::MatrixOp::Mma;
  call.use = ::ember::emu::MatrixUse::Accumulator;
  call.a = a.x;
  call.b = b.x;
  call.c = c.x;
  call.d = d.x;
  call.file = file;
  call.line = line;
  ::ember::emu::wmma_meet(call);
}

}  // namespace nvcuda::wmma
