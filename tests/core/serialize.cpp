// safetensors files (core/serialize.h) and Module::load_state_dict: round trips of every dtype,
// files written by PyTorch (tests/fixtures/safetensors/, made by make_fixtures.py there), and
// every way a file can be broken — truncated at each byte, headers that lie about sizes and
// offsets, unknown dtypes, forged lengths — each of which must give an IOError naming the file,
// never a crash or a huge allocation.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "nn/nn.h"
#include "test_files.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::error_of;
using test::read_bytes;
using test::write_bytes;

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_serialize_") {}
};

const std::string kFixtures = std::string(EMBER_FIXTURE_DIR) + "/safetensors/";

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.numel()) * x.element_size()) == 0;
}

const Tensor& find(const NamedTensors& list, const std::string& name) {
  for (const auto& [n, t] : list)
    if (n == name) return t;
  FAIL("no tensor named " << name);
  static Tensor none;
  return none;
}

// A safetensors file from a header text and a data buffer, for the broken-file tests.
Bytes make_file(const std::string& header, const Bytes& data, int64_t forged_length = -1) {
  Bytes out(8);
  const uint64_t n = forged_length >= 0 ? static_cast<uint64_t>(forged_length) : header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The message of the IOError that loading `bytes` from a file raises.
std::string load_error(const TempDir& dir, const Bytes& bytes, const std::string& name = "bad.safetensors") {
  const std::string path = dir / name;
  write_bytes(path, bytes);
  const std::string msg = error_of<IOError>([&] { load(path); });
  CHECK_THAT(msg, Contains(path));  // every message names the file
  return msg;
}

// A small model named as the PyTorch fixture's MLP: layer_1 (6 -> 5), layer_2 (5 -> 3).
struct TinyMLP : nn::Layer {
  std::shared_ptr<nn::Linear> layer_1, layer_2;
  TinyMLP() {
    layer_1 = register_module("layer_1", std::make_shared<nn::Linear>(6, 5));
    layer_2 = register_module("layer_2", std::make_shared<nn::Linear>(5, 3));
  }
  Tensor forward(const Tensor& x) override { return (*layer_2)(relu((*layer_1)(x))); }
};

}  // namespace

TEST_CASE("safetensors: every dtype, shape and layout round-trips bit for bit", "[serialize]") {
  TempDir dir;
  manual_seed(1);
  NamedTensors tensors = {
      {"layer_1.weight", randn({5, 7})},
      {"f64", randn({3}, kFloat64) * 1e300},
      {"i64", from_vector<int64_t>({INT64_MIN, -1, 0, INT64_MAX}, {2, 2}, kInt64)},
      {"u8", from_vector<uint8_t>({0, 1, 128, 255}, {4}, kUInt8)},
      {"mask", from_vector<int64_t>({1, 0, 1}, {3}, kInt64).to(kBool)},
      {"scalar", full({}, -2.5)},
      {"empty", zeros({0, 4})},
      {"transposed", randn({4, 3}).t()},                 // not contiguous: saved row-major
      {"narrowed", arange(0, 20, 1, kFloat64).narrow(0, 5, 10)},  // an offset into storage
  };
  const std::string path = dir / "all.safetensors";
  save(tensors, path, {{"note", "hello"}});
  const SafetensorsFile f = load_file(path);
  REQUIRE(f.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(f.tensors[i].first == tensors[i].first);  // the header's order is the save order
    CHECK(same_bits(f.tensors[i].second, tensors[i].second));
    CHECK(f.tensors[i].second.is_contiguous());
    CHECK(f.tensors[i].second.device().is_cpu());
  }
  CHECK(f.metadata.at("format") == "pt");
  CHECK(f.metadata.at("ember_version") == version_string());
  CHECK(f.metadata.at("note") == "hello");
  CHECK(load_metadata(path) == f.metadata);

  // The layout the format asks for: u64 little-endian header length, then JSON starting with
  // '{', padded so that the data starts 8-byte aligned.
  const Bytes bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  CHECK(n % 8 == 0);
  CHECK(bytes[8] == '{');
  uint64_t data = 0;
  for (const auto& [name, t] : tensors) data += static_cast<uint64_t>(t.numel()) * t.element_size();
  CHECK(bytes.size() == 8 + n + data);
}

