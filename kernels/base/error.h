// ember/kernels/base/error.h — exceptions and the check macro every op uses.
//
// Errors are part of the interface: a message says which op failed, what it was given
// (shapes, dtypes, devices) and, where there is one, what to do about it.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

// Every error ember raises derives from ember::Error (itself a std::runtime_error).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Wrong shapes, dtypes or arguments: the caller's input is at fault.
class ValueError : public Error {
 public:
  using Error::Error;
};

// Tensors on different devices, or a device that is not there.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// A device allocation that failed even after the caching allocator gave its cache back: the
// message says how much was asked, how much the device has free/total and how much ember holds.
// Like torch.cuda.OutOfMemoryError; a DeviceError, so code catching those catches this too.
class OutOfMemoryError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// Misuse of the autograd tape (backward twice, in-place change of a saved tensor, ...).
class AutogradError : public Error {
 public:
  using Error::Error;
};

// A file that is missing, truncated or corrupt.
class IOError : public Error {
 public:
  using Error::Error;
};

namespace detail {
inline void append_all(std::ostringstream&) {}
template <typename T, typename... Rest>
void append_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  append_all(os, args...);
  return os.str();
}
}  // namespace detail

}  // namespace ember

// EMBER_CHECK(cond, parts...) throws ember::ValueError with the parts streamed together.
// EMBER_CHECK_T(Type, cond, parts...) throws the given ember error type instead.
#define EMBER_CHECK(cond, ...) \
  do {                         \
    if (!(cond)) throw ::ember::ValueError(::ember::detail::concat(__VA_ARGS__)); \
  } while (0)

#define EMBER_CHECK_T(ErrorType, cond, ...) \
  do {                                      \
    if (!(cond)) throw ErrorType(::ember::detail::concat(__VA_ARGS__)); \
  } while (0)
