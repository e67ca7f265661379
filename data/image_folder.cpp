// ember/data/image_folder.cpp — listing the class folders, the parallel decode, the cache.
//
// A load is:
//   1. list   ROOT/<class>/<file> with each file's size and mtime (the "listing"); layout errors
//   2. cache  if the cache file exists and was built from exactly this listing and these
//             options, read it and stop
//   3. decode every file on `threads` worker threads into its own slot of one [files, C, H, W]
//             tensor (so the result does not depend on which thread did what), then squeeze the
//             skipped slots out, keeping the order
//   4. write  the cache: a temporary file, renamed into place when complete
#include "data/image_folder.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/test_hooks.h"
#include "data/image_decode.h"
#include "kernels/base/error.h"

namespace ember::data {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- 1. the listing ---------------------------------------------------------------------------

struct FileEntry {
  std::string rel;    // "Cat/0.jpg": class folder / file name, always with '/'
  uint64_t size = 0;  // bytes
  int64_t mtime = 0;  // last modification, nanoseconds on the filesystem clock
  int32_t label = 0;
  bool operator==(const FileEntry& o) const {
    return rel == o.rel && size == o.size && mtime == o.mtime && label == o.label;
  }
};

struct Listing {
  std::vector<std::string> classes;
  std::vector<FileEntry> files;  // by class, then by name
};

bool hidden(const std::string& name) { return !name.empty() && name[0] == '.'; }

Listing list_folder(const std::string& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    throw IOError("ImageFolder: the folder '" + root + "' does not exist.\n" + pet_images_hint());
  }
  if (!fs::is_directory(root, ec)) {
    throw IOError("ImageFolder: '" + root + "' is a file; pass the folder that holds one "
                  "sub-folder per class.\n" + pet_images_hint());
  }
  Listing l;
  int64_t loose_files = 0;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (hidden(name)) continue;
    std::error_code e2;
    if (it->is_directory(e2)) {
      l.classes.push_back(name);
    } else if (it->is_regular_file(e2)) {
      ++loose_files;
    }
  }
  if (ec) throw IOError("ImageFolder: cannot list '" + root + "': " + ec.message());
  if (l.classes.empty()) {
    throw IOError("ImageFolder: '" + root + "' has no class folders" +
                  (loose_files > 0 ? " (it holds " + std::to_string(loose_files) +
                                         " files directly: move them into one folder per class)"
                                   : "") +
                  ".\n" + pet_images_hint());
  }
  std::sort(l.classes.begin(), l.classes.end());

  for (size_t c = 0; c < l.classes.size(); ++c) {
    const fs::path dir = fs::path(root) / l.classes[c];
    std::vector<FileEntry> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code e2;
      if (hidden(name) || !it->is_regular_file(e2)) continue;
      FileEntry f;
      f.rel = l.classes[c] + "/" + name;
      f.label = static_cast<int32_t>(c);
      // A file we cannot stat keeps size 0 / mtime 0 and fails to decode with its reason.
      const uintmax_t size = it->file_size(e2);
      f.size = e2 ? 0 : static_cast<uint64_t>(size);
      const fs::file_time_type t = it->last_write_time(e2);
      f.mtime = e2 ? 0
                   : std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch())
                         .count();
      files.push_back(std::move(f));
    }
    if (ec) throw IOError("ImageFolder: cannot list '" + dir.string() + "': " + ec.message());
    if (files.empty()) {
      throw IOError("ImageFolder: the class folder '" + dir.string() +
                    "' holds no files: every sub-folder of '" + root +
                    "' is a class and must hold that class's images (remove the folder or put "
                    "its images in it).\n" + pet_images_hint());
    }
    std::sort(files.begin(), files.end(),
              [](const FileEntry& a, const FileEntry& b) { return a.rel < b.rel; });
    for (FileEntry& f : files) l.files.push_back(std::move(f));
  }
  return l;
}

// ---- the cache file ---------------------------------------------------------------------------
//
// Layout (native byte order; the endianness mark rejects a cache copied from another kind of
// machine):
//   "EMBERIMG" u32 0x01020304 u32 version
//   i64 height, width, channels
//   u64 #classes, then per class: u32 length + bytes
//   u64 #files, then per file: u32 length + path bytes, u64 size, i64 mtime, i32 label,
//                              u8 decoded (1) or skipped (0), u32 length + reason bytes
//   u64 #images, i64 labels[#images], u8 pixels[#images * channels * height * width]
//   u64 checksum of everything before it
// A change to what the decoder produces (the resize filter, say) must bump kCacheVersion so old
// caches are rebuilt.

