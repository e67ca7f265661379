// ember/core/device.h — where a tensor lives: the CPU or one CUDA device.
#pragma once

#include <ostream>
#include <string>

namespace ember {

enum class DeviceType : uint8_t { CPU, CUDA };

// A device is a type plus an index. "cpu" has index -1; "cuda:N" names visible device N
// (after CUDA_VISIBLE_DEVICES has been applied, as in PyTorch); a bare "cuda" has index -1
// and means "the current CUDA device" until a tensor is actually placed there.
struct Device {
  DeviceType type = DeviceType::CPU;
  int index = -1;

  Device() = default;
  Device(DeviceType t, int i = -1) : type(t), index(i) {}
  // Parses "cpu", "cuda", "cuda:1". Throws ember::ValueError on anything else.
  Device(const std::string& spec);  // NOLINT: implicit, as torch.device("cuda") reads
  Device(const char* spec) : Device(std::string(spec)) {}  // NOLINT

  static Device cpu() { return Device(DeviceType::CPU, -1); }
  static Device cuda(int i = -1) { return Device(DeviceType::CUDA, i); }

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;

  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

// The device factories use when none is given (PyTorch's torch.set_default_device).
Device default_device();
void set_default_device(Device d);

}  // namespace ember
