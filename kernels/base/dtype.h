// ember/kernels/base/dtype.h — element types and the switch that turns a runtime dtype into a C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "kernels/base/error.h"

namespace ember {

// float32 and float64 carry values and gradients (float64 is what gradcheck uses);
// int64 holds labels and indices; int32 holds integers from files and programs that use
// PyTorch's torch.int32 (safetensors "I32"); uint8 holds raw image bytes; bool holds masks.
// Int32 comes last so that the values of the older dtypes stay what they were.
enum class DType : uint8_t { Float32, Float64, Int64, UInt8, Bool, Int32 };

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kBool = DType::Bool;

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::Int32: return 4;
    case DType::UInt8: return 1;
    case DType::Bool: return 1;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "?";
}

inline bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64; }

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

// The C++ type behind each dtype, and back.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };

}  // namespace ember

// Dispatch a body over dtypes: inside BODY, `scalar_t` is the C++ element type.
//   EMBER_DISPATCH_FLOAT(dt, "exp", [&] { kernel<scalar_t>(...); });
// An unsupported dtype raises an error naming the op.
#define EMBER_DTYPE_CASE(enum_value, ctype, ...) \
  case enum_value: {                             \
    using scalar_t = ctype;                      \
    return __VA_ARGS__();                        \
  }

#define EMBER_DISPATCH_FLOAT(DT, OPNAME, ...)                                              \
  [&] {                                                                                    \
    switch (DT) {                                                                          \
      EMBER_DTYPE_CASE(::ember::DType::Float32, float, __VA_ARGS__)                        \
      EMBER_DTYPE_CASE(::ember::DType::Float64, double, __VA_ARGS__)                       \
      default:                                                                             \
        throw ::ember::ValueError(std::string(OPNAME) + ": expected a float32 or float64 " \
                                  "tensor, got " + ::ember::dtype_name(DT) +              \
                                  " (convert with .to(ember::kFloat32))");                 \
    }                                                                                      \
  }()

#define EMBER_DISPATCH_NUMERIC(DT, OPNAME, ...)                                      \
  [&] {                                                                              \
    switch (DT) {                                                                    \
      EMBER_DTYPE_CASE(::ember::DType::Float32, float, __VA_ARGS__)                  \
      EMBER_DTYPE_CASE(::ember::DType::Float64, double, __VA_ARGS__)                 \
      EMBER_DTYPE_CASE(::ember::DType::Int64, int64_t, __VA_ARGS__)                  \
      EMBER_DTYPE_CASE(::ember::DType::Int32, int32_t, __VA_ARGS__)                  \
      EMBER_DTYPE_CASE(::ember::DType::UInt8, uint8_t, __VA_ARGS__)                  \
      default:                                                                       \
        throw ::ember::ValueError(std::string(OPNAME) + ": not defined for dtype " + \
                                  ::ember::dtype_name(DT));                          \
    }                                                                                \
  }()

#define EMBER_DISPATCH_ALL(DT, OPNAME, ...)                         \
  [&] {                                                             \
    switch (DT) {                                                   \
      EMBER_DTYPE_CASE(::ember::DType::Float32, float, __VA_ARGS__) \
      EMBER_DTYPE_CASE(::ember::DType::Float64, double, __VA_ARGS__) \
      EMBER_DTYPE_CASE(::ember::DType::Int64, int64_t, __VA_ARGS__)  \
      EMBER_DTYPE_CASE(::ember::DType::Int32, int32_t, __VA_ARGS__)  \
      EMBER_DTYPE_CASE(::ember::DType::UInt8, uint8_t, __VA_ARGS__)  \
      EMBER_DTYPE_CASE(::ember::DType::Bool, bool, __VA_ARGS__)      \
    }                                                                \
    throw ::ember::ValueError(std::string(OPNAME) + ": bad dtype");  \
  }()
