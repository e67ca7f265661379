// The index arithmetic every elementwise CUDA kernel runs, tested on the CPU.
//
// A CUDA thread that owns element i of an elementwise op finds its operands with
// kernels::loop_offsets(L, i, off) (kernels/base/loop.h), where L is the coalesced loop that
// ember::make_loop (core/iter.h) built from the tensors. Both are plain host/device C++, so this
// file checks them here, where CI runs, against the slowest possible reference: a nested-loop
// (odometer) walk over the broadcast shape that dots each coordinate with each operand's own
// strides. Operands are transposed, broadcast (missing dims, size-1 dims, stride-0 expands),
// sliced with steps and offsets, and 0-d scalars; ranks 1 to 5, odd sizes. A second, independent
// check reads the values: the element loop_offsets points at must be the element that
// expand(...).to_vector() puts at position i.
#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "core/iter.h"
#include "kernels/base/loop.h"

using namespace ember;

namespace {

// ---- building operands of every layout --------------------------------------------------------

// Distinct float64 values 0, 1, 2, ... in a contiguous tensor of the given shape.
Tensor ramp(const Shape& shape) {
  return arange(static_cast<double>(shape_numel(shape)), kFloat64).reshape(shape);
}

enum class Kind { Contiguous, Permuted, Sliced, Expanded, PermutedSliced };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Contiguous: return "contiguous";
    case Kind::Permuted: return "permuted";
    case Kind::Sliced: return "sliced";
    case Kind::Expanded: return "expanded (stride 0)";
    case Kind::PermutedSliced: return "permuted+sliced";
  }
  return "?";
}

// `shape` laid out in memory as a random permutation of its dims.
Tensor permuted(const Shape& shape, std::mt19937_64& rng) {
  const size_t r = shape.size();
  std::vector<int64_t> p(r);
  std::iota(p.begin(), p.end(), int64_t{0});
  std::shuffle(p.begin(), p.end(), rng);
  Shape base(r);
  for (size_t i = 0; i < r; ++i) base[i] = shape[static_cast<size_t>(p[i])];
  Shape inverse(r);
  for (size_t i = 0; i < r; ++i) inverse[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  return ramp(base).permute(inverse);  // dim j of the result is dim inverse[j] of base
}

// `shape` cut out of a larger tensor: every dim starts at an offset and steps by 1, 2 or 3.
Tensor sliced(const Shape& shape, std::mt19937_64& rng, bool permute_first) {
  const size_t r = shape.size();
  Shape big(r), start(r), step(r);
  for (size_t d = 0; d < r; ++d) {
    step[d] = 1 + static_cast<int64_t>(rng() % 3);
    start[d] = static_cast<int64_t>(rng() % 3);
    big[d] = start[d] + (shape[d] > 0 ? (shape[d] - 1) * step[d] + 1 : 0) +
             static_cast<int64_t>(rng() % 2);
  }
  Tensor t = permute_first ? permuted(big, rng) : ramp(big);
  for (size_t d = 0; d < r; ++d) {
    const auto dim = static_cast<int64_t>(d);
    t = t.slice(dim, start[d], start[d] + (shape[d] > 0 ? (shape[d] - 1) * step[d] + 1 : 0),
                step[d]);
  }
  return t;
}

Tensor make_operand(const Shape& shape, Kind kind, std::mt19937_64& rng) {
  switch (kind) {
    case Kind::Contiguous: return ramp(shape);
    case Kind::Permuted: return permuted(shape, rng);
    case Kind::Sliced: return sliced(shape, rng, false);
    case Kind::PermutedSliced: return sliced(shape, rng, true);
    case Kind::Expanded: {
      // Some dims of size > 1 become stride-0 repeats of a size-1 dim.
      Shape small = shape;
      for (int64_t& s : small)
        if (rng() % 2 == 0) s = std::min<int64_t>(s, 1);
      return ramp(small).expand(shape);
    }
  }
  return Tensor();
}

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << "shape " << shape_str(t.shape()) << " strides " << shape_str(t.strides()) << " offset "
     << t.offset();
  return os.str();
}

// ---- the check --------------------------------------------------------------------------------

