// Indexing, joining and views, checked directly: exact values on small examples (the gradcheck
// cases in tests/cases/index.cpp and layout.cpp only prove that forward and backward agree),
// storage sharing of views, the parallel paths of the index kernels against a serial
// reference, and the error messages.
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {
using V = std::vector<double>;

Tensor f64(const V& values, const Shape& shape) { return tensor(values, shape, kFloat64); }
Tensor i64(const V& values, const Shape& shape = {-1}) { return tensor(values, shape, kInt64); }
}  // namespace

// ---- exact values -----------------------------------------------------------------------------

TEST_CASE("gather: exact values", "[index]") {
  // The torch.gather documentation example: out[i][j] = a[i][index[i][j]].
  const Tensor a = f64({1, 2, 3, 4}, {2, 2});
  CHECK(gather(a, 1, i64({0, 0, 1, 0}, {2, 2})).to_vector<double>() == V{1, 1, 4, 3});
  // Along dim 0: out[i][j] = a[index[i][j]][j].
  CHECK(gather(a, 0, i64({1, 0, 1, 1}, {2, 2})).to_vector<double>() == V{3, 2, 3, 4});
  // An index narrower than the input in the other dim, longer along the gathered one.
  const Tensor b = arange(9, kFloat64).reshape({3, 3});
  const Tensor out = b.gather(1, i64({2, 2, 0, 0, 1, 2, 1, 0}, {2, 4}));
  CHECK(out.shape() == Shape{2, 4});
  CHECK(out.to_vector<double>() == V{2, 2, 0, 0, 4, 5, 4, 3});
  // Non-contiguous input and index.
  const Tensor bt = b.t();  // bt[i][j] = b[j][i] = 3j + i
  const Tensor it = i64({0, 2, 1, 1}, {2, 2}).t();  // [[0, 1], [2, 1]]
  CHECK(gather(bt, 1, it).to_vector<double>() == V{0, 3, 7, 4});
  // Empty index: empty output.
  CHECK(gather(b, 0, empty({0, 3}, kInt64)).shape() == Shape{0, 3});
}

TEST_CASE("scatter_add: exact values, repeated indices add up", "[index]") {
  const Tensor index = i64({0, 1, 2, 0, 0, 2, 0, 0, 1, 2}, {2, 5});
  const Tensor out = scatter_add(zeros({3, 5}, kFloat64), 0, index, ones({2, 5}, kFloat64));
  CHECK(out.to_vector<double>() == V{1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1});
  // Three values into one place, on top of the base values.
  const Tensor r =
      scatter_add(f64({10, 20}, {1, 2}), 1, i64({0, 0, 0}, {1, 3}), f64({1, 2, 3}, {1, 3}));
  CHECK(r.to_vector<double>() == V{16, 20});
  // The base is not modified.
  const Tensor base = zeros({2}, kFloat64);
  scatter_add(base, 0, i64({1}), f64({5}, {1}));
  CHECK(base.to_vector<double>() == V{0, 0});
}

