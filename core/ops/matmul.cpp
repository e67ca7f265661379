// Op card: matmul — matrix product with torch.matmul's rules for 1-d and batched operands.
//
// Math      out[..., i, j] = sum_k a[..., i, k] * b[..., k, j]
//           1-d @ 1-d: the dot product (a 0-d result). A 1-d a is treated as a row [1, K] and a
//           1-d b as a column [K, 1]; the added dimension is removed from the result.
//           3-d and more: a stack of matrix products; the batch dims (all but the last two)
//           broadcast like elementwise ops: [B, 1, M, K] @ [S, K, N] -> [B, S, M, N].
// Backward  for one matrix product C = A @ B: dC_ij/dA_ik = B_kj, so
//             dL/dA = dL/dC @ B^T        dL/dB = A^T @ dL/dC
//           (both matmuls of views: the transposes are free). A batch dim that was broadcast
//           used one matrix for many outputs, so its gradients add: sum_to the input's shape.
//           The dims added for 1-d operands are added to dL/dout as well, then removed again.
// Shapes    a [..., M, K] (or [K]), b [..., K, N] (or [K]); out = broadcast(batch) + [M, N]
//           without the dims added for 1-d operands. Same dtype (float32/float64) and device.
// Dtypes    float32 or float64, a and b of one dtype, kept (as in PyTorch; integer matrices are
//           refused: docs/from_pytorch.md, integer-matmul-conv).
// Saved     a (only if b needs a gradient) and b (only if a needs one).
// Kernels   the gemm family (kernels/gemm.h) gemm / gemm_batched.
//           CPU: kernels/cpu/gemm.cpp: ember's SIMD kernel (kernels/cpu/gemm_simd.h, AVX-512
//           or AVX2) for float32 where it is faster, Eigen's GEMM otherwise; one matrix after
//           the other.
//           CUDA: kernels/cuda/gemm.cu: cuBLAS, or ember's own kernel
//           (kernels/cuda/gemm_tiled.cu) after cuda::set_gemm_backend(GemmBackend::Ember) and
//           always in the emulation build.
//
// No copies on the hot path: a matrix whose last stride is 1 is passed as stored; one whose
// second-to-last stride is 1 (a transposed view such as W.t()) is passed with the transpose
// flag; only other layouts are made contiguous first. When b is one matrix and a's batch dims
// are laid out evenly (any contiguous a), a [B, T, K] @ [K, N] is one [B*T, K] @ [K, N] GEMM.
#include <algorithm>

#include "core/cuda.h"
#include "core/ops/common.h"
#include "kernels/gemm.h"

