// ember/kernels/emulator/shared_layout.cpp — where the __shared__ variables lie, and the redzones
// between them: memcheck's map of static shared memory.
//
// A __shared__ variable is a thread-local variable of the module that holds the kernels
// (device.h), so the static shared memory of a block is that module's thread-local block on the
// CPU thread running it, where any other __shared__ variable of any kernel lies next door. An
// overrun of one array would land in its neighbour unseen, so device.h declares a redzone in
// front of each one:
//
//   __shared__ float tile[32][33];
//   // becomes
//   static __thread SharedRedzone ember_shared_redzone_7;  // 64 bytes no kernel may touch
//   static __thread float tile[32][33];
//
// GCC lays a function's static thread-locals out in the reverse order of their declarations, so
// in memory every array is followed by its own redzone ("tile, ember_shared_redzone_7, ...").
// Nothing in the program refers to a redzone, so nothing tells the emulator where they are at
// run time; the module's symbol table does. Each thread-local variable is an STT_TLS symbol whose
// value is its offset in the module's thread-local block and whose size is its size, under its
// mangled name (`_ZZ...E4tile` demangles to "ember::...::transpose_kernel<float>(...)::tile").
// This file reads that table once, from the file the module was loaded from, and makes
//   - a byte map of the thread-local block: 1 for the bytes of a redzone and the alignment
//     padding on either side of it, which memcheck reports when a kernel touches them;
//   - the list of variables, to name the array an access overran.
// A stripped program has no symbol table: then nothing is marked, and memcheck says nothing
// about static shared memory (emulator.md says so).
#include <cxxabi.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "kernels/emulator/internal.h"

namespace ember::emu::detail {

namespace {

constexpr const char* kRedzonePrefix = "ember_shared_redzone_";

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (d == nullptr) return name;
  std::string s(d);
  std::free(d);
  return s;
}

// "ns::kernel<float>(float*, int)::tile" is the static local `tile` of "ns::kernel<float>"; a
// thread_local at namespace scope has no function.
void split_name(const std::string& full, SharedVariable* v) {
  const size_t sep = full.rfind("::");
  v->name = sep == std::string::npos ? full : full.substr(sep + 2);
  if (sep == std::string::npos || sep == 0 || full[sep - 1] != ')') return;
  int depth = 0;  // walk back to the '(' that opens the parameter list
  for (size_t i = sep; i-- > 0;) {
    if (full[i] == ')') ++depth;
    if (full[i] == '(' && --depth == 0) {
      v->function = full.substr(0, i);
      return;
    }
  }
}

// The STT_TLS symbols of the ELF file at `path`, with their offsets in the module's thread-local
// block. False (and why) when the file cannot be read or has no symbol table.
bool read_tls_symbols(const std::string& path, std::vector<SharedVariable>* out, std::string* why) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open " + path;
    return false;
  }
  struct stat st {};
  void* map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (map == MAP_FAILED) {
    *why = "cannot map " + path;
    return false;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const auto* base = static_cast<const unsigned char*>(map);
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base);
  // Every table is checked to lie inside the file before it is read.
  auto inside = [size](uint64_t offset, uint64_t bytes) {
    return offset <= size && bytes <= size - offset;
  };
  bool found = false;
  if (size >= sizeof(ElfW(Ehdr)) && std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
      eh->e_shentsize == sizeof(ElfW(Shdr)) &&
      inside(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(ElfW(Shdr)))) {
    const auto* sections = reinterpret_cast<const ElfW(Shdr)*>(base + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; ++i) {
      const ElfW(Shdr)& symtab = sections[i];
      if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= eh->e_shnum) continue;
      const ElfW(Shdr)& strtab = sections[symtab.sh_link];
      if (!inside(symtab.sh_offset, symtab.sh_size) || !inside(strtab.sh_offset, strtab.sh_size))
        continue;
      found = true;
      const auto* syms = reinterpret_cast<const ElfW(Sym)*>(base + symtab.sh_offset);
      const char* names = reinterpret_cast<const char*>(base + strtab.sh_offset);
      for (size_t k = 0; k < symtab.sh_size / sizeof(ElfW(Sym)); ++k) {
        const ElfW(Sym)& s = syms[k];
        // (ELF64_ST_TYPE is ELF32_ST_TYPE: the low 4 bits)
        if (ELF64_ST_TYPE(s.st_info) != STT_TLS || s.st_shndx == SHN_UNDEF || s.st_size == 0 ||
            s.st_name >= strtab.sh_size)
          continue;
        const char* raw = names + s.st_name;
        if (std::memchr(raw, '\0', strtab.sh_size - s.st_name) == nullptr) continue;
        SharedVariable v;
        v.offset = s.st_value;
        v.size = s.st_size;
        split_name(demangle(raw), &v);
        v.redzone = v.name.rfind(kRedzonePrefix, 0) == 0;
        out->push_back(std::move(v));
      }
    }
  }
  munmap(map, size);
  if (!found) *why = path + " has no symbol table (stripped?)";
  return found;
}