constexpr char kCacheMagic[8] = {'E', 'M', 'B', 'E', 'R', 'I', 'M', 'G'};
constexpr uint32_t kEndianMark = 0x01020304;
constexpr uint32_t kCacheVersion = 1;
constexpr uint32_t kMaxStringBytes = 1 << 16;

// A 64-bit checksum of a byte stream that does not depend on how the stream is cut into calls:
// 8-byte words, each mixed in with a multiply and an xor-shift. It catches a damaged or
// incompletely copied cache; it is not a cryptographic hash.
class Checksum {
 public:
  void update(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    while (n > 0 && fill_ > 0 && fill_ < 8) {  // top up a partial word first
      tail_ |= uint64_t{*p++} << (8 * fill_++);
      --n;
      if (fill_ == 8) {
        mix(tail_);
        tail_ = 0;
        fill_ = 0;
      }
    }
    for (; n >= 8; n -= 8, p += 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      mix(w);
    }
    while (n > 0) {
      tail_ |= uint64_t{*p++} << (8 * fill_++);
      --n;
    }
  }
  uint64_t value() const {
    Checksum c = *this;
    c.mix(c.tail_ ^ (uint64_t{c.fill_} << 56));
    c.mix(c.total_);
    return c.h_;
  }

 private:
  void mix(uint64_t w) {
    h_ = (h_ ^ w) * 0x9E3779B97F4A7C15ULL;
    h_ ^= h_ >> 29;
  }
  uint64_t h_ = 0x243F6A8885A308D3ULL, tail_ = 0, total_ = 0;
  unsigned fill_ = 0;
};

// A damaged cache file: read_cache's internal signal, turned into a warning.
struct CacheDamaged {
  std::string why;
};

class CacheReader {
 public:
  CacheReader(std::FILE* f, uint64_t size) : f_(f), size_(size) {}
  void bytes(void* p, size_t n) {
    if (n > size_ - pos_) {
      throw CacheDamaged{"it ends at byte " + std::to_string(size_) + ", expected more data"};
    }
    if (n > 0 && std::fread(p, 1, n, f_) != n) throw CacheDamaged{"read error"};
    sum_.update(p, n);
    pos_ += n;
  }
  template <typename T>
  T get() {
    T v;
    bytes(&v, sizeof(T));
    return v;
  }
  std::string str() {
    const uint32_t n = get<uint32_t>();
    if (n > kMaxStringBytes) throw CacheDamaged{"a string of " + std::to_string(n) + " bytes"};
    std::string s(n, '\0');
    bytes(s.data(), n);
    return s;
  }
  // Bounds a count read from the file by what the rest of the file can hold.
  uint64_t count(uint64_t bytes_each) {
    const uint64_t n = get<uint64_t>();
    if (n > (size_ - pos_) / bytes_each) {
      throw CacheDamaged{"a count of " + std::to_string(n) + " does not fit in the file"};
    }
    return n;
  }
  uint64_t remaining() const { return size_ - pos_; }
  uint64_t checksum() const { return sum_.value(); }

 private:
  std::FILE* f_;
  uint64_t size_, pos_ = 0;
  Checksum sum_;
};

