#include "gzip_stream.h"

#include <isa-l/igzip_lib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "input.h"
#include "numbers.h"

namespace ptadvise::detail {
namespace {

constexpr size_t kInputChunk = size_t{4} << 20;   // compressed bytes read from a file at a time
constexpr size_t kMaxFeed = size_t{1} << 30;      // avail_in is 32-bit
// Bytes a damaged stream leaves unread at its end without counting as lost: the CRC and size trailer.
constexpr size_t kTrailerSlack = 8;

// What `unread` compressed bytes would inflate to, at the ratio of the `inflated` bytes `consumed` gave.
uint64_t unread_estimate(size_t unread, size_t inflated, size_t consumed) {
  if (consumed == 0 || inflated == 0) return unread;
  const double estimate = static_cast<double>(unread) * static_cast<double>(inflated) / static_cast<double>(consumed);
  return estimate >= static_cast<double>(kMaxInputBytes) ? kMaxInputBytes : static_cast<uint64_t>(estimate);
}

}  // namespace

GzipStream::GzipStream(int fd, size_t compressed_size)
    : state_(std::make_unique<inflate_state>()), fd_(fd), buffer_(kInputChunk), compressed_size_(compressed_size) {
  isal_inflate_init(state_.get());
  in_base_ = buffer_.data();
}

GzipStream::GzipStream(const char* bytes, size_t size)
    : state_(std::make_unique<inflate_state>()), compressed_size_(size) {
  isal_inflate_init(state_.get());
  in_base_ = reinterpret_cast<const unsigned char*>(bytes);
  in_have_ = size;
  input_ended_ = true;  // all of it is at in_base_
}

GzipStream::~GzipStream() { close_input(); }

void GzipStream::close_input() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

size_t GzipStream::position() const {
  if (state_->next_in == nullptr) return in_offset_;  // nothing fed yet
  return in_offset_ + static_cast<size_t>(state_->next_in - in_base_);
}

size_t GzipStream::expected_size() const {
  const size_t consumed = position();
  if (consumed == 0 || produced_ == 0) return compressed_size_ * 8;
  return static_cast<size_t>(static_cast<double>(compressed_size_) * static_cast<double>(produced_) /
                             static_cast<double>(consumed));
}

bool GzipStream::refill() {
  const size_t used = state_->next_in == nullptr ? 0 : static_cast<size_t>(state_->next_in - in_base_);
  const size_t left = in_have_ - used;
  if (fd_ < 0 || input_ended_) {
    // Memory (or a file read to its end): feed what is there, at most kMaxFeed at a time.
    state_->next_in = const_cast<unsigned char*>(in_base_ + used);
    state_->avail_in = static_cast<uint32_t>(std::min(left, kMaxFeed));
    return left > 0;
  }
  // A file: the bytes not consumed yet move to the front, the rest of the buffer is read.
  std::memmove(buffer_.data(), buffer_.data() + used, left);
  in_offset_ += used;
  in_have_ = left;
  while (in_have_ < buffer_.size()) {
    const ssize_t got = read(fd_, buffer_.data() + in_have_, buffer_.size() - in_have_);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {  // the end of the file (or a read error: what was read is used, like a cut file)
      input_ended_ = true;
      close_input();
      break;
    }
    in_have_ += static_cast<size_t>(got);
    if (in_have_ >= kInputChunk / 4) break;
  }
  state_->next_in = buffer_.data();
  state_->avail_in = static_cast<uint32_t>(in_have_);
  return in_have_ > 0;
}

bool GzipStream::start_member() {
  if (state_->avail_in < 2) refill();
  const unsigned char* at = state_->next_in;
  if (state_->avail_in == 0) {  // the end of the data after a complete member
    finish();
    return false;
  }
  if (state_->avail_in < 2 || at[0] != 0x1f || at[1] != 0x8b) {
    const size_t from = position();
    if (from == 0) {
      error_ = "not gzip data";
      finish();
      return false;
    }
    // Bytes after the last member: gzip(1) warns and ignores them. Zero padding (tape blocks) is harmless;
    // anything else may be a member whose header was damaged, and counts as unread.
    bool nonzero = false;
    size_t end = from;
    do {
      const unsigned char* next = state_->next_in;
      nonzero = nonzero || std::any_of(next, next + state_->avail_in, [](unsigned char c) { return c != 0; });
      end = position() + state_->avail_in;
      state_->next_in += state_->avail_in;
      state_->avail_in = 0;
    } while (refill());
    const size_t unread = std::max(end, compressed_size_) - from;
    if (nonzero) {
      unread_bytes_ = unread_estimate(unread, produced_, from);
      warning_ = "the " + with_commas(unread) + " bytes after the gzip data at compressed byte " +
                 std::to_string(from) + " are not gzip data (a damaged member?); ignored them";
    }
    finish();
    return false;
  }
  unsigned char* next_in = state_->next_in;
  const uint32_t avail_in = state_->avail_in;
  isal_inflate_reset(state_.get());
  state_->next_in = next_in;
  state_->avail_in = avail_in;
  state_->crc_flag = ISAL_GZIP;
  member_start_ = position();
  in_member_ = true;
  return true;
}

void GzipStream::stop_at_damage() {
  // The bytes ISA-L holds in its bit buffer were read but not decoded: the damage is before them.
  const size_t buffered = static_cast<size_t>(std::max(0, state_->read_in_length)) / 8;
  const size_t stop = std::max(member_start_, position() - std::min(position(), buffered));
  if (produced_ == 0) {
    error_ = "corrupt gzip data at compressed byte " + std::to_string(member_start_);
    finish();
    return;
  }
  const size_t size = std::max(compressed_size_, stop);
  const size_t unread = size - stop;
  if (unread > kTrailerSlack) {
    // Damaged, not cut: what follows the damage is lost, and counts toward a partial trace.
    unread_bytes_ = unread_estimate(unread, produced_, stop);
    warning_ = "the gzip data is damaged at compressed byte " + std::to_string(stop) + " of " + std::to_string(size) +
               "; using the " + with_commas(produced_) + " bytes that inflate before it (the rest, about " +
               with_commas(unread_bytes_) + " bytes inflated, cannot be read)";
  } else {
    warning_ = "the gzip data is cut short or damaged after compressed byte " + std::to_string(stop) + " of " +
               std::to_string(size) + "; using the " + with_commas(produced_) + " bytes that inflate";
  }
  finish();
}

void GzipStream::stop_at_end_of_input() {
  const size_t stop = position();
  if (produced_ == 0) {
    error_ = "corrupt gzip data at compressed byte " + std::to_string(member_start_);
    finish();
    return;
  }
  warning_ = "the gzip data is cut short or damaged after compressed byte " + std::to_string(stop) + " of " +
             std::to_string(std::max(compressed_size_, stop)) + "; using the " + with_commas(produced_) +
             " bytes that inflate";
  finish();
}

size_t GzipStream::inflate(char* out, size_t room) {
  size_t written = 0;
  if (held_ && room > 0) {
    out[0] = *held_;
    held_.reset();
    written = 1;
    produced_ += 1;
  }
  while (!done_ && written < room) {
    if (!in_member_ && !start_member()) break;
    if (state_->avail_in == 0) refill();
    state_->next_out = reinterpret_cast<uint8_t*>(out + written);
    state_->avail_out = static_cast<uint32_t>(std::min(room - written, kMaxFeed));
    const uint32_t before = state_->avail_out;
    const size_t in_before = position();
    const int status = isal_inflate(state_.get());
    const size_t got = before - state_->avail_out;
    written += got;
    produced_ += got;
    if (status < 0) {
      stop_at_damage();
      break;
    }
    if (state_->block_state == ISAL_BLOCK_FINISH) {
      in_member_ = false;
      continue;
    }
    if (state_->avail_out == 0) continue;  // the room is full, or this feed of output is
    if ((state_->avail_in == 0 && !refill()) || (got == 0 && position() == in_before && state_->avail_in > 0)) {
      stop_at_end_of_input();  // no more input, or none that inflates further
      break;
    }
  }
  return written;
}

bool GzipStream::has_more() {
  if (held_) return true;
  if (done_) return false;
  char byte = 0;
  if (inflate(&byte, 1) == 0) return false;
  held_ = byte;
  produced_ -= 1;  // counted again when it is handed out
  return true;
}

}  // namespace ptadvise::detail