SharedLayout build_layout(const std::string& path, size_t tls_size) {
  SharedLayout layout;
  layout.redzone.assign(tls_size, 0);
  std::vector<SharedVariable> vars;
  if (!read_tls_symbols(path, &vars, &layout.note)) return layout;
  std::sort(vars.begin(), vars.end(), [](const SharedVariable& a, const SharedVariable& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.size > b.size;
  });
  // A function with a redzone is a kernel (or device function) with __shared__ variables: its
  // thread-local statics are all __shared__ (CUDA has no other thread-locals).
  std::vector<std::string> with_redzones;
  for (const SharedVariable& v : vars)
    if (v.redzone) with_redzones.push_back(v.function);
  std::sort(with_redzones.begin(), with_redzones.end());
  for (SharedVariable& v : vars) {
    v.shared = !v.redzone && !v.function.empty() &&
               std::binary_search(with_redzones.begin(), with_redzones.end(), v.function);
  }
  // Mark each redzone, with the padding between it and its neighbours.
  for (size_t i = 0; i < vars.size(); ++i) {
    const SharedVariable& r = vars[i];
    if (!r.redzone || r.offset >= tls_size) continue;
    size_t lo = r.offset, hi = std::min(r.offset + r.size, tls_size);
    if (i > 0) {
      const size_t prev_end = vars[i - 1].offset + vars[i - 1].size;
      if (prev_end <= lo) lo = prev_end;
    } else {
      lo = 0;
    }
    if (i + 1 < vars.size()) {
      if (vars[i + 1].offset >= hi) hi = std::min(vars[i + 1].offset, tls_size);
    }
    std::fill(layout.redzone.begin() + static_cast<std::ptrdiff_t>(lo),
              layout.redzone.begin() + static_cast<std::ptrdiff_t>(hi), uint8_t{1});
    ++layout.redzones;
  }
  for (SharedVariable& v : vars)
    if (v.shared) ++layout.shared_variables;
  layout.variables = std::move(vars);
  return layout;
}

std::string quoted(const SharedVariable& v) {
  return "__shared__ array `" + v.name + "` (" + std::to_string(v.size) + " bytes) of " +
         (v.function.empty() ? std::string("?") : v.function);
}

}  // namespace

const SharedLayout& shared_layout(const std::string& module_path, size_t tls_size) {
  // One module holds the kernels, so one layout serves every worker.
  static std::once_flag once;
  static SharedLayout* layout = nullptr;
  std::call_once(once, [&] { layout = new SharedLayout(build_layout(module_path, tls_size)); });
  return *layout;
}

std::string describe_shared_redzone(const SharedLayout& layout, size_t offset) {
  // The nearest __shared__ variables below and above the access.
  const SharedVariable* before = nullptr;
  const SharedVariable* after = nullptr;
  for (const SharedVariable& v : layout.variables) {
    if (!v.shared) continue;
    if (v.offset + v.size <= offset) before = &v;
    if (v.offset > offset && after == nullptr) after = &v;
  }
  const size_t past = before ? offset - (before->offset + before->size) : 0;
  const size_t ahead = after ? after->offset - offset : 0;
  std::string text;
  if (before != nullptr && (after == nullptr || past < ahead)) {
    text = std::to_string(past) + " bytes past the end of " + quoted(*before);
  } else if (after != nullptr) {
    text = std::to_string(ahead) + " bytes before the start of " + quoted(*after);
  } else {
    text = "a redzone between __shared__ variables";
  }
  return text + ": static shared memory, in the redzone the emulator keeps after each __shared__ "
                "variable (on a GPU the access would silently reach whatever lies there)";
}

std::string describe_shared_variable(const SharedLayout& layout, size_t offset) {
  for (const SharedVariable& v : layout.variables) {
    if (v.shared && offset - v.offset < v.size)
      return "byte " + std::to_string(offset - v.offset) + " of " + quoted(v);
  }
  return "";
}

}  // namespace ember::emu::detail
