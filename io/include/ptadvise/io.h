// File input and output that hostile or unlucky conditions cannot turn into a crash, a hang or a
// half-written file: bounded reads of small files, atomic replacement of outputs, and the memory budget
// checked before large allocations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ptadvise {

// Configurations, baselines, rule and suppression files are small; anything larger is refused rather
// than read until memory runs out (`--config /dev/zero`).
inline constexpr size_t kMaxSmallFileBytes = size_t{16} << 20;

// Reads a whole file of at most `max_bytes` into `text`. Returns an error phrase without the path
// ("larger than 16 MiB", "No such file or directory") or nullopt on success. Works on pipes and
// special files too; reads stop at max_bytes + 1.
std::optional<std::string> read_small_file(const std::string& path, std::string& text,
                                           size_t max_bytes = kMaxSmallFileBytes);

// A file written next to its final name and renamed over it when complete: readers see the old or
// the new content, never a mixture; on a full disk the previous file survives. The temporary file is
// created exclusively (O_EXCL, random name, never through a symlink); it is removed unless committed,
// also when SIGINT, SIGTERM or SIGHUP stops ptadvise while it is written (where those signals would have
// ended ptadvise anyway: the handler removes the temporary files, then the signal takes its course).
// Targets that exist and are not regular files (/dev/stdout, a pipe) are written in place instead.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // The error phrase when the file could not be created (nullopt when ready to write).
  const std::optional<std::string>& error() const { return error_; }
  // The descriptor to write to (-1 on error). Owned by this object.
  int fd() const { return fd_; }
  bool write(std::string_view bytes);
  // fsync, rename over the target, fsync the directory. Returns an error phrase or nullopt.
  std::optional<std::string> commit();

 private:
  std::string path_;
  std::string temp_path_;  // empty when writing in place
  int temp_slot_ = -1;     // its entry in the list removed on SIGINT/SIGTERM/SIGHUP
  int fd_ = -1;
  bool committed_ = false;
  std::optional<std::string> error_;
};

// Removes the temporary files of outputs not yet committed, as an interruption does: for a process that
// must end without unwinding. Allocation-free.
void remove_uncommitted_outputs() noexcept;

// AtomicFile in one call. Returns an error phrase (without the path) or nullopt.
std::optional<std::string> write_file_atomically(const std::string& path, std::string_view bytes);

// Bytes this process can still allocate before the system, its cgroup or its rlimits refuse: the
// least of MemAvailable + SwapFree, the cgroup's memory.max minus its usage, and RLIMIT_AS / RLIMIT_DATA
// minus what is already mapped. PTADVISE_MEMORY_LIMIT (a size such as 8GiB, 512MB, or bytes) replaces
// the measurement. SIZE_MAX when nothing can be measured.
size_t available_memory();

// How many items of `item_bytes` each fit in a quarter of available_memory(): the share one structure
// whose size the input drives (not only its bytes) may take. SIZE_MAX when nothing can be measured.
inline size_t items_in_memory_share(size_t item_bytes) {
  const size_t available = available_memory();
  return available == SIZE_MAX ? SIZE_MAX : available / 4 / item_bytes;
}

// "1.5 GiB", for messages.
std::string format_bytes(uint64_t bytes);

// A structure that would pass its share of the memory budget: thrown before it is allocated. A
// std::bad_alloc, so every path that carries an out-of-memory error to the command carries it, and the
// command prints what() — what grew, and how to go on — instead of the generic out-of-memory line.
class BudgetExceeded : public std::bad_alloc {
 public:
  explicit BudgetExceeded(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Parses "123", "64KiB", "1.5GB", "8 GiB" (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB). nullopt when invalid.
std::optional<uint64_t> parse_byte_size(std::string_view text);

}  // namespace ptadvise
