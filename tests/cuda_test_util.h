// tests/cuda_test_util.h — what the CUDA test files share: the skip lines CTest reads ("SKIPPED:"
// makes a test count as skipped, with the reason), and the message of an expected exception.
#pragma once

#include <exception>
#include <iostream>
#include <string>

#include <catch2/catch.hpp>

#include "core/cuda.h"
#include "core/device.h"

namespace ember::test {

// True (after printing why) when there is no usable GPU: the test returns at once.
inline bool skip_without_gpu() {
  if (cuda::is_available()) return false;
  std::cout << "SKIPPED: no CUDA device: " << cuda::unavailable_reason() << "\n";
  return true;
}

// True (after printing why) when there is a GPU: for tests of the behaviour without one.
inline bool skip_with_gpu() {
  if (!cuda::is_available()) return false;
  std::cout << "SKIPPED: a GPU is present; this test checks the behaviour without one\n";
  return true;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs f, which must throw an E; returns the message (and fails the test when f does not throw
// or throws something else).
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw the wrong exception type: " << e.what());
  }
  FAIL("did not throw");
  return "";
}

inline const Device kCuda0 = Device::cuda(0);

}  // namespace ember::test