// Walks iter_shape in row-major order with an odometer and compares, for every element and
// every operand, loop_offsets(make_loop(...)) with the dot product of the coordinates and the
// operand's broadcast strides; then compares the values found there with expand().to_vector().
template <int N>
void check_loop(const Shape& iter_shape, const std::array<const Tensor*, N>& ops,
                const std::string& what) {
  INFO(what);
  INFO("iteration shape " << shape_str(iter_shape));
  std::ostringstream operands;
  for (int k = 0; k < N; ++k) operands << "\n  operand " << k << ": " << describe(*ops[k]);
  INFO("operands:" << operands.str());

  const kernels::StridedLoop<N> L = make_loop<N>(iter_shape, ops, "check_loop");
  const int64_t numel = shape_numel(iter_shape);
  REQUIRE(L.numel == numel);
  REQUIRE(L.ndim >= 1);
  REQUIRE(L.ndim <= kernels::kMaxDims);
  int64_t product = 1, non_unit = 0;
  for (int d = 0; d < L.ndim; ++d) {
    product *= L.shape[d];
    if (L.ndim > 1) CHECK(L.shape[d] != 1);  // size-1 dims are dropped
  }
  for (int64_t s : iter_shape)
    if (s != 1) ++non_unit;
  CHECK(product == numel);
  CHECK(L.ndim <= std::max<int64_t>(non_unit, 1));  // coalescing never adds dims

  // Each operand's stride along each iteration dim (0 where it is broadcast).
  const size_t nd = iter_shape.size();
  std::vector<std::array<int64_t, N>> bstride(nd);
  for (int k = 0; k < N; ++k) {
    const Shape& s = ops[k]->shape();
    const Shape& st = ops[k]->strides();
    const int64_t lead = static_cast<int64_t>(nd) - static_cast<int64_t>(s.size());
    REQUIRE(lead >= 0);
    for (size_t d = 0; d < nd; ++d) {
      const int64_t sd = static_cast<int64_t>(d) - lead;
      bstride[d][static_cast<size_t>(k)] =
          (sd < 0 || s[static_cast<size_t>(sd)] == 1) ? 0 : st[static_cast<size_t>(sd)];
    }
  }
  // The values each operand holds at each iteration position, for the value check.
  std::vector<std::vector<double>> expected(N);
  std::vector<const double*> data(N);
  for (int k = 0; k < N; ++k) {
    const Tensor& t = *ops[k];
    expected[static_cast<size_t>(k)] = t.expand(iter_shape).to_vector<double>();
    data[static_cast<size_t>(k)] = t.numel() > 0 ? t.data_ptr<double>() : nullptr;
  }

  std::vector<int64_t> idx(nd, 0);
  int64_t bad_offsets = 0, bad_values = 0;
  std::string first_bad;
  for (int64_t i = 0; i < numel; ++i) {
    int64_t got[N];
    kernels::loop_offsets(L, i, got);
    // The 32-bit walk the GPU kernels take below 2^31 elements finds the same offsets.
    int64_t got32[N];
    kernels::loop_offsets<N, uint32_t>(L, static_cast<uint32_t>(i), got32);
    for (int k = 0; k < N; ++k) {
      if (got32[k] != got[k]) ++bad_offsets;
    }
    for (int k = 0; k < N; ++k) {
      int64_t ref = 0;
      for (size_t d = 0; d < nd; ++d) ref += idx[d] * bstride[d][static_cast<size_t>(k)];
      const double value = data[static_cast<size_t>(k)][got[k]];
      const bool offset_ok = got[k] == ref;
      const bool value_ok = value == expected[static_cast<size_t>(k)][static_cast<size_t>(i)];
      if (!offset_ok) ++bad_offsets;
      if (!value_ok) ++bad_values;
      if ((!offset_ok || !value_ok) && first_bad.empty()) {
        std::ostringstream os;
        os << "element " << i << " at " << shape_str(idx) << ", operand " << k
           << ": loop_offsets gives " << got[k] << ", the nested walk " << ref << "; value "
           << value << ", expected " << expected[static_cast<size_t>(k)][static_cast<size_t>(i)];
        first_bad = os.str();
      }
    }
    for (size_t d = nd; d-- > 0;) {  // the odometer: the last dim turns fastest
      if (++idx[d] < iter_shape[d]) break;
      idx[d] = 0;
    }
  }
  INFO(first_bad);
  CHECK(bad_offsets == 0);
  CHECK(bad_values == 0);
}

