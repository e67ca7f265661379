#include "core/device.h"

#include <cctype>

#include "kernels/base/error.h"

namespace ember {

Device::Device(const std::string& spec) {
  auto bad = [&] {
    return ValueError("device: cannot parse \"" + spec +
                      "\": expected \"cpu\", \"cuda\" or \"cuda:N\" (N a device index)");
  };
  if (spec == "cpu") {
    type = DeviceType::CPU;
    index = -1;
    return;
  }
  if (spec.rfind("cuda", 0) != 0) throw bad();
  type = DeviceType::CUDA;
  if (spec.size() == 4) {
    index = -1;
    return;
  }
  if (spec[4] != ':' || spec.size() == 5 || spec.size() > 9) throw bad();
  int value = 0;
  for (size_t i = 5; i < spec.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(spec[i]))) throw bad();
    value = value * 10 + (spec[i] - '0');
  }
  index = value;
}

std::string Device::str() const {
  if (type == DeviceType::CPU) return "cpu";
  return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
}

namespace {
Device& default_device_slot() {
  static Device d = Device::cpu();
  return d;
}
}  // namespace

Device default_device() { return default_device_slot(); }
void set_default_device(Device d) { default_device_slot() = d; }

}  // namespace ember
