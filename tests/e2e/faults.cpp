// What happens to the image cache (data/image_folder.h) when things go wrong around a training run,
// with examples/cats_vs_dogs as the real process:
//   - killed (SIGKILL) while writing the cache: the next start removes the half-written file,
//     says so, decodes again and writes a complete cache, which the start after uses;
//   - a read-only data folder: the cache is skipped with one warning, training goes on;
//   - the disk full while writing the cache: a clear error naming ENOSPC and the size needed, the
//     previous cache left intact, no temporary file left, training goes on. Twice: with the test
//     hook's cache fault EMBER_TEST_CACHE_FAULT=enospc (everywhere), and with a real 64 KiB tmpfs
//     mounted on the cache folder where this machine lets a test mount one (a private mount
//     namespace: nothing outside the test sees it).
// The kill point comes from the cache fault EMBER_TEST_CACHE_FAULT=pause (core/test_hooks.h, armed
// in the child through its environment), which stops the write half-way through the temporary
// file; the test then sends SIGKILL. A build without test hooks skips the two tests that need it.
//
// The photos are twelve small JPEGs (six per class) written here; one epoch of the seed's CNN on
// them takes a fraction of a second.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/ember.h"
#include "core/test_hooks.h"
#include "data/data.h"
#include "test_files.h"

extern char** environ;

using namespace ember;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

#ifdef EMBER_CATS_VS_DOGS
const char* const kProgram = EMBER_CATS_VS_DOGS;
#else
const char* const kProgram = "";
#endif

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ember_test_faults_") {}
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// `n` distinct photos per class in root/Cat and root/Dog.
void make_photos(const std::string& root, int n, int first = 0) {
  for (const char* cls : {"Cat", "Dog"}) {
    fs::create_directories(fs::path(root) / cls);
    for (int i = first; i < first + n; ++i) {
      std::vector<uint8_t> px(3 * 40 * 60);
      for (size_t k = 0; k < px.size(); ++k) {
        px[k] = static_cast<uint8_t>(k * static_cast<size_t>(i + 3) + (cls[0] == 'C' ? 0 : 90));
      }
      const Tensor img = from_vector(px, {3, 40, 60}, kUInt8);
      data::write_jpeg((fs::path(root) / cls / (std::to_string(i) + ".jpg")).string(), img, 90);
    }
  }
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// cats_vs_dogs on `root`, one short epoch on the CPU, output to dir/tag.out and dir/tag.err.
// Only posix_spawn and plain system calls: it also runs in the forked child of in_private_mounts.
pid_t spawn(const std::string& dir, const std::string& tag, const std::string& root,
            const std::vector<std::string>& env_extra) {
  std::vector<std::string> args = {kProgram, "--data", root, "--device", "cpu", "--epochs", "1",
                                   "--batch-size", "4", "--threads", "1"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "EMBER_TEST_", 11) != 0) env.emplace_back(*e);
  }
  env.insert(env.end(), env_extra.begin(), env_extra.end());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string out = dir + "/" + tag + ".out", err = dir + "/" + tag + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, kProgram, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Waits for `pid` (at most five minutes, then SIGKILL); its exit status, or -1.
int wait_for(pid_t pid) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() - start > std::chrono::minutes(5)) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// One run to its end: (status, stdout + stderr).
int run(const std::string& dir, const std::string& tag, const std::string& root,
        const std::vector<std::string>& env = {}) {
  const pid_t pid = spawn(dir, tag, root, env);
  return pid > 0 ? wait_for(pid) : -1;
}

std::string output(const std::string& dir, const std::string& tag) {
  return read_text(dir + "/" + tag + ".out") + read_text(dir + "/" + tag + ".err");
}

constexpr int kNoNamespace = 77;

