// examples/device_basics — seed 004's tour of PyTorch's device semantics, line by line in ember.
//
// Each step prints the ember line it runs (">>>"), then what that line did. The PyTorch line it
// stands for is printed above it, so the output reads as a side-by-side of the two.
//
//   device_basics
//
// Everything runs on a machine without a GPU too: the device-agnostic lines then pick the CPU
// (which is their point), and the steps that need a GPU say that they are skipped and why.
// What the seed shows, in ember's words:
//   - Tensor::cuda() / to() return a copy and leave the original where it was;
//   - Module::cuda() / to() move the module itself, in place (its own tensors are converted);
//   - a loss with state (class weights) is a module and must be moved as well;
//   - DeviceGuard is `with torch.cuda.device(i):`, set_default_device is the modern form of
//     set_default_tensor_type('torch.cuda.FloatTensor'), cuda::set_device is set_device;
//   - new_* and *_like keep the device (and dtype) of the tensor they start from.
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "core/ember.h"
#include "nn/nn.h"

using namespace ember;

// Prints a line of code, then runs it in the current scope (so a declaration stays visible to
// the lines after it). Comments inside are not printed: the preprocessor removes them first.
#define RUN(...)                                 \
  std::cout << "  >>> " #__VA_ARGS__ ";" << "\n"; \
  __VA_ARGS__

// What the line did: streamed values, indented under it.
#define SAY(...)                        \
  do {                                  \
    std::ostringstream said_;           \
    said_ << std::boolalpha << __VA_ARGS__; \
    std::cout << "      " << said_.str() << "\n"; \
  } while (0)