TEST_CASE("index_select and index_add: exact values", "[index]") {
  const Tensor a = arange(12, kFloat64).reshape({3, 4});
  CHECK(index_select(a, 0, i64({2, 0, 2})).to_vector<double>() ==
        V{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  CHECK(a.index_select(1, i64({3, 1})).to_vector<double>() == V{3, 1, 7, 5, 11, 9});
  CHECK(a.index_select(-1, i64({}, {0})).shape() == Shape{3, 0});
  // Non-contiguous input (copied to contiguous first).
  CHECK(index_select(a.t(), 0, i64({1})).to_vector<double>() == V{1, 5, 9});
  // Works on integer tensors too (labels of a shuffled batch).
  CHECK(index_select(i64({7, 8, 9}), 0, i64({2, 2, 0})).to_vector<int64_t>() ==
        std::vector<int64_t>{9, 9, 7});

  const Tensor src = f64({1, 2, 10, 20, 100, 200}, {3, 2});
  const Tensor r = index_add(zeros({2, 2}, kFloat64), 0, i64({1, 0, 1}), src);
  CHECK(r.to_vector<double>() == V{10, 20, 101, 202});
  const Tensor c = index_add(ones({2, 3}, kFloat64), 1, i64({2, 2}), f64({1, 2, 3, 4}, {2, 2}));
  CHECK(c.to_vector<double>() == V{1, 1, 4, 1, 1, 8});
}

TEST_CASE("cat and stack: exact values", "[index]") {
  const Tensor a = f64({1, 2}, {1, 2});
  const Tensor b = f64({3, 4, 5, 6}, {2, 2});
  CHECK(cat({a, b}, 0).to_vector<double>() == V{1, 2, 3, 4, 5, 6});
  CHECK(cat({a, b}, 0).shape() == Shape{3, 2});
  const Tensor c = f64({1, 2}, {2, 1});
  CHECK(cat({c, b}, 1).to_vector<double>() == V{1, 3, 4, 2, 5, 6});
  CHECK(cat({c, b}, -1).shape() == Shape{2, 3});
  // A transposed input: b.t() = [[3, 5], [4, 6]].
  CHECK(cat({b.t(), a}, 0).to_vector<double>() == V{3, 5, 4, 6, 1, 2});
  // A single tensor: a copy.
  CHECK(cat({b}, 0).to_vector<double>() == b.to_vector<double>());

  const Tensor x = f64({1, 2}, {2});
  const Tensor y = f64({3, 4}, {2});
  CHECK(stack({x, y}, 0).shape() == Shape{2, 2});
  CHECK(stack({x, y}, 0).to_vector<double>() == V{1, 2, 3, 4});
  CHECK(stack({x, y}, 1).to_vector<double>() == V{1, 3, 2, 4});
  CHECK(stack({x, y}, -1).to_vector<double>() == V{1, 3, 2, 4});
  const Tensor five = scalar_tensor(5, kFloat64), six = scalar_tensor(6, kFloat64);
  CHECK(stack({five, six}).to_vector<double>() == V{5, 6});
}

TEST_CASE("index ops: exact gradients with repeated indices", "[index][autograd]") {
  Tensor a = f64({1, 2, 3}, {3}).requires_grad_(true);
  gather(a, 0, i64({0, 0, 2})).sum().backward();
  CHECK(a.grad().to_vector<double>() == V{2, 0, 1});

  Tensor w = arange(6, kFloat64).reshape({3, 2}).detach().requires_grad_(true);
  index_select(w, 0, i64({2, 2, 1, 2})).sum().backward();
  CHECK(w.grad().to_vector<double>() == V{0, 0, 1, 1, 3, 3});

  Tensor base = zeros({2}, kFloat64).requires_grad_(true);
  Tensor src = f64({1, 2, 3}, {3}).requires_grad_(true);
  (index_add(base, 0, i64({1, 1, 0}), src) * f64({10, 100}, {2})).sum().backward();
  CHECK(base.grad().to_vector<double>() == V{10, 100});
  CHECK(src.grad().to_vector<double>() == V{100, 100, 10});

  Tensor p = f64({1, 2}, {1, 2}).requires_grad_(true);
  Tensor q = f64({3, 4, 5, 6}, {2, 2}).requires_grad_(true);
  (cat({p, q}, 0) * arange(6, kFloat64).reshape({3, 2})).sum().backward();
  CHECK(p.grad().to_vector<double>() == V{0, 1});
  CHECK(q.grad().to_vector<double>() == V{2, 3, 4, 5});
  CHECK(cat({p, q}, 0).grad_fn()->name() == "CatBackward");
}

TEST_CASE("index kernels: parallel paths match a serial reference", "[index]") {
  // Sizes above the kernels' grain so that every thread gets work.
  const int64_t rows = 300, cols = 257;
  manual_seed(7);
  const Tensor data = randint(-50, 50, {rows, cols}).to(kFloat32);
  const Tensor perm = randperm(rows);
  const Tensor batch = index_select(data, 0, perm);
  const auto d = data.to_vector<float>();
  const auto p = perm.to_vector<int64_t>();
  const auto b = batch.to_vector<float>();
  bool same = true;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) same = same && b[i * cols + j] == d[p[i] * cols + j];
  CHECK(same);

  // index_add with many collisions (1000 source rows into 37): integer-valued floats make the
  // sums exact whatever the order, so the result must equal the serial one exactly.
  const int64_t n = 1000, size = 37;
  const Tensor idx = randint(0, size, {n});
  const Tensor src = randint(-9, 10, {n, cols}).to(kFloat64);
  const Tensor got = index_add(zeros({size, cols}, kFloat64), 0, idx, src);
  std::vector<double> want(static_cast<size_t>(size * cols), 0.0);
  const auto ix = idx.to_vector<int64_t>();
  const auto s = src.to_vector<double>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < cols; ++j) want[ix[i] * cols + j] += s[i * cols + j];
  CHECK(got.to_vector<double>() == want);

  // scatter_add along dim 0 has the same collisions, partitioned by column lines.
  const Tensor sidx = randint(0, size, {n, cols});
  const Tensor sgot = scatter_add(zeros({size, cols}, kFloat64), 0, sidx, src);
  std::vector<double> swant(static_cast<size_t>(size * cols), 0.0);
  const auto si = sidx.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < cols; ++j) swant[si[i * cols + j] * cols + j] += s[i * cols + j];
  CHECK(sgot.to_vector<double>() == swant);
  // And gather reads back what gather should.
  const Tensor g = gather(src, 0, sidx.narrow(0, 0, 5));
  const auto gv = g.to_vector<double>();
  bool gsame = true;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < cols; ++j)
      gsame = gsame && gv[i * cols + j] == s[si[i * cols + j] * cols + j];
  CHECK(gsame);
}

