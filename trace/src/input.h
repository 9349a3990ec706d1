// Internal to trace/: getting trace bytes into one padded, mutable buffer (plain or gzip).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ptadvise::detail {

// Bytes followed by at least kPadding zero bytes, as simdjson requires. Mutable: the loader briefly
// patches single separator bytes while parsing windows of the event list.
struct PaddedBuffer {
  static constexpr size_t kPadding = 64;  // SIMDJSON_PADDING
  // One more zero byte after the padding-sized tail: the loader may write a closing ']' right after the
  // payload and still needs kPadding readable bytes after that.
  static constexpr size_t kSpare = 1;
  std::shared_ptr<char> owner;  // an anonymous mapping
  char* data = nullptr;
  size_t size = 0;      // payload bytes
  size_t capacity = 0;  // allocated bytes minus kSpare (>= size + kPadding)
};

// The error text is one line without the file label ("cannot open: No such file or directory").
struct InputResult {
  PaddedBuffer buffer;
  std::string error;  // empty on success
  std::vector<std::string> warnings;  // usable bytes with a problem (a cut gzip stream), one line each
  uint64_t unread_bytes = 0;  // LoadStats::unread_bytes: a gzip stream that could not be inflated past damage
  bool ok() const { return error.empty(); }
};

// Reads a file, a pipe or (for "-") stdin; gzip content (by its magic bytes, whatever the name) is
// inflated straight into the final buffer. Files are read, not mapped: a mapped file that is truncated
// while it is read kills the process with SIGBUS. Sizes beyond the memory this process may still use
// (io.h: available_memory) are refused with an error instead of running out of memory.
InputResult read_input_file(const std::string& path);

// Copies bytes into a padded buffer, inflating them when they are gzip.
InputResult copy_input_bytes(std::string_view bytes);

// Largest uncompressed input accepted. Offsets are 64-bit, so this is a sanity cap (inflation bombs,
// absurd files) rather than a format limit.
inline constexpr size_t kMaxInputBytes = size_t{64} << 30;

}  // namespace ptadvise::detail
