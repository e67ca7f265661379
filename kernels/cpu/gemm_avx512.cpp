// ember's float32 GEMM kernel for AVX-512 CPUs: C = alpha * op(A) @ op(B) + beta * C.
//
// Why not only Eigen: on the products of the seed models (the MLP's layers, a [64, 800] filter
// bank against an im2col matrix [800, 361] and the gradients' products) Eigen's blocked GEMM
// stays well below a Zen 4 core's FMA peak, and the kernel below runs every one of them closer
// to it (bench/RESULTS.md, "CPU GEMM kernel and convolution layout"). It is the CPU twin
// of the lesson in bench/gemm/ (siboehm's SGEMM ladder on the GPU): keep a tile of C in registers
// and stream the operands past it. sgemm_avx512_rows (the same kernel, operands given as tables
// of row starts) lets kernels/cpu/conv_implicit.cpp multiply rows scattered through a tensor
// in place.
//
// The micro-kernel
// ----------------
// A 12 x 32 tile of C lives in 24 of AVX-512's 32 vector registers (12 rows, two 16-float vectors
// per row) for a whole run over k. Each step k loads one row of op(B) — 32 floats, two vector
// loads — and, for each of the 12 rows i, broadcasts op(A)[i, k] into a register and does two
// fused multiply-adds into that row's accumulators:
//
//     for k:  b0, b1 = B[k, j0 .. j0+16), B[k, j0+16 .. j0+32)
//             for i in 0..12:  a = broadcast(A[i0 + i, k])
//                              acc[i][0] += a * b0;  acc[i][1] += a * b1
//
// 24 FMAs per 2 loads and 12 broadcasts: the loads never hold up the FMA units, and 24 independent
// accumulators hide the FMA latency (4 cycles at one 512-bit FMA per cycle on Zen 4, which splits
// it into two 256-bit halves). Only at the end of the run is the tile added to C: alpha * acc (+
// beta * C, or + C for the later runs over k). Narrower tiles at the edges: fewer rows (a
// template per row count, so the accumulators stay in registers) and masked loads and stores for
// the last columns, so nothing is read or written past the matrices.
//
// Feeding it
// ----------
// For each k the kernel loads op(B)'s 32 values of its column block as two vectors, so those
// must lie side by side, and broadcasts op(A)'s 12 values of its row block one at a time, so
// those may lie anywhere. op(A) is therefore always read in place: A(i, k) at a[k*a_k + i*a_i],
// with (a_k, a_i) = (1, lda) for A stored [M, K] (12 rows walked in step) and (lda, 1) for A^T
// stored [K, M]. Copying A into a tile-ordered buffer first, as BLAS libraries do, was measured
// and gained nothing here: 12 rows of a k-block fit in the L1 cache either way. op(B) is read in
// place when B is stored [K, N] (row k of the block is contiguous); B^T stored [N, K] is copied
// ("packed") first: 32 rows of B transposed into [kc, 32], once per k-block and reused across all
// of M, through 16 x 16 register transposes. So a product whose transposed operand is the
// smaller one should put it second (kernels/cpu/conv_im2col.cpp's weight gradient does).
// Nothing here needs A's rows, or the stored B's rows, to be evenly spaced: each is read from
// its own start, so either may instead be given as a table of row starts (A(i, k) at
// a[a_rows[i] + k], B's row r at b + b_rows[r]). That is sgemm_avx512_rows, and it is how
// conv_implicit.cpp's implicit GEMM reads the shifted rows of an image as a matrix without
// copying them.
//
// Cache blocking: the sum over k is cut into blocks of kKc = 256 (a 12 x 256 block of A is 12 KiB,
// which stays in the 32-KiB L1 cache while the kernel walks across N), and N into blocks of kNc =
// 512 columns (a 256 x 512 block of B, 512 KiB, stays in the 1-MiB L2 cache while the kernel walks
// down M).
//
// The order of the sum
// --------------------
// Each C element is sum over k-blocks in order, each block's sum in k order by FMA, so its value
// depends only on K — not on M, N, the tile it falls in, or where a product was cut into panels.
// That is what lets kernels/cpu/gemm.cpp split a product across threads and still give the same
// bits for any thread count.
#include "kernels/cpu/gemm_avx512.h"

