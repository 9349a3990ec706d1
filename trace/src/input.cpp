#include "input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "fault_guard.h"
#include "gzip_stream.h"
#include "numbers.h"
#include "ptadvise/io.h"

namespace ptadvise::detail {
namespace {

constexpr size_t kTail = PaddedBuffer::kPadding + PaddedBuffer::kSpare;
constexpr size_t kStreamChunk = size_t{1} << 20;
constexpr size_t kPopulateStretch = size_t{4} << 20;  // inflating the first read: populated this much at a time

bool is_gzip(const char* data, size_t size) {
  return size >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}


// An anonymous private mapping that holds the bytes: it grows without copying (mremap moves page tables)
// and is given to the timeline as it is, so the bytes are never copied from a staging buffer. A large
// file is mapped over it (map_file), the zero padding after it staying anonymous.
class Region {
 public:
  Region() = default;
  ~Region() {
    if (data_ != nullptr) munmap(data_, length_);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  // Room for `payload` bytes plus the zero padding. MAP_NORESERVE: untouched pages cost nothing, so a
  // generous reservation only costs address space.
  // `populate` when every page will be written (a file of known size): the pages are allocated in one
  // call instead of one page fault each.
  bool reserve(size_t payload, bool populate = false) {
    const size_t length = page_round(payload + kTail);
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE);
    void* mapped = mmap(nullptr, length, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (mapped == MAP_FAILED) return false;
    if (data_ != nullptr) munmap(data_, length_);
    data_ = static_cast<char*>(mapped);
    length_ = length;
    return true;
  }
  bool grow(size_t payload) {
    const size_t length = page_round(payload + kTail);
    if (length <= length_) return true;
    if (data_ == nullptr) return reserve(payload);
    void* moved = mremap(data_, length_, length, MREMAP_MAYMOVE);
    if (moved == MAP_FAILED) return false;
    data_ = static_cast<char*>(moved);
    length_ = length;
    return true;
  }
  char* data() const { return data_; }
  size_t payload_capacity() const { return length_ - kTail; }

  // Hands the first `size` bytes over as a padded buffer; the pages past the padding are returned.
  // `guard`, if any, watches the mapping for as long as the buffer lives.
  PaddedBuffer release(size_t size, std::shared_ptr<FaultGuard> guard = nullptr) {
    const size_t keep = page_round(size + kTail);
    if (keep < length_) {
      munmap(data_ + keep, length_ - keep);
      length_ = keep;
    }
    std::memset(data_ + size, 0, kTail);
    PaddedBuffer buffer;
    const size_t length = length_;
    buffer.owner = std::shared_ptr<char>(data_, [length, guard = std::move(guard)](char* p) mutable {
      guard.reset();  // no fault is expected once the parse is over
      munmap(p, length);
    });
    buffer.data = data_;
    buffer.size = size;
    buffer.capacity = size + PaddedBuffer::kPadding;
    data_ = nullptr;
    length_ = 0;
    return buffer;
  }

 private:
  char* data_ = nullptr;
  size_t length_ = 0;
};

std::string budget_hint() { return " (set PTADVISE_MEMORY_LIMIT to change the limit)"; }

// The largest input this process should take on: the buffer plus the event columns (about a quarter of
// the JSON) must fit into the memory still available.
size_t input_budget() {
  const size_t available = available_memory();
  return std::min(kMaxInputBytes, available / 5 * 4);
}

std::string out_of_memory(size_t bytes, size_t budget) {
  return "needs about " + format_bytes(bytes + bytes / 4) + " of memory, " + format_bytes(budget / 4 * 5) +
         " available" + budget_hint();
}

// The largest inflated size accepted from `compressed_size` bytes of gzip, and the error past it. Deflate
// cannot exceed about 1032:1; anything claiming more than that is corrupt. The budget bounds the text as it
// bounds a plain file: even parsed as it inflates, the events it holds need memory in proportion (and a
// gzip bomb of blank space would otherwise cost minutes of inflating).
struct InflateCap {
  size_t bytes = 0;
  std::string error;  // when the data inflates beyond `bytes`
};

InflateCap inflate_cap(size_t compressed_size) {
  const size_t ratio_cap = compressed_size > kMaxInputBytes / 1032 ? kMaxInputBytes : compressed_size * 1032 + 4096;
  const size_t budget = input_budget();
  InflateCap cap;
  cap.bytes = std::min(ratio_cap, budget);
  cap.error = "gzip data inflates beyond " + format_bytes(cap.bytes) +
              (cap.bytes == budget ? ", more than this process can hold in memory" + budget_hint()
                                   : " (corrupt, or too large to load)");
  return cap;
}

// Inflates every gzip member in turn straight into the final buffer. The uncompressed size is unknown up
// front (ISIZE is only the last member's size modulo 4 GiB), so the buffer reserves the largest size
// allowed (address space only) and keeps what was written.
InputResult inflate_gzip(GzipStream& stream) {
  InputResult result;
  const InflateCap cap = inflate_cap(stream.compressed_size());
  Region region;
  if (!region.reserve(cap.bytes)) {
    const size_t guess = std::min(cap.bytes, stream.compressed_size() * 8 + 4096);
    if (!region.reserve(guess)) {
      result.error = "out of memory for " + with_commas(guess) + " bytes";
      return result;
    }
  }
  size_t produced = 0;
  while (!stream.done()) {
    if (produced >= cap.bytes) {
      if (!stream.has_more()) break;
      result.error = cap.error;
      return result;
    }
    if (produced >= region.payload_capacity()) {
      if (!region.grow(std::min(cap.bytes, region.payload_capacity() * 2))) {
        result.error = "out of memory while inflating" + budget_hint();
        return result;
      }
    }
    const size_t room = std::min(region.payload_capacity(), cap.bytes) - produced;
    produced += stream.inflate(region.data() + produced, room);
  }
  if (!stream.error().empty()) {
    result.error = stream.error();
    return result;
  }
  if (stream.warning()) result.warnings.push_back(*stream.warning());
  result.unread_bytes = stream.unread_bytes();
  result.buffer = region.release(produced);
  return result;
}

InputResult inflate_gzip(const char* compressed, size_t compressed_size) {
  GzipStream stream(compressed, compressed_size);
  return inflate_gzip(stream);
}

// The first kFirstRead bytes inflated; the rest is inflated as the parse goes on (PendingGzip), into a
// buffer reserved (address space only) up to the cap.
InputResult inflate_gzip_incremental(std::unique_ptr<GzipStream> stream) {
  InputResult result;
  const InflateCap cap = inflate_cap(stream->compressed_size());
  Region region;
  if (!region.reserve(cap.bytes)) return inflate_gzip(*stream);
  const size_t first = std::min(kFirstRead, cap.bytes);
  // Populated a stretch at a time as the text comes (one call instead of a fault per page), not all of the
  // first read at once: most traces inflate to less than that, and their check would fault in (and hold)
  // all of the first read for a few.
  size_t produced = 0;
  while (produced < first) {
    const size_t stretch = std::min(first - produced, kPopulateStretch);
    (void)madvise(region.data() + produced, stretch, MADV_POPULATE_WRITE);
    const size_t got = stream->inflate(region.data() + produced, stretch);
    produced += got;
    if (got < stretch) break;  // the stream ended, or failed
  }
  if (!stream->error().empty()) {
    result.error = stream->error();
    return result;
  }
  if (produced == cap.bytes && stream->has_more()) {
    result.error = cap.error;
    return result;
  }
  if (stream->done()) {
    if (stream->warning()) result.warnings.push_back(*stream->warning());
    result.unread_bytes = stream->unread_bytes();
    result.buffer = region.release(produced);
    return result;
  }
  result.buffer = region.release(cap.bytes);
  result.pending = std::make_unique<PendingGzip>(std::move(stream), cap.bytes, produced, cap.error);
  return result;
}

// Whether a stream's first bytes can begin a trace: gzip's magic, or JSON whose first byte past white space
// (and a UTF-8 byte order mark) opens an object or array. nullopt while too few bytes have come to say.
// Decided early, a stream that is no trace (/dev/zero, /dev/urandom) is refused at once instead of being
// read until the memory budget is full.
std::optional<bool> can_begin_trace(const char* data, size_t size) {
  if (size >= 1 && static_cast<unsigned char>(data[0]) == 0x1f) {
    return size >= 2 ? std::optional<bool>(is_gzip(data, size)) : std::nullopt;
  }
  size_t pos = size >= 3 && std::memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  while (pos < size && (data[pos] == ' ' || data[pos] == '\n' || data[pos] == '\r' || data[pos] == '\t')) ++pos;
  if (pos == size) return std::nullopt;
  if (data[pos] != '{' && data[pos] != '[') return false;
  // JSON is text: a NUL byte among the first bytes is binary data that happens to start with a bracket
  // (1 in 128 random streams would, and be read until the memory budget is spent).
  return std::memchr(data, '\0', std::min<size_t>(size, 4096)) == nullptr;
}

// Reads a pipe, a terminal or stdin to its end, growing the buffer as the bytes come.
InputResult read_stream(int fd) {
  InputResult result;
  const size_t budget = input_budget();
  Region region;
  if (!region.reserve(kStreamChunk * 4)) {
    result.error = "out of memory";
    return result;
  }
  size_t size = 0;
  bool checked_start = false;
  while (true) {
    if (region.payload_capacity() - size < kStreamChunk) {
      if (size >= budget) {
        result.error = "input larger than " + format_bytes(budget) + ", more than this process can hold" + budget_hint();
        return result;
      }
      if (!region.grow(std::min(budget, std::max(size * 2, size + kStreamChunk)))) {
        result.error = "out of memory after " + with_commas(size) + " bytes" + budget_hint();
        return result;
      }
    }
    const size_t room = std::min(region.payload_capacity() - size, size_t{64} << 20);
    ssize_t got = read(fd, region.data() + size, room);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      result.error = std::string("cannot read: ") + std::strerror(errno);
      return result;
    }
    if (got == 0) break;
    size += static_cast<size_t>(got);
    if (!checked_start) {
      const auto plausible = can_begin_trace(region.data(), size);
      if (plausible && !*plausible) {
        result.error = "the first bytes are neither JSON nor gzip (this does not look like a PyTorch profiler trace)";
        return result;
      }
      checked_start = plausible.has_value();
    }
  }
  if (is_gzip(region.data(), size)) return inflate_gzip(region.data(), size);
  result.buffer = region.release(size);
  return result;
}

}  // namespace

size_t page_round(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

std::string file_shrank(size_t size, size_t read) {
  return "the file shrank from " + with_commas(size) + " to " + with_commas(read) +
         " bytes while it was read (was it being rewritten?)";
}

InputResult copy_input_bytes(std::string_view bytes) {
  if (is_gzip(bytes.data(), bytes.size())) return inflate_gzip(bytes.data(), bytes.size());
  InputResult result;
  if (bytes.size() > kMaxInputBytes) {
    result.error = "input larger than " + with_commas(kMaxInputBytes) + " bytes";
    return result;
  }
  Region region;
  if (!region.reserve(bytes.size())) {
    result.error = "out of memory for " + with_commas(bytes.size()) + " bytes";
    return result;
  }
  if (!bytes.empty()) std::memcpy(region.data(), bytes.data(), bytes.size());
  result.buffer = region.release(bytes.size());
  return result;
}

namespace {

// A regular file of `size` bytes (more than kFirstRead) mapped into a padded buffer: its first kFirstRead
// bytes count as read, the rest is PendingMapped. Nothing when it cannot be mapped or watched (the file
// is then read instead).
std::optional<InputResult> map_file(int fd, size_t size) {
  Region region;
  if (!region.reserve(size)) return std::nullopt;
  const size_t length = page_round(size);
  std::shared_ptr<FaultGuard> guard = FaultGuard::watch(region.data(), length);
  if (!guard) return std::nullopt;
  if (mmap(region.data(), size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) return std::nullopt;
  InputResult result;
  result.buffer = region.release(size, guard);
  (void)madvise(result.buffer.data, kFirstRead, MADV_POPULATE_READ);
  result.pending = std::make_unique<PendingMapped>(fd, size, kFirstRead, std::move(guard));
  return result;
}

}  // namespace

InputResult read_input_file(const std::string& path, bool incremental) {
  InputResult result;
  int fd = path == "-" ? dup(STDIN_FILENO) : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.error = std::string("cannot open: ") + std::strerror(errno);
    return result;
  }
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* descriptor) { close(*descriptor); });
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    result.error = std::string("cannot read: ") + std::strerror(errno);
    return result;
  }
  if (S_ISDIR(info.st_mode)) {
    result.error = "is a directory (pass it to load_traces, or name one trace file)";
    return result;
  }
  if (!S_ISREG(info.st_mode)) return read_stream(fd);  // a pipe (`<(zcat t.json.gz)`, `-`), a device
  const auto size = static_cast<size_t>(info.st_size);
  const size_t budget = input_budget();
  if (size > kMaxInputBytes) {
    result.error = "file larger than " + with_commas(kMaxInputBytes) + " bytes";
    return result;
  }
  if (size > budget) {
    result.error = "the trace " + out_of_memory(size, budget);
    return result;
  }
  // gzip is inflated as it is read: whole, or (incremental) as the parse goes on.
  unsigned char magic[2] = {0, 0};
  const off_t start = lseek(fd, 0, SEEK_CUR);
  if (start >= 0 && size >= static_cast<size_t>(start) + 2 && pread(fd, magic, 2, start) == 2 && magic[0] == 0x1f &&
      magic[1] == 0x8b) {
    auto stream = std::make_unique<GzipStream>(fd, size - static_cast<size_t>(start));
    fd = -1;  // the stream closes it
    return incremental ? inflate_gzip_incremental(std::move(stream)) : inflate_gzip(*stream);
  }
  const bool pending = incremental && size > kFirstRead;
  Region region;
  if (pending) {
    if (auto mapped = map_file(fd, size)) {
      fd = -1;  // the pending input closes it
      return std::move(*mapped);
    }
  }
  if (!region.reserve(size, !pending)) {
    result.error = "out of memory for " + with_commas(size) + " bytes" + budget_hint();
    return result;
  }
  size_t done = 0;
  const size_t first = pending ? kFirstRead : size;
  if (pending) (void)madvise(region.data(), first, MADV_POPULATE_WRITE);
  while (done < size) {
    const size_t until = pending && !(done >= 2 && is_gzip(region.data(), done)) ? first : size;
    if (done >= until) break;
    ssize_t got = read(fd, region.data() + done, std::min(until - done, size_t{64} << 20));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      result.error = std::string("cannot read: ") + std::strerror(errno);
      return result;
    }
    if (got == 0) {
      // Truncated while we read it (rewritten in place): what was read is parsed like a cut file.
      result.warnings.push_back(file_shrank(size, done));
      break;
    }
    done += static_cast<size_t>(got);
  }
  if (done < size && done == first) {  // the rest is read as the parse goes on
    result.buffer = region.release(size);
    result.pending = std::make_unique<PendingFile>(fd, size, done);
    fd = -1;
    return result;
  }
  if (is_gzip(region.data(), done)) {
    InputResult inflated = inflate_gzip(region.data(), done);
    inflated.warnings.insert(inflated.warnings.begin(), result.warnings.begin(), result.warnings.end());
    return inflated;
  }
  result.buffer = region.release(done);
  return result;
}

}  // namespace ptadvise::detail
