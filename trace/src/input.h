// Internal to trace/: getting trace bytes into one padded, mutable buffer (plain or gzip).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ptadvise::detail {

// Bytes followed by at least kPadding zero bytes, as simdjson requires. Mutable: the loader briefly
// patches single separator bytes while parsing windows of the event list.
struct PaddedBuffer {
  static constexpr size_t kPadding = 64;  // SIMDJSON_PADDING
  // One more zero byte after the padding-sized tail: the loader may write a closing ']' right after the
  // payload and still needs kPadding readable bytes after that.
  static constexpr size_t kSpare = 1;
  std::shared_ptr<char> owner;  // heap memory or a private (copy-on-write) file mapping
  char* data = nullptr;
  size_t size = 0;      // payload bytes
  size_t capacity = 0;  // allocated bytes minus kSpare (>= size + kPadding)
};

// The error text is one line without the file label ("cannot open: No such file or directory").
struct InputResult {
  PaddedBuffer buffer;
  std::string error;  // empty on success
  bool ok() const { return error.empty(); }
};

// Reads a file; gzip content (by its magic bytes, whatever the name) is inflated. Plain files are mapped
// privately rather than copied: the page cache backs the bytes, and the few bytes the loader patches are
// copied on write.
InputResult read_input_file(const std::string& path);

// Copies bytes into a padded buffer, inflating them when they are gzip.
InputResult copy_input_bytes(std::string_view bytes);

// Largest uncompressed input accepted. Offsets are 64-bit, so this is a sanity cap (inflation bombs,
// absurd files) rather than a format limit.
inline constexpr size_t kMaxInputBytes = size_t{64} << 30;

}  // namespace ptadvise::detail