// GCC 12 reports "'__Y' may be used uninitialized" inside its own AVX-512 intrinsics (they start
// from _mm512_undefined_*() on purpose): a known false positive, silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <memory>
#include <type_traits>

#include "kernels/base/error.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace ember::kernels::cpu {

#if defined(__AVX512F__)

namespace {

constexpr int64_t kMr = 12;   // rows of the register tile
constexpr int64_t kNr = 32;   // columns of the register tile (two 16-float vectors)
constexpr int64_t kKc = 256;  // k-block
constexpr int64_t kNc = 512;  // column block

// The first n lanes of a 16-float vector.
__mmask16 first_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// Transposes the 16 x 16 block r (r[i] = row i) in registers: afterwards r[j] holds column j.
// Three rounds of shuffles, each pairing elements at twice the distance of the round before:
// single floats within 128-bit lanes, then float pairs, then 128-bit lanes across registers.
inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);      // per lane: r_i[0] r_i+1[0] r_i[1] r_i+1[1]
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);  //           r_i[2] r_i+1[2] r_i[3] r_i+1[3]
  }
  for (int i = 0; i < 16; i += 4) {  // per lane: column 0, 1, 2, 3 of rows i .. i+3
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // Now lane L of r[4q + j] holds column 4L + j of rows 4q .. 4q+3; gather the four lanes of
  // column 4L + j from r[j], r[4 + j], r[8 + j], r[12 + j].
  for (int j = 0; j < 4; ++j) {
    const __m512 lo02 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);       // r_j.L0 L2, r_4+j.L0 L2
    const __m512 lo13 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);       // r_j.L1 L3, r_4+j.L1 L3
    const __m512 hi02 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    const __m512 hi13 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
    t[j] = _mm512_shuffle_f32x4(lo02, hi02, 0x88);       // column j       (lane 0 of each)
    t[8 + j] = _mm512_shuffle_f32x4(lo02, hi02, 0xdd);   // column 8 + j   (lane 2)
    t[4 + j] = _mm512_shuffle_f32x4(lo13, hi13, 0x88);   // column 4 + j   (lane 1)
    t[12 + j] = _mm512_shuffle_f32x4(lo13, hi13, 0xdd);  // column 12 + j  (lane 3)
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// Copies the block of `rows` (<= 16) rows x klen columns whose row i starts at src[i] transposed
// into dst: dst[k * dst_stride + i] = src[i][k] for i < rows, and 0 for i in [rows, 16) (the
// padding of an edge tile). The rows may lie anywhere (see BRows).
void pack_transposed(const float* const* src, int64_t rows, int64_t klen, float* dst,
                     int64_t dst_stride) {
  int64_t k = 0;
  for (; k + 16 <= klen; k += 16) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) {
      r[i] = i < rows ? _mm512_loadu_ps(src[i] + k) : _mm512_setzero_ps();
    }
    transpose16(r);
    for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + (k + j) * dst_stride, r[j]);
  }
  for (; k < klen; ++k) {  // the last klen % 16 columns one at a time
    float* d = dst + k * dst_stride;
    for (int64_t i = 0; i < 16; ++i) d[i] = i < rows ? src[i][k] : 0.0f;
  }
}

// One 16 x 16 block (rows i0.., columns j0..) of transpose_blocks below, the edges masked.
// Inlined by force: as a call, its 16 vectors go through memory instead of staying in registers,
// and those loads and stores then set the transpose's speed (bench/RESULTS.md, "Figures that were
// comments in kernels/").
inline __attribute__((always_inline)) void transpose_block16(
    const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add, float* dst,
    int64_t ldd, int64_t i0, int64_t j0) {
  const int64_t ni = std::min<int64_t>(16, rows - i0), nj = std::min<int64_t>(16, cols - j0);
  const __mmask16 mi = first_lanes(ni), mj = first_lanes(nj);
  __m512 r[16];
  for (int64_t i = 0; i < 16; ++i) {
    r[i] = i < ni ? _mm512_maskz_loadu_ps(mj, src + (i0 + i) * lds + j0) : _mm512_setzero_ps();
    if (add) r[i] = _mm512_add_ps(r[i], _mm512_set1_ps(*add));
  }
  transpose16(r);
  for (int64_t j = 0; j < nj; ++j) _mm512_mask_storeu_ps(dst + (j0 + j) * ldd + i0, mi, r[j]);
}

