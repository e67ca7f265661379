// ember/kernels/emulator/local_arrays.cpp — memcheck for a kernel's local arrays: the reports of
// the two checks GCC compiles into the kernels' files (CMakeLists.txt, ember_emulated_object).
//
// A kernel's local variables live on its CUDA thread's fiber stack, and the access hooks
// (checks.cpp) let every access to that stack through: they cannot tell one local from the next.
// The compiler can, and the kernels are compiled with two of its checks:
//
//   -fsanitize=bounds          before `a[i]` on an array whose size the compiler knows (a local
//                              array, a __shared__ one, a member array), a test of i against
//                              that size; when it fails, GCC calls __ubsan_handle_out_of_bounds
//                              with the source location, the array's type and the index. Reads
//                              and writes, either side, caught before the access is made. Not
//                              seen: an access through a pointer (`float* p = a; p[9]`).
//   -fstack-protector-strong   a guard word (the "canary") between a function's local arrays and
//                              its return address, checked when the function returns; a
//                              mismatch calls __stack_chk_fail. That catches a write through a
//                              pointer that ran past the end of a local array far enough to
//                              reach the guard (there may be a few bytes of padding before it),
//                              but only when the function returns, so without the line.
//
// The program is not linked with UBSan's runtime, and glibc's __stack_chk_fail would abort the
// whole process: the emulator defines both functions (the program's definitions take the place
// of glibc's for every module) and, inside a kernel, turns them into a report that names the
// kernel, block and thread and fails the launch, as memcheck does. Outside a kernel (host code in
// a .cu file, or a library's own stack protector) they print what happened and abort, as UBSan
// and glibc would.
#include <cstdio>
#include <cstdlib>

#include "kernels/emulator/internal.h"

namespace ember::emu::detail {
namespace {

// What GCC passes to __ubsan_handle_out_of_bounds (the layout of UBSan's runtime, which GCC
// follows): where, the array's type, the index's type.
struct SourceLocation {
  const char* file;
  uint32_t line;
  uint32_t column;
};
struct TypeDescriptor {
  uint16_t kind;  // 0: an integer type
  uint16_t info;  // for an integer: log2(bit width) << 1 | signed
  char name[1];   // "'int [8]'", NUL-terminated
};
struct OutOfBoundsData {
  SourceLocation location;
  const TypeDescriptor* array_type;
  const TypeDescriptor* index_type;
};

// The index as a number: integers up to 64 bits travel in the handle itself.
std::string index_text(const TypeDescriptor* type, void* handle) {
  const unsigned bits = 1u << (type->info >> 1);
  if (type->kind != 0 || bits > 64) return "(an index)";
  auto raw = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  if (bits < 64) raw &= (uint64_t{1} << bits) - 1;
  if ((type->info & 1) != 0) {
    const uint64_t sign = uint64_t{1} << (bits - 1);
    return std::to_string(static_cast<int64_t>((raw ^ sign) - sign));
  }
  return std::to_string(raw);
}

void out_of_bounds(void* data, void* index, bool may_return, const void* pc) {
  const auto* d = static_cast<const OutOfBoundsData*>(data);
  const std::string what = "index " + index_text(d->index_type, index) +
                           " is out of bounds of an array of type " + d->array_type->name;
  const std::string at = relative_path(d->location.file) + ":" + std::to_string(d->location.line) +
                         ":" + std::to_string(d->location.column);
  Thread* t = tls_thread;
  if (t != nullptr && t->checking && (t->checks & kMemcheck)) {
    fault(t, cudaErrorIllegalAddress,
          "memcheck: " + what + " (a local or __shared__ array, at " + at +
              "): the compiler's bounds check (-fsanitize=bounds) stopped the access before it "
              "was made; on a GPU it would reach whatever lies next to the array\n  the access: " +
              describe_code(pc));
  }
  if (t != nullptr && may_return) return;  // a kernel with memcheck off: the access is made
  std::fprintf(stderr, "ember emulator: %s at %s (host code in a kernel file)\n", what.c_str(),
               at.c_str());
  std::abort();
}

}  // namespace
}  // namespace ember::emu::detail

using ember::emu::detail::out_of_bounds;

extern "C" {

// GCC calls the first (the access goes on if it returns) unless -fno-sanitize-recover is given.
__attribute__((noinline)) void __ubsan_handle_out_of_bounds(void* data, void* index) {
  out_of_bounds(data, index, true, __builtin_return_address(0));
}
__attribute__((noinline)) void __ubsan_handle_out_of_bounds_abort(void* data, void* index) {
  out_of_bounds(data, index, false, __builtin_return_address(0));
  std::abort();
}

// A function of a kernel file returns with its guard word overwritten. Never returns: the
// frame it would return through is damaged.
__attribute__((noreturn)) void __stack_chk_fail() {
  using namespace ember::emu::detail;
  Thread* t = tls_thread;
  if (t != nullptr) {
    // Where the damaged function ends, if it is a function of ember's own (a kernel inlined into
    // the emulator's launch glue has no line of its own there: describe_code then falls back
    // to the binary's name and offset, which says nothing here).
    const std::string end = describe_code(__builtin_return_address(0));
    const std::string at = end.find(" +0x") == std::string::npos ? " (at " + end + ")" : "";
    fault(t, cudaErrorIllegalAddress,
          "memcheck: a write ran past the end of a local array of the kernel (or of a function "
          "it calls) and overwrote the guard word behind it (GCC's -fstack-protector-strong); "
          "seen when the function returned" +
              at +
              ". The write itself went through a pointer: an indexed access of the array would "
              "have been stopped, with its line, by the bounds check");
  }
  std::fprintf(stderr, "*** stack smashing detected ***: terminated (ember emulator)\n");
  std::abort();
}

}  // extern "C"