class CacheWriter {
 public:
  explicit CacheWriter(std::FILE* f) : f_(f) {}
  void bytes(const void* p, size_t n) {
    if (ok_ && n > 0 && std::fwrite(p, 1, n, f_) != n) fail(errno);
    sum_.update(p, n);
    size_ += n;
  }
  uint64_t size() const { return size_; }  // bytes the complete file has (written or not)
  // Stops writing: every later write is skipped and write_cache reports `error` (an errno).
  void fail(int error) {
    if (ok_) error_ = error;
    ok_ = false;
  }
  int error() const { return error_; }
  template <typename T>
  void put(T v) {
    bytes(&v, sizeof(T));
  }
  void str(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void finish() { put<uint64_t>(sum_.value()); }
  bool ok() const { return ok_; }

 private:
  std::FILE* f_;
  Checksum sum_;
  bool ok_ = true;
  int error_ = 0;
  uint64_t size_ = 0;
};

// The cache fault of the tests (core/test_hooks.h; tests/e2e/faults.cpp), reached half-way
// through the pixels of the temporary file: NoSpace fails the write with ENOSPC, as a full disk
// does; Kill and Pause stop the process with the half-written file on disk, as a crash leaves it.
void cache_fault_point(const std::string& tmp, std::FILE* f, CacheWriter& out) {
  const test_hooks::Action fault = test_hooks::cache_fault();
  if (fault == test_hooks::Action::None) return;
  if (fault == test_hooks::Action::NoSpace) {
    out.fail(ENOSPC);
    return;
  }
  std::fflush(f);
  test_hooks::stop(fault, "cache fault: paused writing '" + tmp + "'");
}

// The temporary files of write_cache: "<cache>.tmp.<pid>.<n>".
std::string cache_tmp_prefix(const std::string& cache_path) { return cache_path + ".tmp."; }

// Removes the temporary files a run killed while writing this cache left behind (those of a
// process that is still running are left alone: it may be writing right now). Returns what was
// removed, "name (N bytes)" each.
std::vector<std::string> remove_abandoned_cache_files(const std::string& cache_path) {
  std::vector<std::string> removed;
  std::error_code ec;
  const fs::path dir = fs::path(cache_path).parent_path();
  const std::string prefix = fs::path(cache_tmp_prefix(cache_path)).filename().string();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid == static_cast<long>(::getpid())) continue;  // another thread of this process
    if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) continue;
    std::error_code e2;
    const uintmax_t size = it->file_size(e2);
    if (fs::remove(it->path(), e2)) {
      removed.push_back(name + " (" + std::to_string(e2 ? 0 : size) + " bytes)");
    }
  }
  return removed;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

// The cache file for this root and these options; "" when caching is off.
std::string cache_file_path(const std::string& root, const ImageFolderOptions& o) {
  if (!o.use_cache) return "";
  const std::string kind = std::to_string(o.height) + "x" + std::to_string(o.width) + "-" +
                           (o.grayscale ? "gray" : "rgb");
  if (o.cache_dir.empty()) {
    return (fs::path(root) / ".ember-cache" / ("imagefolder-" + kind + ".bin")).string();
  }
  // A shared cache folder may serve several roots: the file name carries the root's path.
  std::error_code ec;
  const std::string abs = fs::absolute(root, ec).lexically_normal().string();
  char id[20];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(fnv1a(abs)));
  return (fs::path(o.cache_dir) / ("imagefolder-" + std::string(id) + "-" + kind + ".bin"))
      .string();
}

}  // namespace

// What a load produced, from the cache or from decoding.
struct ImageFolder::Loaded {
  Tensor images, labels;
  std::vector<std::string> classes;
  std::vector<SkippedFile> skipped;
  bool from_cache = false;
  std::string root, cache_path;
};

namespace {

struct Status {  // per file: decoded, or skipped and why
  bool ok = false;
  std::string reason;
};

// Everything read_cache needs to compare and what it fills in.
struct CacheHit {
  Tensor images, labels;
  std::vector<Status> status;
};

// Reads the cache if it matches `listing` and the options. Returns false for a missing or stale
// cache (with the reason in *stale, "" if there is no cache); throws CacheDamaged for a damaged
// one.
bool read_cache(const std::string& path, const Listing& listing, int64_t H, int64_t W, int64_t C,
                CacheHit& hit, std::string* stale) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    stale->clear();
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw CacheDamaged{std::string("cannot open: ") + std::strerror(errno)};
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  CacheReader in(f, size);

