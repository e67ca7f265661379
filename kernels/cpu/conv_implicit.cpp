// ember/kernels/cpu/conv_implicit.cpp — 2-d convolution on the CPU by an implicit GEMM: no
// im2col matrix at all (float32, stride 1, on AVX-512 or AVX2). It builds on the im2col path
// (kernels/cpu/conv_im2col.cpp: read that first); the dispatcher (kernels/cpu/conv.cpp,
// use_implicit) says which convolutions come here and why.
//
// Letters as in kernels/conv_geometry.h: x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q]; below
// CRS = C*R*S (the length of one filter) and PQ = P*Q (the pixels of one output plane).
//
// Why
// ---
// im2col writes every input value R*S times before the GEMM reads it: on the cats-vs-dogs CNN's
// second layer a 1.15-MB col matrix per image from a 68-KB image, and its 5x5 third layer copies
// rows of 5 floats; those copies and col2im's adds take a sizeable share of a training step. They
// are needed only because in NCHW a row of col is not a row of memory: tap (c, r, s) reads
// x[c, p + r, q + s] for all (p, q), a [P, Q] window with gaps between its rows.
//
// How
// ---
// Put the batch innermost, x' [C, H, W, N] (the layout cuda-convnet used), and for one output
// row p the tap's values for all (q, n) are x'[c, p + r, s + q, n] for q in [0, Q): Q*N floats
// side by side in memory. So for each output row p
//
//   y'[:, p, :, :]  [K, Q*N]  =  w [K, CRS] @ B_p [CRS, Q*N],   row (c, r, s) of B_p starting at
//                                                                x' + ((c*H + p + r)*W + s)*N
//
// and B_p is read in place, row by row, through the GEMM kernel's row table
// (sgemm_simd_rows): no copy at all. The price is two layout changes per call (x -> x' and
// y' -> y, register transposes), which cost less than im2col and col2im did (the
// figures: bench/RESULTS.md, "Figures that were comments in kernels/"). Padding is a zero
// border in x'; dilation only changes the row offsets; a stride across would put gaps between
// q, so stride 1 only.
//
// The gradients the same way, without col2im:
//   dx'[:, h, w, n] [C, W*N] = sum over s, then over taps (r, k) with p = h - r in [0, P), of
//                              w[k, :, r, s]^T  dy'[k, h - r, w - s, n]
//     for each input row h and each s one GEMM: A is a copy of the filters laid out [S, R, K, C]
//     (so the taps of a range of r are contiguous and each is a row of C values), B's rows are
//     rows of dy' [K, P, Q, N], shifted by s columns; the products for s = 0, 1, ... are added
//     in that order into dx' (cleared first), each over the columns w its tap reaches;
//   dw^T [CRS, K] = sum over p of  B_p [CRS, Q*N] @ dy'[:, p, :, :]^T
//     with B_p the forward's rows, now as A through the kernel's row table, and dy' packed by
//     the kernel; the output rows p are dealt to groups (kImplicitWeightGroups) summed apart
//     and then added in group order, as the im2col path does with images.
// Every element's sum runs in an order fixed by the geometry — never by the thread count or
// the batch size — so the results do not depend on the thread count, and an image gives the
// same bits alone as in a batch. The tasks are (row, column panel) pairs.
//
// Scratch (the calling thread's; conv_internal.h says what each holds): Scratch::kBatchInnerInput
// x', Scratch::kBatchInnerGrad dy', Scratch::kBatchInnerResult y' or dx', Scratch::kFilters
// wT or wd, Scratch::kWeightPartials.
#include <algorithm>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/gemm_simd.h"

namespace ember::kernels::cpu::conv_detail {

namespace {

constexpr int64_t kImplicitPanel = 256;  // columns of C per task (a multiple of the 32-wide tile)

// x [N, C, H, W] -> x' [C, Hp, Wp, N] (Hp = H + 2*pad_h, Wp = W + 2*pad_w, zero border), in the
// calling thread's Scratch::kBatchInnerInput.
const float* batch_inner_input(const ConvGeometry& g, const float* x) {
  const int64_t N = g.N, HW = g.H * g.W, CHW = g.C * HW;
  const int64_t Hp = g.H + 2 * g.pad_h, Wp = g.W + 2 * g.pad_w;
  const bool padded = g.pad_h > 0 || g.pad_w > 0;
  float* xp = scratch_buffer<Scratch::kBatchInnerInput, float>(g.C * Hp * Wp * N);
  parallel_for(0, g.C, grain_for(Hp * Wp * N), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* xc = xp + c * Hp * Wp * N;
      if (!padded) {  // [N, HW] (rows CHW apart) -> [HW, N]
        transpose_simd(x + c * HW, CHW, N, HW, nullptr, xc, N);
        continue;
      }
      std::fill(xc, xc + Hp * Wp * N, 0.0f);
      for (int64_t h = 0; h < g.H; ++h) {
        transpose_simd(x + c * HW + h * g.W, CHW, N, g.W, nullptr,
                         xc + ((h + g.pad_h) * Wp + g.pad_w) * N, N);
      }
    }
  });
  return xp;
}

