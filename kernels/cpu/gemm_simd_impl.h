// ember/kernels/cpu/gemm_simd_impl.h — the float32 GEMM kernel of kernels/cpu/gemm_simd.h,
// written once for any SIMD width. Included by one file per instruction set, inside the region
// where that file compiles for it (kernels/cpu/gemm_avx512.cpp: 16 floats per register, AVX-512;
// kernels/cpu/gemm_avx2.cpp: 8 floats, AVX2; kernels/cpu/gemm_neon.cpp: 4 floats, ARM's NEON),
// after it has defined the register type's operations as a struct V:
//
//   V::kLanes            floats per register (16, 8 or 4)
//   V::kMr               rows of the register tile (12, 6 or 12: 2 * kMr accumulators, plus two
//                        registers of B and a broadcast, fit the ISA's 32, 16 or 32 registers)
//   V::Reg, V::Mask      the register and a lane mask
//   V::first(n)          the mask of the first n lanes (all for n >= kLanes, none for n <= 0)
//   V::zero(), V::set1(x), V::loadu(p), V::load(p, m) (lanes outside m are 0 and not read),
//   V::storeu(p, r), V::store(p, m, r) (lanes outside m are not written),
//   V::fmadd(a, b, c) = a * b + c rounded once, V::add, V::mul (each rounded on its own: never
//                        contracted into one fused multiply-add)
//   V::transpose(r)      r[kLanes] registers, row i in r[i], become their columns
//
// This header includes nothing: the standard headers it needs (<algorithm>, <memory>,
// <type_traits>, <cstdint>) come first in the including file, outside the region compiled for
// the instruction set, so that no inline function of the standard library is compiled for it
// (a copy of std::min built with AVX-512 instructions could be the one the linker keeps for the
// whole program). Everything here sits in the including file's anonymous namespace.
//
// How the kernel works, in AVX-512's numbers (AVX2's are half as wide and half as tall, NEON's
// a quarter as wide and as tall)
// ------------------------------------------------------------------------------------------
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
// it into two 256-bit halves). With AVX2 the tile is 6 x 16 — 12 accumulators in 12 of the 16 ymm
// registers, 12 FMAs per 2 loads and 6 broadcasts — which keeps two 256-bit FMA pipes busy with 12
// independent sums. Only at the end of the run is the tile added to C: alpha * acc (+ beta * C,
// or + C for the later runs over k). Narrower tiles at the edges: fewer rows (a template per row
// count, so the accumulators stay in registers) and masked loads and stores for the last
// columns, so nothing is read or written past the matrices.
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
// a[a_rows[i] + k], B's row r at b + b_rows[r]). That is sgemm_simd_rows, and it is how
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
// depends only on K — not on M, N, the tile it falls in, where a product was cut into panels, or
// the register width. That is what lets kernels/cpu/gemm.cpp split a product across threads and
// still give the same bits for any thread count, and why avx512, avx2 and neon agree bit for bit.

constexpr int64_t kLanes = V::kLanes;
constexpr int64_t kMr = V::kMr;         // rows of the register tile
constexpr int64_t kNr = 2 * V::kLanes;  // columns of the register tile (two vectors)
constexpr int64_t kKc = 256;            // k-block
constexpr int64_t kNc = 512;            // column block
static_assert(kNc % kNr == 0, "a column block holds whole tiles");

// Copies the block of `rows` (<= kLanes) rows x klen columns whose row i starts at src[i]
// transposed into dst: dst[k * dst_stride + i] = src[i][k] for i < rows, and 0 for i in
// [rows, kLanes) (the padding of an edge tile). The rows may lie anywhere (see BRows).
void pack_transposed(const float* const* src, int64_t rows, int64_t klen, float* dst,
                     int64_t dst_stride) {
  int64_t k = 0;
  for (; k + kLanes <= klen; k += kLanes) {
    typename V::Reg r[kLanes];
    for (int i = 0; i < kLanes; ++i) r[i] = i < rows ? V::loadu(src[i] + k) : V::zero();
    V::transpose(r);
    for (int j = 0; j < kLanes; ++j) V::storeu(dst + (k + j) * dst_stride, r[j]);
  }
  for (; k < klen; ++k) {  // the last klen % kLanes columns one at a time
    float* d = dst + k * dst_stride;
    for (int64_t i = 0; i < kLanes; ++i) d[i] = i < rows ? src[i][k] : 0.0f;
  }
}