  char magic[8];
  in.bytes(magic, 8);
  if (std::memcmp(magic, kCacheMagic, 8) != 0) throw CacheDamaged{"not an ember image cache"};
  if (in.get<uint32_t>() != kEndianMark) {
    *stale = "it was written on a machine of the other byte order";
    return false;
  }
  const uint32_t version = in.get<uint32_t>();
  if (version != kCacheVersion) {
    *stale = "it has format version " + std::to_string(version) + ", this ember writes " +
             std::to_string(kCacheVersion);
    return false;
  }
  const int64_t h = in.get<int64_t>(), w = in.get<int64_t>(), c = in.get<int64_t>();
  if (h != H || w != W || c != C) {
    *stale = "it holds " + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) +
             " images";
    return false;
  }
  const uint64_t n_classes = in.count(4);
  std::vector<std::string> classes(n_classes);
  for (std::string& s : classes) s = in.str();
  if (classes != listing.classes) {
    *stale = "the class folders changed";
    return false;
  }
  const uint64_t n_files = in.count(4 + 8 + 8 + 4 + 1 + 4);
  if (n_files != listing.files.size()) {
    *stale = "it lists " + std::to_string(n_files) + " files, the folder now holds " +
             std::to_string(listing.files.size());
    return false;
  }
  hit.status.assign(n_files, Status{});
  uint64_t n_ok = 0;
  for (uint64_t i = 0; i < n_files; ++i) {
    FileEntry e;
    e.rel = in.str();
    e.size = in.get<uint64_t>();
    e.mtime = in.get<int64_t>();
    e.label = in.get<int32_t>();
    hit.status[i].ok = in.get<uint8_t>() != 0;
    hit.status[i].reason = in.str();
    if (!(e == listing.files[i])) {
      *stale = "'" + listing.files[i].rel + "' " +
               (e.rel != listing.files[i].rel ? "is new or renamed" : "was modified");
      return false;
    }
    n_ok += hit.status[i].ok;
  }
  const uint64_t n_images = in.get<uint64_t>();
  const uint64_t sample = static_cast<uint64_t>(C * H * W);
  if (n_images != n_ok) throw CacheDamaged{"its image count disagrees with its file list"};
  if (in.remaining() != n_images * (8 + sample) + 8) {
    throw CacheDamaged{"it is " + std::to_string(size) + " bytes, not the size its header gives"};
  }
  // Host tensors whatever the default device is: they are filled from the file right here.
  hit.labels = empty({static_cast<int64_t>(n_images)}, TensorOptions(kInt64).device(Device::cpu()));
  in.bytes(hit.labels.raw_data(), n_images * 8);
  const int64_t* y = hit.labels.data_ptr<int64_t>();
  for (uint64_t i = 0, k = 0; i < n_files; ++i) {
    if (!hit.status[i].ok) continue;
    if (y[k++] != listing.files[i].label) throw CacheDamaged{"its labels disagree with its files"};
  }
  hit.images = empty({static_cast<int64_t>(n_images), C, H, W},
                     TensorOptions(kUInt8).device(Device::cpu()));
  in.bytes(hit.images.raw_data(), n_images * sample);
  const uint64_t expected = in.checksum();
  if (in.get<uint64_t>() != expected) throw CacheDamaged{"checksum mismatch"};
  return true;
}

// Writes the cache atomically: into a temporary file next to it, renamed over it when complete.
// Returns "" or why it could not be written.
std::string write_cache(const std::string& path, const Listing& listing,
                        const std::vector<Status>& status, const Tensor& images,
                        const Tensor& labels) {
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  fs::create_directories(dir, ec);
  if (ec) return "cannot create '" + dir.string() + "': " + ec.message();
  static std::atomic<int> counter{0};
  const std::string tmp = cache_tmp_prefix(path) + std::to_string(::getpid()) + "." +
                          std::to_string(counter++);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return "cannot create '" + tmp + "': " + std::strerror(errno);
  CacheWriter out(f);
  out.bytes(kCacheMagic, 8);
  out.put<uint32_t>(kEndianMark);
  out.put<uint32_t>(kCacheVersion);
  out.put<int64_t>(images.size(2));
  out.put<int64_t>(images.size(3));
  out.put<int64_t>(images.size(1));
  out.put<uint64_t>(listing.classes.size());
  for (const std::string& c : listing.classes) out.str(c);
  out.put<uint64_t>(listing.files.size());
  for (size_t i = 0; i < listing.files.size(); ++i) {
    const FileEntry& e = listing.files[i];
    out.str(e.rel);
    out.put<uint64_t>(e.size);
    out.put<int64_t>(e.mtime);
    out.put<int32_t>(e.label);
    out.put<uint8_t>(status[i].ok ? 1 : 0);
    out.str(status[i].reason.substr(0, kMaxStringBytes));
  }
  out.put<uint64_t>(static_cast<uint64_t>(images.size(0)));
  out.bytes(labels.raw_data(), static_cast<size_t>(labels.numel()) * 8);
  const auto* pixels = static_cast<const uint8_t*>(images.raw_data());
  const size_t pixel_bytes = static_cast<size_t>(images.numel());
  out.bytes(pixels, pixel_bytes / 2);
  cache_fault_point(tmp, f, out);
  out.bytes(pixels + pixel_bytes / 2, pixel_bytes - pixel_bytes / 2);
  out.finish();
  if (out.ok() && std::fflush(f) != 0) out.fail(errno);
  if (std::fclose(f) != 0) out.fail(errno);
  if (!out.ok()) {
    fs::remove(tmp, ec);
    return "cannot write '" + tmp + "': " + std::strerror(out.error()) +
           (out.error() == ENOSPC || out.error() == EDQUOT
                ? " (the cache needs " + std::to_string(out.size()) +
                      " bytes; the previous cache, if any, is unchanged)"
                : "");
  }
  fs::rename(tmp, path, ec);  // atomic on POSIX: readers see the old file or the new one
  if (ec) {
    std::error_code e2;
    fs::remove(tmp, e2);
    return "cannot rename '" + tmp + "' to '" + path + "': " + ec.message();
  }
  return "";
}