// Where row (c, r, s) of B_p starts in x' for output row p = 0 (add p*Wp*N for row p).
std::vector<int64_t> input_tap_rows(const ConvGeometry& g) {
  const int64_t Hp = g.H + 2 * g.pad_h, Wp = g.W + 2 * g.pad_w;
  std::vector<int64_t> rows(static_cast<size_t>(g.C * g.R * g.S));
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s)
        rows[(c * g.R + r) * g.S + s] = ((c * Hp + r * g.dil_h) * Wp + s * g.dil_w) * g.N;
  return rows;
}

// Calls f(row, j0, cols) for every row in [0, rows) and column panel [j0, j0 + cols) of a
// width-`width` row, on ember's threads. `macs`: the multiply-adds of one task, so that small
// convolutions stay on one thread.
template <typename F>
void for_each_row_panel(int64_t rows, int64_t width, int64_t panel, int64_t macs, const F& f) {
  const int64_t panels = (width + panel - 1) / panel;
  const int64_t grain = std::max<int64_t>(1, kTaskMacs / std::max<int64_t>(macs, 1));
  parallel_for(0, rows * panels, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t row = t / panels, j0 = (t % panels) * panel;
      f(row, j0, std::min(panel, width - j0));
    }
  });
}

// The weight gradient's output rows p are dealt to groups (each sums its rows into its own
// partial; the partials are added in group order): one per row up to kImplicitWeightGroups and
// the memory budget, a function of the sizes only. A group's product is cut into row panels
// only where there are too few groups to share out (each panel packs dy' again).
constexpr int64_t kImplicitWeightGroups = 32;
constexpr int64_t kImplicitWeightTasks = 32;

}  // namespace

// dy [N, K, P, Q] -> dy' [K, P, Q, N], in the calling thread's Scratch::kBatchInnerGrad.
const float* batch_inner_grad(const ConvGeometry& g, const float* dy) {
  const int64_t N = g.N, PQ = g.P * g.Q;
  float* dyp = scratch_buffer<Scratch::kBatchInnerGrad, float>(g.K * PQ * N);
  parallel_for(0, g.K, grain_for(PQ * N), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      transpose_simd(dy + k * PQ, g.K * PQ, N, PQ, nullptr, dyp + k * PQ * N, N);
    }
  });
  return dyp;
}

void implicit_forward(const ConvGeometry& g, const float* x, const float* w, const float* b,
                      float* y) {
  const int64_t N = g.N, CRS = g.C * g.R * g.S, PQ = g.P * g.Q, QN = g.Q * N, PQN = PQ * N;
  const int64_t Wp = g.W + 2 * g.pad_w;
  const float* xp = batch_inner_input(g, x);
  const float* wT = transposed_weights(g, w);  // [CRS, K]: w read as wT^T, as in the im2col path
  const std::vector<int64_t> rows = input_tap_rows(g);
  float* yt = scratch_buffer<Scratch::kBatchInnerResult, float>(g.K * PQN);  // y' [K, P, Q, N]
  const int64_t macs = g.K * std::min(QN, kImplicitPanel) * CRS;
  for_each_row_panel(g.P, QN, kImplicitPanel, macs, [&](int64_t p, int64_t j0, int64_t cols) {
    sgemm_simd_rows(true, false, g.K, cols, CRS, 1.0f, wT, g.K, nullptr, xp + p * Wp * N + j0, 0,
                      rows.data(), 0.0f, yt + p * QN + j0, PQN);
  });
  // y[n, k] = y'[k]^T (+ b[k]): [PQ, N] -> [N, PQ] with rows K*PQ apart.
  parallel_for(0, g.K, grain_for(PQN), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      transpose_simd(yt + k * PQN, N, PQ, N, b ? b + k : nullptr, y + k * PQ, g.K * PQ);
    }
  });
}

