// tests/fixture_file.h — the PyTorch reference files of tests/fixtures/ (ops.txt, written by
// make_fixtures.py; differential.txt, written by make_differential.py): parsing them, building a
// case's inputs in the memory layout it names, and calling the ember op a case names.
//
// The file format is described in make_fixtures.py's docstring (version 1) and
// make_differential.py's (version 2 adds uint8, storages shared by views, number arguments with
// their kind, and the `error` / `grad_error` lines for cases where PyTorch raised).
#pragma once

#include <array>
#include <functional>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "core/ember.h"

namespace ember::test {

struct FixtureTensor {
  std::string dtype;   // float64, float32, int64, uint8, bool
  std::string layout;  // contiguous, transposed, strided, view (inputs only)
  Shape shape;
  std::vector<double> values;  // logical elements, row-major (storages: the buffer)
  std::vector<int64_t> ints;   // the same values, exact, for int64 / uint8 / bool
  // layout "view": a view of storage `storage` with these strides and offset.
  int storage = -1;
  Shape strides;
  int64_t offset = 0;
};

struct FixtureCase {
  std::string op, label;
  int line = 0;  // of the `case` line, for messages
  std::vector<FixtureTensor> storages;
  std::vector<FixtureTensor> inputs;
  std::map<std::string, std::vector<std::string>> args;
  bool has_weight = false;
  FixtureTensor weight;
  std::vector<FixtureTensor> outputs;
  std::map<int, FixtureTensor> grads;  // input index -> d(sum(out0 * weight))/d(input)
  std::string error;       // non-empty: PyTorch raised this (no outputs)
  std::string grad_error;  // non-empty: PyTorch's backward raised this
};

struct FixtureFile {
  std::vector<FixtureCase> cases;
  std::string torch_version;
  int format_version = 0;
  std::string error;  // non-empty: the file is missing, truncated or corrupt
};

// `regenerate` is the command to print in messages ("/usr/bin/python3 tests/fixtures/...").
FixtureFile parse_fixtures(std::istream& in, const std::string& name, const std::string& regenerate);
// Reads EMBER_FIXTURE_DIR/<file> once and keeps it.
const FixtureFile& load_fixtures(const std::string& file, const std::string& regenerate);

DType dtype_from_name(const std::string& d);

// The case's inputs as leaves laid out as the file says (on the CPU), then — when `device` is
// not the CPU — copied to `device` with exactly that layout (storages shared between inputs stay
// shared). Inputs with a `grad` line require grad.
std::vector<Tensor> make_inputs(const FixtureCase& c, Device device = Device::cpu());

// The arguments of a case, typed.
struct Args {
  const std::map<std::string, std::vector<std::string>>& m;

  bool has(const std::string& name) const { return m.count(name) != 0; }
  const std::vector<std::string>& raw(const std::string& name) const;
  const std::string& one(const std::string& name) const;
  int64_t i(const std::string& name) const;
  double d(const std::string& name) const;
  bool b(const std::string& name) const { return i(name) != 0; }
  Shape shape(const std::string& name) const;
  std::array<int64_t, 2> pair(const std::string& name) const;
  Reduction reduction() const;
  // A number with its kind (`arg scalar int 3`), or a bare number (version 1) as a float.
  Scalar scalar(const std::string& name) const;
  std::string str(const std::string& name, const std::string& fallback = "") const;
};

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
using OpCall = std::function<Outputs(const Inputs&, const Args&)>;

// op name -> how to call ember for it.
const std::map<std::string, OpCall>& fixture_dispatch();

bool parse_number(const std::string& s, double& out);
bool parse_int(const std::string& s, int64_t& out);

}  // namespace ember::test
