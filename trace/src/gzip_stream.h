// Internal to trace/: inflating gzip (every member in turn) a piece at a time, from a file or from bytes in
// memory, with ISA-L's streaming inflate (igzip): it inflates as a stream at about the speed of a
// whole-buffer inflate, so the loader can parse the text as it comes instead of holding all of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct inflate_state;

namespace ptadvise::detail {

class GzipStream {
 public:
  // `compressed_size` bytes of gzip read from `fd` (owned: closed when the stream ends) from where it stands.
  GzipStream(int fd, size_t compressed_size);
  // Bytes in memory, which must outlive the stream.
  GzipStream(const char* bytes, size_t size);
  ~GzipStream();
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  // Inflates up to `room` bytes into `out`; returns the bytes written. Fewer than `room` only once done().
  size_t inflate(char* out, size_t room);
  // Whether more output may come after `room` was filled: inflates one byte into a scratch byte and
  // remembers it for the next inflate(). For the inflated-size caps.
  bool has_more();
  bool done() const { return done_ && !held_; }
  // Nothing could be inflated: the data is not gzip or its first member is corrupt (one line).
  const std::string& error() const { return error_; }
  // What inflated is usable but the stream ended early: cut short, damaged, or followed by bytes that are
  // not gzip (one line, no file label). Set once done().
  const std::optional<std::string>& warning() const { return warning_; }
  // What the compressed bytes left unread after damage would inflate to (LoadStats::unread_bytes).
  uint64_t unread_bytes() const { return unread_bytes_; }
  size_t produced() const { return produced_; }
  size_t compressed_size() const { return compressed_size_; }
  // The inflated size expected at the ratio so far (a guess for reservations and progress displays).
  size_t expected_size() const;

 private:
  bool refill();  // more compressed bytes at next_in; false at the end of the input
  bool start_member();
  size_t position() const;  // compressed offset of next_in
  void stop_at_damage();  // isal_inflate found invalid data
  void stop_at_end_of_input();
  void finish() {
    done_ = true;
    close_input();
  }
  void close_input();

  std::unique_ptr<inflate_state> state_;
  int fd_ = -1;
  std::vector<unsigned char> buffer_;  // the compressed bytes read from fd_
  const unsigned char* in_base_ = nullptr;  // compressed byte in_offset_ is here
  size_t in_offset_ = 0;
  size_t in_have_ = 0;  // bytes readable at in_base_
  bool input_ended_ = false;
  size_t compressed_size_ = 0;
  size_t member_start_ = 0;
  bool in_member_ = false;
  bool done_ = false;
  std::optional<char> held_;  // the byte has_more() inflated
  size_t produced_ = 0;
  std::string error_;
  std::optional<std::string> warning_;
  uint64_t unread_bytes_ = 0;
};

}  // namespace ptadvise::detail