// dyp: dy' from batch_inner_grad.
void implicit_backward_input(const ConvGeometry& g, const float* dyp, const float* w, float* dx) {
  const int64_t N = g.N, HW = g.H * g.W, WN = g.W * N, HWN = HW * N, RK = g.R * g.K;
  const int64_t QN = g.Q * N;
  // wd [S, R, K, C]: for one s, the taps (r, k) of a range of r side by side, each a row of C.
  float* wd = scratch_buffer<Scratch::kFilters, float>(g.S * RK * g.C);
  parallel_for(0, g.S * g.R, grain_for(g.K * g.C), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {  // t = s*R + r
      const int64_t s_ = t / g.R, r = t % g.R;
      for (int64_t k = 0; k < g.K; ++k) {
        for (int64_t c = 0; c < g.C; ++c) {
          wd[(t * g.K + k) * g.C + c] = w[((k * g.C + c) * g.R + r) * g.S + s_];
        }
      }
    }
  });
  // Row (s, r, k) of B for input row h_padded = 0 (add h_padded*Q*N): dy'[k, -r*dil_h, 0, 0].
  std::vector<int64_t> rows(static_cast<size_t>(g.S * RK));
  for (int64_t s_ = 0; s_ < g.S; ++s_)
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t k = 0; k < g.K; ++k)
        rows[(s_ * g.R + r) * g.K + k] = (k * g.P - r * g.dil_h) * QN;
  float* dxt = scratch_buffer<Scratch::kBatchInnerResult, float>(g.C * HWN);  // dx' [C, H, W, N]
  const int64_t macs = g.C * std::min(WN, kImplicitPanel) * g.S * RK;         // at most
  for_each_row_panel(g.H, WN, kImplicitPanel, macs, [&](int64_t h, int64_t j0, int64_t cols) {
    // Input row h (hp with the border) is read by output rows p = hp - r*dil_h: the taps
    // r in [r0, r1] have p in [0, P).
    const int64_t hp = h + g.pad_h, far = hp - (g.P - 1);
    const int64_t r0 = far <= 0 ? 0 : (far + g.dil_h - 1) / g.dil_h;
    const int64_t r1 = std::min(g.R - 1, hp / g.dil_h);
    float* c = dxt + h * WN;
    for (int64_t ch = 0; ch < g.C; ++ch) {
      std::fill(c + ch * HWN + j0, c + ch * HWN + j0 + cols, 0.0f);
    }
    if (r0 > r1) return;  // no tap reaches this row (a dilation gap)
    for (int64_t s_ = 0; s_ < g.S; ++s_) {
      // Tap s of output column q reads input column w = q + shift: of this panel's columns
      // (w*N + n), it reaches [lo, hi), whose q start at lo - shift*N in dy''s rows.
      const int64_t shift = s_ * g.dil_w - g.pad_w;
      const int64_t lo = std::max(j0, std::max<int64_t>(shift, 0) * N);
      const int64_t hi = std::min(j0 + cols, std::min(g.W, g.Q + shift) * N);
      if (lo >= hi) continue;
      const int64_t t0 = (s_ * g.R + r0) * g.K;
      sgemm_simd_rows(true, false, g.C, hi - lo, (r1 - r0 + 1) * g.K, 1.0f, wd + t0 * g.C, g.C,
                        nullptr, dyp + hp * QN + (lo - shift * N), 0, rows.data() + t0, 1.0f,
                        c + lo, HWN);
    }
  });
  // dx[n, c] = dx'[c]^T: [HW, N] -> [N, HW] with rows C*HW apart.
  parallel_for(0, g.C, grain_for(HWN), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      transpose_simd(dxt + c * HWN, N, HW, N, nullptr, dx + c * HW, g.C * HW);
    }
  });
}

// dyp: dy' from batch_inner_grad.
void implicit_backward_weight(const ConvGeometry& g, const float* x, const float* dyp, float* dw,
                              float* db) {
  const int64_t N = g.N, CRS = g.C * g.R * g.S, PQ = g.P * g.Q, QN = g.Q * N, KCRS = g.K * CRS;
  const int64_t Wp = g.W + 2 * g.pad_w;
  const float* xp = batch_inner_input(g, x);
  const std::vector<int64_t> rows = input_tap_rows(g);
  // Group j sums output rows [j*P/groups, (j+1)*P/groups) into partial j [CRS, K]:
  //   dw^T (+)= B_p [CRS, Q*N] @ dy'[:, p]^T,
  // B_p's rows read in place through the row table (A), dy'[:, p] ([K, Q*N], rows P*Q*N apart)
  // packed transposed by the kernel. Tasks: (group, panel of panel_rows taps).
  const int64_t by_memory =
      1 + kWeightGroupBudgetBytes / std::max<int64_t>(KCRS * int64_t(sizeof(float)), 1);
  const int64_t groups = std::max<int64_t>(1, std::min({g.P, kImplicitWeightGroups, by_memory}));
  const int64_t panels = std::clamp<int64_t>((kImplicitWeightTasks + groups - 1) / groups, 1,
                                             std::max<int64_t>(1, CRS / 96));
  const int64_t panel_rows = ((CRS + panels - 1) / panels + 11) / 12 * 12;  // whole tiles
  float* partial = scratch_buffer<Scratch::kWeightPartials, float>(groups * KCRS);
  const int64_t macs = std::min(CRS, panel_rows) * g.K * QN * ((g.P + groups - 1) / groups);
  for_each_row_panel(groups, CRS, panel_rows, macs, [&](int64_t grp, int64_t i0, int64_t n) {
    const int64_t p_begin = grp * g.P / groups, p_end = (grp + 1) * g.P / groups;
    for (int64_t p = p_begin; p < p_end; ++p) {
      sgemm_simd_rows(false, true, n, g.K, QN, 1.0f, xp + p * Wp * N, 0, rows.data() + i0,
                        dyp + p * QN, g.P * QN, nullptr, p == p_begin ? 0.0f : 1.0f,
                        partial + grp * KCRS + i0 * g.K, g.K);
    }
  });
  reduce_transposed_partials(partial, groups, CRS, g.K, dw);
  if (db) {  // db[k] = row_sum of dy'[k], one contiguous run of P*Q*N, in double
    parallel_for(0, g.K, grain_for(PQ * N), [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        db[k] = static_cast<float>(row_sum(dyp + k * PQ * N, PQ * N));
      }
    });
  }
}

}  // namespace ember::kernels::cpu::conv_detail
