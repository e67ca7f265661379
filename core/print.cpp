// Printing tensors the way PyTorch does, plus the shape and dtype spelled out:
//
//   tensor([[ 0.1000, -2.0000],
//           [ 3.5000,  4.0000]], shape=[2, 2], dtype=float32, grad_fn=<AddBackward>)
//
// All elements share one format (fixed with 4 decimals, or scientific when the magnitudes call
// for it, or integers), so columns line up. Large tensors show their first and last 3 entries
// per dimension with "..." between, as torch does above 1000 elements.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/autograd/node.h"
#include "core/tensor.h"

namespace ember {

namespace {

constexpr int64_t kSummarizeAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Format {
  enum Kind { Integer, Fixed, Scientific, Bool } kind = Fixed;
  int width = 1;
};

std::string format_value(double v, const Format& f) {
  char buf[64];
  switch (f.kind) {
    case Format::Bool: return v != 0 ? "True" : "False";
    case Format::Integer:
      std::snprintf(buf, sizeof buf, "%.0f", v);
      break;
    case Format::Fixed:
      std::snprintf(buf, sizeof buf, "%.4f", v);
      break;
    case Format::Scientific:
      std::snprintf(buf, sizeof buf, "%.4e", v);
      break;
  }
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return buf;
}

Format choose_format(const std::vector<double>& values, DType dtype) {
  Format f;
  if (dtype == kBool) f.kind = Format::Bool;
  else if (!is_floating(dtype)) f.kind = Format::Integer;
  else {
    double max_abs = 0, min_abs = INFINITY;
    bool all_int = true;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      const double a = std::fabs(v);
      max_abs = std::max(max_abs, a);
      if (a > 0) min_abs = std::min(min_abs, a);
      if (v != std::floor(v)) all_int = false;
    }
    if (max_abs >= 1e8 || (min_abs < 1e-4 && min_abs != INFINITY && !all_int)) f.kind = Format::Scientific;
    else if (all_int) f.kind = Format::Integer;
  }
  for (double v : values) {
    std::string s = format_value(v, f);
    if (f.kind == Format::Integer && is_floating(dtype)) s += ".";
    f.width = std::max<int>(f.width, static_cast<int>(s.size()));
  }
  return f;
}

struct Printer {
  const Tensor& t;  // contiguous float64 copy of the values
  const double* data;
  Format fmt;
  bool summarize;
  bool float_dtype;
  std::ostringstream os;

  void value(int64_t flat) {
    std::string s = format_value(data[flat], fmt);
    if (fmt.kind == Format::Integer && float_dtype) s += ".";
    os << std::string(static_cast<size_t>(std::max<int>(0, fmt.width - static_cast<int>(s.size()))), ' ') << s;
  }

  // Prints the sub-tensor starting at `flat` with dims [d, ndim).
  void rec(int64_t d, int64_t flat, int indent) {
    const Shape& shape = t.shape();
    const int64_t nd = static_cast<int64_t>(shape.size());
    os << "[";
    const int64_t n = shape[d];
    int64_t stride = 1;
    for (int64_t k = d + 1; k < nd; ++k) stride *= shape[k];
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        os << (d == nd - 1 ? "..., " : "...,\n" + std::string(static_cast<size_t>(indent + 1), ' '));
        i = n - kEdgeItems;
      }
      if (d == nd - 1) value(flat + i);
      else rec(d + 1, flat + i * stride, indent + 1);
      if (i + 1 < n) {
        if (d == nd - 1) os << ", ";
        else os << "," << std::string(static_cast<size_t>(nd - 1 - d), '\n')
                << std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
    os << "]";
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const Tensor host = (device().is_cpu() ? *this : cpu()).detach().to(kFloat64).contiguous();
  std::vector<double> values = host.to_vector<double>();
  const bool summarize = numel() > kSummarizeAbove;
  std::vector<double> shown;
  if (summarize) {  // only the edge items decide the format
    for (size_t i = 0; i < values.size(); ++i) {
      if (i < static_cast<size_t>(kEdgeItems) || i + kEdgeItems >= values.size()) shown.push_back(values[i]);
    }
  }
  Printer p{host, values.data(), choose_format(summarize ? shown : values, dtype()), summarize,
            is_floating(dtype()), {}};
  p.os << "tensor(";
  if (dim() == 0) p.value(0);
  else p.rec(0, 0, 7);
  p.os << ", shape=" << shape_str(shape()) << ", dtype=" << dtype_name(dtype());
  if (!device().is_cpu()) p.os << ", device='" << device().str() << "'";
  if (grad_fn()) p.os << ", grad_fn=<" << grad_fn()->name() << ">";
  else if (requires_grad()) p.os << ", requires_grad=True";
  p.os << ")";
  return p.os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ember