// dst[j * ldd + i] = src[i * lds + j] (+ *add) for i < rows, j < cols, in 16 x 16 register blocks.
// The blocks walk along the side whose rows lie farther apart (one row per image in
// conv_implicit.cpp), 16 of its rows at a time front to back, so that those rows are 16 streams
// instead of a new page at every load or store: along dst's rows when they are the farther apart,
// else along src's. (Both walks were timed on a convolution's dy: bench/RESULTS.md, "Figures that
// were comments in kernels/".)
void transpose_blocks(const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add,
                      float* dst, int64_t ldd) {
  if (ldd >= lds) {  // along dst's rows (src's columns)
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      for (int64_t i0 = 0; i0 < rows; i0 += 16) {
        transpose_block16(src, lds, rows, cols, add, dst, ldd, i0, j0);
      }
    }
  } else {  // along src's rows
    for (int64_t i0 = 0; i0 < rows; i0 += 16) {
      for (int64_t j0 = 0; j0 < cols; j0 += 16) {
        transpose_block16(src, lds, rows, cols, add, dst, ldd, i0, j0);
      }
    }
  }
}

// The register tile: C[0..ROWS, 0..16*NV) (+)= alpha * sum_k A(i, k) * B(k, j), with
//   A(i, k) = a[k * a_k + i * a_i]   (read in place, see "Feeding it")
//           = a_row[i][k]            (A_MODE kARowTable: rows that lie anywhere)
//   B(k, j) = b[k * b_k + j]         (b_k = kNr for a packed block, ldb for B read in place)
//           = b[b_row[k] + j]        (B_ROWS: B read in place from rows that lie anywhere)
// Lanes outside mask0 / mask1 (the second vector) are neither read nor written.
// first: this is the first k-block, so C = alpha * acc + beta * C (C not read when beta == 0);
// otherwise C += alpha * acc.
// How the tile finds A(i, k): a_i == 1 (A^T stored [K, M]) is its own instance, because with
// constant offsets ak[0..11] the compiler needs no register per row; a row table is the third.
enum AMode { kAStrided, kAContiguousRows, kARowTable };

template <int ROWS, int NV, int A_MODE, bool B_ROWS>
void tile(int64_t klen, const float* a, int64_t a_k, int64_t a_i, const float* const* a_row,
          const float* b, int64_t b_k, const int64_t* b_row, __mmask16 mask0, __mmask16 mask1,
          float* c, int64_t ldc, float alpha, float beta, bool first) {
  __m512 acc[ROWS][NV];
#pragma GCC unroll 12
  for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < klen; ++k) {
    const float* bk = B_ROWS ? b + b_row[k] : b + k * b_k;
    __m512 bv[NV];
    bv[0] = _mm512_maskz_loadu_ps(mask0, bk);
    if constexpr (NV == 2) bv[1] = _mm512_maskz_loadu_ps(mask1, bk + 16);
    const float* ak = a + k * a_k;
#pragma GCC unroll 12
    for (int i = 0; i < ROWS; ++i) {
      const float av = A_MODE == kAContiguousRows ? ak[i]
                       : A_MODE == kARowTable     ? a_row[i][k]
                                                  : ak[i * a_i];
      const __m512 ai = _mm512_set1_ps(av);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
  // The loops over the tile are unrolled completely (the pragmas), so acc stays in registers:
  // any loop over i or v left rolled would make the compiler keep acc in memory.
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int i = 0; i < ROWS; ++i) {
    float* ci = c + i * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const __mmask16 m = v == 0 ? mask0 : mask1;
      __m512 r = alpha == 1.0f ? acc[i][v] : _mm512_mul_ps(va, acc[i][v]);
      if (!first) r = _mm512_add_ps(_mm512_maskz_loadu_ps(m, ci + 16 * v), r);
      else if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, ci + 16 * v), r);
      _mm512_mask_storeu_ps(ci + 16 * v, m, r);
    }
  }
}