TEST_CASE("safetensors: saving twice replaces the file and leaves no temporary file", "[serialize]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  save({{"a", ones({3})}}, path);
  save({{"b", zeros({2})}}, path);
  const NamedTensors t = load(path);
  REQUIRE(t.size() == 1);
  CHECK(t[0].first == "b");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.str())) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("safetensors: a write that fails leaves the old file as it was", "[serialize]") {
  TempDir dir;
  const std::string path = dir / "keep.safetensors";
  save({{"a", ones({3})}}, path);
  const Bytes before = read_bytes(path);
  CHECK_THROWS_AS(write_file_atomically(path,
                                        [](FileSink& out) {
                                          out.write("partial", 7);
                                          throw IOError("disk full (simulated)");
                                        }),
                  IOError);
  CHECK(read_bytes(path) == before);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.str())) {
    (void)e;
    ++files;
  }
  CHECK(files == 1);  // the temporary file is gone
  CHECK_THAT(error_of<IOError>([&] { save({{"a", ones({1})}}, dir / "no/such/folder/x.safetensors"); }),
             Contains("does not exist"));
}

TEST_CASE("safetensors: save refuses bad names with a message", "[serialize]") {
  TempDir dir;
  const std::string p = dir / "x.safetensors";
  CHECK_THAT(error_of<ValueError>([&] { save({{"a", ones({1})}, {"a", ones({2})}}, p); }),
             Contains("two tensors are named 'a'"));
  CHECK_THAT(error_of<ValueError>([&] { save({{"", ones({1})}}, p); }), Contains("empty name"));
  CHECK_THAT(error_of<ValueError>([&] { save({{"__metadata__", ones({1})}}, p); }),
             Contains("reserved"));
  CHECK_THAT(error_of<ValueError>([&] { save({{"u", Tensor()}}, p); }), Contains("undefined"));
  CHECK_FALSE(fs::exists(p));
}

TEST_CASE("safetensors: a file written by PyTorch loads with the same values", "[serialize][fixtures]") {
  const SafetensorsFile f = load_file(kFixtures + "torch_dtypes.safetensors");
  CHECK(f.metadata.at("written_by") == "tests/fixtures/safetensors/make_fixtures.py");
  std::ifstream in(kFixtures + "torch_dtypes.txt");
  REQUIRE(in.good());
  std::string line;
  int checked = 0, total = -1;
  const std::map<std::string, DType> dtypes = {
      {"F32", kFloat32}, {"F64", kFloat64}, {"I64", kInt64}, {"U8", kUInt8}, {"BOOL", kBool}};
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, dtype, shape_text;
    ls >> name;
    if (name == "total") {
      ls >> total;
      break;
    }
    ls >> dtype >> shape_text;
    INFO(name);
    const Tensor& t = find(f.tensors, name);
    REQUIRE(t.dtype() == dtypes.at(dtype));
    Shape shape;
    std::string dims = shape_text.substr(1, shape_text.size() - 2);
    for (size_t pos = 0; !dims.empty() && pos != std::string::npos;) {
      const size_t comma = dims.find(',', pos);
      shape.push_back(std::stoll(dims.substr(pos, comma - pos)));
      pos = comma == std::string::npos ? comma : comma + 1;
    }
    REQUIRE(t.shape() == shape);
    std::vector<std::string> values;
    for (std::string v; ls >> v;) values.push_back(v);
    REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
    Tensor expected = empty(shape, TensorOptions(t.dtype()).device(Device::cpu()));
    for (size_t i = 0; i < values.size(); ++i) {
      const char* v = values[i].c_str();
      switch (t.dtype()) {
        case DType::Float32: expected.data_ptr<float>()[i] = static_cast<float>(std::strtod(v, nullptr)); break;
        case DType::Float64: expected.data_ptr<double>()[i] = std::strtod(v, nullptr); break;
        case DType::Int64: expected.data_ptr<int64_t>()[i] = std::strtoll(v, nullptr, 10); break;
        case DType::UInt8: expected.data_ptr<uint8_t>()[i] = static_cast<uint8_t>(std::atoi(v)); break;
        case DType::Bool: expected.data_ptr<bool>()[i] = std::atoi(v) != 0; break;
      }
    }
    CHECK(same_bits(t, expected));
    ++checked;
  }
  CHECK(total == checked);
  CHECK(checked == 8);
}