bool write_proc(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Runs body() in a child process with a mount namespace of its own (entered as root, or through a
// user namespace otherwise), so that body can mount file systems that nobody else sees. Returns
// body's status, or kNoNamespace when this machine does not allow it. The child does nothing but
// system calls and posix_spawn: it was forked from a process that may have other threads.
int in_private_mounts(const std::function<int()>& body) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  const pid_t pid = ::fork();
  if (pid < 0) return kNoNamespace;
  if (pid == 0) {
    bool ok = uid == 0 && ::unshare(CLONE_NEWNS) == 0;
    if (!ok && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0) {
      ok = write_proc("/proc/self/setgroups", "deny") &&
           write_proc("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
           write_proc("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
    }
    if (!ok || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(kNoNamespace);
    _exit(body());
  }
  return wait_for(pid);
}

// The flags a remount must keep (a user namespace may not drop them).
unsigned long kept_flags(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return 0;
  unsigned long f = 0;
  if (s.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (s.f_flag & ST_NODEV) f |= MS_NODEV;
  if (s.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (s.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (s.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (s.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

bool skip_reason() {
  if (std::string(kProgram).empty() || !fs::exists(kProgram)) {
    std::cout << "SKIPPED: examples/cats_vs_dogs was not built (EMBER_BUILD_EXAMPLES=OFF)\n";
    return true;
  }
  return false;
}

// The tests that arm a cache fault also need a build with test hooks.
bool skip_without_hooks() {
  if (skip_reason()) return true;
  if (!test_hooks::compiled()) {
    std::cout << "SKIPPED: this build has no test hooks for the cache fault "
                 "(EMBER_TEST_HOOKS=OFF)\n";
    return true;
  }
  return false;
}

const char* const kCacheName = "imagefolder-50x50-gray.bin";

}  // namespace

TEST_CASE("faults: killed while writing the image cache, the next start notices and rebuilds",
          "[data][image][faults][process]") {
  if (skip_without_hooks()) return;
  TempDir dir;
  const std::string root = dir / "PetImages", cache_dir = root + "/.ember-cache";
  make_photos(root, 6);

  // 1. Paused half-way through the cache's temporary file, then killed.
  const pid_t pid = spawn(dir.str(), "killed", root, {"EMBER_TEST_CACHE_FAULT=pause"});
  REQUIRE(pid > 0);
  const auto start = std::chrono::steady_clock::now();
  while (read_text(dir / "killed.err").find("ember: cache fault: paused") == std::string::npos) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, WNOHANG) == 0);  // still running
    REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::minutes(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  const std::vector<std::string> left = names_in(cache_dir);
  INFO("left in the cache folder: " << left.size() << " entries");
  REQUIRE(left.size() == 1);  // the temporary file, no cache
  CHECK(left[0].rfind(std::string(kCacheName) + ".tmp." + std::to_string(pid) + ".", 0) == 0);
  CHECK(fs::file_size(cache_dir + "/" + left[0]) > 0);

  // 2. The next start: notices, says so, decodes, trains, writes a complete cache.
  REQUIRE(run(dir.str(), "next", root) == 0);
  const std::string next = output(dir.str(), "next");
  INFO(next);
  CHECK_THAT(next, Contains("an earlier run was interrupted while writing the cache " + cache_dir +
                            "/" + kCacheName + "; removed its incomplete file " + left[0]));
  CHECK_THAT(next, Contains("decoding the folder again to rebuild the cache"));
  CHECK_THAT(next, Contains("data: " + root + ", decoded"));
  CHECK_THAT(next, Contains("Accuracy:"));
  CHECK(names_in(cache_dir) == std::vector<std::string>{kCacheName});

  // 3. The start after uses it, and has nothing to say about it.
  REQUIRE(run(dir.str(), "after", root) == 0);
  const std::string after = output(dir.str(), "after");
  CHECK_THAT(after, Contains("read from the cache"));
  CHECK(count(after, "interrupted") == 0);
}

TEST_CASE(
    "faults: a full disk while writing the cache (test hook): a clear error, the old cache intact",
    "[data][image][faults][process]") {
  if (skip_without_hooks()) return;
  TempDir dir;
  const std::string root = dir / "PetImages", cache = root + "/.ember-cache/" + kCacheName;
  make_photos(root, 6);
  REQUIRE(run(dir.str(), "first", root) == 0);
  const test::Bytes old_cache = test::read_bytes(cache);
  REQUIRE(old_cache.size() > 12 * 2500);

  make_photos(root, 3, /*first=*/100);  // the folder changed: the cache must be rewritten
  REQUIRE(run(dir.str(), "full", root, {"EMBER_TEST_CACHE_FAULT=enospc"}) == 0);
  const std::string full = output(dir.str(), "full");
  INFO(full);
  CHECK(count(full, "working without a cache") == 1);
  CHECK_THAT(full, Contains("No space left on device (the cache needs ") &&
                       Contains("bytes; the previous cache, if any, is unchanged)"));
  CHECK_THAT(full, Contains("Accuracy:"));  // training went on
  CHECK(test::read_bytes(cache) == old_cache);
  CHECK(names_in(root + "/.ember-cache") == std::vector<std::string>{kCacheName});  // no temp file

  // With room again, the next run rebuilds the cache for the changed folder.
  REQUIRE(run(dir.str(), "room", root) == 0);
  CHECK_THAT(output(dir.str(), "room"), Contains("is out of date"));
  CHECK(test::read_bytes(cache) != old_cache);
}

TEST_CASE("faults: a full disk while writing the cache (a real 64 KiB tmpfs)",
          "[data][image][faults][process]") {
  if (skip_reason()) return;
  TempDir dir;
  const std::string root = dir / "PetImages", cache_dir = root + "/.ember-cache";
  make_photos(root, 6);  // a cache of 12 images of 50x50: 31 KB, fits in 64 KiB
  fs::create_directories(cache_dir);
  const std::string d = dir.str();
  const int status = in_private_mounts([&] {
    if (::mount("tmpfs", cache_dir.c_str(), "tmpfs", 0, "size=64k") != 0) return kNoNamespace;
    if (run(d, "fits", root) != 0) return 10;
    fs::copy_file(cache_dir + "/" + kCacheName, d + "/cache-1");
    make_photos(root, 12, /*first=*/100);  // 36 images: 91 KB, more than the tmpfs holds
    if (run(d, "full", root) != 0) return 11;
    fs::copy_file(cache_dir + "/" + kCacheName, d + "/cache-2");
    std::ofstream(d + "/listing") << names_in(cache_dir).size();
    return 0;
  });
  if (status == kNoNamespace) {
    std::cout << "SKIPPED: this machine does not let a test mount a tmpfs in a private mount "
                 "namespace (the test hook variant above covers the full disk)\n";
    return;
  }
  INFO(output(d, "fits") << output(d, "full"));
  REQUIRE(status == 0);
  const std::string full = output(d, "full");
  CHECK(count(full, "working without a cache") == 1);
  CHECK_THAT(full, Contains("No space left on device (the cache needs "));
  CHECK_THAT(full, Contains("Accuracy:"));
  CHECK(test::read_bytes(d + "/cache-1") == test::read_bytes(d + "/cache-2"));
  CHECK(read_text(d + "/listing") == "1");  // the old cache and nothing else
}

TEST_CASE("faults: a read-only data folder, the cache is skipped with one warning, training goes on",
          "[data][image][faults][process]") {
  if (skip_reason()) return;
  TempDir dir;
  const std::string root = dir / "PetImages";
  make_photos(root, 6);
  const std::string d = dir.str();
  int status = in_private_mounts([&] {
    if (::mount(root.c_str(), root.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, root.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(root),
                nullptr) != 0) {
      return kNoNamespace;
    }
    return run(d, "readonly", root);
  });
  if (status == kNoNamespace && ::geteuid() != 0) {
    // No private mounts, but not root either: the permission bits are enough.
    fs::permissions(root, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                    fs::perm_options::remove);
    status = run(d, "readonly", root);
    fs::permissions(root, fs::perms::owner_write, fs::perm_options::add);
  }
  if (status == kNoNamespace) {
    std::cout << "SKIPPED: cannot make a read-only folder here (root, and no private mount "
                 "namespace)\n";
    return;
  }
  const std::string out = output(d, "readonly");
  INFO(out);
  REQUIRE(status == 0);
  CHECK(count(out, "ImageFolder: working without a cache") == 1);
  CHECK(count(out, "warning") + count(out, "working without") == 1);  // nothing else complains
  CHECK_THAT(out, Contains("Read-only file system") || Contains("Permission denied"));
  CHECK_THAT(out, Contains("data: " + root + ", decoded"));
  CHECK_THAT(out, Contains("Accuracy:"));
  CHECK_FALSE(fs::exists(root + "/.ember-cache"));
}