// One tile of `rows` (1..12) rows and `cols` (1..32) columns: picks the instance.
template <int NV, int A_MODE, bool B_ROWS>
void tile_rows(int rows, int64_t klen, const float* a, int64_t a_k, int64_t a_i,
               const float* const* a_row, const float* b, int64_t b_k, const int64_t* b_row,
               __mmask16 m0, __mmask16 m1, float* c, int64_t ldc, float alpha, float beta,
               bool first) {
  switch (rows) {
#define EMBER_TILE(n)                                                                           \
  case n:                                                                                       \
    tile<n, NV, A_MODE, B_ROWS>(klen, a, a_k, a_i, a_row, b, b_k, b_row, m0, m1, c, ldc, alpha, \
                                beta, first);                                                   \
    break;
    EMBER_TILE(1) EMBER_TILE(2) EMBER_TILE(3) EMBER_TILE(4) EMBER_TILE(5) EMBER_TILE(6)
    EMBER_TILE(7) EMBER_TILE(8) EMBER_TILE(9) EMBER_TILE(10) EMBER_TILE(11) EMBER_TILE(12)
#undef EMBER_TILE
    default: break;
  }
}

// One tile of `rows` x `cols`: picks the instance (a_row given: A from the row table).
template <bool B_ROWS>
void run_tile(int64_t rows, int64_t cols, int64_t klen, const float* a, int64_t a_k, int64_t a_i,
              const float* const* a_row, const float* b, int64_t b_k, const int64_t* b_row,
              float* c, int64_t ldc, float alpha, float beta, bool first) {
  const int r = static_cast<int>(rows);
  const __mmask16 m0 = first_lanes(cols), m1 = cols > 16 ? first_lanes(cols - 16) : 0;
  const auto go = [&](auto nv, auto mode) {
    tile_rows<decltype(nv)::value, decltype(mode)::value, B_ROWS>(
        r, klen, a, a_k, a_i, a_row, b, b_k, b_row, m0, m1, c, ldc, alpha, beta, first);
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if (a_row) {
    if (cols > 16) go(Two{}, std::integral_constant<int, kARowTable>{});
    else go(One{}, std::integral_constant<int, kARowTable>{});
  } else if (a_i == 1) {
    if (cols > 16) go(Two{}, std::integral_constant<int, kAContiguousRows>{});
    else go(One{}, std::integral_constant<int, kAContiguousRows>{});
  } else {
    if (cols > 16) go(Two{}, std::integral_constant<int, kAStrided>{});
    else go(One{}, std::integral_constant<int, kAStrided>{});
  }
}

// A thread's packing buffers, kept between calls (a few hundred KiB, sized once).
struct PackBuffers {
  std::unique_ptr<float[]> b{new float[kKc * kNc]};
};

// The stored B: row r (a row of op(B) without trans_b, a column of it with) starts at
// b + rows[r] when `rows` is given, else at b + r * ldb.
struct BRows {
  const float* b;
  int64_t ldb;
  const int64_t* rows;
  const float* row(int64_t r) const { return rows ? b + rows[r] : b + r * ldb; }
};

// A(i, k) at a[a_rows[i] + k] when a_rows is given (no trans_a), else as sgemm_avx512.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* a, int64_t lda, const int64_t* a_rows, const BRows& B, float beta,
           float* c, int64_t ldc) {
  thread_local PackBuffers buffers;
  for (int64_t jc = 0; jc < N; jc += kNc) {
    const int64_t nlen = std::min(kNc, N - jc);
    for (int64_t pc = 0; pc < K; pc += kKc) {
      const int64_t klen = std::min(kKc, K - pc);
      const bool first = pc == 0;
      // op(B)'s block [pc, pc+klen) x [jc, jc+nlen): in place when B is [K, N]; else packed as
      // nlen/32 panels of [klen, 32], panel p at b_blk + p * klen * 32.
      const float* b_blk;
      const int64_t* b_row = nullptr;  // in place from rows anywhere: row k at b_blk + b_row[k]
      int64_t b_k = 0, b_panel = 0;    // b_panel: only for a packed B
      if (!trans_b) {
        if (B.rows) {
          b_blk = B.b + jc;
          b_row = B.rows + pc;
        } else {
          b_blk = B.b + pc * B.ldb + jc;
          b_k = B.ldb;
        }
      } else {
        float* packed = buffers.b.get();
        for (int64_t jr = 0; jr < nlen; jr += kNr) {
          const int64_t cols = std::min(kNr, nlen - jr);
          // Rows of B are columns of op(B): the tile's 32 (two blocks of 16), from column pc on.
          const float* src[kNr];
          for (int64_t i = 0; i < cols; ++i) src[i] = B.row(jc + jr + i) + pc;
          float* dst = packed + jr * klen;
          pack_transposed(src, std::min<int64_t>(cols, 16), klen, dst, kNr);
          pack_transposed(src + 16, std::max<int64_t>(cols - 16, 0), klen, dst + 16, kNr);
        }
        b_blk = packed;
        b_k = kNr;
        b_panel = kNr * klen;
      }
      for (int64_t ir = 0; ir < M; ir += kMr) {
        const int64_t rows = std::min(kMr, M - ir);
        // op(A)'s rows [ir, ir+rows), k in [pc, pc+klen), always read in place: A(i, k) at
        // a_blk[k * a_k + i * a_i].
        const float* a_blk = trans_a ? a + pc * lda + ir : a + ir * lda + pc;
        const int64_t a_k = trans_a ? lda : 1, a_i = trans_a ? 1 : lda;
        const float* a_row[kMr];  // or from the row table
        if (a_rows) {
          for (int64_t i = 0; i < rows; ++i) a_row[i] = a + a_rows[ir + i] + pc;
        }
        for (int64_t jr = 0; jr < nlen; jr += kNr) {
          const int64_t cols = std::min(kNr, nlen - jr);
          float* c_tile = c + ir * ldc + jc + jr;
          if (b_row) {
            run_tile<true>(rows, cols, klen, a_blk, a_k, a_i, a_rows ? a_row : nullptr,
                           b_blk + jr, 0, b_row, c_tile, ldc, alpha, beta, first);
          } else {
            const float* b_tile = trans_b ? b_blk + (jr / kNr) * b_panel : b_blk + jr;
            run_tile<false>(rows, cols, klen, a_blk, a_k, a_i, a_rows ? a_row : nullptr, b_tile,
                            b_k, nullptr, c_tile, ldc, alpha, beta, first);
          }
        }
      }
    }
  }
}

}  // namespace