namespace ember {

namespace {

// One operand as the GEMM kernel reads it: the tensor whose memory it walks (the operand
// itself, or a contiguous copy when neither of the last two strides is 1) and its layout.
struct GemmOperand {
  Tensor data;
  bool trans = false;
  int64_t ld = 1;
};

// t is [..., R, C]; every batch matrix has the same strides for its last two dims.
GemmOperand as_gemm_operand(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t R = t.shape()[nd - 2], C = t.shape()[nd - 1];
  const int64_t sr = t.strides()[nd - 2], sc = t.strides()[nd - 1];
  // Rows of C elements, sr apart (a size-1 dim's stride never matters). Rows that overlap
  // (sr < C, e.g. an expanded tensor) go to the copy below.
  if ((sc == 1 || C == 1) && (R == 1 || sr >= C))
    return {t, false, R == 1 ? std::max<int64_t>(C, 1) : sr};
  // Columns of R elements, sc apart: the stored matrix is [C, R], used transposed.
  if ((sr == 1 || R == 1) && (C == 1 || sc >= R))
    return {t, true, C == 1 ? std::max<int64_t>(R, 1) : sc};
  return {t.detach().contiguous(), false, std::max<int64_t>(C, 1)};
}

// If the dims before the last of t ([batch..., R]) can be merged into one row index with a
// single stride, returns that stride (any value when all those dims have size 1); else -1.
int64_t merged_row_stride(const Tensor& t) {
  const Shape& sh = t.shape();
  const Shape& st = t.strides();
  int64_t row_stride = 0, expected = -1;
  for (int64_t d = t.dim() - 2; d >= 0; --d) {
    if (sh[d] == 1) continue;
    if (expected >= 0 && st[d] != expected) return -1;
    if (expected < 0) row_stride = st[d];
    expected = st[d] * sh[d];
  }
  return expected < 0 ? std::max<int64_t>(sh.back(), 1) : row_stride;
}

// C = A @ B for one matrix, with the GEMM of the device the tensors live on.
void gemm_on(Device device, DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
             const void* a, int64_t lda, const void* b, int64_t ldb, void* c, int64_t ldc) {
  KernelsOn(device)->gemm.gemm(dt, ta, tb, M, N, K, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

// If batch matrix i of an operand starts at i * s elements for one s (s = 0: the same matrix
// every time), returns s; else -1. `bst` holds the operand's stride per batch dim (0 where
// broadcast). Such operands go to one strided-batched GEMM call on the GPU.
int64_t uniform_batch_stride(const Shape& bst, const Shape& batch) {
  int64_t s = -1, inner = 1;  // inner = number of matrices one step of dim d skips
  for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
    if (batch[d] != 1) {
      if (s < 0 && bst[d] % inner == 0) s = bst[d] / inner;
      if (s < 0 || bst[d] != s * inner) return -1;
    }
    inner *= batch[d];
  }
  return s < 0 ? 0 : s;
}

// out (fresh, contiguous, batch + [M, N] elements in row-major order) = a2 @ b2, where a2 is
// [..., M, K] and b2 [..., K, N] whose batch dims broadcast to `batch`.
void matmul_forward(const Tensor& a2, const Tensor& b2, const Shape& batch, const Tensor& out) {
  const int64_t M = a2.shape()[a2.dim() - 2], K = a2.shape()[a2.dim() - 1];
  const int64_t N = b2.shape()[b2.dim() - 1];
  const DType dt = a2.dtype();
  const int64_t es = static_cast<int64_t>(dtype_size(dt));
  char* c = static_cast<char*>(out.raw_data());

  // One matrix on the right, a stack on the left laid out evenly: fold the stack into rows.
  if (b2.dim() == 2 && a2.dim() > 2) {
    const int64_t row_stride = merged_row_stride(a2);
    if (row_stride >= 0) {
      const int64_t rows = shape_numel(batch) * M;
      const Tensor a_rows =
          make_view(a2, {rows, K}, {row_stride, a2.strides().back()}, a2.offset());
      const GemmOperand A = as_gemm_operand(a_rows), B = as_gemm_operand(b2);
      gemm_on(out.device(), dt, A.trans, B.trans, rows, N, K, A.data.raw_data(), A.ld,
              B.data.raw_data(), B.ld, c, N);
      return;
    }
  }

  const GemmOperand A = as_gemm_operand(a2), B = as_gemm_operand(b2);
  // Batch strides of each operand against the broadcast batch shape (0 where broadcast).
  const int64_t nb = static_cast<int64_t>(batch.size());
  Shape a_bst(nb, 0), b_bst(nb, 0);
  for (int64_t d = 0; d < nb; ++d) {
    const int64_t da = d - (nb - (A.data.dim() - 2)), db = d - (nb - (B.data.dim() - 2));
    if (da >= 0 && A.data.shape()[da] != 1) a_bst[d] = A.data.strides()[da];
    if (db >= 0 && B.data.shape()[db] != 1) b_bst[d] = B.data.strides()[db];
  }
  const char* a = static_cast<const char*>(A.data.raw_data());
  const char* b = static_cast<const char*>(B.data.raw_data());
  const int64_t batches = shape_numel(batch);
  // One call for the whole stack when each operand's matrices are evenly spaced (always true
  // for contiguous or broadcast operands): one launch on a GPU. One call per matrix otherwise.
  const int64_t sa = uniform_batch_stride(a_bst, batch), sb = uniform_batch_stride(b_bst, batch);
  if (sa >= 0 && sb >= 0) {
    KernelsOn(out)->gemm.gemm_batched(dt, A.trans, B.trans, M, N, K, 1.0, a, A.ld, sa, b, B.ld, sb,
                                      0.0, c, N, M * N, batches);
    return;
  }
  for (int64_t i = 0; i < batches; ++i) {
    int64_t a_off = 0, b_off = 0, rem = i;
    for (int64_t d = nb - 1; d >= 0; --d) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      a_off += idx * a_bst[d];
      b_off += idx * b_bst[d];
    }
    gemm_on(out.device(), dt, A.trans, B.trans, M, N, K, a + a_off * es, A.ld, b + b_off * es,
            B.ld, c + i * M * N * es, N);
  }
}

struct MatmulBackward final : ops::Node {
  ops::SavedTensor a, b;
  bool b_col_major = false;  // b is a 2-d column-major view (e.g. W.t())
  std::string name() const override { return "MatmulBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    const bool a_vec = input_shapes[0].size() == 1, b_vec = input_shapes[1].size() == 1;
    // Put back the dims the forward added for 1-d operands: g becomes batch + [M, N].
    Tensor g2 = g;
    if (b_vec) g2 = g2.unsqueeze(g2.dim());
    if (a_vec) g2 = g2.unsqueeze(g2.dim() - 1);
    Tensor ga, gb;
    if (needs_input_grad(0)) {
      Tensor B = b.unpack(*this, "other");
      if (b_vec) B = B.unsqueeze(1);
      Shape a2_shape = input_shapes[0];
      if (a_vec) a2_shape.insert(a2_shape.begin(), 1);
      ga = sum_to(matmul(g2, B.transpose(-1, -2)), a2_shape);
      if (ga.shape() != input_shapes[0]) ga = reshape(ga, input_shapes[0]);
    }
    if (needs_input_grad(1)) {
      Tensor A = a.unpack(*this, "self");
      if (a_vec) A = A.unsqueeze(0);
      Shape b2_shape = input_shapes[1];
      if (b_vec) b2_shape.push_back(1);
      // b stored column-major (a transposed view, as in Linear's x @ W.t()): compute the
      // gradient as (dC^T @ A)^T so it lands in b's own layout. Its transpose — the gradient of
      // W — is then contiguous, and the leaf's .grad needs no strided copy.
      if (b2_shape.size() == 2 && A.dim() > 2) {
        // One matrix b used by every batch: sum_batch A_i^T @ dC_i is one GEMM over all rows.
        const int64_t K = A.shape().back(), N = g2.shape().back();
        const Tensor A2 = A.reshape({-1, K}), G2 = g2.reshape({-1, N});
        gb = b_col_major ? matmul(G2.transpose(0, 1), A2).transpose(0, 1)
                         : matmul(A2.transpose(0, 1), G2);
      } else if (b_col_major) {
        gb = matmul(g2.transpose(-1, -2), A).transpose(-1, -2);
      } else {
        gb = sum_to(matmul(A.transpose(-1, -2), g2), b2_shape);
      }
      if (gb.shape() != input_shapes[1]) gb = reshape(gb, input_shapes[1]);
    }
    return {ga, gb};
  }
  void release_saved() override { a.reset(); b.reset(); }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  ops::check_defined("matmul", a, "first operand");
  ops::check_defined("matmul", b, "second operand");
  EMBER_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: ", shape_str(a.shape()), " @ ",
              shape_str(b.shape()), ": both operands need at least 1 dimension (for a 0-d "
              "scalar use mul)");
  ops::check_same_device("matmul", a, b);
  ops::check_same_dtype("matmul", a, b);
  ops::check_float("matmul", a);
  cuda::DeviceGuard guard(a.device());  // a no-op on the CPU