// One kLanes x kLanes block (rows i0.., columns j0..) of transpose_blocks below, the edges
// masked. Inlined by force: as a call, its vectors go through memory instead of staying in
// registers, and those loads and stores then set the transpose's speed (bench/RESULTS.md,
// "Figures that were comments in kernels/").
inline __attribute__((always_inline)) void transpose_block(const float* src, int64_t lds,
                                                           int64_t rows, int64_t cols,
                                                           const float* add, float* dst,
                                                           int64_t ldd, int64_t i0, int64_t j0) {
  const int64_t ni = std::min<int64_t>(kLanes, rows - i0),
                nj = std::min<int64_t>(kLanes, cols - j0);
  const typename V::Mask mi = V::first(ni), mj = V::first(nj);
  typename V::Reg r[kLanes];
  for (int64_t i = 0; i < kLanes; ++i) {
    r[i] = i < ni ? V::load(src + (i0 + i) * lds + j0, mj) : V::zero();
    if (add) r[i] = V::add(r[i], V::set1(*add));
  }
  V::transpose(r);
  for (int64_t j = 0; j < nj; ++j) V::store(dst + (j0 + j) * ldd + i0, mi, r[j]);
}

// dst[j * ldd + i] = src[i * lds + j] (+ *add) for i < rows, j < cols, in kLanes x kLanes
// register blocks. The blocks walk along the side whose rows lie farther apart (one row per image
// in conv_implicit.cpp), kLanes of its rows at a time front to back, so that those rows are
// kLanes streams instead of a new page at every load or store: along dst's rows when they are
// the farther apart, else along src's. (Both walks were timed on a convolution's dy:
// bench/RESULTS.md, "Figures that were comments in kernels/".)
void transpose_blocks(const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add,
                      float* dst, int64_t ldd) {
  if (ldd >= lds) {  // along dst's rows (src's columns)
    for (int64_t j0 = 0; j0 < cols; j0 += kLanes) {
      for (int64_t i0 = 0; i0 < rows; i0 += kLanes) {
        transpose_block(src, lds, rows, cols, add, dst, ldd, i0, j0);
      }
    }
  } else {  // along src's rows
    for (int64_t i0 = 0; i0 < rows; i0 += kLanes) {
      for (int64_t j0 = 0; j0 < cols; j0 += kLanes) {
        transpose_block(src, lds, rows, cols, add, dst, ldd, i0, j0);
      }
    }
  }
}

// The register tile: C[0..ROWS, 0..kLanes*NV) (+)= alpha * sum_k A(i, k) * B(k, j), with
//   A(i, k) = a[k * a_k + i * a_i]   (read in place, see "Feeding it")
//           = a_row[i][k]            (A_MODE kARowTable: rows that lie anywhere)
//   B(k, j) = b[k * b_k + j]         (b_k = kNr for a packed block, ldb for B read in place)
//           = b[b_row[k] + j]        (B_ROWS: B read in place from rows that lie anywhere)
// Lanes outside mask0 / mask1 (the second vector) are neither read nor written.
// first: this is the first k-block, so C = alpha * acc + beta * C (C not read when beta == 0);
// otherwise C += alpha * acc.
// How the tile finds A(i, k): a_i == 1 (A^T stored [K, M]) is its own instance, because with
// constant offsets ak[0..kMr) the compiler needs no register per row; a row table is the third.
enum AMode { kAStrided, kAContiguousRows, kARowTable };

