// fuzz/targets/cifar10.cpp — data::read_cifar10_batch against the format (data/cifar10.h): a
// whole number (at least one) of 3073-byte records <label 0..9> <3072 pixel bytes>.
//
// Properties: accepted exactly when valid; the images and labels are the records' bytes; a
// refusal is an ember::IOError naming the file and, for a size that is not a whole number of
// records, the size.
#include <cstring>
#include <string>

#include "kernels/base/error.h"
#include "data/cifar10.h"
#include "fuzz/targets/common.h"

namespace ember::fuzz {

void cifar10(const uint8_t* data, size_t n) {
  static MemFile file("cifar10");
  file.assign(data, n);
  constexpr size_t R = 3073;
  bool valid = n > 0 && n % R == 0;
  for (size_t i = 0; valid && i < n; i += R) valid = data[i] <= 9;

  std::string error;
  try {
    const data::TensorDataset d = data::read_cifar10_batch(file.path());
    FUZZ_CHECK(valid, "an invalid file was accepted");
    const int64_t records = static_cast<int64_t>(n / R);
    FUZZ_CHECK(d.data().shape() == Shape({records, 3, 32, 32}) && d.data().dtype() == kUInt8,
               "images shape " + shape_str(d.data().shape()));
    FUZZ_CHECK(d.targets().shape() == Shape({records}) && d.targets().dtype() == kInt64,
               "labels shape " + shape_str(d.targets().shape()));
    const auto* x = static_cast<const uint8_t*>(d.data().raw_data());
    const auto* y = static_cast<const int64_t*>(d.targets().raw_data());
    for (int64_t i = 0; i < records; ++i) {
      FUZZ_CHECK(y[i] == data[i * R], "label of record " + std::to_string(i));
      FUZZ_CHECK(std::memcmp(x + i * (R - 1), data + i * R + 1, R - 1) == 0,
                 "pixels of record " + std::to_string(i));
    }
  } catch (const IOError& e) {
    error = e.what();
    FUZZ_CHECK(!valid, "a valid file was refused: " + error);
    FUZZ_CHECK(error.find(file.path()) != std::string::npos, "the message must name the file: " + error);
    if (n % R != 0) {
      FUZZ_CHECK(error.find(std::to_string(n) + " bytes") != std::string::npos,
                 "the message must give the file's size: " + error);
    }
  }
}

}  // namespace ember::fuzz