namespace {

int g_section = 0;

void section(const char* title, const char* pytorch) {
  std::cout << "\n" << ++g_section << ". " << title << "\n";
  std::cout << "  PyTorch: " << pytorch << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: seed 004's device semantics, line by line (runs with or without a GPU)"};
  CLI11_PARSE(app, argc, argv);

  try {
    // ---------------------------------------------------------------------------------------
    section("Is there a GPU, and how many?", "torch.cuda.is_available(); torch.cuda.device_count()");
    RUN(const bool available = cuda::is_available());
    SAY("available = " << available);
    RUN(const int count = cuda::device_count());
    SAY("count = " << count);
    // A GPU this build has no code for (too old or too new for CMAKE_CUDA_ARCHITECTURES) is
    // treated like no GPU here, with the reason printed.
    std::string why_not = available ? "" : cuda::unavailable_reason();
    const bool gpu = available && cuda::device_supported(0, &why_not);
    if (!gpu) SAY("no usable GPU, so the steps below that need one are skipped: " << why_not);
    const auto skip = [](const char* what) {
      std::cout << "      skipped (needs a GPU, see step 1): " << what << "\n";
    };
    if (gpu) {
      RUN(const int current = cuda::current_device());
      SAY("current = " << current << " (the device a bare \"cuda\" means)");
    } else {
      skip("cuda::current_device()");
    }

    // ---------------------------------------------------------------------------------------
    section("Device-agnostic code: the GPU when there is one, else the CPU",
            "device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")");
    RUN(Device device = cuda::is_available() ? "cuda" : "cpu");
    if (available && !gpu) {
      RUN(device = Device::cpu());
      SAY("(the GPU is there but this build cannot use it)");
    }
    SAY("device = " << device);
    RUN(const Tensor x = randn({2, 3}));
    RUN(const Tensor x_to = x.to(device));
    SAY("x.device() = " << x.device() << ", x_to.device() = " << x_to.device());

    // ---------------------------------------------------------------------------------------
    section("Tensor.cuda() returns a copy; the original stays on the CPU",
            "t_cuda = t.cuda(); t.to('cuda:0'); t_cuda.cpu()");
    RUN(const Tensor t = tensor({1, 2, 3}));
    if (gpu) {
      RUN(const Tensor t_cuda = t.cuda());
      SAY("t.is_cuda() = " << t.is_cuda() << ", t_cuda.is_cuda() = " << t_cuda.is_cuda()
                           << " (t.cuda() is t.cuda(0) when device 0 is current)");
      RUN(const Tensor t_to = t.to(Device("cuda:0")));
      SAY("t_to.device() = " << t_to.device());
      RUN(const Tensor back = t_cuda.cpu());
      SAY("back = " << back << ", on " << back.device() << "; t_cuda is still on "
                    << t_cuda.device());
    } else {
      skip("t.cuda()");
      SAY("asking for CUDA explicitly anyway is a clear error, not a crash:");
      try {
        RUN(t.cuda());
      } catch (const DeviceError& e) {
        SAY("DeviceError: " << e.what());
      }
    }

    // ---------------------------------------------------------------------------------------
    section("Module.cuda() moves the module itself (no copy)",
            "module = nn.Linear(3, 4); module.cuda(device=0); module.weight.is_cuda");
    RUN(nn::Linear module(3, 4));
    RUN(const Tensor w = module.weight);
    if (gpu) {
      RUN(module.cuda(0));
      SAY("module.weight.is_cuda() = " << module.weight.is_cuda()
                                       << "; w (a handle taken before the move) is_cuda() = "
                                       << w.is_cuda() << ": the same tensor, moved in place");
    } else {
      skip("module.cuda(0)");
      RUN(module.to(device));
      SAY("module.to(device) with device = cpu: module.weight stays on " << module.weight.device());
    }

    // ---------------------------------------------------------------------------------------
    section("A loss with a buffer (class weights) must move too",
            "criterion = nn.CrossEntropyLoss(weight=torch.Tensor([1, 3])); criterion.cuda()");
    RUN(nn::CrossEntropyLoss criterion(tensor({1, 3})));
    RUN(const Tensor inputs = randn({4, 2}).to(device));
    RUN(const Tensor target = tensor({1, 0, 0, 1}, kInt64).to(device));
    if (gpu) {
      SAY("the weights are still on the CPU, the inputs on the GPU:");
      try {
        RUN(criterion(inputs, target));
      } catch (const DeviceError& e) {
        SAY("DeviceError: " << e.what());
      }
      RUN(criterion.to(device));
    } else {
      skip("the mixed-device error");
    }
    RUN(const Tensor loss = criterion(inputs, target));
    SAY("loss = " << loss.item() << " on " << loss.device());
    for (const auto& [name, buffer] : criterion.named_buffers())
      SAY("criterion buffer '" << name << "' = " << buffer);

    // ---------------------------------------------------------------------------------------
    section("A device for one scope", "with torch.cuda.device(0): a = torch.cuda.FloatTensor(2, 3); "
                                      "b = torch.FloatTensor(2, 3).cuda(); c = a + b");
    if (gpu) {
      {
        RUN(cuda::DeviceGuard guard(count - 1));  // the last GPU: 0 on a one-GPU machine
        RUN(const Tensor a = ones({2, 3}, Device::cuda()));
        RUN(const Tensor b = ones({2, 3}).cuda());
        RUN(const Tensor c = a + b);
        SAY("a on " << a.device() << ", b on " << b.device() << ", c on " << c.device()
                    << "; current_device() = " << cuda::current_device());
      }
      SAY("after the scope: current_device() = " << cuda::current_device());
    } else {
      skip("cuda::DeviceGuard");
    }

    // ---------------------------------------------------------------------------------------
    section("A default device for factories",
            "torch.set_default_tensor_type('torch.cuda.FloatTensor'); a = torch.ones(2, 3)");
    if (gpu) {
      RUN(set_default_device("cuda"));
      RUN(const Tensor a = ones({2, 3}));
      SAY("a.is_cuda() = " << a.is_cuda());
      RUN(set_default_device("cpu"));
      SAY("back to the CPU default: ones({2, 3}).is_cuda() = " << ones({2, 3}).is_cuda());
    } else {
      skip("set_default_device(\"cuda\")");
    }

    // ---------------------------------------------------------------------------------------
    section("Choosing the GPU for the whole program",
            "torch.cuda.set_device(1); CUDA_VISIBLE_DEVICES=0,2,3 python main.py");
    if (gpu) {
      RUN(cuda::set_device(count - 1));
      RUN(const Tensor d = ones({2}).cuda());
      SAY("d.device() = " << d.device() << " (a bare .cuda() follows set_device)");
      RUN(cuda::set_device(0));
      try {
        RUN(cuda::set_device(count));
      } catch (const DeviceError& e) {
        SAY("DeviceError: " << e.what());
      }
    } else {
      skip("cuda::set_device()");
    }
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    SAY("CUDA_VISIBLE_DEVICES = " << (visible ? visible : "(not set)")
        << ". Set it before the program starts (CUDA_VISIBLE_DEVICES=1 ./device_basics):");
    SAY("the listed GPUs become cuda:0, cuda:1, ... in that order, exactly as in PyTorch.");

    // ---------------------------------------------------------------------------------------
    section("Creating on a device; new_* and *_like keep the device",
            "torch.empty(2, device=device); x.new_full((3, 4), 9); x.new_zeros(3, 4); "
            "torch.ones_like(x); torch.zeros_like(x)");
    RUN(const Tensor x_cpu = zeros({2}, "cpu"));
    RUN(const Tensor x_dev = zeros({2}, device));
    SAY("x_cpu on " << x_cpu.device() << ", x_dev on " << x_dev.device());
    RUN(const Tensor y_cpu = x_cpu.new_full({3, 4}, 9));
    RUN(const Tensor y_dev = x_dev.new_zeros({3, 4}));
    SAY("y_cpu on " << y_cpu.device() << ", y_dev on " << y_dev.device());
    RUN(const Tensor z_cpu = ones_like(x_cpu));
    RUN(const Tensor z_dev = zeros_like(x_dev));
    SAY("z_cpu on " << z_cpu.device() << ", z_dev on " << z_dev.device());

    // ---------------------------------------------------------------------------------------
    section("Tensors on different devices in one op are an error",
            "torch.ones(2).cuda() + torch.ones(2)  # RuntimeError");
    if (gpu) {
      RUN(const Tensor on_gpu = ones({2}).cuda());
      RUN(const Tensor on_cpu = ones({2}));
      try {
        RUN(on_gpu + on_cpu);
      } catch (const DeviceError& e) {
        SAY("DeviceError: " << e.what());
      }
    } else {
      skip("a mixed-device op");
    }

    // ---------------------------------------------------------------------------------------
    section("Pinned host memory and a non-blocking copy",
            "DataLoader(..., pin_memory=True); x.to(device, non_blocking=True)");
    if (gpu) {
      RUN(const Tensor host = randn({1 << 20}));
      RUN(const Tensor pinned = host.pin_memory());
      SAY("host.is_pinned() = " << host.is_pinned() << ", pinned.is_pinned() = "
                                << pinned.is_pinned() << " (a page-locked copy)");
      RUN(const Tensor on_device = pinned.to(device, true));
      SAY("non_blocking = true: the call returned once the copy was queued; the CPU went on");
      RUN(cuda::synchronize());
      SAY("after synchronize the copy has landed: sums " << host.sum().item() << " and "
                                                         << on_device.sum().item());
    } else {
      skip("pin_memory()");
    }

    // ---------------------------------------------------------------------------------------
    section("GPU memory and waiting for the GPU",
            "torch.cuda.memory_allocated(); torch.cuda.memory_reserved(); torch.cuda.synchronize()");
    if (gpu) {
      RUN(const int64_t before = cuda::memory_allocated());
      {
        RUN(const Tensor big = zeros({1024, 1024}, device));
        SAY("allocated " << cuda::memory_allocated() - before << " more bytes for "
                         << big.numel() << " float32; reserved " << cuda::memory_reserved());
      }
      SAY("big is gone: allocated " << cuda::memory_allocated() << ", reserved "
                                    << cuda::memory_reserved()
                                    << " (the caching allocator keeps the block for reuse)");
      RUN(cuda::empty_cache());
      SAY("reserved " << cuda::memory_reserved() << " after empty_cache()");
      RUN(cuda::synchronize());
      SAY("every kernel and copy queued on the current device has finished");
    } else {
      skip("cuda::memory_allocated() and cuda::synchronize()");
    }
    std::cout << "\ndone\n";
  } catch (const Error& e) {
    std::cerr << "device_basics: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
