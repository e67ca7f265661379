// ember/data/idx.h — reading the IDX files MNIST is distributed in, plain or gzipped.
//
// IDX (LeCun, Cortes and Burges, http://yann.lecun.com/exdb/mnist/) is a tiny header followed
// by raw elements, row-major:
//
//   offset 0   0x00 0x00          always zero
//   offset 2   element type       0x08 unsigned byte (MNIST uses only this one); 0x09 signed
//                                 byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
//   offset 3   d                  number of dimensions
//   offset 4   d sizes            big-endian uint32 each
//   then       the elements       prod(sizes) of them, nothing after
//
// So the first four bytes read as one big-endian "magic number": 0x00000801 for MNIST's label
// files ([N] bytes, values 0..9) and 0x00000803 for its image files ([N, 28, 28] bytes, 0 =
// background, 255 = ink). The files usually come gzipped; a gzip file is recognised by its own
// magic bytes (1f 8b), not by its name, and decompressed in memory (zlib).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember::data {

// What the caller expects the file to hold; Labels and Images add MNIST's rank check (1 and 3
// dims) so that swapped file names are reported as such.
enum class IdxKind { Any, Labels, Images };

// Reads an unsigned-byte IDX file into a uint8 tensor whose shape is the file's dims. Every
// problem raises ember::IOError naming the file and what is wrong with it: missing, wrong magic
// number, unsupported element type, wrong number of dims, truncated, bytes left over after the
// data, corrupt gzip stream.
Tensor read_idx(const std::string& path, IdxKind kind = IdxKind::Any);

// The bytes of a file, gunzipped when it starts with gzip's magic bytes. IOError when the file
// is missing or unreadable or its gzip stream is corrupt or cut short.
std::vector<uint8_t> read_maybe_gzipped(const std::string& path);

}  // namespace ember::data