// A random operand for a loop over iter_shape: full shape or broadcast (leading dims dropped,
// some dims set to 1, or a 0-d scalar), in a random layout.
Tensor random_input(const Shape& iter_shape, std::mt19937_64& rng, std::string& how) {
  const int r = static_cast<int>(iter_shape.size());
  Shape s = iter_shape;
  const int choice = static_cast<int>(rng() % 6);
  if (choice == 0) {
    how = "0-d scalar";
    return scalar_tensor(42.0, kFloat64);
  }
  if (choice == 1 && r > 0) {  // drop some leading dims
    const int drop = 1 + static_cast<int>(rng() % static_cast<uint64_t>(r));
    s.erase(s.begin(), s.begin() + drop);
    how = "missing " + std::to_string(drop) + " leading dims, ";
  } else if (choice == 2) {  // size-1 dims
    for (int64_t& x : s)
      if (rng() % 2 == 0) x = 1;
    how = "size-1 dims, ";
  } else {
    how = "";
  }
  const Kind kind = static_cast<Kind>(rng() % 5);
  how += kind_name(kind);
  return make_operand(s, kind, rng);
}

Shape random_shape(int rank, std::mt19937_64& rng) {
  static const int64_t sizes[] = {1, 2, 3, 5, 7};
  Shape s(static_cast<size_t>(rank));
  for (int64_t& x : s) x = sizes[rng() % 5];
  return s;
}

}  // namespace

TEST_CASE("cuda logic: loop_offsets matches a nested-loop walk, 2 and 3 operands, ranks 1-5",
          "[cuda-logic]") {
  std::mt19937_64 rng(20240601);
  for (int rank = 1; rank <= 5; ++rank) {
    for (int trial = 0; trial < 150; ++trial) {
      const Shape iter_shape = random_shape(rank, rng);
      // The output: usually fresh and contiguous, sometimes a view (an in-place op's self);
      // never a stride-0 expand, which no op writes to.
      Kind out_kind = rng() % 3 == 0 ? static_cast<Kind>(1 + rng() % 4) : Kind::Contiguous;
      if (out_kind == Kind::Expanded) out_kind = Kind::PermutedSliced;
      const Tensor out = make_operand(iter_shape, out_kind, rng);
      std::string how_a, how_b;
      const Tensor a = random_input(iter_shape, rng, how_a);
      const Tensor b = random_input(iter_shape, rng, how_b);
      std::ostringstream what;
      what << "rank " << rank << ", trial " << trial << ": out " << kind_name(out_kind) << ", a "
           << how_a << ", b " << how_b;
      check_loop<2>(iter_shape, {&out, &a}, what.str() + " (unary)");
      check_loop<3>(iter_shape, {&out, &a, &b}, what.str() + " (binary)");
    }
  }
}

TEST_CASE("cuda logic: loop_offsets with 1 and 4 operands (fill, where)", "[cuda-logic]") {
  std::mt19937_64 rng(77);
  for (int rank = 1; rank <= 5; ++rank) {
    for (int trial = 0; trial < 60; ++trial) {
      const Shape iter_shape = random_shape(rank, rng);
      const Tensor out = make_operand(iter_shape, static_cast<Kind>(rng() % 3), rng);
      check_loop<1>(iter_shape, {&out}, "fill, rank " + std::to_string(rank));
      std::string h1, h2, h3;
      const Tensor c = random_input(iter_shape, rng, h1);
      const Tensor a = random_input(iter_shape, rng, h2);
      const Tensor b = random_input(iter_shape, rng, h3);
      check_loop<4>(iter_shape, {&out, &c, &a, &b},
                    "where, rank " + std::to_string(rank) + ": " + h1 + " / " + h2 + " / " + h3);
    }
  }
}