// ---- 3. the parallel decode -------------------------------------------------------------------

// Prints "decoded k/n files" while the workers run: a \r counter on a terminal, else a line every
// few seconds (a log file should not fill with counters). Silent for loads under a second.
class Progress {
 public:
  Progress(bool enabled, int64_t total)
      : enabled_(enabled), tty_(::isatty(::fileno(stderr)) != 0), total_(total) {}
  void update(int64_t done) {
    if (!enabled_) return;
    const double t = seconds_since(start_);
    if (t < 1.0 || t - last_ < (tty_ ? 0.25 : 5.0)) return;
    last_ = t;
    std::fprintf(stderr, "%sImageFolder: decoded %lld/%lld files (%.0f%%), %.0f s%s",
                 tty_ ? "\r" : "", static_cast<long long>(done), static_cast<long long>(total_),
                 100.0 * static_cast<double>(done) / static_cast<double>(total_), t,
                 tty_ ? "" : "\n");
    std::fflush(stderr);
    printed_ = true;
  }
  void finish() {
    if (enabled_ && tty_ && printed_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_, tty_;
  int64_t total_;
  Clock::time_point start_ = Clock::now();
  double last_ = 0;
  bool printed_ = false;
};

// How many files ahead of the decoders the read-ahead runs (about 4 MB of photos).
constexpr int64_t kReadAheadFiles = 128;

void advise_will_need(const std::string& path) {
#if defined(POSIX_FADV_WILLNEED)
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;  // the worker will report it
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
  ::close(fd);
#else
  (void)path;
#endif
}

// Decodes every file of the listing into images [files, C, H, W]; status says which succeeded.
Tensor decode_all(const std::string& root, const Listing& listing, const ImageFolderOptions& o,
                  int64_t C, int threads, std::vector<Status>& status) {
  const int64_t n = static_cast<int64_t>(listing.files.size());
  const int64_t sample = C * o.height * o.width;
  Tensor images = empty({n, C, o.height, o.width}, TensorOptions(kUInt8).device(Device::cpu()));
  uint8_t* base = images.data_ptr<uint8_t>();
  status.assign(static_cast<size_t>(n), Status{});

  // Work is handed out one file at a time from a shared counter: photos differ in size, so a
  // fixed split would leave one thread idle at the end. Each file writes only its own slot.
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    try {
      DecodeScratch scratch;
      for (;;) {
        const int64_t i = next.fetch_add(1);
        if (i >= n || stop.load()) break;
        const std::string path = (fs::path(root) / listing.files[i].rel).string();
        Status& s = status[i];
        s.reason = read_file_bytes(path, scratch.file);
        if (s.reason.empty()) {
          s.reason = decode_image(scratch.file.data(), scratch.file.size(), o.height, o.width,
                                  static_cast<int>(C), base + i * sample, scratch);
        }
        s.ok = s.reason.empty();
        done.fetch_add(1);
      }
    } catch (...) {  // out of memory, say: not a reason to skip a file, a reason to stop
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      stop = true;
    }
  };
  const int t = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, n)));
  std::vector<std::thread> pool;
  pool.reserve(t);
  for (int k = 0; k < t; ++k) pool.emplace_back(worker);
  // Meanwhile this thread reads ahead: it asks the kernel to start loading the next files from
  // disk (posix_fadvise WILLNEED returns at once), so the workers find them in memory instead of
  // each waiting for its own read. It matters when the photos are not in the page cache yet (the
  // first run after a download or a reboot); otherwise it costs three syscalls per file.
  Progress progress(o.verbose, n);
  try {
    int64_t advised = 0;
    while (done.load() < n && !stop.load()) {
      const int64_t until = std::min(n, next.load() + kReadAheadFiles);
      for (; advised < until; ++advised) {
        advise_will_need((fs::path(root) / listing.files[advised].rel).string());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      progress.update(done.load());
    }
  } catch (...) {  // never leave joinable threads behind
    stop = true;
    for (std::thread& th : pool) th.join();
    throw;
  }
  for (std::thread& th : pool) th.join();
  progress.finish();
  if (error) std::rethrow_exception(error);
  return images;
}