bool sgemm_avx512_available() { return true; }

void sgemm_avx512(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc) {
  sgemm(trans_a, trans_b, M, N, K, alpha, a, lda, nullptr, BRows{b, ldb, nullptr}, beta, c, ldc);
}

void sgemm_avx512_rows(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* a, int64_t lda, const int64_t* a_rows, const float* b,
                       int64_t ldb, const int64_t* b_rows, float beta, float* c, int64_t ldc) {
  EMBER_CHECK(!(a_rows && trans_a), "sgemm_avx512_rows: a row table gives the rows of A itself "
              "(op(A) = A); pass trans_a = false with a_rows");
  sgemm(trans_a, trans_b, M, N, K, alpha, a, lda, a_rows, BRows{b, ldb, b_rows}, beta, c, ldc);
}

void transpose_avx512(const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add,
                      float* dst, int64_t ldd) {
  transpose_blocks(src, lds, rows, cols, add, dst, ldd);
}

#else  // no AVX-512 in this build: gemm.cpp uses Eigen for everything

bool sgemm_avx512_available() { return false; }

void sgemm_avx512(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                  const float*, int64_t, float, float*, int64_t) {
  EMBER_CHECK(false, "sgemm_avx512: this build of ember was compiled without AVX-512 "
              "(kernels/cpu/gemm.cpp should have used Eigen); rebuild with -DEMBER_NATIVE=ON on "
              "a CPU with AVX-512, or call kernels::cpu::gemm");
}

void transpose_avx512(const float*, int64_t, int64_t, int64_t, const float*, float*, int64_t) {
  EMBER_CHECK(false, "transpose_avx512: this build of ember was compiled without AVX-512 "
              "(check sgemm_avx512_available() first); rebuild with -DEMBER_NATIVE=ON on a CPU "
              "with AVX-512");
}

void sgemm_avx512_rows(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                       const int64_t*, const float*, int64_t, const int64_t*, float, float*,
                       int64_t) {
  EMBER_CHECK(false, "sgemm_avx512_rows: this build of ember was compiled without AVX-512 "
              "(check sgemm_avx512_available() first); rebuild with -DEMBER_NATIVE=ON on a CPU "
              "with AVX-512");
}

#endif

}  // namespace ember::kernels::cpu