// ---- views share storage --------------------------------------------------------------------

TEST_CASE("views: layout and storage sharing", "[layout]") {
  Tensor base = arange(12, kFloat64).reshape({3, 4}).detach().requires_grad_(true);

  const Tensor t = base.transpose(0, 1);
  CHECK(t.shape() == Shape{4, 3});
  CHECK(t.strides() == Shape{1, 4});
  CHECK(t.offset() == 0);
  CHECK(t.storage() == base.storage());
  CHECK_FALSE(t.is_contiguous());

  const Tensor n = base.narrow(1, 1, 2);
  CHECK(n.shape() == Shape{3, 2});
  CHECK(n.strides() == Shape{4, 1});
  CHECK(n.offset() == 1);

  const Tensor s = base.slice(1, 0, 4, 2);
  CHECK(s.shape() == Shape{3, 2});
  CHECK(s.strides() == Shape{4, 2});
  CHECK(s.to_vector<double>() == V{0, 2, 4, 6, 8, 10});
  const Tensor sn = base.slice(0, -2, 3);  // rows 1 and 2
  CHECK(sn.shape() == Shape{2, 4});
  CHECK(sn.offset() == 4);
  const Tensor sel = base.select(1, -1);
  CHECK(sel.shape() == Shape{3});
  CHECK(sel.strides() == Shape{4});
  CHECK(sel.offset() == 3);
  CHECK(sel.to_vector<double>() == V{3, 7, 11});

  const Tensor e = base.select(0, 0).reshape({4, 1}).expand({2, 4, 3});
  CHECK(e.shape() == Shape{2, 4, 3});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(e.storage() == base.storage());

  const Tensor u = base.unsqueeze(1);
  CHECK(u.shape() == Shape{3, 1, 4});
  CHECK(u.squeeze(1).shape() == Shape{3, 4});
  CHECK(base.permute({1, 0}).strides() == Shape{1, 4});
  CHECK(base.view({2, 6}).storage() == base.storage());

  // Writing through views (as an optimizer step would, under NoGradGuard) changes the base.
  {
    NoGradGuard no_grad;
    t.select(0, 2).fill_(-1.0);          // column 2 of base
    s.select(0, 0).copy_(f64({50, 70}, {2}));  // base[0][0] and base[0][2]
    base.view({12}).narrow(0, 11, 1).fill_(99);
  }
  CHECK(base.to_vector<double>() == V{50, 1, 70, 3, 4, 5, -1, 7, 8, 9, -1, 99});
  CHECK(t.to_vector<double>()[2 * 3 + 1] == -1);  // t[2][1] is base[1][2]

  // Copies do not share: contiguous() of a transposed view and clone().
  const Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.storage() != base.storage());
  CHECK(base.contiguous().is_same(base));
  CHECK(base.clone().storage() != base.storage());
  // reshape of a non-contiguous tensor copies; of a contiguous one, views.
  CHECK(t.reshape({12}).storage() != base.storage());
  CHECK(base.reshape({12}).storage() == base.storage());
}