void warn_skipped(const std::string& root, const std::vector<SkippedFile>& skipped) {
  for (const SkippedFile& s : skipped) {
    std::fprintf(stderr, "ImageFolder: skipped %s: %s\n",
                 (fs::path(root) / s.path).string().c_str(), s.reason.c_str());
  }
}

// "ImageFolder: PetImages: <n> images of 50x50 grayscale (Cat: <a>, Dog: <b>), <k> files skipped,
// decoded on 2 threads in <t> s" (or "read from the cache <path> in <t> s")
void print_summary(const ImageFolder::Loaded& l, const ImageFolderOptions& o, int threads,
                   double seconds) {
  std::vector<int64_t> counts(l.classes.size(), 0);
  const int64_t* y = l.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < l.labels.size(0); ++i) ++counts[static_cast<size_t>(y[i])];
  std::string per_class;
  for (size_t c = 0; c < counts.size(); ++c) {
    per_class += (c ? ", " : "") + l.classes[c] + ": " + std::to_string(counts[c]);
    if (counts[c] == 0) {
      std::fprintf(stderr, "ImageFolder: warning: not one file of class '%s' could be decoded\n",
                   l.classes[c].c_str());
    }
  }
  const std::string how =
      l.from_cache ? "read from the cache " + l.cache_path
                   : "decoded on " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  std::fprintf(stderr, "ImageFolder: %s: %lld images of %lldx%lld %s (%s), %lld files skipped, "
               "%s in %.2f s\n", l.root.c_str(), static_cast<long long>(l.images.size(0)),
               static_cast<long long>(o.height), static_cast<long long>(o.width),
               o.grayscale ? "grayscale" : "RGB", per_class.c_str(),
               static_cast<long long>(l.skipped.size()), how.c_str(), seconds);
}

std::atomic<bool> g_cache_warning_given{false};

}  // namespace

std::string pet_images_hint() {
  return "ImageFolder reads a folder with one sub-folder per class, each holding that class's "
         "images (JPEG, PNG or BMP); the class names are the sub-folder names, sorted. For "
         "Kaggle's cats-vs-dogs photos:\n"
         "  PetImages/Cat/0.jpg ... PetImages/Cat/12499.jpg    (label 0)\n"
         "  PetImages/Dog/0.jpg ... PetImages/Dog/12499.jpg    (label 1)\n"
         "To get them: download kagglecatsanddogs_5340.zip (about 800 MB) from Microsoft, "
         "https://www.microsoft.com/en-us/download/details.aspx?id=54765 (the same photos are on "
         "Kaggle as \"Dogs vs. Cats\"), unzip it and pass the PetImages folder it contains. The "
         "few broken files in it are skipped with a warning each.";
}