  // A 1-d a is read as a [1, K] row, a 1-d b as a [K, 1] column: plain views (make_view records
  // nothing on the tape; the forward below only reads memory).
  const Tensor a2 =
      a.dim() == 1 ? make_view(a, {1, a.shape()[0]}, {1, a.strides()[0]}, a.offset()) : a;
  const Tensor b2 =
      b.dim() == 1 ? make_view(b, {b.shape()[0], 1}, {b.strides()[0], 1}, b.offset()) : b;
  const int64_t M = a2.shape()[a2.dim() - 2], K = a2.shape()[a2.dim() - 1];
  const int64_t Kb = b2.shape()[b2.dim() - 2], N = b2.shape()[b2.dim() - 1];
  EMBER_CHECK(K == Kb, "matmul: ", shape_str(a.shape()), " @ ", shape_str(b.shape()),
              ": inner dimensions differ (", K, " vs ", Kb, ")");

  // Broadcast the batch dims (right-aligned, sizes equal or 1).
  const Shape a_batch(a2.shape().begin(), a2.shape().end() - 2);
  const Shape b_batch(b2.shape().begin(), b2.shape().end() - 2);
  const size_t nb = std::max(a_batch.size(), b_batch.size());
  Shape batch(nb);
  for (size_t k = 0; k < nb; ++k) {
    const int64_t sa = k < a_batch.size() ? a_batch[a_batch.size() - 1 - k] : 1;
    const int64_t sb = k < b_batch.size() ? b_batch[b_batch.size() - 1 - k] : 1;
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, "matmul: ", shape_str(a.shape()), " @ ",
                shape_str(b.shape()), ": batch dimensions ", shape_str(a_batch), " and ",
                shape_str(b_batch), " cannot be broadcast (", sa, " vs ", sb, ")");
    batch[nb - 1 - k] = sa == 1 ? sb : sa;
  }

  // The result without the dims added for 1-d operands has the same row-major element order.
  Shape out_shape = batch;
  if (a.dim() > 1) out_shape.push_back(M);
  if (b.dim() > 1) out_shape.push_back(N);
  Tensor out = ops::new_output(out_shape, a);
  matmul_forward(a2, b2, batch, out);

  if (autograd::grad_needed({&a, &b})) {
    auto node = std::make_shared<MatmulBackward>();
    if (b.requires_grad()) node->a = ops::SavedTensor(a);
    if (a.requires_grad()) node->b = ops::SavedTensor(b);
    node->b_col_major = b.dim() == 2 && b.stride(0) == 1 && b.stride(1) != 1;
    autograd::connect(node, out, {&a, &b});
  }
  return out;
}

}  // namespace ember