TEST_CASE("safetensors: a PyTorch MLP's state_dict loads into ember and computes the same output", "[serialize][fixtures]") {
  TinyMLP model;
  const NamedTensors state = load(kFixtures + "torch_mlp.safetensors");
  const nn::Module::LoadResult r = model.load_state_dict(state);
  CHECK(r.missing_keys.empty());
  CHECK(r.unexpected_keys.empty());
  const NamedTensors io = load(kFixtures + "torch_mlp_io.safetensors");
  const Tensor y = model(find(io, "x"));
  const Tensor expected = find(io, "y");
  REQUIRE(y.shape() == expected.shape());
  const auto a = y.to_vector<float>(), b = expected.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-6));
  // And back: ember's file of the same weights holds the same bytes for every tensor.
  TempDir dir;
  save(model.state_dict(), dir / "again.safetensors");
  const NamedTensors again = load(dir / "again.safetensors");
  for (const auto& [name, t] : state) CHECK(same_bits(find(again, name), t));
}

TEST_CASE("safetensors: truncating a file at any byte gives an IOError", "[serialize][corrupt]") {
  TempDir dir;
  const std::string good = dir / "good.safetensors";
  save({{"w", randn({3, 5})}, {"i", arange(0, 4, 1, kInt64)}, {"m", ones({2}, kBool)}}, good);
  const Bytes bytes = read_bytes(good);
  for (size_t len = 0; len < bytes.size(); ++len) {
    INFO("truncated to " << len << " of " << bytes.size() << " bytes");
    load_error(dir, Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len)));
  }
  // Trailing garbage is as wrong as missing bytes.
  Bytes longer = bytes;
  longer.push_back(0);
  CHECK_THAT(load_error(dir, longer), Contains("extra bytes at the end"));
}

TEST_CASE("safetensors: changing any header byte gives a clean error or a valid file", "[serialize][corrupt]") {
  TempDir dir;
  const std::string good = dir / "good.safetensors";
  save({{"w", randn({2, 3})}, {"b", zeros({3}, kFloat64)}}, good);
  const Bytes bytes = read_bytes(good);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  const std::string path = dir / "flipped.safetensors";
  int errors = 0;
  for (size_t pos = 0; pos < 8 + n; ++pos) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x10}, uint8_t{0x80}}) {
      Bytes b = bytes;
      b[pos] ^= flip;
      write_bytes(path, b);
      try {
        load(path);
      } catch (const IOError& e) {
        ++errors;
        INFO(e.what());
        CHECK_THAT(std::string(e.what()), Contains(path));
      }
      // Anything else (another exception type, a crash) fails the test.
    }
  }
  CHECK(errors > 0);
}

TEST_CASE("safetensors: headers that lie are refused with a message saying how", "[serialize][corrupt]") {
  TempDir dir;
  const Bytes twelve(12, 0);  // room for three F32
  auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape,
                  uint64_t b, uint64_t e) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":[" + std::to_string(b) + "," + std::to_string(e) + "]}";
  };
  CHECK_THAT(load_error(dir, {}), Contains("too short"));
  CHECK_THAT(load_error(dir, make_file("{}", {}, int64_t{1} << 62)),
             Contains("over the format's limit"));
  CHECK_THAT(load_error(dir, make_file("{}", {}, 5000)), Contains("only 2 bytes follow"));
  CHECK_THAT(load_error(dir, make_file("{\"a\": [1,", {})), Contains("not valid JSON"));
  CHECK_THAT(load_error(dir, make_file("[1, 2]", {})), Contains("does not start with '{'"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "BF16", "[6]", 0, 12) + "}", twelve)),
             Contains("dtype BF16") && Contains("F32, F64, I64, I32, U8 and BOOL"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F32", "[2]", 0, 12) + "}", twelve)),
             Contains("needs 8 bytes but data_offsets [0, 12] hold 12"));
  // A shape whose byte count would overflow 64 bits, or exceed the file: refused before any
  // allocation.
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F64", "[4294967296,4294967296]", 0, 12) + "}", twelve)),
             Contains("needs more bytes than the file's 12 bytes"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "U8", "[1000000000000]", 0, 1000000000000) + "}", twelve)),
             Contains("needs more bytes"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "U8", "[20]", 0, 20) + "}", twelve)),
             Contains("needs more bytes"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F32", "[2]", 0, 8) + "," +
                                       entry("b", "F32", "[2]", 4, 12) + "}", twelve)),
             Contains("'a' and 'b' overlap"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F32", "[1]", 0, 4) + "," +
                                       entry("b", "F32", "[1]", 8, 12) + "}", twelve)),
             Contains("belong to no tensor"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F32", "[1]", 8, 4) + "}", twelve)),
             Contains("end before they begin"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F32", "[1]", 16, 20) + "}", twelve)),
             Contains("past the end of the data"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F32", "[3]", 0, 12) + "," +
                                       entry("a", "F32", "[0]", 12, 12) + "}", twelve)),
             Contains("names tensor 'a' twice"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("a", "F32", "[-3]", 0, 12) + "}", twelve)),
             Contains("not a non-negative integer"));
  CHECK_THAT(load_error(dir, make_file("{\"a\":{\"shape\":[3],\"data_offsets\":[0,12]}}", twelve)),
             Contains("no \"dtype\""));
  CHECK_THAT(load_error(dir, make_file("{\"__metadata__\":{\"n\":3}}", {})), Contains("not a string"));
  CHECK_THAT(load_error(dir, make_file("{" + entry("m", "BOOL", "[3]", 0, 3) + "}", {1, 2, 0})),
             Contains("BOOL") && Contains("holds the byte 2"));
  CHECK_THAT(error_of<IOError>([&] { load(dir / "missing.safetensors"); }), Contains("no such file"));
  CHECK_THAT(error_of<IOError>([&] { load(dir.str()); }), Contains("is a folder"));
}