ImageFolder::Loaded ImageFolder::load(const std::string& root, const ImageFolderOptions& o) {
  EMBER_CHECK(o.height > 0 && o.width > 0, "ImageFolder: height and width must be positive, got ",
              o.height, "x", o.width);
  EMBER_CHECK(o.threads >= 0, "ImageFolder: threads must be >= 0 (0 = all cores), got ",
              o.threads);
  const auto t0 = Clock::now();
  const int64_t C = o.grayscale ? 1 : 3;
  const Listing listing = list_folder(root);
  const int64_t n_files = static_cast<int64_t>(listing.files.size());

  Loaded l;
  l.root = root;
  l.classes = listing.classes;
  l.cache_path = cache_file_path(root, o);
  std::vector<Status> status;

  // 2. the cache. A run killed while writing it left its temporary file behind: remove that
  // (a cache can be tens of megabytes) and say why the folder is decoded again.
  if (!l.cache_path.empty()) {
    const std::vector<std::string> abandoned = remove_abandoned_cache_files(l.cache_path);
    if (o.verbose && !abandoned.empty()) {
      std::error_code ec;
      const bool have_cache = fs::exists(l.cache_path, ec);
      std::string names;
      for (const std::string& a : abandoned) names += (names.empty() ? "" : ", ") + a;
      std::fprintf(stderr, "ImageFolder: an earlier run was interrupted while writing the cache "
                   "%s; removed its incomplete file %s%s\n", l.cache_path.c_str(), names.c_str(),
                   have_cache ? "" : "; decoding the folder again to rebuild the cache");
    }
    CacheHit hit;
    std::string stale;
    try {
      if (read_cache(l.cache_path, listing, o.height, o.width, C, hit, &stale)) {
        l.images = std::move(hit.images);
        l.labels = std::move(hit.labels);
        status = std::move(hit.status);
        l.from_cache = true;
      } else if (o.verbose && !stale.empty()) {
        std::fprintf(stderr, "ImageFolder: the cache %s is out of date (%s); decoding the folder "
                     "again\n", l.cache_path.c_str(), stale.c_str());
      }
    } catch (const CacheDamaged& d) {
      if (o.verbose) {
        std::fprintf(stderr, "ImageFolder: ignoring the damaged cache %s (%s); decoding the "
                     "folder again\n", l.cache_path.c_str(), d.why.c_str());
      }
    }
  }

  // 3. decode
  const int threads =
      o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!l.from_cache) {
    Tensor all = decode_all(root, listing, o, C, threads, status);
    // Squeeze out the skipped slots, keeping the order (a slot only ever moves towards the
    // front, onto a slot already moved or skipped).
    const int64_t sample = C * o.height * o.width;
    uint8_t* p = all.data_ptr<uint8_t>();
    std::vector<int64_t> labels;
    labels.reserve(static_cast<size_t>(n_files));
    for (int64_t i = 0; i < n_files; ++i) {
      if (!status[i].ok) continue;
      const int64_t k = static_cast<int64_t>(labels.size());
      if (k != i) std::memmove(p + k * sample, p + i * sample, static_cast<size_t>(sample));
      labels.push_back(listing.files[i].label);
    }
    const int64_t n_ok = static_cast<int64_t>(labels.size());
    // A view of the first n_ok samples: the storage keeps the skipped files' few KB each.
    l.images = all.narrow(0, 0, n_ok);
    l.labels = empty({n_ok}, TensorOptions(kInt64).device(Device::cpu()));
    std::copy(labels.begin(), labels.end(), l.labels.data_ptr<int64_t>());
  }

  for (int64_t i = 0; i < n_files; ++i) {
    if (!status[i].ok) l.skipped.push_back({listing.files[i].rel, status[i].reason});
  }
  if (o.verbose) warn_skipped(root, l.skipped);
  if (l.images.size(0) == 0) {
    throw IOError("ImageFolder: none of the " + std::to_string(n_files) + " files in '" + root +
                  "' could be decoded (the first, " + l.skipped[0].path + ": " +
                  l.skipped[0].reason + ").\n" + pet_images_hint());
  }

  // 4. write the cache
  if (!l.cache_path.empty() && !l.from_cache) {
    const std::string why = write_cache(l.cache_path, listing, status, l.images, l.labels);
    if (!why.empty()) {
      if (o.verbose && !g_cache_warning_given.exchange(true)) {
        std::fprintf(stderr, "ImageFolder: working without a cache: %s. Set "
                     "ImageFolderOptions::cache_dir to a writable folder to make the next load "
                     "fast.\n", why.c_str());
      }
      l.cache_path.clear();
    }
  }
  if (o.verbose) print_summary(l, o, threads, seconds_since(t0));
  return l;
}

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options, Transform transform)
    : ImageFolder(load(root, options), std::move(transform)) {}