template <int ROWS, int NV, int A_MODE, bool B_ROWS>
void tile(int64_t klen, const float* a, int64_t a_k, int64_t a_i, const float* const* a_row,
          const float* b, int64_t b_k, const int64_t* b_row, typename V::Mask mask0,
          typename V::Mask mask1, float* c, int64_t ldc, float alpha, float beta, bool first) {
  typename V::Reg acc[ROWS][NV];
#pragma GCC unroll 12
  for (int i = 0; i < ROWS; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  }
  for (int64_t k = 0; k < klen; ++k) {
    const float* bk = B_ROWS ? b + b_row[k] : b + k * b_k;
    typename V::Reg bv[NV];
    bv[0] = V::load(bk, mask0);
    if constexpr (NV == 2) bv[1] = V::load(bk + kLanes, mask1);
    const float* ak = a + k * a_k;
#pragma GCC unroll 12
    for (int i = 0; i < ROWS; ++i) {
      const float av = A_MODE == kAContiguousRows ? ak[i]
                       : A_MODE == kARowTable     ? a_row[i][k]
                                                  : ak[i * a_i];
      const typename V::Reg ai = V::set1(av);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fmadd(ai, bv[v], acc[i][v]);
    }
  }
  // The loops over the tile are unrolled completely (the pragmas), so acc stays in registers:
  // any loop over i or v left rolled would make the compiler keep acc in memory.
  const typename V::Reg va = V::set1(alpha), vb = V::set1(beta);
#pragma GCC unroll 12
  for (int i = 0; i < ROWS; ++i) {
    float* ci = c + i * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const typename V::Mask m = v == 0 ? mask0 : mask1;
      typename V::Reg r = alpha == 1.0f ? acc[i][v] : V::mul(va, acc[i][v]);
      if (!first) r = V::add(V::load(ci + kLanes * v, m), r);
      else if (beta != 0.0f) r = V::fmadd(vb, V::load(ci + kLanes * v, m), r);
      V::store(ci + kLanes * v, m, r);
    }
  }
}

// One tile of `rows` (1..kMr) rows and `cols` (1..kNr) columns: picks the instance.
template <int NV, int A_MODE, bool B_ROWS>
void tile_rows(int rows, int64_t klen, const float* a, int64_t a_k, int64_t a_i,
               const float* const* a_row, const float* b, int64_t b_k, const int64_t* b_row,
               typename V::Mask m0, typename V::Mask m1, float* c, int64_t ldc, float alpha,
               float beta, bool first) {
  // clang-format off
  switch (rows) {
#define EMBER_TILE(n)                                                                            \
  case n:                                                                                        \
    if constexpr (n <= kMr) {                                                                    \
      tile<n, NV, A_MODE, B_ROWS>(klen, a, a_k, a_i, a_row, b, b_k, b_row, m0, m1, c, ldc, alpha, \
                                  beta, first);                                                  \
    }                                                                                            \
    break;
    EMBER_TILE(1) EMBER_TILE(2) EMBER_TILE(3) EMBER_TILE(4) EMBER_TILE(5) EMBER_TILE(6)
    EMBER_TILE(7) EMBER_TILE(8) EMBER_TILE(9) EMBER_TILE(10) EMBER_TILE(11) EMBER_TILE(12)
#undef EMBER_TILE
    default: break;
  }
  // clang-format on
}
static_assert(kMr <= 12, "tile_rows has instances for up to 12 rows");