TEST_CASE("load_state_dict: missing, unexpected, mis-shaped and mis-typed keys are all named", "[serialize][nn]") {
  TinyMLP model;
  const Tensor w_before = model.layer_1->weight.clone();
  NamedTensors state = model.state_dict();
  for (auto& [k, t] : state) t = t.clone();
  state[0].second = zeros({5, 7});          // layer_1.weight: wrong shape
  state[1].second = zeros({5}, kFloat64);   // layer_1.bias: wrong dtype
  state.pop_back();                         // layer_2.bias: missing
  state.emplace_back("layer_3.weight", zeros({1}));  // unexpected
  const std::string msg = error_of<ValueError>([&] { model.load_state_dict(state); });
  CHECK_THAT(msg, Contains("4 problems"));
  CHECK_THAT(msg, Contains("missing keys (in the module, not in the state dict): layer_2.bias"));
  CHECK_THAT(msg, Contains("unexpected keys (in the state dict, not in the module): layer_3.weight"));
  CHECK_THAT(msg, Contains("layer_1.weight: shape [5, 7] in the state dict, [5, 6] in the module"));
  CHECK_THAT(msg, Contains("layer_1.bias: dtype float64 in the state dict, float32 in the module"));
  // Nothing was copied, not even the entries that were fine.
  CHECK(same_bits(model.layer_1->weight, w_before));

  // Without strict, missing and unexpected keys are reported, the rest is loaded.
  TinyMLP other;
  NamedTensors partial = {{"layer_2.weight", other.layer_2->weight.detach().clone()},
                          {"extra", ones({1})}};
  const nn::Module::LoadResult r = model.load_state_dict(partial, /*strict=*/false);
  CHECK(r.missing_keys == std::vector<std::string>{"layer_1.weight", "layer_1.bias", "layer_2.bias"});
  CHECK(r.unexpected_keys == std::vector<std::string>{"extra"});
  CHECK(same_bits(model.layer_2->weight, other.layer_2->weight));
  // Mismatched shapes are errors even then.
  CHECK_THROWS_AS(model.load_state_dict({{"layer_2.weight", zeros({1})}}, false), ValueError);
  // The parameters stay parameters: same tensors, still requiring grad.
  CHECK(model.layer_2->weight.requires_grad());
}

TEST_CASE("safetensors: load onto a CUDA device and into a CUDA module", "[serialize][cuda]") {
  if (!cuda::is_available()) {
    std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
    return;
  }
  TempDir dir;
  manual_seed(3);
  TinyMLP cpu_model;
  save(cpu_model.state_dict(), dir / "m.safetensors");
  const NamedTensors on_gpu = load(dir / "m.safetensors", Device("cuda"));
  for (const auto& [name, t] : on_gpu) CHECK(t.is_cuda());
  manual_seed(4);
  TinyMLP gpu_model;
  gpu_model.to(Device("cuda"));
  gpu_model.load_state_dict(load(dir / "m.safetensors"));  // CPU tensors into a CUDA module
  CHECK(gpu_model.layer_1->weight.is_cuda());
  CHECK(same_bits(gpu_model.layer_1->weight, cpu_model.layer_1->weight));
  CHECK(same_bits(find(on_gpu, "layer_2.bias"), cpu_model.layer_2->bias));
  // And a CUDA model saves the same file as its CPU twin.
  save(gpu_model.state_dict(), dir / "g.safetensors");
  CHECK(read_bytes(dir / "g.safetensors") == read_bytes(dir / "m.safetensors"));
}