ImageFolder::ImageFolder(Loaded loaded, Transform transform)
    : TensorDataset(std::move(loaded.images), std::move(loaded.labels), std::move(transform)),
      root_(std::move(loaded.root)),
      cache_path_(std::move(loaded.cache_path)),
      classes_(std::move(loaded.classes)),
      skipped_files_(std::move(loaded.skipped)),
      from_cache_(loaded.from_cache) {}

std::vector<int64_t> ImageFolder::class_counts() const {
  std::vector<int64_t> counts(classes_.size(), 0);
  const Tensor& y = labels();
  const int64_t* p = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < y.size(0); ++i) ++counts[static_cast<size_t>(p[i])];
  return counts;
}

std::string ImageFolder::summary() const {
  const std::vector<int64_t> counts = class_counts();
  std::string s;
  for (size_t c = 0; c < counts.size(); ++c) {
    s += (c ? ", " : "") + classes_[c] + ": " + std::to_string(counts[c]);
  }
  return s;
}

// ---- decoding on the fly ----------------------------------------------------------------------

LazyImageFolder::LazyImageFolder(const std::string& root, ImageFolderOptions options,
                                 Transform transform, Augmentation augmentation)
    : root_(root), options_(std::move(options)), transform_(std::move(transform)),
      augmentation_(std::move(augmentation)) {
  EMBER_CHECK(options_.height > 0 && options_.width > 0, "LazyImageFolder: height and width "
              "must be positive, got ", options_.height, "x", options_.width);
  Listing listing = list_folder(root);
  classes_ = std::move(listing.classes);
  files_.reserve(listing.files.size());
  labels_.reserve(listing.files.size());
  for (FileEntry& f : listing.files) {
    files_.push_back(std::move(f.rel));
    labels_.push_back(f.label);
  }
}

Batch LazyImageFolder::get_batch_for_epoch(const Tensor& indices, int64_t epoch) const {
  EMBER_CHECK(indices.defined() && indices.dim() == 1 && indices.dtype() == kInt64 &&
                  indices.device().is_cpu(),
              "LazyImageFolder: expected indices int64 [B] on the CPU");
  const Tensor idx = indices.contiguous();
  const int64_t B = idx.size(0), C = options_.grayscale ? 1 : 3;
  const int64_t sample = C * options_.height * options_.width;
  Tensor images =
      empty({B, C, options_.height, options_.width}, TensorOptions(kUInt8).device(Device::cpu()));
  Tensor targets = empty({B}, TensorOptions(kInt64).device(Device::cpu()));
  // One scratch per thread: the DataLoader's workers call this concurrently, and the buffers
  // keep their size from one image to the next.
  thread_local DecodeScratch scratch;
  const int64_t* ix = idx.data_ptr<int64_t>();
  uint8_t* out = images.data_ptr<uint8_t>();
  int64_t* t = targets.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = ix[b];
    EMBER_CHECK(i >= 0 && i < size(), "LazyImageFolder: sample ", i,
                " out of range for a folder of ", size(), " images");
    const std::string path = (fs::path(root_) / files_[static_cast<size_t>(i)]).string();
    std::string reason = read_file_bytes(path, scratch.file);
    if (reason.empty()) {
      reason = decode_image(scratch.file.data(), scratch.file.size(), options_.height,
                            options_.width, static_cast<int>(C), out + b * sample, scratch);
    }
    if (!reason.empty()) {
      throw IOError("LazyImageFolder: cannot decode '" + path + "': " + reason +
                    " (remove or replace the file; ImageFolder, which decodes up front, skips "
                    "such files)");
    }
    t[b] = labels_[static_cast<size_t>(i)];
  }
  Batch batch{std::move(images), std::move(targets)};
  if (augmentation_) batch.data = augmentation_(batch.data, idx, epoch);
  if (transform_) batch.data = transform_(batch.data);
  return batch;
}

}  // namespace ember::data