TEST_CASE("view: a layout that would need moved elements cannot be viewed, reshape can", "[layout]") {
  const Tensor t = arange(6).reshape({2, 3}).t();
  CHECK_THROWS_WITH(t.view({6}),
                    Contains("view") && Contains("without moving elements") && Contains("reshape"));
  CHECK(t.reshape({6}).to_vector<double>() == V{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_WITH(arange(6).view({4, -1}), Contains("view"));
}

TEST_CASE("layout ops: bad sizes and dims are refused", "[layout][errors]") {
  CHECK_THROWS_WITH(ones({1}).expand({-2}), Contains("expand") && Contains("-2"));
  CHECK_THROWS_WITH(ones({3, 1}).expand({2, 4}), Contains("expand") && Contains("[3, 1]"));
  CHECK(scalar_tensor(1).squeeze(-1).dim() == 0);
  CHECK_THROWS_WITH(scalar_tensor(1).squeeze(5), Contains("squeeze") && Contains("dim 5"));
  CHECK_THROWS_WITH(ones({2, 3}).select(1, 3), Contains("select") && Contains("index 3"));
  CHECK_THROWS_WITH(ones({2, 3}).narrow(0, 1, 2), Contains("narrow"));
  CHECK_THROWS_WITH(ones({2, 3}).permute({0, 0}), Contains("permute") && Contains("twice"));
}

TEST_CASE("to_dtype: gradient through float32 comes back as float64 ones", "[layout][autograd]") {
  Tensor x = f64({0.1, -2.5, 3.0, 1e-3, 7.0, 0.0}, {2, 3}).requires_grad_(true);
  const Tensor y = x.to(kFloat32);
  CHECK(y.dtype() == kFloat32);
  CHECK(y.grad_fn()->name() == "ToDtypeBackward");
  y.sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == kFloat64);
  CHECK(x.grad().shape() == Shape{2, 3});
  CHECK(x.grad().to_vector<double>() == V(6, 1.0));
  // Converting to an integer type ends the graph.
  CHECK_FALSE(x.to(kInt64).requires_grad());
  // The same dtype is the identity: no copy, no node.
  CHECK(x.to(kFloat64).is_same(x));
}

// ---- errors name the op and say what is wrong ---------------------------------------------

TEST_CASE("index ops: errors name the op, the bad value and the sizes", "[index][errors]") {
  const Tensor a = zeros({2, 3}, kFloat64);
  CHECK_THROWS_WITH(gather(a, 1, i64({0, 1, 2, 3}, {2, 2})),
                    Contains("gather") && Contains("index value 3") &&
                        Contains("position [1, 1]") && Contains("dim 1") && Contains("size 3"));
  CHECK_THROWS_WITH(gather(a, 0, i64({-1, 0}, {1, 2})), Contains("gather") && Contains("value -1"));
  CHECK_THROWS_WITH(gather(a, 1, zeros({2, 2}, kFloat64)), Contains("gather") && Contains("int64"));
  CHECK_THROWS_WITH(gather(a, 1, i64({0, 0}, {2})),
                    Contains("gather") && Contains("same number of dims"));
  CHECK_THROWS_WITH(gather(a, 1, i64({0, 0, 0}, {3, 1})), Contains("gather") && Contains("larger"));
  CHECK_THROWS_WITH(gather(a, 2, i64({0}, {1, 1})), Contains("gather") && Contains("dim 2"));

  CHECK_THROWS_WITH(scatter_add(a, 0, i64({2}, {1, 1}), ones({1, 1}, kFloat64)),
                    Contains("scatter_add") && Contains("index value 2") && Contains("size 2"));
  CHECK_THROWS_WITH(scatter_add(a, 0, i64({0, 0}, {1, 2}), ones({1, 1}, kFloat64)),
                    Contains("scatter_add") && Contains("src"));
  CHECK_THROWS_WITH(scatter_add(a, 0, i64({0}, {1, 1}), ones({1, 1}, kFloat32)),
                    Contains("scatter_add") && Contains("dtypes differ"));

  CHECK_THROWS_WITH(index_select(a, 0, i64({0, 5, 1})),
                    Contains("index_select") && Contains("index value 5") &&
                        Contains("position 1") && Contains("size 2"));
  CHECK_THROWS_WITH(index_select(a, 0, i64({0, 1}, {1, 2})),
                    Contains("index_select") && Contains("1-d"));
  CHECK_THROWS_WITH(index_select(a, 0, zeros({1}, kFloat32)),
                    Contains("index_select") && Contains("int64"));
  CHECK_THROWS_WITH(index_add(a, 1, i64({3}), ones({2, 1}, kFloat64)),
                    Contains("index_add") && Contains("index value 3"));
  CHECK_THROWS_WITH(index_add(a, 1, i64({0, 1}), ones({2, 3}, kFloat64)),
                    Contains("index_add") && Contains("[2, 2]"));
}

TEST_CASE("cat and stack: errors say which tensor and which dim differ", "[index][errors]") {
  const Tensor a = zeros({2, 3});
  CHECK_THROWS_WITH(cat({a, zeros({2, 3}), zeros({2, 4})}, 0),
                    Contains("cat") && Contains("tensor 2") && Contains("[2, 4]") &&
                        Contains("dim 1"));
  CHECK_THROWS_WITH(cat({a, zeros({2, 3, 1})}, 0), Contains("cat") && Contains("tensor 1"));
  CHECK_THROWS_WITH(cat({}, 0), Contains("cat") && Contains("empty"));
  CHECK_THROWS_WITH(cat({a}, 2), Contains("cat") && Contains("dim 2"));
  CHECK_THROWS_WITH(cat({scalar_tensor(1)}, 0), Contains("cat") && Contains("stack"));
  CHECK_THROWS_WITH(stack({a, zeros({3, 2})}, 0),
                    Contains("stack") && Contains("tensor 1") && Contains("[3, 2]"));
  CHECK_THROWS_WITH(stack({a}, 3), Contains("stack") && Contains("dim 3"));
}
