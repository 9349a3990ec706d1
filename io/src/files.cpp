#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>

#include "ptadvise/io.h"

namespace ptadvise {
namespace {

std::string last_error() { return std::strerror(errno); }

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      if (wrote == 0) errno = ENOSPC;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(wrote));
  }
  return true;
}

// Temporary files not yet committed, removed when ptadvise is interrupted (Ctrl-C, kill, a hang-up) while
// writing: a stopped run leaves the previous file and no hidden temporary beside it. Fixed slots, so the
// signal handler only reads memory and calls unlink (async-signal-safe).
struct TempSlot {
  std::atomic<bool> used{false};
  char path[PATH_MAX] = {};
};
constexpr int kTempSlots = 64;
TempSlot g_temps[kTempSlots];
std::mutex g_temps_mutex;
constexpr int kInterruptions[] = {SIGINT, SIGTERM, SIGHUP};

void remove_temps_and_stop(int signal) {
  remove_uncommitted_outputs();
  // Then the signal's own action, so the exit status still says what stopped ptadvise.
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

// Only where the default action would end ptadvise: ignored signals stay ignored, handlers of others
// (`run` forwards signals to its program) stay theirs.
void install_interruption_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal : kInterruptions) {
      struct sigaction current {};
      if (sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
      struct sigaction cleanup {};
      cleanup.sa_handler = remove_temps_and_stop;
      sigemptyset(&cleanup.sa_mask);
      sigaction(signal, &cleanup, nullptr);
    }
  });
}

int register_temp(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  std::lock_guard lock(g_temps_mutex);
  for (int k = 0; k < kTempSlots; ++k) {
    if (g_temps[k].used.load()) continue;
    std::memcpy(g_temps[k].path, path.c_str(), path.size() + 1);
    g_temps[k].used.store(true);
    return k;
  }
  return -1;  // more than 64 outputs at once: those are removed on failure only, not on a signal
}

void unregister_temp(int slot) {
  if (slot < 0) return;
  std::lock_guard lock(g_temps_mutex);
  g_temps[slot].used.store(false);
}

mode_t current_umask() {
  mode_t mask = umask(0);
  umask(mask);
  return mask;
}

}  // namespace

std::optional<std::string> read_small_file(const std::string& path, std::string& text, size_t max_bytes) {
  text.clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return last_error();
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    close(fd);
    return std::string("is a directory");
  }
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > max_bytes) {
    close(fd);
    const std::string limit = format_bytes(max_bytes), size = format_bytes(static_cast<uint64_t>(info.st_size));
    return "larger than " + limit + (size == limit ? "" : " (" + size + ")") + ": not a file of this kind";
  }
  char chunk[65536];
  while (true) {
    ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      std::string error = last_error();
      close(fd);
      return error;
    }
    if (got == 0) break;
    if (text.size() + static_cast<size_t>(got) > max_bytes) {
      close(fd);
      text.clear();
      return "larger than " + format_bytes(max_bytes) + ": not a file of this kind";
    }
    text.append(chunk, static_cast<size_t>(got));
  }
  close(fd);
  return std::nullopt;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  struct stat info {};
  std::string target = path_;
  if (lstat(path_.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    // The user's own symlink: replace the file it points to, not the link.
    char resolved[PATH_MAX];
    if (realpath(path_.c_str(), resolved) != nullptr) target = resolved;
  }
  if (stat(target.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) {
      error_ = "is a directory";
      return;
    }
    fd_ = open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);  // /dev/stdout, a pipe
    if (fd_ < 0) error_ = last_error();
    return;
  }
  const bool exists = stat(target.c_str(), &info) == 0;
  const mode_t mode = exists ? (info.st_mode & 07777) : (0666 & ~current_umask());
  std::string directory = directory_of(target);
  std::string base = target.substr(target.rfind('/') == std::string::npos ? 0 : target.rfind('/') + 1);
  std::random_device random;
  // The interruptions wait while the file is created and listed: a signal in between would leave it.
  install_interruption_handlers();
  sigset_t interruptions, previous_mask;
  sigemptyset(&interruptions);
  for (int signal : kInterruptions) sigaddset(&interruptions, signal);
  pthread_sigmask(SIG_BLOCK, &interruptions, &previous_mask);
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%08x%08x", random(), random());
    std::string candidate = directory + "/." + base + "." + suffix + ".tmp";
    // O_EXCL with O_CREAT never follows a symlink, planted or not.
    fd_ = open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ >= 0) {
      temp_path_ = candidate;
      temp_slot_ = register_temp(candidate);
      if (fchmod(fd_, mode) != 0) {
        // Not fatal: the content is what matters.
      }
    } else if (errno != EEXIST) {
      break;
    }
  }
  const int open_errno = errno;
  pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  errno = open_errno;
  if (fd_ < 0) error_ = "cannot create a temporary file in " + directory + ": " + last_error();
  path_ = target;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!committed_ && !temp_path_.empty()) unlink(temp_path_.c_str());
  unregister_temp(temp_slot_);
}

bool AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) return false;
  if (write_all(fd_, bytes)) return true;
  if (!error_) error_ = last_error();
  return false;
}

std::optional<std::string> AtomicFile::commit() {
  if (error_) return error_;
  if (fd_ < 0) return std::string("not open");
  if (temp_path_.empty()) {  // written in place
    int result = close(fd_);
    fd_ = -1;
    committed_ = true;
    if (result != 0) return last_error();
    return std::nullopt;
  }
  if (fsync(fd_) != 0) {
    error_ = last_error();
    return error_;
  }
  int closed = close(fd_);
  fd_ = -1;
  if (closed != 0) {
    error_ = last_error();
    return error_;
  }
  if (rename(temp_path_.c_str(), path_.c_str()) != 0) {
    error_ = last_error();
    return error_;
  }
  committed_ = true;
  unregister_temp(temp_slot_);
  temp_slot_ = -1;
  int directory = open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {
    fsync(directory);  // the rename itself survives a crash
    close(directory);
  }
  return std::nullopt;
}

std::optional<std::string> write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  if (file.error()) return file.error();
  if (!file.write(bytes)) return file.error();
  return file.commit();
}

void remove_uncommitted_outputs() noexcept {
  for (TempSlot& slot : g_temps) {
    if (slot.used.load()) unlink(slot.path);
  }
}

}  // namespace ptadvise
