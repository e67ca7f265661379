// ember/kernels/emulator/vector_types.h — CUDA's built-in vector types for the emulation
// build: dim3, uint3, float4, double2, ...
//
// They have the sizes and, what matters for kernels that load 16 bytes at once, the alignments
// the CUDA headers give them: a float4 or a double2 is 16-byte aligned, a float2 8-byte, a
// three-component type only as aligned as its element. A kernel that reinterprets a pointer as
// `const float4*` is therefore laid out exactly as on a GPU, and the emulator's memcheck reports
// a 16-byte load from an address that is not a multiple of 16 as the misaligned access it is.
#pragma once

#include <cstdint>

// One-, two-, three- and four-component vectors of T named NAME1..NAME4, with make_NAMEk().
// A2 and A4 are the alignments CUDA gives the two- and four-component types.
#define EMBER_EMU_VECTOR_TYPES(T, NAME, A2, A4)                                                  \
  struct alignas(sizeof(T)) NAME##1 {                                                            \
    T x;                                                                                          \
  };                                                                                              \
  struct alignas(A2) NAME##2 {                                                                   \
    T x, y;                                                                                       \
  };                                                                                              \
  struct alignas(sizeof(T)) NAME##3 {                                                            \
    T x, y, z;                                                                                    \
  };                                                                                              \
  struct alignas(A4) NAME##4 {                                                                   \
    T x, y, z, w;                                                                                 \
  };                                                                                              \
  inline constexpr NAME##1 make_##NAME##1(T x) { return NAME##1{x}; }                            \
  inline constexpr NAME##2 make_##NAME##2(T x, T y) { return NAME##2{x, y}; }                    \
  inline constexpr NAME##3 make_##NAME##3(T x, T y, T z) { return NAME##3{x, y, z}; }            \
  inline constexpr NAME##4 make_##NAME##4(T x, T y, T z, T w) { return NAME##4{x, y, z, w}; }

EMBER_EMU_VECTOR_TYPES(signed char, char, 2, 4)
EMBER_EMU_VECTOR_TYPES(unsigned char, uchar, 2, 4)
EMBER_EMU_VECTOR_TYPES(short, short, 4, 8)
EMBER_EMU_VECTOR_TYPES(unsigned short, ushort, 4, 8)
EMBER_EMU_VECTOR_TYPES(int, int, 8, 16)
EMBER_EMU_VECTOR_TYPES(unsigned int, uint, 8, 16)
EMBER_EMU_VECTOR_TYPES(long, long, 2 * sizeof(long), 16)
EMBER_EMU_VECTOR_TYPES(unsigned long, ulong, 2 * sizeof(long), 16)
EMBER_EMU_VECTOR_TYPES(long long, longlong, 16, 16)
EMBER_EMU_VECTOR_TYPES(unsigned long long, ulonglong, 16, 16)
EMBER_EMU_VECTOR_TYPES(float, float, 8, 16)
EMBER_EMU_VECTOR_TYPES(double, double, 16, 16)

#undef EMBER_EMU_VECTOR_TYPES

static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 as in CUDA");
static_assert(sizeof(double2) == 16 && alignof(double2) == 16, "double2 as in CUDA");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2 as in CUDA");
static_assert(sizeof(float3) == 12 && alignof(float3) == 4, "float3 as in CUDA");
static_assert(sizeof(uint4) == 16 && alignof(uint4) == 16, "uint4 as in CUDA");

// Launch dimensions: unspecified components are 1, as in CUDA (dim3(256) is 256 x 1 x 1).
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