// One tile of `rows` x `cols`: picks the instance (a_row given: A from the row table).
template <bool B_ROWS>
void run_tile(int64_t rows, int64_t cols, int64_t klen, const float* a, int64_t a_k, int64_t a_i,
              const float* const* a_row, const float* b, int64_t b_k, const int64_t* b_row,
              float* c, int64_t ldc, float alpha, float beta, bool first) {
  const int r = static_cast<int>(rows);
  const typename V::Mask m0 = V::first(cols), m1 = V::first(cols - kLanes);
  const auto go = [&](auto nv, auto mode) {
    tile_rows<decltype(nv)::value, decltype(mode)::value, B_ROWS>(
        r, klen, a, a_k, a_i, a_row, b, b_k, b_row, m0, m1, c, ldc, alpha, beta, first);
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if (a_row) {
    if (cols > kLanes) go(Two{}, std::integral_constant<int, kARowTable>{});
    else go(One{}, std::integral_constant<int, kARowTable>{});
  } else if (a_i == 1) {
    if (cols > kLanes) go(Two{}, std::integral_constant<int, kAContiguousRows>{});
    else go(One{}, std::integral_constant<int, kAContiguousRows>{});
  } else {
    if (cols > kLanes) go(Two{}, std::integral_constant<int, kAStrided>{});
    else go(One{}, std::integral_constant<int, kAStrided>{});
  }
}

// A thread's packing buffer, kept between calls (a few hundred KiB, allocated once per thread).
float* pack_buffer() {
  thread_local std::unique_ptr<float[]> b(new float[kKc * kNc]);
  return b.get();
}

// The stored B: row r (a row of op(B) without trans_b, a column of it with) starts at
// b + rows[r] when `rows` is given, else at b + r * ldb.
struct BRows {
  const float* b;
  int64_t ldb;
  const int64_t* rows;
  const float* row(int64_t r) const { return rows ? b + rows[r] : b + r * ldb; }
};

// A(i, k) at a[a_rows[i] + k] when a_rows is given (no trans_a), else as sgemm_simd.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* a,
           int64_t lda, const int64_t* a_rows, const BRows& B, float beta, float* c, int64_t ldc) {
  for (int64_t jc = 0; jc < N; jc += kNc) {
    const int64_t nlen = std::min(kNc, N - jc);
    for (int64_t pc = 0; pc < K; pc += kKc) {
      const int64_t klen = std::min(kKc, K - pc);
      const bool first = pc == 0;
      // op(B)'s block [pc, pc+klen) x [jc, jc+nlen): in place when B is [K, N]; else packed as
      // nlen/kNr panels of [klen, kNr], panel p at b_blk + p * klen * kNr.
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
        float* packed = pack_buffer();
        for (int64_t jr = 0; jr < nlen; jr += kNr) {
          const int64_t cols = std::min(kNr, nlen - jr);
          // Rows of B are columns of op(B): the tile's kNr (two blocks of kLanes), from column
          // pc on.
          const float* src[kNr];
          for (int64_t i = 0; i < cols; ++i) src[i] = B.row(jc + jr + i) + pc;
          float* dst = packed + jr * klen;
          pack_transposed(src, std::min<int64_t>(cols, kLanes), klen, dst, kNr);
          pack_transposed(src + kLanes, std::max<int64_t>(cols - kLanes, 0), klen, dst + kLanes,
                          kNr);
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
            run_tile<true>(rows, cols, klen, a_blk, a_k, a_i, a_rows ? a_row : nullptr, b_blk + jr,
                           0, b_row, c_tile, ldc, alpha, beta, first);
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

// The entry points the dispatcher (kernels/cpu/gemm_simd.cpp) calls through a SimdGemm table.
void entry_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  sgemm(trans_a, trans_b, M, N, K, alpha, a, lda, nullptr, BRows{b, ldb, nullptr}, beta, c, ldc);
}

void entry_sgemm_rows(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* a, int64_t lda, const int64_t* a_rows, const float* b,
                      int64_t ldb, const int64_t* b_rows, float beta, float* c, int64_t ldc) {
  sgemm(trans_a, trans_b, M, N, K, alpha, a, lda, a_rows, BRows{b, ldb, b_rows}, beta, c, ldc);
}

void entry_transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, const float* add,
                     float* dst, int64_t ldd) {
  transpose_blocks(src, lds, rows, cols, add, dst, ldd);
}