TEST_CASE("cuda logic: hand-picked layouts coalesce as expected", "[cuda-logic]") {
  // Same-shape contiguous operands of any rank: one dim, the contiguous fast path.
  {
    const Shape s = {3, 5, 7, 2, 3};
    const Tensor out = ramp(s), a = ramp(s), b = scalar_tensor(1.0, kFloat64);
    const auto L = make_loop<3>(s, {&out, &a, &b}, "test");
    CHECK(L.ndim == 1);
    CHECK(L.shape[0] == shape_numel(s));
    CHECK(L.strides[2][0] == 0);  // the scalar
    const auto L2 = make_loop<2>(s, {&out, &a}, "test");
    CHECK(L2.is_contiguous());
    check_loop<3>(s, {&out, &a, &b}, "contiguous rank 5 with a scalar");
  }
  // A transpose cannot be merged: two dims.
  {
    const Tensor out = ramp({7, 5}), a = ramp({5, 7}).t();
    const auto L = make_loop<2>({7, 5}, {&out, &a}, "test");
    CHECK(L.ndim == 2);
    CHECK_FALSE(L.is_contiguous());
    check_loop<2>({7, 5}, {&out, &a}, "transposed [7, 5]");
  }
  // Every other element: one dim of stride 2.
  {
    const Tensor out = ramp({1023}), a = ramp({2046}).slice(0, 0, 2046, 2);
    const auto L = make_loop<2>({1023}, {&out, &a}, "test");
    CHECK(L.ndim == 1);
    CHECK(L.strides[1][0] == 2);
    check_loop<2>({1023}, {&out, &a}, "strided [1023]");
  }
  // Broadcast of a row over a matrix: the row's stride 0 along the first dim.
  {
    const Tensor out = ramp({7, 9}), a = ramp({9}), b = ramp({7, 1});
    const auto L = make_loop<3>({7, 9}, {&out, &a, &b}, "test");
    CHECK(L.ndim == 2);
    CHECK(L.strides[1][0] == 0);
    CHECK(L.strides[2][1] == 0);
    check_loop<3>({7, 9}, {&out, &a, &b}, "row and column broadcast [7, 9]");
  }
  // All dims of size 1, and a 0-d loop: one dim of size 1.
  for (const Shape& s : {Shape{1, 1, 1}, Shape{}}) {
    const Tensor out = ramp(s), a = scalar_tensor(3.0, kFloat64);
    const auto L = make_loop<2>(s, {&out, &a}, "test");
    CHECK(L.ndim == 1);
    CHECK(L.shape[0] == 1);
    CHECK(L.numel == 1);
    check_loop<2>(s, {&out, &a}, "size-1 loop " + shape_str(s));
  }
  // An empty loop: numel 0, so a kernel launches nothing.
  {
    const Tensor out = ramp({3, 0, 2}), a = ramp({0, 2});
    const auto L = make_loop<2>({3, 0, 2}, {&out, &a}, "test");
    CHECK(L.numel == 0);
    check_loop<2>({3, 0, 2}, {&out, &a}, "empty [3, 0, 2]");
  }
  // More dims than a loop can hold is an error that names the op.
  {
    const Shape s(static_cast<size_t>(kernels::kMaxDims + 1), 1);
    const Tensor out = ramp(s);
    CHECK_THROWS_WITH(make_loop<1>(s, {&out}, "myop"), Catch::Contains("myop"));
  }
}

TEST_CASE("cuda logic: loop_offsets is 64-bit beyond 2^31 elements", "[cuda-logic]") {
  // A hand-built loop over a [5, 3e9] iteration space: operand 0 contiguous, operand 1 its
  // transpose, operand 2 broadcast along the long dim. No memory is touched: only the offsets
  // of a few elements near the end, where 32-bit arithmetic would have wrapped.
  kernels::StridedLoop<3> L;
  const int64_t rows = 5, cols = 3000000007;
  L.ndim = 2;
  L.numel = rows * cols;
  L.shape[0] = rows;
  L.shape[1] = cols;
  L.strides[0][0] = cols;
  L.strides[0][1] = 1;
  L.strides[1][0] = 1;
  L.strides[1][1] = rows;
  L.strides[2][0] = 1;
  L.strides[2][1] = 0;
  for (int64_t i : {int64_t{0}, cols - 1, cols, (int64_t{1} << 31) + 7, (int64_t{1} << 32) + 1,
                    L.numel - 2, L.numel - 1}) {
    INFO("element " << i);
    int64_t off[3];
    kernels::loop_offsets(L, i, off);
    const int64_t r = i / cols, c = i % cols;
    CHECK(off[0] == i);
    CHECK(off[1] == r + rows * c);
    CHECK(off[2] == r);
  }
}
