// Internal to trace/: getting trace bytes into one padded, mutable buffer (plain or gzip), whole or as the
// parse goes on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

class GzipStream;

// The part of an input that read_input_file left unread (`incremental`): the loader reads it into the
// buffer, whose pages are reserved for all of it, as its parse goes on, so that the parts already parsed
// can be given back before the rest is read. Bytes past `filled()` read as zeros until then.
class PendingInput {
 public:
  virtual ~PendingInput() = default;
  size_t filled() const { return filled_; }
  // The bytes the buffer holds once read: a file's size; for gzip, the inflated-size cap until the stream
  // ends, then what it inflated to.
  size_t size() const { return size_; }
  // What size() is expected to end at (for reservations and progress displays).
  virtual size_t expected_size() const { return size_; }
  // Reads on to `end` at least (in reads of a few MiB), into `data` (the buffer's start). When the input
  // ends early (the file shrank, the gzip stream ended or was cut) `size()` becomes the bytes read; a
  // problem to tell the user comes back as one line. The buffer's pages before `resident_end` are already
  // in memory (moved there from behind the parse); the others are allocated in one call before reading.
  virtual std::optional<std::string> fill(char* data, size_t end, size_t resident_end) = 0;
  // A problem that makes the input unusable (gzip inflating beyond the cap), one line; empty if none.
  const std::string& failure() const { return failure_; }
  // LoadStats::unread_bytes: a gzip stream that could not be inflated past damage.
  virtual uint64_t unread_bytes() const { return 0; }
  // Whether the buffer's pages behind the parse may be moved ahead to hold the next bytes (anonymous
  // memory), rather than given back.
  virtual bool recycles() const { return true; }
  // Asked once the parse is over, after every byte was filled: a problem that came later (a mapped file
  // cut after its last stretch was taken, which the parse met as zeros), one line; nullopt if none.
  virtual std::optional<std::string> after_parse() { return std::nullopt; }

 protected:
  PendingInput(size_t size, size_t filled) : size_(size), filled_(filled) {}
  // Allocates the pages of [filled_, end) not resident yet in one call, rather than letting the read fault
  // them in one by one. Resident pages are skipped: walking them costs as much as a copy of their bytes.
  // `advice`: MADV_POPULATE_WRITE for memory about to be written, MADV_POPULATE_READ for a mapped file.
  void populate(char* data, size_t end, size_t resident_end, int advice) const;
  size_t size_;
  size_t filled_;
  std::string failure_;
};

// The rest of a regular file.
class PendingFile final : public PendingInput {
 public:
  PendingFile(int fd, size_t size, size_t filled) : PendingInput(size, filled), fd_(fd) {}
  ~PendingFile() override;
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  std::optional<std::string> fill(char* data, size_t end, size_t resident_end) override;

 private:
  int fd_;
};

class FaultGuard;

// The rest of a regular file mapped into the buffer (what read_input_file does for large files): there is
// nothing to read, so `fill` only checks that the file still reaches `end` (fstat, and the SIGBUS guard
// for a file cut between the check and the access: fault_guard.h) and asks the kernel to map those pages
// in one call. A file found shorter is read as a file cut there, as PendingFile does.
class PendingMapped final : public PendingInput {
 public:
  PendingMapped(int fd, size_t size, size_t filled, std::shared_ptr<const FaultGuard> guard);
  ~PendingMapped() override;
  PendingMapped(const PendingMapped&) = delete;
  PendingMapped& operator=(const PendingMapped&) = delete;
  std::optional<std::string> fill(char* data, size_t end, size_t resident_end) override;
  bool recycles() const override { return false; }  // its pages are the file's: given back, never moved
  std::optional<std::string> after_parse() override;

 private:
  // The file's size now, or where a page could not be read, if either is short of size_ (with the
  // problem to tell); nullopt while the file still holds all of size_.
  std::optional<std::pair<size_t, std::string>> shortfall() const;

  int fd_;
  std::shared_ptr<const FaultGuard> guard_;
  size_t told_ = static_cast<size_t>(-1);  // the shortest size a problem was returned for
};

// The rest of a gzip file, inflated as the parse goes on. size() is the inflated-size cap until the stream
// ends; inflating beyond it is a failure().
class PendingGzip final : public PendingInput {
 public:
  PendingGzip(std::unique_ptr<GzipStream> stream, size_t cap, size_t filled, std::string beyond_cap);
  ~PendingGzip() override;
  size_t expected_size() const override;
  std::optional<std::string> fill(char* data, size_t end, size_t resident_end) override;
  uint64_t unread_bytes() const override { return unread_; }

 private:
  std::unique_ptr<GzipStream> stream_;
  uint64_t unread_ = 0;
  std::string beyond_cap_;  // the failure when the stream inflates beyond the cap
};

// Incremental reads (files and .json.gz larger than this, with kept keys): what is read before the parse
// starts. The rest is read as the parse goes on, at least kPendingRead at a time, kReadAhead ahead of the
// window being parsed (two windows per thread and three more, if that is further: 14 MiB on two cores),
// and given back every kReleaseStep behind it: the file's bytes resident at once are about 24 MiB on two
// cores, whatever its size.
inline constexpr size_t kFirstRead = size_t{16} << 20;
// What PendingInput::fill reads at least at a time.
inline constexpr size_t kPendingRead = size_t{4} << 20;
// How far ahead of the window being parsed the bytes are read, at least (event_list.cpp reads further when
// two windows per thread and three more need it).
inline constexpr size_t kReadAhead = size_t{8} << 20;
// How many parsed bytes are given back at once.
inline constexpr size_t kReleaseStep = size_t{4} << 20;

// `bytes` rounded up to whole pages.
size_t page_round(size_t bytes);
// The warning of a file found shorter than it was while it was read.
std::string file_shrank(size_t size, size_t read);

// The error text is one line without the file label ("cannot open: No such file or directory").
struct InputResult {
  PaddedBuffer buffer;
  std::string error;  // empty on success
  std::vector<std::string> warnings;  // usable bytes with a problem (a cut gzip stream), one line each
  uint64_t unread_bytes = 0;  // LoadStats::unread_bytes: a gzip stream that could not be inflated past damage
  std::unique_ptr<PendingInput> pending;  // `incremental` reads: the part of the input not read yet
  bool ok() const { return error.empty(); }
};

// Reads a file, a pipe or (for "-") stdin; gzip content (by its magic bytes, whatever the name) is
// inflated straight into the final buffer. Files are read into anonymous memory, except the large plain
// files of `incremental` reads, which are mapped under a FaultGuard (a file cut while it is read reads as
// zeros past the cut, never SIGBUS). Sizes beyond the memory this process may still use
// (io.h: available_memory) are refused with an error instead of running out of memory.
// `incremental`: a regular file larger than a first read (for gzip: whose first kFirstRead bytes inflated do not end
// the stream) is returned with that read only, and the rest `pending`; the buffer's size is pending->size().
InputResult read_input_file(const std::string& path, bool incremental = false);

// Copies bytes into a padded buffer, inflating them when they are gzip.
InputResult copy_input_bytes(std::string_view bytes);

// Largest uncompressed input accepted. Offsets are 64-bit, so this is a sanity cap (inflation bombs,
// absurd files) rather than a format limit.
inline constexpr size_t kMaxInputBytes = size_t{64} << 30;

}  // namespace ptadvise::detail
