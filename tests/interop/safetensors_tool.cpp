// tests/interop/safetensors_tool — ember's side of scripts/check-safetensors, which checks ember's
// safetensors files with readers that share no code with ember (the format's own Python library,
// and a reader written from the format's specification with Python's json and struct).
//
//   safetensors_tool write-sample FILE   writes tensors whose values follow closed formulas that
//                                        the checker computes on its own (listed below)
//   safetensors_tool dump FILE           loads FILE with ember::load_file and prints one JSON line
//                                        per tensor: name, dtype, shape, values (floats as C99
//                                        hex, exact), then one line with the metadata
//
// The sample, element i in row-major order:
//   f32 F32 [3, 4]   i * 0.25 - 1            f64 F64 [5]      (i - 2) / 3
//   i64 I64 [2, 3]   i * 1000000000007 - 7   u8 U8 [6]        i * 50
//   i32 I32 [2, 2]   i * 1431655765 - 2147483648 (INT32_MIN to INT32_MAX)
//   mask BOOL [5]    i % 2 == 0              scalar F32 []    1.5
//   empty F32 [0, 2] (none)                  transposed F64 [3, 2]  the transpose of [2, 3] i + 0.5
//   layer_1.weight F32 [4, 3]  (i % 7) * 0.125
// and __metadata__ {"purpose": "check-safetensors sample"}.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "core/ember.h"

using namespace ember;

namespace {

Tensor by_formula(const Shape& shape, DType dtype, double (*f)(int64_t)) {
  Tensor t = empty(shape, TensorOptions(dtype).device(Device::cpu()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = f(i);
    switch (dtype) {
      case DType::Float32: t.data_ptr<float>()[i] = static_cast<float>(v); break;
      case DType::Float64: t.data_ptr<double>()[i] = v; break;
      case DType::Int64: t.data_ptr<int64_t>()[i] = static_cast<int64_t>(v); break;
      case DType::Int32: t.data_ptr<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DType::UInt8: t.data_ptr<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DType::Bool: t.data_ptr<bool>()[i] = v != 0; break;
    }
  }
  return t;
}

int write_sample(const std::string& path) {
  Tensor i64 = empty({2, 3}, TensorOptions(kInt64).device(Device::cpu()));
  for (int64_t i = 0; i < 6; ++i) i64.data_ptr<int64_t>()[i] = i * 1000000000007LL - 7;
  const NamedTensors tensors = {
      {"f32", by_formula({3, 4}, kFloat32, [](int64_t i) { return i * 0.25 - 1; })},
      {"f64", by_formula({5}, kFloat64, [](int64_t i) { return (static_cast<double>(i) - 2) / 3; })},
      {"i64", i64},
      {"i32",
       by_formula({2, 2}, kInt32, [](int64_t i) { return i * 1431655765.0 - 2147483648.0; })},
      {"u8", by_formula({6}, kUInt8, [](int64_t i) { return i * 50.0; })},
      {"mask", by_formula({5}, kBool, [](int64_t i) { return i % 2 == 0 ? 1.0 : 0.0; })},
      {"scalar", by_formula({}, kFloat32, [](int64_t) { return 1.5; })},
      {"empty", zeros({0, 2}, TensorOptions(kFloat32).device(Device::cpu()))},
      {"transposed", by_formula({2, 3}, kFloat64, [](int64_t i) { return i + 0.5; }).t()},
      {"layer_1.weight", by_formula({4, 3}, kFloat32, [](int64_t i) { return (i % 7) * 0.125; })},
  };
  save(tensors, path, {{"purpose", "check-safetensors sample"}});
  return 0;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

int dump(const std::string& path) {
  const SafetensorsFile f = load_file(path);
  for (const auto& [name, t] : f.tensors) {
    std::printf("{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", json_escape(name).c_str(),
                dtype_name(t.dtype()));
    for (size_t d = 0; d < t.shape().size(); ++d) {
      std::printf("%s%" PRId64, d ? ", " : "", t.shape()[d]);
    }
    std::printf("], \"values\": [");
    for (int64_t i = 0; i < t.numel(); ++i) {
      const char* sep = i ? ", " : "";
      switch (t.dtype()) {
        case DType::Float32: std::printf("%s\"%a\"", sep, static_cast<double>(t.data_ptr<float>()[i])); break;
        case DType::Float64: std::printf("%s\"%a\"", sep, t.data_ptr<double>()[i]); break;
        case DType::Int64: std::printf("%s%" PRId64, sep, t.data_ptr<int64_t>()[i]); break;
        case DType::Int32: std::printf("%s%" PRId32, sep, t.data_ptr<int32_t>()[i]); break;
        case DType::UInt8: std::printf("%s%d", sep, t.data_ptr<uint8_t>()[i]); break;
        case DType::Bool: std::printf("%s%s", sep, t.data_ptr<bool>()[i] ? "true" : "false"); break;
      }
    }
    std::printf("]}\n");
  }
  std::printf("{\"metadata\": {");
  bool first = true;
  for (const auto& [k, v] : f.metadata) {
    std::printf("%s\"%s\": \"%s\"", first ? "" : ", ", json_escape(k).c_str(), json_escape(v).c_str());
    first = false;
  }
  std::printf("}}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc == 3 ? argv[1] : "";
  try {
    if (cmd == "write-sample") return write_sample(argv[2]);
    if (cmd == "dump") return dump(argv[2]);
  } catch (const Error& e) {
    std::fprintf(stderr, "safetensors_tool: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: safetensors_tool write-sample FILE | dump FILE\n");
  return 2;
}
